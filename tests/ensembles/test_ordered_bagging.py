"""Tests for ordered bagging: the greedy ordering kernel against naive versions of Algorithm 1,
and the OrderedBaggingRegressor estimator."""

from __future__ import annotations

import numpy as np
import pytest

from parsimony.ensembles._ordering import error_covariance, greedy_order, order_members, subset_sums


def naive_algorithm1(c):
    """The paper's Algorithm 1 line by line: Eq. 6 recomputed from scratch at every step."""
    m = c.shape[0]
    s, values = [], []
    for u in range(1, m + 1):
        minimum, best = np.inf, None
        for k in range(m):
            if k in s:
                continue
            value = (sum(c[i, j] for i in s for j in s) + 2 * sum(c[i, k] for i in s) + c[k, k]) / u**2
            if value < minimum:
                best, minimum = k, value
        s.append(best)
        values.append(minimum)
    return np.array(s), np.array(values)


def naive_from_predictions(predictions, y):
    """Greedy by the training MSE of the averaged ensemble, recomputed from predictions."""
    m = predictions.shape[1]
    s, values = [], []
    for u in range(1, m + 1):
        minimum, best = np.inf, None
        for k in range(m):
            if k in s:
                continue
            total = predictions[:, s + [k]].sum(axis=1)
            value = np.mean((total - u * y) ** 2) / u**2  # = mean((average - y)^2)
            if value < minimum:
                best, minimum = k, value
        s.append(best)
        values.append(minimum)
    return np.array(s), np.array(values)


def random_problem(seed, n=40, m=12):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    # members share a bias and have correlated errors, as bagged regressors do
    predictions = y[:, None] + 0.3 * rng.normal(size=(n, 1)) + rng.normal(scale=rng.uniform(0.2, 1.0, m), size=(n, m))
    return predictions, y


@pytest.mark.parametrize("seed", range(8))
def test_fast_ordering_equals_naive_algorithm1_and_predictions(seed):
    predictions, y = random_problem(seed, m=5 + seed)
    order, errors = order_members(predictions, y)
    c = error_covariance(predictions, y)
    naive_order, naive_values = naive_algorithm1(c)
    np.testing.assert_array_equal(order, naive_order)
    np.testing.assert_allclose(errors, naive_values, rtol=1e-12, atol=1e-14)
    pred_order, pred_values = naive_from_predictions(predictions, y)
    np.testing.assert_array_equal(order, pred_order)
    np.testing.assert_allclose(errors, pred_values, rtol=1e-10)
    assert sorted(order.tolist()) == list(range(predictions.shape[1]))
    # the last value is the training error of the complete ensemble
    np.testing.assert_allclose(errors[-1], np.mean((predictions.mean(axis=1) - y) ** 2), rtol=1e-10)


def test_ties_are_broken_by_lowest_index_in_all_versions():
    # integer data on 16 rows: every sum is exact, so duplicated members give exact ties
    rng = np.random.default_rng(3)
    base = rng.integers(-3, 4, size=(16, 4)).astype(float)
    predictions = base[:, [0, 1, 0, 2, 1, 3, 3, 2]]  # each column appears twice
    y = np.zeros(16)
    order, errors = order_members(predictions, y)
    c = error_covariance(predictions, y)
    assert np.array_equal(order, naive_algorithm1(c)[0])
    assert np.array_equal(order, naive_from_predictions(predictions, y)[0])
    # identical members: the lower index always comes first
    for a, b in [(0, 2), (1, 4), (3, 7), (5, 6)]:
        assert list(order).index(a) < list(order).index(b)
    # all members equal: the order is the identity
    same = np.repeat(rng.normal(size=(16, 1)), 6, axis=1)
    np.testing.assert_array_equal(order_members(same, y)[0], np.arange(6))


def test_greedy_step_is_the_best_single_addition():
    predictions, y = random_problem(11, n=60, m=20)
    order, errors = order_members(predictions, y)
    for u in range(1, 20):
        prefix = list(order[: u - 1])
        rest = [k for k in range(20) if k not in prefix]
        mses = [np.mean((predictions[:, prefix + [k]].mean(axis=1) - y) ** 2) for k in rest]
        assert rest[int(np.argmin(mses))] == order[u - 1]
        assert errors[u - 1] == pytest.approx(min(mses), rel=1e-10)


def test_error_covariance_chunked_equals_direct():
    predictions, y = random_problem(5, n=1000, m=7)
    direct = (predictions - y[:, None]).T @ (predictions - y[:, None]) / 1000
    np.testing.assert_allclose(error_covariance(predictions, y, chunk_rows=64), direct, rtol=1e-12)
    np.testing.assert_allclose(error_covariance(predictions, y), direct, rtol=1e-12)


def test_subset_sums_match_brute_force():
    predictions, y = random_problem(2, m=9)
    c = error_covariance(predictions, y)
    order = np.random.default_rng(0).permutation(9)
    totals, diagonal = subset_sums(c, order)
    for u in range(1, 10):
        sub = c[np.ix_(order[:u], order[:u])]
        assert totals[u - 1] == pytest.approx(sub.sum(), rel=1e-12)
        assert diagonal[u - 1] == pytest.approx(np.trace(sub), rel=1e-12)


@pytest.mark.parametrize(
    "predictions, y, message",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), np.zeros(2), "NaN"),
        (np.ones((3, 2)), np.array([0.0, np.inf, 1.0]), "y contains"),
        (np.ones((3, 2)), np.zeros(4), "rows for"),
        (np.ones(3), np.zeros(3), "n_members"),
    ],
)
def test_ordering_rejects_bad_input(predictions, y, message):
    with pytest.raises(ValueError, match=message):
        order_members(predictions, y)


def test_greedy_order_rejects_bad_matrix():
    with pytest.raises(ValueError, match="square"):
        greedy_order(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        greedy_order(np.array([[1.0, np.nan], [np.nan, 1.0]]))


# ------------------------------------------------------------------------------ the estimator
from sklearn.ensemble import BaggingRegressor, RandomForestRegressor  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from parsimony.ensembles import OrderedBaggingRegressor  # noqa: E402


def friedman(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5))
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
    return X, y + rng.normal(size=n)


def small_model(**kwargs):
    kwargs.setdefault("n_estimators", 20)
    return OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=4), random_state=0, **kwargs)


@parametrize_with_checks(
    [OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=3), n_estimators=5)],
    # a bootstrap of n rows out of n is not one of N = sum(w) rows out of N: as BaggingRegressor
    expected_failed_checks=lambda est: {"check_sample_weight_equivalence_on_dense_data":
                                        "bootstrap samples differ between weighted and repeated rows"},
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_weighted_order_is_the_order_on_repeated_rows():
    X, y = friedman(120, 3)
    forest = RandomForestRegressor(n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    weight = np.random.default_rng(0).integers(0, 4, len(y))
    rows = np.repeat(np.arange(len(y)), weight)
    weighted = OrderedBaggingRegressor(forest, keep=0.4).fit(X, y, sample_weight=weight.astype(float))
    repeated = OrderedBaggingRegressor(forest, keep=0.4).fit(X[rows], y[rows])
    np.testing.assert_array_equal(weighted.order_, repeated.order_)
    np.testing.assert_allclose(weighted.train_errors_, repeated.train_errors_, rtol=1e-10)
    c = error_covariance(weighted._member_predictions(X), y, weight)
    np.testing.assert_allclose(c, error_covariance(weighted._member_predictions(X[rows]), y[rows]), rtol=1e-10)


class _WeightRecorder(LinearRegression):
    def fit(self, X, y, sample_weight=None):
        self.seen_rows_, self.seen_weight_ = X[:, 0].astype(int), sample_weight
        return super().fit(X, y, sample_weight)


def test_members_are_fitted_with_the_weights_of_their_bootstrap_rows():
    X, y = friedman(60, 4)
    X[:, 0] = np.arange(60)  # the first column names the row
    weight = 1.0 + np.arange(60)
    model = OrderedBaggingRegressor(_WeightRecorder(), n_estimators=4, random_state=0).fit(X, y, sample_weight=weight)
    for member in model.estimators_:  # the weights of its rows, up to one exact power-of-two factor (relative)
        ratio = weight[member.seen_rows_] / member.seen_weight_
        assert np.unique(ratio).size == 1 and np.frexp(ratio[0])[0] == 0.5
    from sklearn.neighbors import KNeighborsRegressor

    with pytest.raises(ValueError, match="KNeighborsRegressor.fit does not accept sample_weight"):
        OrderedBaggingRegressor(KNeighborsRegressor(), n_estimators=2).fit(X, y, sample_weight=weight)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        OrderedBaggingRegressor(_WeightRecorder(), n_estimators=2).fit(X, y, sample_weight=-weight)


def test_fit_orders_members_on_training_data_and_predicts_with_kept_prefix():
    X, y = friedman(150, 0)
    model = small_model(keep=0.25).fit(X, y)
    assert model.n_kept_ == 5
    predictions = np.column_stack([m.predict(X) for m in model.estimators_])
    order, errors = order_members(predictions, y)
    np.testing.assert_array_equal(model.order_, order)
    np.testing.assert_allclose(model.train_errors_, errors)
    X_test, _ = friedman(50, 1)
    expected = np.mean([model.estimators_[i].predict(X_test) for i in order[:5]], axis=0)
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-12)
    # members are fitted on bootstrap samples: different trees
    assert len({tuple(m.tree_.threshold[:3]) for m in model.estimators_}) > 1


@pytest.mark.parametrize("keep, expected", [(0.2, 4), (1.0, 20), (0.01, 1), (1, 1), (20, 20), (7, 7)])
def test_keep_fraction_or_count(keep, expected):
    X, y = friedman(60, 0)
    assert small_model(keep=keep).fit(X, y).n_kept_ == expected


@pytest.mark.parametrize("keep", [0, 0.0, -0.1, 1.5, 21, -3])
def test_bad_keep_is_a_clear_error(keep):
    X, y = friedman(60, 0)
    with pytest.raises(ValueError, match="keep must be"):
        small_model(keep=keep).fit(X, y)


def test_keep_of_wrong_type_is_a_clear_error():
    X, y = friedman(60, 0)
    with pytest.raises(TypeError, match="keep must be"):
        small_model(keep="all").fit(X, y)


class NoPredict:
    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        return self


class NaNPredictor(LinearRegression):
    def predict(self, X):
        out = super().predict(X)
        out[0] = np.nan
        return out


class FakeEnsemble:
    def __init__(self, members):
        self.estimators_ = members
        self.n_features_in_ = 5


def test_members_without_predict_are_a_clear_error():
    X, y = friedman(60, 0)
    with pytest.raises(ValueError, match="predict"):
        OrderedBaggingRegressor(NoPredict(), n_estimators=3).fit(X, y)
    members = [LinearRegression().fit(X, y), object()]
    with pytest.raises(TypeError, match="member 1 .*no predict"):
        OrderedBaggingRegressor(FakeEnsemble(members)).fit(X, y)


def test_only_ensembles_that_average_their_members_are_taken():
    from sklearn.base import clone
    from sklearn.ensemble import (AdaBoostRegressor, BaggingRegressor, ExtraTreesRegressor,
                                  GradientBoostingRegressor, RandomForestRegressor, StackingRegressor,
                                  VotingRegressor)
    from sklearn.tree import DecisionTreeRegressor

    X, y = friedman(120, 0)
    trees = [("a", DecisionTreeRegressor(max_depth=2)), ("b", DecisionTreeRegressor(max_depth=5)),
             ("c", LinearRegression())]
    refused = [AdaBoostRegressor(n_estimators=10, random_state=0), VotingRegressor(trees, weights=[1, 2, 4]),
               StackingRegressor(trees, cv=3), GradientBoostingRegressor(n_estimators=10, random_state=0)]
    for ensemble in refused:
        for pool in (ensemble, clone(ensemble).fit(X, y)):  # to fit, or fitted
            with pytest.raises(TypeError, match="averages its members"):
                OrderedBaggingRegressor(pool, keep=1.0).fit(X, y)
    taken = [BaggingRegressor(n_estimators=8, max_features=3, random_state=0),
             RandomForestRegressor(n_estimators=8, max_depth=3, random_state=0),
             ExtraTreesRegressor(n_estimators=8, max_depth=3, random_state=0), VotingRegressor(trees)]
    for ensemble in taken:
        fitted = clone(ensemble).fit(X, y)
        model = OrderedBaggingRegressor(fitted, keep=1.0).fit(X, y)  # all members kept: the ensemble itself
        np.testing.assert_allclose(model.predict(X), fitted.predict(X), rtol=1e-9, atol=1e-9)
    with pytest.raises(TypeError, match="no predict method, so it cannot be checked"):
        OrderedBaggingRegressor(FakeEnsemble([LinearRegression().fit(X, y)] * 2)).fit(X, y)


def test_nan_in_data_or_member_predictions_is_a_clear_error():
    X, y = friedman(60, 0)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        small_model().fit(Xn, y)
    yn = y.copy()
    yn[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        small_model().fit(X, yn)
    with pytest.raises(ValueError, match="NaN or infinite"):
        OrderedBaggingRegressor(NaNPredictor(), n_estimators=3).fit(X, y)
    model = small_model().fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        model.error_curve(X, yn)


def test_random_state_and_n_jobs_give_identical_results():
    X, y = friedman(80, 0)
    a = small_model(n_jobs=1).fit(X, y)
    from joblib import parallel_config

    with parallel_config(backend="threading"):  # same seeds per member whatever the backend; threads start fast
        b = small_model(n_jobs=2).fit(X, y)
    assert len(a.estimators_) == 20
    np.testing.assert_array_equal(a.order_, b.order_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    c = OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=4), n_estimators=20, random_state=1).fit(X, y)
    assert not np.array_equal(a.predict(X), c.predict(X))


def test_wraps_fitted_bagging_with_feature_subsets_and_random_forest():
    X, y = friedman(120, 0)
    bagging = BaggingRegressor(DecisionTreeRegressor(max_depth=3), n_estimators=15, max_features=3, random_state=0).fit(X, y)
    model = OrderedBaggingRegressor(bagging, keep=1.0).fit(X, y)
    assert model.estimators_[0] is bagging.estimators_[0]
    np.testing.assert_allclose(model.predict(X), bagging.predict(X), rtol=1e-10)  # all kept = the bagging average
    forest = RandomForestRegressor(n_estimators=12, max_depth=3, random_state=0).fit(X, y)
    model = OrderedBaggingRegressor(forest, keep=3).fit(X, y)
    predictions = np.column_stack([t.predict(X) for t in forest.estimators_])
    np.testing.assert_array_equal(model.order_, order_members(predictions, y)[0])
    # an unfitted ensemble is cloned and fitted; the argument itself stays unfitted
    unfitted = RandomForestRegressor(n_estimators=6, max_depth=2)
    model = OrderedBaggingRegressor(unfitted, random_state=0).fit(X, y)
    assert len(model.estimators_) == 6 and not hasattr(unfitted, "estimators_")
    with pytest.raises(ValueError, match="features"):
        OrderedBaggingRegressor(forest).fit(X[:, :4], y)


def test_error_curve_matches_direct_averages_and_training_errors():
    X, y = friedman(100, 0)
    model = small_model().fit(X, y)
    curve = model.error_curve(X, y)
    np.testing.assert_allclose(curve["ordered"].to_numpy(), model.train_errors_, rtol=1e-10)
    X_test, y_test = friedman(70, 1)
    curve = model.error_curve(X_test, y_test)
    predictions = np.column_stack([m.predict(X_test) for m in model.estimators_])
    for u in (1, 4, 20):
        assert curve.loc[u, "ordered"] == pytest.approx(np.mean((predictions[:, model.order_[:u]].mean(1) - y_test) ** 2))
        assert curve.loc[u, "original"] == pytest.approx(np.mean((predictions[:, :u].mean(1) - y_test) ** 2))
    assert curve.loc[20, "ordered"] == pytest.approx(curve.loc[20, "original"])
    assert curve.loc[4, "ordered"] == pytest.approx(np.mean((model.predict(X_test) - y_test) ** 2))


def test_bias_variance_matches_paper_formulas_and_decomposes_the_error():
    X, y = friedman(100, 0)
    model = small_model(n_estimators=10).fit(X, y)
    X_test, y_test = friedman(70, 1)
    table = model.bias_variance(X_test, y_test)
    curve = model.error_curve(X_test, y_test)
    errors = np.column_stack([m.predict(X_test) for m in model.estimators_]) - y_test[:, None]
    c = errors.T @ errors / len(y_test)
    for name, order in (("ordered", model.order_), ("original", np.arange(10))):
        for u in range(2, 11):
            s = order[:u]
            bias2 = sum(c[i, j] for i in s for j in s if i != j) / (u * (u - 1))
            variance = np.mean([c[i, i] for i in s]) - bias2
            assert table.loc[u, f"bias2_{name}"] == pytest.approx(bias2, rel=1e-10)
            assert table.loc[u, f"variance_{name}"] == pytest.approx(variance, rel=1e-10)
            # Eq. 8: E(u) = Var(u) / u + Bias(u)^2
            assert table.loc[u, f"bias2_{name}"] + table.loc[u, f"variance_{name}"] / u == pytest.approx(
                curve.loc[u, name], rel=1e-10
            )


def test_default_estimator_is_the_papers_network():
    X, y = friedman(60, 0)
    model = OrderedBaggingRegressor(n_estimators=3, random_state=0).fit(X, y)
    # BaggedNetworks' members: 5 logistic hidden units, linear output
    assert len(model.estimators_) == 3 and all(net.w1.shape == (X.shape[1], 5) for net in model.estimators_)
    pool = BaggedNetworks(n_estimators=3, max_iter=2000,
                          random_state=np.random.RandomState(0).randint(np.iinfo(np.int32).max))
    np.testing.assert_array_equal(model.estimators_[0].w1, pool.fit(X, y).estimators_[0].w1)
    assert model.predict(X).shape == (60,)
    # row weights are relative and reach the networks
    w = np.random.default_rng(1).uniform(0.1, 2.0, len(y))
    a = OrderedBaggingRegressor(n_estimators=3, random_state=0).fit(X, y, sample_weight=w)
    b = OrderedBaggingRegressor(n_estimators=3, random_state=0).fit(X, y, sample_weight=4 * w)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.predict(X), model.predict(X))


def test_pruned_network_ensemble_beats_complete_on_friedman():
    # the paper's claim on one realization (200 train / 2000 test), with its base learner
    X, y = friedman(200, 0)
    X_test, y_test = friedman(2000, 1)
    pool = BaggedNetworks(n_estimators=40, hidden_units=7, weight_decay=0.36, max_iter=300)
    model = OrderedBaggingRegressor(pool, random_state=0).fit(X, y)
    curve = model.error_curve(X_test, y_test)
    assert curve.loc[model.n_kept_, "ordered"] < 0.95 * curve.loc[40, "ordered"]
    assert model.train_errors_[model.n_kept_ - 1] < model.train_errors_[-1]


def test_plots_draw_curves():
    import matplotlib

    matplotlib.use("Agg")
    from parsimony.plotting import plot_bias_variance

    X, y = friedman(60, 0)
    model = small_model(n_estimators=8).fit(X, y)
    ax = model.plot_error_curve(X, y, label="train")
    assert len(ax.lines) == 3  # ordered, original, the keep marker
    np.testing.assert_allclose(ax.lines[0].get_ydata(), model.train_errors_)
    ax = plot_bias_variance(model.bias_variance(X, y), quantity="variance")
    assert len(ax.lines) == 2
    with pytest.raises(ValueError, match="quantity"):
        plot_bias_variance(model.bias_variance(X, y), quantity="mse")


# ------------------------------------------------------------------------------ bagged networks
from parsimony.ensembles._networks import train_networks  # noqa: E402
from parsimony.ensembles.bagged_networks import BaggedNetworks  # noqa: E402


def network_objective(x, y, w1, b1, w2, b2, decay, weight=1.0):
    hidden = 1 / (1 + np.exp(-(x @ w1 + b1)))
    return 0.5 * np.sum(weight * (hidden @ w2 + b2 - y) ** 2) + 0.5 * decay * (np.sum(w1**2) + np.sum(w2**2))


def random_networks(seed, m=3, n=30, d=4, h=3):
    rng = np.random.default_rng(seed)
    xb, yb = rng.normal(size=(m, n, d)), rng.normal(size=(m, n))
    weights = [rng.normal(size=(m, d, h)), rng.normal(size=(m, h)), rng.normal(size=(m, h)), rng.normal(size=m)]
    return xb, yb, weights


def test_network_kernel_first_step_follows_the_exact_gradient_sign():
    xb, yb, weights = random_networks(0)
    wb = np.random.default_rng(5).uniform(0, 3, size=yb.shape)  # row weights
    before = [w.copy() for w in weights]
    train_networks(xb, yb, wb, *weights, 0.3, 1, 0.01, 1.2, 0.5, 1e-6, 1.0)
    eps = 1e-6
    for i in range(3):
        flat = [np.array(w[i], dtype=float) for w in before]  # b2[i] becomes a 0-d array
        for p, (old, new) in enumerate(zip(before, weights)):
            for index in np.ndindex(flat[p].shape):
                plus = [f.copy() for f in flat]
                minus = [f.copy() for f in flat]
                plus[p][index] += eps
                minus[p][index] -= eps
                g = (network_objective(xb[i], yb[i], *plus, 0.3, wb[i])
                     - network_objective(xb[i], yb[i], *minus, 0.3, wb[i])) / (2 * eps)
                moved = np.asarray(new[i])[index] - np.asarray(old[i])[index]
                assert moved == pytest.approx(-0.01 * np.sign(g), abs=1e-12)


def test_network_kernel_decreases_each_objective():
    xb, yb, weights = random_networks(1)
    start = [network_objective(xb[i], yb[i], *(w[i] for w in weights), 0.1) for i in range(3)]
    train_networks(xb, yb, np.ones_like(yb), *weights, 0.1, 300, 0.05, 1.2, 0.5, 1e-6, 1.0)
    end = [network_objective(xb[i], yb[i], *(w[i] for w in weights), 0.1) for i in range(3)]
    assert all(e < 0.5 * s for s, e in zip(start, end))


def test_bagged_networks_fit_a_smooth_function_and_are_reproducible():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(200, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.05 * rng.normal(size=200)
    pool = BaggedNetworks(n_estimators=8, hidden_units=5, weight_decay=0.01, max_iter=400, random_state=0).fit(X, y)
    assert len(pool.estimators_) == 8
    assert pool.score(X, y) > 0.95
    again = BaggedNetworks(n_estimators=8, hidden_units=5, weight_decay=0.01, max_iter=400, random_state=0).fit(X, y)
    np.testing.assert_array_equal(pool.predict(X), again.predict(X))
    # members are different networks (own bootstrap sample and initial weights)
    assert not np.allclose(pool.estimators_[0].predict(X), pool.estimators_[1].predict(X))
    # as a pool of OrderedBaggingRegressor: its members are taken, not bagged again
    def ordered():
        pool = BaggedNetworks(n_estimators=8, hidden_units=5, weight_decay=0.01, max_iter=400)
        return OrderedBaggingRegressor(pool, keep=2, random_state=0).fit(X, y)

    model = ordered()
    assert len(model.estimators_) == 8 and model.n_kept_ == 2
    assert type(model.estimators_[0]).__name__ == "_Network"
    np.testing.assert_array_equal(model.predict(X), ordered().predict(X))


@parametrize_with_checks(
    [BaggedNetworks(n_estimators=3, hidden_units=2, max_iter=20)],
    expected_failed_checks=lambda est: {"check_sample_weight_equivalence_on_dense_data":
                                        "bootstrap samples differ between weighted and repeated rows"},
)
def test_bagged_networks_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("scale", [1e160, 1e300, 1e-300])
def test_networks_and_their_ordering_are_scale_free(scale):
    from parsimony.ensembles import BaggedNetworks

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120) + 2.0

    def pool():
        return BaggedNetworks(n_estimators=8, max_iter=60, random_state=0)

    ref = pool().fit(X, y)
    scaled = pool().fit(X, y * scale)
    pred = scaled.predict(X)
    assert np.all(np.isfinite(pred))
    np.testing.assert_allclose(pred / scale, ref.predict(X), rtol=1e-9)
    wide = pool().fit(X * scale, y)  # extreme inputs too
    np.testing.assert_allclose(wide.predict(X * scale), ref.predict(X), rtol=1e-9)
    ordered_ref = OrderedBaggingRegressor(pool(), keep=0.25, random_state=0).fit(X, y)
    ordered = OrderedBaggingRegressor(pool(), keep=0.25, random_state=0).fit(X, y * scale)
    np.testing.assert_array_equal(ordered.order_, ordered_ref.order_)
    assert np.all(np.isfinite(ordered.predict(X)))
    np.testing.assert_allclose(ordered.predict(X) / scale, ordered_ref.predict(X), rtol=1e-9)
