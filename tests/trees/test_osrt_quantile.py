"""OSRT with the quantile (pinball) loss: exact against exhaustive search, valid bounds, estimator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from parsimony.losses import LOSS_PINBALL, Absolute, Pinball
from parsimony.trees import OptimalSparseRegressionTree, _records
from parsimony.trees._kmeans import cluster_costs
from parsimony.trees._classes import _bitsets, _equivalence_classes
from parsimony.trees._driver import find_tree

from _osrt_brute import brute_force_objective, leaf_loss, pinball, kernel_lower_bound, random_problem, table_splits, tree_objective

TAUS = (0.1, 0.3, 0.75, 0.9)


@pytest.mark.parametrize("tau", TAUS)
@pytest.mark.parametrize("bound", ["kmeans", "equivalent"])
def test_objective_equals_exhaustive_search(tau, bound):
    for seed in range(0, 120, 3 if bound == "kmeans" else 8):
        Xb, y, lam, depth = random_problem(seed)
        rng = np.random.default_rng(seed)
        w = rng.uniform(0.2, 3.0, len(y)) if seed % 3 == 1 else np.ones(len(y))
        result = find_tree(Xb, y, Pinball(tau), lam, depth, bound, sample_weight=w)
        expected = brute_force_objective(Xb, y, lam, depth, "quantile", sample_weight=w, tau=tau)
        assert result.status == "optimal"
        assert result.objective == pytest.approx(expected, abs=1e-9), (seed, tau)
        assert tree_objective(table_splits(result.tree, Xb), y, lam, "quantile", w, tau) == pytest.approx(expected, abs=1e-9), seed


def test_half_quantile_is_the_absolute_loss():
    for seed in range(40):
        Xb, y, lam, depth = random_problem(seed)
        q = find_tree(Xb, y, Pinball(0.5), lam, depth)
        a = find_tree(Xb, y, Absolute(), lam, depth)
        assert q.objective == pytest.approx(a.objective, abs=1e-12)


@pytest.mark.parametrize("tau", TAUS)
def test_lower_bounds_never_exceed_the_optimum(tau):
    """The pinball equivalent-points bound of random subproblems (every depth) <= their optimum."""
    rng = np.random.default_rng(17)
    checked = 0
    for seed in range(12):
        Xb, y, lam, _ = random_problem(seed)
        w = rng.uniform(0.2, 3.0, len(y)) if seed % 2 else np.ones(len(y))
        ys = y / leaf_loss(y, "quantile", w, tau)  # the search scales y so that one leaf has loss 1
        uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, ys, w, Pinball(tau))
        order = np.argsort(ys, kind="stable")
        n_classes = len(cw)
        fbits = _bitsets(uniq.astype(bool), 1)
        for _ in range(4):
            subset = np.nonzero(rng.random(n_classes) < 0.6)[0]
            if subset.size == 0:
                continue
            words = _bitsets(np.isin(np.arange(n_classes), subset)[:, None], 1)[0]
            rows = np.nonzero(np.isin(row_class, subset))[0]
            for d in (0, 1, 2, 3, _records.UNLIMITED):
                opt = brute_force_objective(Xb, y, lam, None if d == _records.UNLIMITED else d, "quantile", rows=rows,
                                            sample_weight=w, tau=tau)
                problem = _records.make_problem(LOSS_PINBALL, _records.BOUND_KMEANS, lam, d == _records.UNLIMITED, uniq,
                                               fbits, cw, cs, cq, cmean, cwithin, row_class[order].astype(np.int64),
                                               ys[order], w[order], tau=tau)
                lb = kernel_lower_bound(problem, words, d)
                assert lb <= opt + 1e-9, (seed, d, tau)
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("tau", TAUS)
def test_pinball_clustering_equals_brute_force_partitions(tau):
    """The k-level step function DP under the pinball cost, against every assignment of points."""
    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(1, 6))
        v = np.sort(rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n))
        w = (np.ones(n), rng.uniform(0.1, 3.0, n))[trial % 2]
        _, costs = cluster_costs(LOSS_PINBALL, w, v, n, 0.0, 0.0, tau)
        for k in range(1, min(len(costs), 3) + 1):
            best = np.inf
            for labels in itertools.product(range(k), repeat=n):
                labels = np.array(labels)
                total = sum(min(np.sum(w[labels == c] * pinball(v[labels == c] - x, tau)) for x in v[labels == c])
                            for c in range(k) if (labels == c).any())
                best = min(best, total)
            assert costs[k - 1] == pytest.approx(best, abs=1e-9), (trial, k)


@pytest.mark.parametrize("tau", (0.2, 0.9))
def test_estimator_predicts_leaf_quantiles_and_is_certified(tau):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + (X[:, 1] > 0) * 2 + rng.standard_exponential(120)
    w = rng.integers(1, 4, 120).astype(float)
    model = OptimalSparseRegressionTree(regularization=0.02, depth_limit=3, loss="quantile", quantile=tau)
    model.fit(X, y, sample_weight=w)
    assert model.status_ == "optimal" and model.gap_ == 0.0 and model.lower_bound_ == model.objective_
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        vals = np.sort(y[leaves == leaf].repeat(w[leaves == leaf].astype(int)))
        assert model.tree_.value[leaf] == vals[int(np.ceil(tau * len(vals))) - 1]  # lower tau-quantile
    repeated = OptimalSparseRegressionTree(regularization=0.02, depth_limit=3, loss="quantile", quantile=tau)
    repeated.fit(X.repeat(w.astype(int), axis=0), y.repeat(w.astype(int)))
    assert repeated.objective_ == pytest.approx(model.objective_, rel=1e-12)
    # the objective is the pinball loss over that of the best constant, plus lambda per leaf
    pred = model.predict(X)
    best_constant = min(np.sum(w * pinball(y - c, tau)) for c in y)
    assert model.objective_ == pytest.approx(np.sum(w * pinball(y - pred, tau)) / best_constant
                                             + 0.02 * model.n_leaves_)
    limited = OptimalSparseRegressionTree(regularization=0.001, loss="quantile", quantile=tau, time_limit=0.05,
                                          memory_limit=5).fit(X, y)
    assert limited.status_ in {"optimal", "time_limit", "memory_limit"}
    assert limited.lower_bound_ <= limited.objective_ and limited.gap_ >= 0


@pytest.mark.parametrize("quantile", [0.0, 1.0, 1.5, "0.5"])
def test_bad_quantile_raises(quantile):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises((ValueError, TypeError), match="quantile"):
        OptimalSparseRegressionTree(loss="quantile", quantile=quantile).fit(X, X[:, 0])
