"""Ordered bagging: bag regressors, order them greedily by training error, keep the first few.

Hernández-Lobato, Martínez-Muñoz & Suárez, "Pruning in ordered regression bagging ensembles"
(IJCNN 2006). The members of a bagging ensemble are ordered so that each prefix of the order
greedily minimises the training error of its average (Eq. 6); the pruned ensemble is the first
20% of that order, which the paper finds beats the complete ensemble on test data.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, has_fit_parameter, validate_data

from parsimony._validation import (
    N_JOBS, SKLEARN_RANDOM_STATE, Interval, check_array_1d, check_fitted_feature_names, check_numeric_columns,
    check_same_length, check_sample_weight, extreme_scale, validate_params,
)
from parsimony.ensembles.bagged_networks import BaggedNetworks
from parsimony.ensembles._ordering import error_covariance, greedy_order, subset_sums
from parsimony.metrics import complexity

__all__ = ["OrderedBaggingRegressor"]

_MAX_SEED = np.iinfo(np.int32).max
# iRprop- epochs of the default pool: on Friedman #1 (300 rows) 2000 come within 6% of the test
# error of bagged L-BFGS networks (make_network) at a tenth of the time; 1000 are 22% worse
_DEFAULT_POOL_EPOCHS = 2000


#: OrderedBaggingRegressor's parameter table (see :func:`parsimony._validation.validate_params`);
#: ``estimator`` is checked where it is bagged or its members taken, ``keep`` against the pool's size
#: once that is known.
ORDERED_BAGGING_PARAMETERS = {
    "n_estimators": [Interval(numbers.Integral, 1)],
    "keep": [Interval(numbers.Integral, 1), Interval(numbers.Real, 0, 1, closed="right")],
    "random_state": [SKLEARN_RANDOM_STATE],
    "n_jobs": [None, N_JOBS],
}


class OrderedBaggingRegressor(RegressorMixin, BaseEstimator):
    """Bagging ensemble pruned by greedy ordering (Hernández-Lobato et al., 2006).

    Fits ``n_estimators`` copies of ``estimator`` on bootstrap samples (or takes the members of a
    bagging ensemble / random forest), orders them by the paper's greedy rule (Eq. 6) on the
    training data and predicts with the average of the first ``keep`` members of that order.

    Parameters
    ----------
    estimator : regressor, default=None
        Base regressor to bag; ``None`` means the paper's small neural network: a
        ``BaggedNetworks(n_estimators, max_iter=2000)`` pool (one compiled loop, a few seconds
        for 100 networks on 300 rows; ``make_network()`` bags scikit-learn's L-BFGS
        ``MLPRegressor`` one fit at a time instead, about ten times slower). An ensemble (``BaggingRegressor``, ``RandomForestRegressor``,
        :class:`BaggedNetworks`, ``VotingRegressor`` without weights: an object with ``estimators_``
        that predicts their plain mean) is used as the pool of members instead: if it is already
        fitted its members are ordered as they are, else a clone is fitted on the training data
        (seeded from ``random_state``). An ensemble that combines its members otherwise (boosting,
        AdaBoost's weighted median, a weighted vote, stacking) is a TypeError.
    n_estimators : int, default=100
        Number of bagged members (ignored when ``estimator`` is an ensemble).
    keep : float in (0, 1] or int, default=0.2
        Members kept: a fraction of the pool (``round(keep * M)``, at least 1) when a float, a
        count in ``[1, M]`` when an int. ``keep=1.0`` keeps all members, ``keep=1`` only one.
    random_state : int, RandomState or None, default=None
        Seeds the bootstrap samples and the members' own randomness.
    n_jobs : int or None, default=None
        Parallel jobs (joblib) for fitting the members.

    Attributes
    ----------
    estimators_ : list of regressors
        All members in their original (bootstrap) order.
    estimators_features_ : list of ndarray
        Columns each member sees (all columns, unless taken from a ``BaggingRegressor`` with
        feature subsampling).
    order_ : ndarray of int
        Member indices in greedy order.
    n_kept_ : int
        Size of the pruned ensemble: it predicts with ``estimators_[order_[:n_kept_]]``.
    train_errors_ : ndarray
        Training mean squared error of the first ``u`` ordered members, ``u = 1..M`` (Eq. 6); the
        order is found on ``y`` divided by a power of two when ``|y|`` is extreme, so it does not
        depend on the scale of ``y`` even where these squared errors overflow.
    complexity_ : int
        Complexity of the kept members summed (:func:`parsimony.metrics.complexity` of each);
        None when a kept member is of a kind that function cannot measure.
    n_features_in_, feature_names_in_ :
        As in scikit-learn.
    """

    def __init__(self, estimator=None, n_estimators=100, keep=0.2, random_state=None, n_jobs=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.keep = keep
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y, sample_weight=None):
        """Bag (or take) the members, order them on ``(X, y)`` and keep the first ``keep``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: the greedy order minimises the weighted training error, and members
            (or an unfitted ensemble) are fitted with the weights of their bootstrap rows; the
            estimator must then accept ``sample_weight``. Already fitted members are only ordered.

        Returns
        -------
        self
        """
        params = validate_params(self.get_params(deep=False), ORDERED_BAGGING_PARAMETERS)  # checked once
        check_numeric_columns(X, type(self).__name__)
        if _is_ensemble(self.estimator) and hasattr(self.estimator, "estimators_"):
            check_fitted_feature_names(self.estimator, X, "the prefitted ensemble")
        X, y = validate_data(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        w = check_sample_weight(sample_weight, len(y))
        rng = check_random_state(self.random_state)
        pool = None
        if self.estimator is None:  # the paper's networks, bagged by one numba kernel
            pool = BaggedNetworks(n_estimators=params["n_estimators"], max_iter=_DEFAULT_POOL_EPOCHS)
            members, features, pool = self._take_members(X, y, w, rng, pool)
        elif _is_ensemble(self.estimator):
            members, features, pool = self._take_members(X, y, w, rng, self.estimator)
        else:
            members, features = self._bag(X, y, w, rng, params["n_estimators"])
        for i, member in enumerate(members):
            if not callable(getattr(member, "predict", None)):
                raise TypeError(f"ensemble member {i} ({type(member).__name__}) has no predict method; {_PLAIN_MEAN}")
        self.estimators_ = members
        self.estimators_features_ = features
        self.n_kept_ = _resolve_keep(params["keep"], len(members))
        predictions = self._member_predictions(X)
        if pool is not None:
            _check_plain_mean(pool, X, predictions)
        unit = extreme_scale(y)  # order on y / unit (exact): the errors' squares of extreme y overflow
        if unit != 1.0:
            predictions, y = predictions / unit, y / unit
        self.order_, self.train_errors_ = greedy_order(error_covariance(predictions, y, w))
        if unit != 1.0:
            with np.errstate(over="ignore"):  # in units of y squared: inf where they overflow (documented)
                self.train_errors_ = self.train_errors_ * unit * unit
        try:
            self.complexity_ = int(sum(complexity(members[i]) for i in self.order_[:self.n_kept_]))
        except TypeError:  # members of a kind metrics.complexity cannot measure (say, nearest neighbours)
            self.complexity_ = None
        return self

    def _bag(self, X, y, w, rng, m):
        estimator = self.estimator
        for method in ("fit", "predict"):
            if not callable(getattr(estimator, method, None)):
                raise ValueError(f"estimator must implement fit and predict; {type(estimator).__name__} has no {method}")
        _check_accepts_weights(estimator, w)
        n = X.shape[0]
        seeds = rng.randint(_MAX_SEED, size=m)
        members = Parallel(n_jobs=self.n_jobs)(delayed(_fit_member)(estimator, X, y, w, seed, n) for seed in seeds)
        return members, [np.arange(X.shape[1])] * m

    def _take_members(self, X, y, w, rng, ensemble):
        if not hasattr(ensemble, "estimators_"):
            _check_accepts_weights(ensemble, w)
            ensemble = clone(ensemble)
            _seed_estimator(ensemble, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ensemble.fit(X, y, **({} if w is None else {"sample_weight": w}))
        fitted_features = getattr(ensemble, "n_features_in_", X.shape[1])
        if fitted_features != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but the ensemble was fitted with {fitted_features}")
        members = list(ensemble.estimators_)
        if not members:
            raise ValueError("the ensemble has no members")
        all_columns = np.arange(X.shape[1])
        features = getattr(ensemble, "estimators_features_", None)
        features = [all_columns] * len(members) if features is None else [np.asarray(f) for f in features]
        return members, features, ensemble

    def _member_predictions(self, X) -> np.ndarray:
        """Predictions of every member on validated ``X``, shape (n_samples, n_members)."""
        out = np.empty((X.shape[0], len(self.estimators_)))
        for i, (member, columns) in enumerate(zip(self.estimators_, self.estimators_features_)):
            values = np.asarray(member.predict(X[:, columns]), dtype=np.float64)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
            if values.shape != (X.shape[0],):
                raise ValueError(f"ensemble member {i} returned predictions of shape {values.shape}; need one value per row")
            out[:, i] = values
        if not np.all(np.isfinite(out)):
            bad = np.flatnonzero(~np.isfinite(out).all(axis=0))
            raise ValueError(f"member predictions contain NaN or infinite values (members {bad[:10].tolist()})")
        return out

    def _validated(self, X, y=None):
        check_is_fitted(self)
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False)
        if y is None:
            return X
        y = check_array_1d(y, "y")
        check_same_length(("X", X), ("y", y))
        return X, y

    def predict(self, X):
        """Average prediction of the first ``n_kept_`` members of the greedy order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._validated(X)
        kept = self.order_[: self.n_kept_]
        total = np.zeros(X.shape[0])
        for i in kept:
            total += np.asarray(self.estimators_[i].predict(X[:, self.estimators_features_[i]]), dtype=np.float64).ravel()
        return total / len(kept)

    def error_curve(self, X, y) -> pd.DataFrame:
        """Mean squared error of the first ``u`` members, ``u = 1..M``, in greedy and original order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        pandas.DataFrame
            Index ``size`` (1..M); columns ``ordered`` and ``original`` (the bagging order).
        """
        X, y = self._validated(X, y)
        errors = self._member_predictions(X) - y[:, None]
        sizes = np.arange(1, errors.shape[1] + 1)
        curves = {}
        for name, order in (("ordered", self.order_), ("original", np.arange(errors.shape[1]))):
            prefix_means = np.cumsum(errors[:, order], axis=1) / sizes
            curves[name] = np.mean(prefix_means**2, axis=0)
        return pd.DataFrame(curves, index=pd.Index(sizes, name="size"))

    def bias_variance(self, X, y) -> pd.DataFrame:
        """The paper's unbiased estimates of average squared bias and variance by ensemble size.

        For the first ``u >= 2`` members ``S``: ``bias2 = sum_{i != j in S} C_ij / (u (u - 1))`` and
        ``variance = sum_{i in S} C_ii / u - bias2``, with ``C`` the error covariance on ``(X, y)``;
        then ``bias2 + variance / u`` is the error of the average of ``S`` (the paper's Eq. 8).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        pandas.DataFrame
            Index ``size`` (2..M); columns ``bias2_ordered``, ``variance_ordered``,
            ``bias2_original``, ``variance_original``.
        """
        X, y = self._validated(X, y)
        c = error_covariance(self._member_predictions(X), y)
        m = c.shape[0]
        if m < 2:
            raise ValueError("bias_variance needs at least 2 ensemble members")
        u = np.arange(2, m + 1, dtype=np.float64)
        columns = {}
        for name, order in (("ordered", self.order_), ("original", np.arange(m))):
            totals, diagonal = subset_sums(c, order)
            bias2 = (totals[1:] - diagonal[1:]) / (u * (u - 1))
            columns[f"bias2_{name}"] = bias2
            columns[f"variance_{name}"] = diagonal[1:] / u - bias2
        return pd.DataFrame(columns, index=pd.Index(u.astype(int), name="size"))

    def plot_error_curve(self, X, y, ax=None, label=None):
        """Plot :meth:`error_curve` on ``(X, y)`` (paper Figure 1); returns the Axes.

        Parameters
        ----------
        X, y : array-like
            Data to evaluate on (training data for the training curve, held-out data for the test curve).
        ax : matplotlib Axes, optional
        label : str, optional
            Suffix for the legend entries, e.g. ``"test"``.
        """
        from parsimony.plotting import plot_ordering_error_curve

        return plot_ordering_error_curve(self.error_curve(X, y), ax=ax, label=label, keep=self.n_kept_)


def _is_ensemble(estimator) -> bool:
    if hasattr(estimator, "estimators_") or getattr(estimator, "_ordered_bagging_pool", False):
        return True
    if isinstance(getattr(estimator, "estimators", None), list):  # voting and stacking: (name, estimator) pairs
        return True
    from sklearn.ensemble import BaseEnsemble

    return isinstance(estimator, BaseEnsemble)


def _check_plain_mean(ensemble, X, predictions) -> None:
    """TypeError unless ``ensemble`` predicts the plain mean of its members on ``X`` (their
    ``predictions``): ordering and averaging the members of any other ensemble changes its model."""
    name = type(ensemble).__name__
    if not callable(getattr(ensemble, "predict", None)):
        raise TypeError(f"estimator {name} has estimators_ but no predict method, so it cannot be checked to "
                        f"average its members; {_PLAIN_MEAN}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fitted with feature names, given the validated array
        own = np.asarray(ensemble.predict(X), dtype=np.float64).reshape(-1)
    mean = predictions.mean(axis=1)
    if own.shape != mean.shape or not np.allclose(own, mean, rtol=1e-7, atol=1e-7 * float(np.max(np.abs(mean)))):
        gap = float(np.max(np.abs(own - mean))) if own.shape == mean.shape else float("nan")
        raise TypeError(f"estimator {name} does not predict the plain mean of its members (it differs from their mean "
                        f"by up to {gap:.3g} on the training data: a weighted vote, median or stack), so ordering and "
                        f"averaging them would silently change the model; {_PLAIN_MEAN}")


_PLAIN_MEAN = ("OrderedBaggingRegressor takes an ensemble that averages its members (BaggingRegressor, "
               "RandomForestRegressor, ExtraTreesRegressor, BaggedNetworks, VotingRegressor without weights) "
               "or a base regressor to bag")


def _resolve_keep(keep, m: int) -> int:
    """Members kept of a pool of ``m`` for a validated ``keep``: an int count (at most ``m``) or a fraction."""
    if isinstance(keep, int):
        if keep > m:
            raise ValueError(f"keep must be a member count between 1 and {m} (the ensemble size), got {keep!r}")
        return keep
    return max(1, int(round(keep * m)))


def _seed_estimator(estimator, rng) -> None:
    """Set every ``random_state`` parameter of ``estimator`` (nested ones too) from ``rng``."""
    params = estimator.get_params(deep=True)
    keys = sorted(k for k in params if k == "random_state" or k.endswith("__random_state"))
    if keys:
        seeds = rng.randint(_MAX_SEED, size=len(keys))
        estimator.set_params(**{k: int(s) for k, s in zip(keys, seeds)})


def _check_accepts_weights(estimator, w):
    if w is not None and not has_fit_parameter(estimator, "sample_weight"):
        raise ValueError(f"sample_weight was given but {type(estimator).__name__}.fit does not accept sample_weight")


def _fit_member(estimator, X, y, w, seed, n):
    rng = np.random.RandomState(seed)
    rows = rng.randint(n, size=n)
    member = clone(estimator)
    _seed_estimator(member, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return member.fit(X[rows], y[rows], **({} if w is None else {"sample_weight": w[rows]}))
