"""Split-conformal intervals (margin against brute force, coverage) and the Pareto-front plot."""

import math

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from parsimony.metrics import interval_coverage
from parsimony.symbolic import ConformalQuantileInterval, SymbolicQuantileRegressor
from parsimony.symbolic.conformal import conformal_margin, min_calibration_points


def test_margin_is_the_smallest_that_covers_enough_calibration_points():
    rng = np.random.default_rng(0)
    y = rng.normal(size=57)
    lower, upper = y - rng.uniform(-1, 1, 57), y + rng.uniform(-1, 1, 57)
    alpha = 0.1
    margin = conformal_margin(lower, upper, y, alpha)
    need = math.ceil((57 + 1) * (1 - alpha))
    # brute force: the smallest candidate widening that covers at least `need` points
    scores = np.maximum(lower - y, y - upper)
    candidates = np.sort(scores)
    brute = next(m for m in candidates if np.sum((y >= lower - m) & (y <= upper + m)) >= need)
    assert margin == pytest.approx(brute)
    with pytest.raises(ValueError, match="needs at least 19 calibration points, got 5"):  # margin would be inf
        conformal_margin(lower[:5], upper[:5], y[:5], 0.05)
    assert np.isfinite(conformal_margin(lower[:19], upper[:19], y[:19], 0.05))  # 19 is enough


def test_weighted_margin_counts_integer_weights_as_repeated_points():
    rng = np.random.default_rng(3)
    y = rng.normal(size=40)
    lower, upper = y - rng.uniform(-1, 1, 40), y + rng.uniform(-1, 1, 40)
    w = rng.integers(0, 4, size=40)
    rep = np.repeat(np.arange(40), w)
    for alpha in (0.05, 0.1, 0.3):
        assert conformal_margin(lower, upper, y, alpha, w) == conformal_margin(lower[rep], upper[rep], y[rep], alpha)
        assert conformal_margin(lower, upper, y, alpha, np.ones(40)) == conformal_margin(lower, upper, y, alpha)
    # 9 points at alpha = 0.7 need (9 + 1) * 0.3 = 3 of them, though 10 * (1 - 0.7) rounds above 3
    assert conformal_margin(np.zeros(9), np.zeros(9), np.arange(9.0), 0.7) == 2.0


def test_conformal_interval_checks_sample_weight():
    X = np.random.default_rng(0).random((30, 2))
    with pytest.raises(ValueError, match="sample_weight has 5 entries"):
        ConformalQuantileInterval().fit(X, X[:, 0], sample_weight=np.ones(5))


class _Band(RegressorMixin, BaseEstimator):
    """Two fixed-offset quantile columns around a linear fit: fast enough for input checks."""

    def __init__(self, quantile=0.5):
        self.quantile = quantile

    def fit(self, X, y, sample_weight=None):
        self.coef_ = np.linalg.lstsq(np.c_[X, np.ones(len(X))], y, rcond=None)[0]
        return self

    def predict(self, X):
        mid = np.c_[X, np.ones(len(X))] @ self.coef_
        return np.column_stack([mid - 1.0, mid + 1.0])


@pytest.mark.parametrize("n, alpha, need", [(20, 0.01, 99), (8, 0.1, 9)])
def test_impossible_calibration_raises_naming_the_points_needed(n, alpha, need):
    X = np.random.default_rng(0).random((n, 2))
    with pytest.raises(ValueError, match=f"needs at least {need} calibration points"):
        ConformalQuantileInterval(_Band(), alpha=alpha, random_state=0).fit(X, X[:, 0])


@pytest.mark.parametrize("alpha", [0.4, 0.2, 0.1, 1 / 3, 0.05, 0.013, 1e-4, 1e-6])
def test_min_calibration_points_is_where_the_margin_becomes_finite(alpha):
    need = min_calibration_points(alpha)
    y = np.linspace(0.0, 1.0, need)
    assert np.isfinite(conformal_margin(y - 0.5, y + 0.5, y, alpha))
    with pytest.raises(ValueError, match=f"needs at least {need} calibration points"):
        conformal_margin(y[1:] - 0.5, y[1:] + 0.5, y[1:], alpha)


def test_normalised_weights_are_not_silently_read_as_one_point():
    X = np.random.default_rng(0).random((400, 2))
    y = X[:, 0]
    with pytest.raises(ValueError, match="normalised to sum to 1"):
        ConformalQuantileInterval(_Band(), alpha=0.1, random_state=0).fit(X, y, sample_weight=np.ones(400) / 400)
    model = ConformalQuantileInterval(_Band(), alpha=0.1, random_state=0).fit(X, y, sample_weight=np.ones(400))
    assert np.isfinite(model.predict(X)).all()


def test_single_level_estimator_gets_a_clear_message():
    from sklearn.linear_model import LinearRegression, QuantileRegressor

    X = np.random.default_rng(0).random((60, 2))
    with pytest.raises(TypeError, match="QuantileRegressor must take two quantile levels"):
        ConformalQuantileInterval(QuantileRegressor()).fit(X, X[:, 0])
    with pytest.raises(TypeError, match="no `quantile` parameter"):
        ConformalQuantileInterval(LinearRegression()).fit(X, X[:, 0])


def test_conformal_interval_covers():
    # split-conformal coverage varies with the calibration draw (sd ~ sqrt(.8 * .2 / n_cal)):
    # 2000 calibration rows make the 0.04 tolerance more than four standard deviations
    rng = np.random.default_rng(1)
    n = 4000
    X = rng.uniform(0, 2, size=(n, 1))
    y = X[:, 0] + X[:, 0] ** 2 * rng.normal(size=n)
    Xt = rng.uniform(0, 2, size=(4000, 1))
    yt = Xt[:, 0] + Xt[:, 0] ** 2 * rng.normal(size=4000)
    base = SymbolicQuantileRegressor(niterations=6, populations=4, progress=False, random_state=0)
    model = ConformalQuantileInterval(base, alpha=0.2, calibration_size=0.5, random_state=0).fit(X, y)
    band = model.predict_interval(Xt)
    assert band.shape == (4000, 2) and np.all(band[:, 0] <= band[:, 1])
    assert abs(interval_coverage(yt, band[:, 0], band[:, 1]) - 0.8) < 0.04
    assert np.isfinite(model.margin_)
    with pytest.raises(ValueError, match="alpha"):
        ConformalQuantileInterval(base, alpha=1.0).fit(X, y)


def test_plot_pareto_front():
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(80, 2))
    y = X[:, 0] ** 2 + 0.1 * rng.normal(size=80)
    model = SymbolicQuantileRegressor(quantile=[0.2, 0.8], niterations=3, populations=2, progress=False,
                                      random_state=0).fit(X, y)
    ax = model.plot_pareto_front()
    assert len(ax.get_lines()) == 4  # a front and a selected marker per quantile
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["tau = 0.2", "tau = 0.8"]


class _CrossedBand(RegressorMixin, BaseEstimator):
    """Predicts the band ``[x + 1, x - 1]``: its two quantile columns are crossed everywhere."""

    def __init__(self, quantile=0.5):
        self.quantile = quantile

    def fit(self, X, y):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        x = np.asarray(X)[:, 0]
        return np.column_stack([x + 1.0, x - 1.0])


def test_crossed_quantiles_are_calibrated_as_they_are_predicted():
    # the band is used as [min, max]; calibrating the unswapped band would over-cover
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(6000, 1))
    y = X[:, 0] + 2.0 * rng.normal(size=6000)
    model = ConformalQuantileInterval(_CrossedBand(), alpha=0.2, calibration_size=0.5, random_state=0)
    model.fit(X[:4000], y[:4000])
    band = model.predict_interval(X[4000:])
    assert abs(interval_coverage(y[4000:], band[:, 0], band[:, 1]) - 0.8) < 0.03
