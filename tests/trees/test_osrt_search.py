"""Exactness of the OSRT search against exhaustive search, and validity of every bound."""

from __future__ import annotations

import numpy as np
import pytest

from parsimony.trees import _search
from parsimony.trees.osrt import _bitsets, _equivalence_classes, solve

from _osrt_brute import brute_force_objective, leaf_loss, kernel_lower_bound, random_problem, tree_objective


def _weights(seed, n):
    """Row weights for a weighted variant of a random problem: real, integer or with zeros."""
    rng = np.random.default_rng(10_000 + seed)
    return (rng.uniform(0.1, 3.0, n), rng.integers(1, 4, n).astype(float))[seed % 2]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bound", ["kmeans", "equivalent", "none"])
def test_objective_equals_exhaustive_search(bound, weighted):
    seeds = range(240) if bound == "kmeans" and not weighted else range(0, 240, 3)
    for seed in seeds:
        Xb, y, lam, depth = random_problem(seed)
        loss = "absolute" if seed % 4 == 1 or (weighted and seed % 4 == 2) else "squared"
        w = _weights(seed, len(y)) if weighted else None
        result = solve(Xb, y, lam, depth, loss, bound, sample_weight=w)
        expected = brute_force_objective(Xb, y, lam, depth, loss, sample_weight=w)
        assert result.status == "optimal"
        assert result.objective == pytest.approx(expected, abs=1e-9), (seed, bound)
        # the returned tree really has that objective and respects the depth limit
        assert tree_objective(result.root, y, lam, loss, w) == pytest.approx(expected, abs=1e-9), seed


def test_eight_features_depth_three():
    for seed in range(12):
        rng = np.random.default_rng(1000 + seed)
        Xb = (rng.random((24, 8)) < 0.5).astype(np.uint8)
        y = Xb[:, 0] * 2.0 + Xb[:, 1] * Xb[:, 2] + rng.normal(scale=0.3, size=24)
        lam = 0.01
        assert solve(Xb, y, lam, 3).objective == pytest.approx(brute_force_objective(Xb, y, lam, 3), abs=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_lower_bounds_never_exceed_the_optimum(loss, weighted):
    """The bound of any subproblem (random subsets of classes, every depth) <= its optimum."""
    loss_kind = 0 if loss == "squared" else 1
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(40):
        Xb, y, lam, _ = random_problem(seed)
        w = _weights(seed, len(y)) if weighted else np.ones(len(y))
        scale = leaf_loss(y, loss, w)  # the search scales y so that one leaf has loss 1
        scale = np.sqrt(scale) if loss_kind == 0 else scale
        ys = y / scale
        uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, ys, w, loss_kind)
        order = np.argsort(ys, kind="stable")
        rows_class = row_class[order].astype(np.int64)
        rows_y = ys[order]
        n_classes = len(cw)
        for _ in range(4):
            subset = np.nonzero(rng.random(n_classes) < 0.6)[0]
            if subset.size == 0:
                continue
            words = _bitsets(np.isin(np.arange(n_classes), subset)[:, None], 1)[0]
            fbits = _bitsets(uniq.astype(bool), 1)
            rows = np.nonzero(np.isin(row_class, subset))[0]
            for d in (0, 1, 2, 3, _search.UNLIMITED):
                opt = brute_force_objective(Xb, y, lam, None if d == _search.UNLIMITED else d, loss, rows=rows,
                                            sample_weight=w)
                # the oracle normalises by the loss of all rows, as the search does
                for kind in (_search.BOUND_KMEANS, _search.BOUND_EQUIVALENT, _search.BOUND_NONE):
                    problem = _search.make_problem(loss_kind, kind, lam, d == _search.UNLIMITED, uniq, fbits, cw, cs,
                                                   cq, cmean, cwithin, rows_class, rows_y, w[order])
                    lb = kernel_lower_bound(problem, words, d)
                    assert lb <= opt + 1e-9, (seed, d, kind)
                    checked += 1
    assert checked > 500


def test_kmeans_bound_is_at_least_the_equivalent_points_bound():
    Xb, y, lam, _ = random_problem(11)
    result_k = solve(Xb, y, lam, 3, bound="kmeans")
    result_e = solve(Xb, y, lam, 3, bound="equivalent")
    assert result_k.objective == pytest.approx(result_e.objective)
    assert result_k.stats["expansions"] <= result_e.stats["expansions"]


def _hard_problem():
    rng = np.random.default_rng(5)
    Xb = (rng.random((150, 12)) < 0.5).astype(np.uint8)
    y = Xb[:, :6] @ rng.normal(size=6) + Xb[:, 6] * Xb[:, 7] + rng.normal(scale=0.5, size=150)
    return Xb, y


@pytest.mark.parametrize("loss, weighted", [("squared", False), ("squared", True), ("absolute", True)])
def test_time_limit_returns_best_tree_with_certified_gap(loss, weighted):
    Xb, y = _hard_problem()
    w = np.random.default_rng(5).uniform(0.2, 3.0, len(y)) if weighted else None
    full = solve(Xb, y, 0.001, None, loss, sample_weight=w)
    assert full.status == "optimal"
    limited = solve(Xb, y, 0.001, None, loss, time_limit=0.05, sample_weight=w)
    assert limited.status == "time_limit"
    assert limited.lower_bound <= full.objective + 1e-9
    assert limited.objective >= full.objective - 1e-9
    assert tree_objective(limited.root, y, 0.001, loss, w) == pytest.approx(limited.objective, abs=1e-9)


def test_memory_limit_stops_gracefully():
    Xb, y = _hard_problem()
    full = solve(Xb, y, 0.001, None)
    limited = solve(Xb, y, 0.001, None, memory_limit=0.5)
    assert limited.status == "memory_limit"
    assert limited.lower_bound <= full.objective + 1e-9 <= limited.objective + 2e-9


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_every_stored_bound_and_value_is_valid(loss):
    """After a search, every memoised lower bound <= that subproblem's optimum, every value == it."""
    checked = 0
    for seed in range(25):
        Xb, y, lam, depth = random_problem(3 * seed + 1)
        result = solve(Xb, y, lam, depth, loss, keep_table=True)
        table = result.table
        for rows, d, lb, value in zip(table["rows"], table["depth"], table["lower_bound"], table["value"]):
            opt = brute_force_objective(Xb, y, lam, None if d == _search.UNLIMITED else int(d), loss, rows=rows)
            assert lb <= opt + 1e-9, (seed, d)
            if np.isfinite(value):
                assert value == pytest.approx(opt, abs=1e-9), (seed, d)
            checked += 1
    assert checked > 100


def test_warm_up_compiles_every_kernel():
    from parsimony.trees.osrt import warm_up

    warm_up()
    # the kernels called from Python (cluster_costs is compiled into search, and when search
    # comes from numba's disk cache its dispatcher stays empty)
    for kernel in (_search.search, _search.rehash, _search.lookup, _search.stack_lower_bound):
        assert kernel.signatures, kernel
