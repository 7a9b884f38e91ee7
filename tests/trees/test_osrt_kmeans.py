"""The 1-D clustering DP against brute-force partitioning."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from parsimony.trees._kmeans import cluster_costs


def _partitions(n, k):
    """Every way to cut 0..n-1 into k contiguous non-empty runs (as lists of cut points)."""
    for cuts in itertools.combinations(range(1, n), k - 1):
        yield (0, *cuts, n)


def _brute_costs(kind, w, v, kmax):
    out = []
    for k in range(1, kmax + 1):
        best = np.inf
        for bounds in _partitions(len(v), k):
            total = 0.0
            for a, b in zip(bounds[:-1], bounds[1:]):
                vv, ww = v[a:b], w[a:b]
                total += _run_cost(kind, ww, vv)
            best = min(best, total)
        out.append(best)
    return np.array(out)


def _run_cost(kind, w, v):
    """Weighted squared error about the weighted mean, or absolute error about the best centre."""
    if kind == 0:
        mu = (w * v).sum() / w.sum()
        return (w * (v - mu) ** 2).sum()
    return min((w * np.abs(v - c)).sum() for c in v)  # a weighted median is one of the points


def _any_partition_cost(kind, w, v, k):
    """Weighted clustering cost over *all* assignments (not only contiguous runs), tiny n."""
    best = np.inf
    for labels in itertools.product(range(k), repeat=len(v)):
        labels = np.array(labels)
        total = sum(_run_cost(kind, w[labels == c], v[labels == c]) for c in range(k) if (labels == c).any())
        best = min(best, total)
    return best


def _weights(rng, n, trial):
    return (np.ones(n), rng.integers(1, 5, n).astype(float), rng.uniform(0.05, 3.0, n))[trial % 3]


@pytest.mark.parametrize("kind", [0, 1])
def test_costs_equal_brute_force_partitions(kind):
    rng = np.random.default_rng(0)
    for trial in range(150):
        n = int(rng.integers(1, 10))
        v = np.sort(rng.integers(0, 5, n).astype(float) if trial % 2 else rng.normal(size=n))
        w = _weights(rng, n, trial)
        _, costs = cluster_costs(kind, w, v, n, 0.0, 0.0)
        expected = _brute_costs(kind, w, v, len(costs))
        np.testing.assert_allclose(costs, expected, atol=1e-9)


@pytest.mark.parametrize("kind", [0, 1])
def test_contiguous_runs_are_optimal_among_all_assignments(kind):
    rng = np.random.default_rng(1)
    for trial in range(20):
        n = int(rng.integers(2, 7))
        v = np.sort(rng.normal(size=n))
        w = _weights(rng, n, trial)
        _, costs = cluster_costs(kind, w, v, n, 0.0, 0.0)
        for k in range(1, min(3, n) + 1):
            assert costs[k - 1] == pytest.approx(_any_partition_cost(kind, w, v, k), abs=1e-9)


@pytest.mark.parametrize("kind", [0, 1])
def test_convexity_stop_finds_the_penalised_minimum(kind):
    rng = np.random.default_rng(2)
    for trial in range(100):
        n = int(rng.integers(1, 10))
        v = np.sort(rng.normal(size=n))
        w = _weights(rng, n, trial)
        lam = float(rng.choice([0.0, 0.01, 0.1, 1.0]))
        floor = float(rng.choice([0.0, 0.2]))
        kmax = int(rng.integers(1, n + 1))
        best, _ = cluster_costs(kind, w, v, kmax, lam, floor)
        full = _brute_costs(kind, w, v, kmax)
        expected = min(max(c, floor) + lam * (k + 1) for k, c in enumerate(full))
        assert best == pytest.approx(expected, abs=1e-9)


def test_convexity_stops_early_on_large_inputs():
    v = np.sort(np.random.default_rng(3).normal(size=500))
    _, costs = cluster_costs(0, np.ones(500), v, 500, 1.0, 0.0)
    assert 1 <= len(costs) < 20
    assert np.all(np.diff(costs) <= 1e-12)


def _dp_costs(kind, w, v, kmax, tau=0.5):
    """Clustering costs by the plain O(k n^2) dynamic program (no monotonicity assumed)."""
    n = len(v)
    run = np.full((n, n), np.inf)
    for a in range(n):
        for b in range(a, n):
            ww, vv = w[a:b + 1], v[a:b + 1]
            if kind == 0:
                run[a, b] = _run_cost(0, ww, vv)
            else:
                run[a, b] = min((ww * np.maximum(tau * (vv - c), (tau - 1) * (vv - c))).sum() for c in vv) * (
                    2.0 if kind == 1 else 1.0)
    row = run[0].copy()
    out = [row[-1]]
    for k in range(2, kmax + 1):
        row = np.array([min((row[a - 1] + run[a, b] for a in range(k - 1, b + 1)), default=np.inf)
                        for b in range(n)])
        out.append(row[-1])
    return np.array(out)


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_costs_equal_the_plain_dynamic_program_on_larger_inputs(kind):
    """Up to 45 points with ties and weights: the divide-and-conquer rows (whose cluster starts are
    bounded by the previous row's) equal the unrestricted dynamic program."""
    rng = np.random.default_rng(5)
    tau = 0.3 if kind == 2 else 0.5
    for trial in range(40):
        n = int(rng.integers(2, 46))
        v = np.sort(rng.integers(0, 6, n).astype(float) if trial % 2 else rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3))
        w = _weights(rng, n, trial)
        _, costs = cluster_costs(kind, w, v, min(n, 8), 0.0, 0.0, tau)
        expected = _dp_costs(kind, w, v, len(costs), tau)
        np.testing.assert_allclose(costs, expected, rtol=1e-9, atol=1e-12 * expected[0])


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_costs_with_a_penalty_equal_the_plain_dynamic_program(kind):
    """With a penalty the rows stop early, the last one's cost found by a scan over where its last
    cluster starts instead of a full row: every returned cost still equals the unrestricted program."""
    rng = np.random.default_rng(6)
    tau = 0.7 if kind == 2 else 0.5
    stopped = 0
    for trial in range(60):
        n = int(rng.integers(2, 40))
        v = np.sort(rng.integers(0, 5, n).astype(float) if trial % 3 == 0 else rng.normal(size=n))
        w = _weights(rng, n, trial)
        lam = float(rng.choice([0.01, 0.1, 0.5])) * float(np.sum(w))
        _, costs = cluster_costs(kind, w, v, n, lam, 0.0, tau)
        stopped += len(costs) < n
        expected = _dp_costs(kind, w, v, len(costs), tau)
        np.testing.assert_allclose(costs, expected, rtol=1e-9, atol=1e-12 * expected[0])
    assert stopped > 30  # the penalty ended most searches before n clusters
