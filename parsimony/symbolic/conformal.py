"""Conformalized quantile regression (split-conformal intervals from two quantile models).

The SQR paper names calibrated intervals as future work. Following Romano, Patterson and
Candes (2019), a lower and an upper quantile model are fitted on one part of the data; on the
held-out calibration part the conformity score ``E_i = max(lo(x_i) - y_i, y_i - hi(x_i))``
measures how far each point falls outside the band, and the band is widened by the
``ceil((n + 1)(1 - alpha)) / n`` empirical quantile of the scores. For exchangeable data the
interval covers a new point with probability at least ``1 - alpha``.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    QUANTILE, RANDOM_STATE, check_array_1d, check_numeric_columns, check_quantile, check_same_length,
    check_sample_weight, seed_from, validate_params,
)


def _ordered(band):
    """``(lower, upper)`` of a two-column band, crossed quantiles swapped."""
    return np.minimum(band[:, 0], band[:, 1]), np.maximum(band[:, 0], band[:, 1])


def conformal_margin(lower, upper, y, alpha, sample_weight=None) -> float:
    """Split-conformal widening of the band ``[lower, upper]`` from calibration points ``y``.

    With ``sample_weight`` each point counts as that many points (integer weights act as
    repeated rows, as scikit-learn reads weights), so weights normalised to sum to one count as a
    single point. Raises ``ValueError`` naming the points needed when the calibration set is too
    small for the level (total weight ``n < 1/alpha - 1``: the margin would be infinite).
    """
    alpha = check_quantile(alpha, "alpha")
    lower = check_array_1d(lower, "lower")
    upper = check_array_1d(upper, "upper")
    y = check_array_1d(y, "y")
    check_same_length(("lower", lower), ("upper", upper), ("y", y))
    scores = np.maximum(lower - y, y - upper)
    w = np.ones(len(scores)) if sample_weight is None else check_sample_weight(sample_weight, len(scores), counts=True)
    order = np.argsort(scores, kind="stable")
    reached = np.cumsum(w[order])
    if _too_few(reached[-1], alpha):
        raise ValueError(_too_few_message(reached[-1], len(scores), sample_weight is not None, alpha))
    k = int(np.searchsorted(reached, _needed_weight(reached[-1], alpha)))  # the first point reaching it
    return float(scores[order[k]])


def _needed_weight(total, alpha) -> float:
    """The cumulative weight of sorted scores at which the margin is read: ``(n + 1)(1 - alpha)`` for
    total weight ``n``, less a relative 1e-9 for rounding."""
    needed = (total + 1) * (1.0 - alpha)
    return needed - 1e-9 * needed


def _too_few(total, alpha) -> bool:
    """Whether calibration points of total weight ``total`` never reach :func:`_needed_weight` (the
    margin would be infinite)."""
    return total < _needed_weight(total, alpha)


def _too_few_message(total, n, weighted, alpha) -> str:
    need = min_calibration_points(alpha)
    got = f"a total weight of {total:.6g} over {n} points" if weighted else f"{n} points"
    hint = (" sample_weight counts points (a weight of 2 is a repeated row), so weights normalised to sum"
            " to 1 count as one point; pass counts or weights with mean 1." if weighted else "")
    return (f"conformal calibration at alpha={alpha:g} needs at least {need} calibration points, got {got}: "
            f"use more rows or a larger alpha.{hint}")


def min_calibration_points(alpha) -> int:
    """Smallest calibration size (total weight) giving a finite margin at miscoverage ``alpha``."""
    alpha = check_quantile(alpha, "alpha")
    c = (1.0 - alpha) * (1.0 - 1e-9)  # _too_few(n) is n < (n + 1) c, i.e. n < c / (1 - c)
    n = max(0, math.ceil(c / (1.0 - c)) - 2)  # a point or two below, whatever the rounding
    while _too_few(n, alpha):
        n += 1
    return n


#: ConformalQuantileInterval's parameter table (see :func:`parsimony._validation.validate_params`);
#: ``estimator`` is checked when it is given the two levels.
CONFORMAL_PARAMETERS = {"alpha": [QUANTILE], "calibration_size": [QUANTILE], "random_state": [RANDOM_STATE]}


class ConformalQuantileInterval(RegressorMixin, BaseEstimator):
    """Prediction intervals with finite-sample coverage from two quantile models (CQR).

    Parameters
    ----------
    estimator : estimator or None, default=None
        A regressor with a ``quantile`` parameter whose ``predict`` returns two columns
        (lower, upper) when given two levels; None uses a default
        :class:`SymbolicQuantileRegressor`. Its ``quantile`` is set to ``[alpha/2, 1-alpha/2]``.
    alpha : float, default=0.1
        Miscoverage level: intervals aim at coverage ``1 - alpha``.
    calibration_size : float, default=0.25
        Share of the rows held out for calibration.
    random_state : int or None, default=None
        Seed of the split (and of the default estimator).

    Attributes
    ----------
    estimator_ : the fitted two-quantile model
    margin_ : float
        Widening added on both sides of the band.
    complexity_ : int or None
        The complexity of ``estimator_`` (:func:`parsimony.metrics.complexity`; the margin adds
        none); None when that model's complexity cannot be measured.
    """

    def __init__(self, estimator=None, alpha=0.1, calibration_size=0.25, random_state=None):
        self.estimator = estimator
        self.alpha = alpha
        self.calibration_size = calibration_size
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fit the two quantile models on one part of the data, calibrate on the rest
        (``sample_weight`` weighs both: a weight counts as that many rows)."""
        params = validate_params(self.get_params(deep=False), CONFORMAL_PARAMETERS)  # checked once
        alpha, share = params["alpha"], params["calibration_size"]
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        sample_weight = check_sample_weight(sample_weight, len(y), counts=True)
        n = len(y)
        n_cal = int(round(share * n))
        if n_cal < 1 or n - n_cal < 1:
            raise ValueError(f"calibration_size={self.calibration_size} leaves an empty part of {n} rows")
        rng = np.random.default_rng(seed_from(self.random_state))
        order = rng.permutation(n)
        cal, train = order[:n_cal], order[n_cal:]
        if self.estimator is None:
            from .regressor import SymbolicQuantileRegressor

            seed = None if self.random_state is None else int(rng.integers(0, 2**31))
            est = SymbolicQuantileRegressor(progress=False, random_state=seed)
        else:
            est = clone(self.estimator)
        total = n_cal if sample_weight is None else sample_weight[cal].sum()
        if _too_few(total, alpha):  # the margin would be infinite
            message = _too_few_message(total, n_cal, sample_weight is not None, alpha)
            raise ValueError(f"{message} (calibration_size={self.calibration_size} holds out {n_cal} of {n} rows)")
        levels = [alpha / 2, 1 - alpha / 2]
        w = None if sample_weight is None else sample_weight[train]
        two_levels = (f"estimator {type(est).__name__} must take two quantile levels at once in its `quantile` "
                      f"parameter (set here to {levels}) and predict two columns (lower, upper), as "
                      f"SymbolicQuantileRegressor does")
        if "quantile" not in est.get_params():
            raise TypeError(f"{two_levels}; it has no `quantile` parameter")
        try:
            est.set_params(quantile=levels)
            est.fit(X[train], y[train], **({} if w is None else {"sample_weight": w}))
        except (TypeError, ValueError) as err:
            if "quantile" not in str(err):
                raise
            raise TypeError(f"{two_levels}; it rejected them: {err}") from err
        band = np.asarray(est.predict(X[cal]))
        if band.ndim != 2 or band.shape[1] != 2:
            raise ValueError(f"{two_levels}; its predict returned shape {band.shape}")
        from ..metrics import complexity

        self.estimator_ = est
        try:
            self.complexity_ = complexity(est)
        except TypeError:  # a model none of the conventions measures
            self.complexity_ = None
        self.margin_ = conformal_margin(*_ordered(band), y[cal], alpha,  # the band as predict_interval uses it
                                        None if sample_weight is None else sample_weight[cal])
        return self

    def predict_interval(self, X):
        """``(n, 2)`` array of calibrated lower and upper bounds."""
        check_is_fitted(self, "margin_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        lower, upper = _ordered(np.asarray(self.estimator_.predict(X), dtype=float))
        lower, upper = lower - self.margin_, upper + self.margin_
        # a negative margin (band too wide on calibration) may cross narrow bands: collapse them
        crossed = lower > upper
        mid = 0.5 * (lower + upper)
        return np.column_stack([np.where(crossed, mid, lower), np.where(crossed, mid, upper)])

    def predict(self, X):
        """Midpoint of the calibrated interval (use ``predict_interval`` for the bounds)."""
        return self.predict_interval(X).mean(axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags
