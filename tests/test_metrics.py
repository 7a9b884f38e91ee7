import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LinearRegression, QuantileRegressor
from sklearn.metrics import mean_pinball_loss, r2_score
from sklearn.tree import DecisionTreeRegressor

from parsimony.metrics import (
    TOKEN_COMPLEXITY,
    QuantileScoreMixin,
    absolute_coverage_error,
    complexity,
    coverage,
    expression_complexity,
    interval_coverage,
    normalized_quantile_loss,
    pinball_loss,
)
from parsimony.symbolic._expressions import token_weights


def test_appendix_a_example():
    # SQR paper Appendix A: 100 unit-size errors, half below at tau=.5; 10 below / 90 above at tau=.9.
    y = np.zeros(100)
    half = np.r_[np.ones(50), -np.ones(50)]
    assert pinball_loss(y, half, 0.5) == pytest.approx(0.5)
    tenth = np.r_[-np.ones(10), np.ones(90)]  # 10 under-predictions weigh .9, 90 over-predictions .1
    assert pinball_loss(y, tenth, 0.9) == pytest.approx(0.18)


def test_pinball_direction_and_sklearn_agreement():
    rng = np.random.default_rng(0)
    y, p, w = rng.normal(size=50), rng.normal(size=50), rng.uniform(0.1, 2, 50)
    assert pinball_loss([1.0], [0.0], 0.9) == pytest.approx(0.9)  # under-prediction weighs tau
    assert pinball_loss([0.0], [1.0], 0.9) == pytest.approx(0.1)
    for tau in (0.1, 0.5, 0.93):
        assert pinball_loss(y, p, tau, sample_weight=w) == pytest.approx(
            mean_pinball_loss(y, p, alpha=tau, sample_weight=w))
    assert pinball_loss(y, p, 0.5) == pytest.approx(0.5 * np.mean(np.abs(y - p)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=40), st.floats(0.01, 0.99))
def test_pinball_minimised_by_empirical_quantile(values, tau):
    y = np.asarray(values)
    q = np.quantile(y, tau, method="inverted_cdf")  # a minimiser of the empirical pinball risk
    best = pinball_loss(y, np.full_like(y, q), tau)
    for c in np.r_[y, y.min() - 1.0, y.max() + 1.0, q + 0.37, q - 0.37]:
        assert best <= pinball_loss(y, np.full_like(y, c), tau) + 1e-9 * (1 + abs(best))


def test_normalized_loss_coverage_and_ace():
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    p = np.array([0.5, 0.5, 2.5, 2.5, 4.0])
    assert normalized_quantile_loss(y, p, 0.5) == pytest.approx(pinball_loss(y, p, 0.5) / 4.0)
    assert coverage(y, p) == pytest.approx(3 / 5)  # y <= prediction, ties included
    assert absolute_coverage_error(y, p, 0.9) == pytest.approx(0.3)
    assert coverage(y, p, sample_weight=[1, 0, 0, 0, 0]) == pytest.approx(1.0)
    assert interval_coverage(y, p - 1, p + 0.1) == pytest.approx(3 / 5)


def test_nql_divides_by_the_given_whole_dataset_range():
    # a test fold [0, 2, 4] of a dataset whose target spans 10, predicted by 1 everywhere:
    # residuals -1, 1, 3; pinball at .5: (0.5 + 0.5 + 1.5) / 3; at .9: (0.1 + 0.9 + 2.7) / 3
    y, p = np.array([0.0, 2.0, 4.0]), np.ones(3)
    assert normalized_quantile_loss(y, p, 0.5, y_range=10.0) == pytest.approx(2.5 / 3 / 10)
    assert normalized_quantile_loss(y, p, 0.9, y_range=10.0) == pytest.approx(3.7 / 3 / 10)
    assert normalized_quantile_loss(y, p, 0.9) == pytest.approx(3.7 / 3 / 4)  # the fold's own range
    assert normalized_quantile_loss([1.0, 1.0], [1.0, 2.0], 0.5, y_range=2.0) == pytest.approx(0.125)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: normalized_quantile_loss([1, 2], [1, 2], 0.5, y_range=0.0), "y_range must be a positive"),
        (lambda: normalized_quantile_loss([1, 2], [1, 2], 0.5, y_range=np.nan), "y_range must be a positive"),
        (lambda: pinball_loss([1, 2], [1, 2], 0.0), "strictly between 0 and 1"),
        (lambda: pinball_loss([1, 2], [1, 2], 1.5), "strictly between 0 and 1"),
        (lambda: pinball_loss([1, np.nan], [1, 2], 0.5), "y_true contains NaN"),
        (lambda: pinball_loss([1, 2], [1, np.inf], 0.5), "y_pred contains infinite"),
        (lambda: pinball_loss([1, 2], [1, 2, 3], 0.5), "inconsistent numbers of samples"),
        (lambda: pinball_loss([], [], 0.5), "y_true is empty"),
        (lambda: coverage(np.ones((3, 2)), np.ones((3, 2))), "one-dimensional"),
        (lambda: normalized_quantile_loss([1, 1], [1, 2], 0.5), "constant y_true"),
        (lambda: pinball_loss([1, 2], [1, 2], 0.5, sample_weight=[1, -1]), "non-negative"),
        (lambda: interval_coverage([1, 2], [0, 3], [2, 2.5]), "lower > upper in 1 rows"),
        (lambda: expression_complexity("x0 + x1", weights={"add": -1}), r"weights\['add'\]"),
        (lambda: expression_complexity("x0 + x1", weights={"tan": 2}), "weights names an unknown token 'tan'"),
        (lambda: complexity(float("nan")), "non-finite"),
        (lambda: complexity(float("inf")), "non-finite"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_expression_complexity_takes_the_estimators_token_names():
    """The one token-weight table of SQR's complexity_of_operators: aliases and "variable" too,
    weights >= 0 here (integers >= 1 for the search)."""
    assert expression_complexity("x0 + x1", weights={"+": 5, "variable": 2}) == 9
    assert expression_complexity("x0 + x1", weights={"add": 0}) == 2
    with pytest.raises(ValueError, match=r"complexity_of_operators\['add'\] must be an integer >= 1"):
        token_weights({"add": 0}, "complexity_of_operators")


def test_expression_complexity_uses_paper_weights():
    assert expression_complexity("x0*x1 + cos(x2)") == 8  # x0 x1 * (3) + cos x2 (4) + + (1)
    assert expression_complexity("2.5*x0**2 + cos(x1)") == 10
    assert expression_complexity("x0/x1") == 1 + 1 + TOKEN_COMPLEXITY["div"]
    assert expression_complexity("sqrt(x0) - exp(x1)") == 5 + 5 + 1
    assert expression_complexity("log(x0)") == 5
    assert expression_complexity("x0") == 1
    assert expression_complexity("3.0") == 1


def test_complexity_dispatch():
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = X[:, 0] * 2 + 1
    assert complexity(LinearRegression().fit(X, y)) == 4  # 3 nonzero coefficients + bias
    qr = QuantileRegressor(alpha=0.5, quantile=0.5, solver="highs").fit(X, y)
    assert complexity(qr) == np.count_nonzero(qr.coef_) + (qr.intercept_ != 0)
    tree = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    assert complexity(tree) == tree.tree_.node_count
    with pytest.raises(TypeError, match="does not know"):
        complexity(object())


def test_complexity_of_pruned_ensembles():
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.neural_network import MLPRegressor

    from parsimony.ensembles import ForestPrune, OrderedBaggingRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=80)
    forest = RandomForestRegressor(n_estimators=6, max_depth=3, random_state=0).fit(X, y)
    pruned = ForestPrune(forest, alpha=0.05, random_state=0).fit(X, y)
    assert complexity(pruned) == pruned.n_nodes_ > 0
    bag = OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=2), n_estimators=10, keep=3, random_state=0).fit(X, y)
    kept = [bag.estimators_[i] for i in bag.order_[:3]]
    assert complexity(bag) == sum(m.tree_.node_count for m in kept)
    net = MLPRegressor(hidden_layer_sizes=(4,), max_iter=50, random_state=0).fit(X, y)
    assert complexity(net) == 3 * 4 + 4 + 4 * 1 + 1


class _EchoModel(QuantileScoreMixin, RegressorMixin, BaseEstimator):
    """Predicts its input columns (one per level); ``quantile=None`` keeps R^2."""

    def __init__(self, quantile=0.5):
        self.quantile = quantile

    def _score_quantiles(self):
        return None if self.quantile is None else super()._score_quantiles()

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        return X[:, 0] if X.shape[1] == 1 else X


def _d2_by_brute_force(y, pred, tau, weight):
    best_constant = min(pinball_loss(y, np.full_like(y, c), tau, weight) for c in y)
    return 1.0 - pinball_loss(y, pred, tau, weight) / best_constant


def test_quantile_score_is_the_share_of_pinball_loss_explained_over_a_constant():
    rng = np.random.default_rng(0)
    y = rng.exponential(size=60)
    pred = np.column_stack([y * 0.5, y + rng.normal(0, 0.2, 60)])
    weight = rng.integers(1, 4, 60).astype(float)
    taus = [0.1, 0.9]
    expected = np.mean([_d2_by_brute_force(y, pred[:, j], t, weight) for j, t in enumerate(taus)])
    assert _EchoModel(taus).score(pred, y, sample_weight=weight) == pytest.approx(expected)
    # one level: one column; the perfect prediction scores 1, the best constant 0
    assert _EchoModel(0.3).score(y[:, None], y) == pytest.approx(1.0)
    constant = np.full((60, 1), np.quantile(y, 0.3, method="inverted_cdf"))
    assert _EchoModel(0.3).score(constant, y) == pytest.approx(0.0, abs=1e-12)
    # no levels: R^2, as RegressorMixin
    assert _EchoModel(None).score(pred[:, :1], y) == pytest.approx(r2_score(y, pred[:, 0]))
    with pytest.raises(ValueError, match="2 columns for 1 quantile levels"):
        _EchoModel(0.5).score(pred, y)
