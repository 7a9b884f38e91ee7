"""The ordered-bagging paper's base learner: one hidden layer of logistic units and a linear output.

``BaggedNetworks`` fits a whole bagging pool of them in one numba kernel (``_networks.py``);
``make_network`` builds one as a scikit-learn pipeline fitted by L-BFGS. Either is a pool or a base
estimator for :class:`~parsimony.ensembles.OrderedBaggingRegressor`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from parsimony._validation import (
    SKLEARN_RANDOM_STATE, Interval, check_int, check_numeric_columns, check_sample_weight, extreme_scale,
    validate_params,
)
from parsimony.ensembles._networks import train_networks

__all__ = ["BaggedNetworks", "make_network"]

_RPROP = (0.05, 1.2, 0.5, 1e-6, 1.0)  # initial step, growth, shrink, step bounds (standardised data)


def make_network(hidden_units: int = 5, weight_decay: float = 0.1, max_iter: int = 1000, random_state=None):
    """The paper's base learner: one hidden layer of logistic units, a linear output, weight decay.

    Inputs and target are standardised; the network is fitted by L-BFGS (the paper used BFGS for
    1000 epochs in R's ``nnet``).

    Parameters
    ----------
    hidden_units : int, default=5
        Hidden sigmoid units (the paper chose among 2, 3, 5 and 7 by cross-validation).
    weight_decay : float, default=0.1
        L2 penalty (``MLPRegressor(alpha=...)``; the paper chose it in [0, 1] by cross-validation).
    max_iter : int, default=1000
        L-BFGS iterations.
    random_state : int, RandomState or None
        Seed of the initial weights.

    Returns
    -------
    sklearn.compose.TransformedTargetRegressor
    """
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    network = MLPRegressor(
        hidden_layer_sizes=(check_int(hidden_units, "hidden_units", minimum=1),),
        activation="logistic",
        solver="lbfgs",
        alpha=weight_decay,
        max_iter=check_int(max_iter, "max_iter", minimum=1),
        random_state=random_state,
    )
    return TransformedTargetRegressor(regressor=make_pipeline(StandardScaler(), network), transformer=StandardScaler())


#: BaggedNetworks' parameter table (see :func:`parsimony._validation.validate_params`).
BAGGED_NETWORKS_PARAMETERS = {
    "n_estimators": [Interval(numbers.Integral, 1)],
    "hidden_units": [Interval(numbers.Integral, 1)],
    "weight_decay": [Interval(numbers.Real, 0)],
    "max_iter": [Interval(numbers.Integral, 1)],
    "random_state": [SKLEARN_RANDOM_STATE],
}


class BaggedNetworks(RegressorMixin, BaseEstimator):
    """Bagged one-hidden-layer networks fitted by one numba kernel, as a pool for ordered bagging.

    The paper's base learner (logistic hidden units, linear output, L2 weight decay on the
    weights) fitted on ``n_estimators`` bootstrap samples in one compiled loop: each network
    takes full-batch iRprop- steps (sign-based, per-weight step sizes) for ``max_iter`` epochs.
    Inputs and target are standardised with the training data's mean and standard deviation
    (computed in power-of-two units for extreme values, so ``y * 1e300`` fits like ``y``).
    About ten times faster than bagging ``make_network()`` one fit at a time; pass it as the
    ``estimator`` of :class:`OrderedBaggingRegressor` to order and prune its members.

    Parameters
    ----------
    n_estimators : int, default=100
    hidden_units : int, default=5
    weight_decay : float, default=0.1
        L2 penalty: each network minimises ``SSE / 2 + weight_decay * ||weights||^2 / 2`` on the
        standardised data (the same scale as ``MLPRegressor(alpha=...)``).
    max_iter : int, default=1000
        Full-batch epochs.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    estimators_ : list of fitted networks (each with ``predict``), in bootstrap order.
    n_iter_ : int
        Epochs run (``max_iter``).
    complexity_ : int
        Nonzero weights and biases over all networks (the neural-network convention).
    """

    _ordered_bagging_pool = True  # OrderedBaggingRegressor takes its members instead of bagging it

    def __init__(self, n_estimators=100, hidden_units=5, weight_decay=0.1, max_iter=1000, random_state=None):
        self.n_estimators = n_estimators
        self.hidden_units = hidden_units
        self.weight_decay = weight_decay
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Fit every network on its own bootstrap sample of ``(X, y)``; returns ``self``.

        ``sample_weight`` (relative row weights, rescaled to mean 1) weighs each bootstrap row's
        squared error; the standardisation stays unweighted.
        """
        params = validate_params(self.get_params(deep=False), BAGGED_NETWORKS_PARAMETERS)  # checked once
        m, h, epochs, decay = params["n_estimators"], params["hidden_units"], params["max_iter"], params["weight_decay"]
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)  # the kernel takes float64 (not long double)
        w = check_sample_weight(sample_weight, len(y))
        rng = check_random_state(self.random_state)
        n, d = X.shape
        # standardise in power-of-two units of extreme columns (exact), so no square overflows
        x_unit, y_unit = extreme_scale(X, axis=0), extreme_scale(y)
        Xu, yu = X / x_unit, np.asarray(y, dtype=np.float64) / y_unit
        x_mean, x_scale = Xu.mean(axis=0), Xu.std(axis=0)
        x_scale[x_scale == 0] = 1.0
        y_mean, y_scale = float(np.mean(yu)), float(np.std(yu)) or 1.0
        rows = rng.randint(n, size=(m, n))
        xb = ((Xu - x_mean) / x_scale)[rows]  # (m, n, d)
        yb = ((yu - y_mean) / y_scale)[rows]  # (m, n)
        wb = np.ones((m, n)) if w is None else (w / np.mean(w))[rows]
        x_mean, x_scale, y_mean, y_scale = x_mean * x_unit, x_scale * x_unit, y_mean * y_unit, y_scale * y_unit
        bound1, bound2 = np.sqrt(6.0 / (d + h)), np.sqrt(6.0 / (h + 1))
        params = [
            rng.uniform(-bound1, bound1, (m, d, h)),  # input -> hidden weights
            rng.uniform(-bound1, bound1, (m, h)),  # hidden biases
            rng.uniform(-bound2, bound2, (m, h)),  # hidden -> output weights
            rng.uniform(-bound2, bound2, m),  # output bias
        ]
        w1, b1, w2, b2 = params
        train_networks(xb, yb, wb, w1, b1, w2, b2, decay, epochs, *_RPROP)
        self.n_iter_ = epochs
        self.estimators_ = [
            _Network(w1[i], b1[i], w2[i], b2[i], x_mean, x_scale, y_mean, y_scale) for i in range(m)
        ]
        self.complexity_ = int(sum(net.complexity_ for net in self.estimators_))
        return self

    def predict(self, X):
        """Average prediction of all networks."""
        check_is_fitted(self)
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.mean([member.predict(X) for member in self.estimators_], axis=0)


class _Network:
    """One fitted network of :class:`BaggedNetworks` (plain arrays; picklable)."""

    def __init__(self, w1, b1, w2, b2, x_mean, x_scale, y_mean, y_scale):
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2
        self.x_mean, self.x_scale, self.y_mean, self.y_scale = x_mean, x_scale, y_mean, y_scale
        # the neural-network convention of metrics.complexity: nonzero weights and biases
        self.complexity_ = int(sum(np.count_nonzero(a) for a in (w1, b1, w2, b2)))

    def predict(self, X):
        z = ((np.asarray(X, dtype=np.float64) - self.x_mean) / self.x_scale) @ self.w1 + self.b1
        return (_sigmoid(z) @ self.w2 + self.b2) * self.y_scale + self.y_mean


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))
