"""The scikit-learn estimator and the Binarizer: contract, inputs, outputs, exports."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from parsimony.losses import Absolute, Pinball, Squared
from parsimony.trees import Binarizer, OptimalSparseRegressionTree

from _osrt_brute import brute_force_objective


@parametrize_with_checks([OptimalSparseRegressionTree(regularization=0.05, depth_limit=3), Binarizer()],
                         expected_failed_checks=lambda est: {})
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _binary_data(seed=0, n=60, m=6):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, m)) < 0.5).astype(int)
    y = 2.0 * X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(scale=0.2, size=n)
    return X, y


def test_binary_data_fit_matches_brute_force_and_reports():
    X, y = _binary_data()
    model = OptimalSparseRegressionTree(regularization=0.02, depth_limit=2, binarizer=None).fit(X, y)
    assert model.status_ == "optimal" and model.gap_ == 0.0
    assert model.objective_ == pytest.approx(brute_force_objective(X, y, 0.02, 2))
    assert model.objective_ == pytest.approx(model.loss_ + 0.02 * model.n_leaves_)
    sse = ((y - model.predict(X)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert model.loss_ == pytest.approx(sse)
    assert model.depth_ <= 2
    assert model.lower_bound_ == model.objective_
    assert set(model.search_stats_) >= {"subproblems", "expansions", "bounds", "seconds"}


def test_absolute_loss_predicts_leaf_medians():
    X, y = _binary_data(1)
    model = OptimalSparseRegressionTree(regularization=0.01, depth_limit=2, loss="absolute", binarizer=None).fit(X, y)
    assert model.objective_ == pytest.approx(brute_force_objective(X, y, 0.01, 2, "absolute"))
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        vals = np.sort(y[leaves == leaf])
        assert model.tree_.value[leaf] == vals[(len(vals) - 1) // 2]


@pytest.mark.parametrize("loss", ["squared", "absolute"])
@pytest.mark.parametrize("depth", [None, 2])
def test_sample_weight_acts_as_repeated_and_removed_rows(loss, depth):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = np.round(X[:, 0] + (X[:, 1] > 0.3) + rng.normal(scale=0.5, size=40), 1)
    w = rng.integers(0, 4, 40)
    params = dict(regularization=0.02, depth_limit=depth, loss=loss)
    repeated = OptimalSparseRegressionTree(**params).fit(X.repeat(w, axis=0), y.repeat(w))
    order = rng.permutation(40)
    weighted = OptimalSparseRegressionTree(**params).fit(X[order], y[order], sample_weight=w[order])
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-12)
    np.testing.assert_array_equal(weighted.apply(X), repeated.apply(X))  # the same tree
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-12)
    keep = w > 0
    assert weighted.objective_ == pytest.approx(
        brute_force_objective(weighted._binarize(X[keep]), y[keep], 0.02, depth, loss, sample_weight=w[keep]),
        abs=1e-9)
    scaled = OptimalSparseRegressionTree(**params).fit(X, y, sample_weight=2.5 * w)  # the scale does not matter
    assert scaled.objective_ == pytest.approx(weighted.objective_, rel=1e-9)
    # leaves predict the weighted mean or the weighted median of their rows
    leaves = weighted.apply(X)
    for leaf in np.unique(leaves[keep]):
        rows = keep & (leaves == leaf)
        if loss == "squared":
            expected = np.average(y[rows], weights=w[rows])
        else:
            expected = np.sort(y[rows].repeat(w[rows]))[(w[rows].sum() - 1) // 2]
        assert weighted.tree_.value[leaf] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="sample_weight"):
        OptimalSparseRegressionTree().fit(X, y, sample_weight=-w)


def test_constant_target_gives_one_leaf():
    X, _ = _binary_data()
    model = OptimalSparseRegressionTree(regularization=0.0, binarizer=None).fit(X, np.full(len(X), 3.5))
    assert model.n_leaves_ == 1 and model.status_ == "optimal"
    np.testing.assert_allclose(model.predict(X), 3.5)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"regularization": -0.1}, "regularization"),
        ({"depth_limit": -1}, "depth_limit"),
        ({"loss": "huber"}, "loss"),
        ({"bound": "magic"}, "bound"),
        ({"time_limit": 0}, "time_limit"),
        ({"memory_limit": -5}, "memory_limit"),
        ({"binarizer": "sometimes"}, "binarizer"),
        ({"progress": "yes"}, "progress"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, message):
    X, y = _binary_data()
    with pytest.raises((ValueError, TypeError), match=message):
        OptimalSparseRegressionTree(**params).fit(X, y)


@pytest.mark.parametrize("name, obj", [("squared", Squared()), ("absolute", Absolute()), ("quantile", Pinball(0.8)),
                                       ("pinball", Pinball(0.8))])
def test_loss_names_and_objects_fit_the_same_tree(name, obj):
    """The loss vocabulary of every estimator: a name (with ``quantile``) or a loss object."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + rng.exponential(size=120)
    by_name = OptimalSparseRegressionTree(regularization=0.01, depth_limit=3, loss=name, quantile=0.8).fit(X, y)
    by_object = OptimalSparseRegressionTree(regularization=0.01, depth_limit=3, loss=obj, quantile=0.3).fit(X, y)
    assert by_name.objective_ == by_object.objective_
    np.testing.assert_array_equal(by_name.predict(X), by_object.predict(X))


def test_bad_data_raises_clear_errors():
    X, y = _binary_data()
    with pytest.raises(ValueError, match="binary"):
        OptimalSparseRegressionTree(binarizer=None).fit(X + 0.5, y)
    Xn = X.astype(float)
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        OptimalSparseRegressionTree().fit(Xn, y)
    with pytest.raises(ValueError, match="sample"):
        OptimalSparseRegressionTree().fit(X[:1], y[:1])
    fitted = OptimalSparseRegressionTree(binarizer=None, depth_limit=1).fit(X, y)
    with pytest.raises(ValueError, match="binary"):
        fitted.predict(X + 2)


def test_binarizer_auto_names_and_new_data():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 120).astype(float), "smoker": rng.integers(0, 2, 120)})
    y = (frame["age"] > 50) * 3.0 + frame["smoker"] + rng.normal(scale=0.1, size=120)
    model = OptimalSparseRegressionTree(regularization=0.01, depth_limit=2).fit(frame, y)
    names = list(model.binary_feature_names_)
    assert names[-1] == "smoker" and all(n.startswith("age <= ") for n in names[:-1])
    assert len(names) == 5  # 4 thresholds for age, smoker passes through
    text = model.export_text()
    assert "age" in text and "value:" in text
    new = pd.DataFrame({"age": [20.0, 70.0], "smoker": [0, 1]})
    pred = model.predict(new)
    assert pred[1] > pred[0] + 2
    d = model.to_dict()
    assert d["n_samples"] == 120 and "condition" in d


def test_binarizer_thresholds_are_equal_frequency_midpoints():
    x = np.arange(1.0, 101.0)[:, None]
    b = Binarizer(n_thresholds=4).fit(x)
    np.testing.assert_allclose(b.thresholds_[0], [20.5, 40.5, 60.5, 80.5])
    out = b.transform(np.array([[20.0], [21.0], [100.0]]))
    np.testing.assert_array_equal(out, [[1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0]])
    assert list(b.get_feature_names_out()) == ["x0 <= 20.5", "x0 <= 40.5", "x0 <= 60.5", "x0 <= 80.5"]
    few = Binarizer().fit(np.array([[1.0], [2.0], [2.0], [5.0]]))
    assert len(few.thresholds_[0]) <= 2
    user = Binarizer(thresholds={0: [10, 50]}).fit(x)
    np.testing.assert_allclose(user.thresholds_[0], [10, 50])


def test_deterministic_and_picklable():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] ** 2 + rng.normal(scale=0.1, size=80)
    a = OptimalSparseRegressionTree(regularization=0.01, depth_limit=3).fit(X, y)
    b = OptimalSparseRegressionTree(regularization=0.01, depth_limit=3).fit(X, y)
    np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict(X), a.predict(X))


def test_depth_limit_zero_and_regularization_tradeoff():
    X, y = _binary_data(5)
    assert OptimalSparseRegressionTree(depth_limit=0, binarizer=None).fit(X, y).n_leaves_ == 1
    leaves = [OptimalSparseRegressionTree(regularization=lam, binarizer=None).fit(X, y).n_leaves_
              for lam in (0.5, 0.05, 0.001)]
    assert leaves[0] <= leaves[1] <= leaves[2] and leaves[0] < leaves[2]


def test_time_limit_status_and_gap():
    rng = np.random.default_rng(6)
    X = (rng.random((400, 16)) < 0.5).astype(int)
    y = X[:, :8] @ rng.normal(size=8) + rng.normal(scale=0.5, size=400)
    model = OptimalSparseRegressionTree(regularization=0.0005, binarizer=None, time_limit=0.05).fit(X, y)
    assert model.status_ == "time_limit"
    assert model.gap_ > 0 and model.lower_bound_ <= model.objective_


#: What a fit may take beyond its time limit (compilation aside): one slice of the kernel (paced
#: to 0.05-0.2 s, at least one node expansion) and the tree's assembly, with room for a loaded
#: machine. (Under the pinball loss one expansion bounds every child of the node: the data below
#: keeps it short.)
TIME_LIMIT_SLACK = 1.0


@pytest.mark.parametrize("loss", ["squared", "quantile"])
def test_time_limit_covers_the_whole_fit_and_returns_the_best_tree(loss):
    """A search that cannot finish in 0.5 s: the fit (binarisation and the greedy completion of the
    tree included) returns within the limit and the slack, with a tree better than one leaf."""
    import time

    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=600 if loss == "squared" else 200, noise=0.5, random_state=0)
    model = OptimalSparseRegressionTree(regularization=0.0005, loss=loss, quantile=0.7, time_limit=0.5)
    start = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - start - model.search_stats_["compile_seconds"]
    assert model.status_ == "time_limit"
    assert elapsed <= 0.5 + TIME_LIMIT_SLACK
    assert model.search_stats_["seconds"] <= elapsed
    assert 0 < model.gap_ and model.lower_bound_ <= model.objective_ < 1 + model.regularization
    # the objective is the returned tree's own (normalised loss of its predictions + lam * leaves)
    pred = model.predict(X)
    if loss == "squared":
        fitted, base = np.sum((y - pred) ** 2), np.sum((y - y.mean()) ** 2)
    else:
        pinball = lambda r: np.sum(np.maximum(0.7 * r, -0.3 * r))  # noqa: E731
        fitted, base = pinball(y - pred), pinball(y - np.quantile(y, 0.7, method="inverted_cdf"))
    assert fitted / base + model.regularization * model.n_leaves_ == pytest.approx(model.objective_, rel=1e-6)


def test_progress_bar_shows_the_search(capsys):
    X, y = _binary_data(n=200, m=12)
    model = OptimalSparseRegressionTree(regularization=0.001, binarizer=None, time_limit=0.3, progress=True).fit(X, y)
    err = capsys.readouterr().err
    assert "OSRT" in err and "best" in err and "bound" in err and "subproblems" in err
    quiet = OptimalSparseRegressionTree(regularization=0.001, binarizer=None, time_limit=0.3).fit(X, y)
    assert "OSRT" not in capsys.readouterr().err
    assert quiet.status_ == model.status_


def test_plot_tree_draws_every_node():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = _binary_data()
    model = OptimalSparseRegressionTree(regularization=0.02, depth_limit=2, binarizer=None).fit(X, y)
    ax = model.plot_tree()
    texts = [t.get_text() for t in ax.texts]
    assert sum("n=" in t for t in texts) == model.tree_.node_count


@pytest.mark.parametrize("loss", ["squared", "absolute", "quantile"])
@pytest.mark.parametrize("factor", [1e-7, 3e-7, 1e-100, 1e160, 1e300])
def test_scale_of_y_does_not_matter(loss, factor):
    """A target with a small spread is not constant, a huge one does not overflow: same tree, scaled leaves."""
    X, y = _binary_data(2)
    params = dict(regularization=0.01, depth_limit=2, loss=loss, quantile=0.7, binarizer=None)
    reference = OptimalSparseRegressionTree(**params).fit(X, y)
    scaled = OptimalSparseRegressionTree(**params).fit(X, y * factor)
    assert reference.n_leaves_ > 1
    assert scaled.status_ == "optimal"
    # the same optimum (rounding in y * factor may pick another of equally good trees)
    assert scaled.objective_ == pytest.approx(reference.objective_, rel=1e-9)
    assert scaled.n_leaves_ == reference.n_leaves_
    pred = scaled.predict(X)
    assert np.all(np.isfinite(pred))
    assert np.min(y * factor) <= pred.min() and pred.max() <= np.max(y * factor)


def test_near_constant_target_with_offset_is_constant_only_at_rounding_level():
    X, y = _binary_data(2)
    noisy = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(X, 1e6 + 1e-3 * y)
    assert noisy.n_leaves_ > 1  # a spread of 1e-9 relative to the offset is still a real signal
    rounding = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(X, 1.0 + 1e-15 * (y > y.mean()))
    assert rounding.n_leaves_ == 1


@pytest.mark.slow
def test_first_use_compilation_does_not_eat_the_time_limit(tmp_path):
    """With no compiled kernels, a fit under a time limit compiles first and then searches to optimality."""
    import subprocess
    import sys

    code = (
        "import numpy as np, time\n"
        "from parsimony import OptimalSparseRegressionTree\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(200, 4)); y = X[:, 0] + (X[:, 1] > 0) + rng.normal(size=200) * 0.3\n"
        "m = OptimalSparseRegressionTree(regularization=0.02, depth_limit=3, time_limit=1.0).fit(X, y)\n"
        "print(m.status_, m.search_stats_['seconds'] <= 1.5, m.search_stats_['compile_seconds'] > 0)\n"
    )
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["optimal", "True", "True"]
