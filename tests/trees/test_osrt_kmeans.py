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
                if kind == 0:
                    mu = (ww * vv).sum() / ww.sum()
                    total += (ww * (vv - mu) ** 2).sum()
                else:
                    med = vv[(len(vv) - 1) // 2]
                    total += np.abs(vv - med).sum()
            best = min(best, total)
        out.append(best)
    return np.array(out)


def _any_partition_cost(w, v, k):
    """Weighted k-Means cost over *all* assignments (not only contiguous runs), tiny n."""
    best = np.inf
    for labels in itertools.product(range(k), repeat=len(v)):
        labels = np.array(labels)
        total = 0.0
        for c in range(k):
            sel = labels == c
            if sel.any():
                mu = (w[sel] * v[sel]).sum() / w[sel].sum()
                total += (w[sel] * (v[sel] - mu) ** 2).sum()
        best = min(best, total)
    return best


@pytest.mark.parametrize("kind", [0, 1])
def test_costs_equal_brute_force_partitions(kind):
    rng = np.random.default_rng(0)
    for trial in range(150):
        n = int(rng.integers(1, 10))
        v = np.sort(rng.integers(0, 5, n).astype(float) if trial % 2 else rng.normal(size=n))
        w = rng.integers(1, 5, n).astype(float) if kind == 0 else np.ones(n)
        _, costs = cluster_costs(kind, w, v, n, 0.0, 0.0)
        expected = _brute_costs(kind, w, v, len(costs))
        np.testing.assert_allclose(costs, expected, atol=1e-9)


def test_contiguous_runs_are_optimal_among_all_assignments():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(2, 7))
        v = np.sort(rng.normal(size=n))
        w = rng.integers(1, 4, n).astype(float)
        _, costs = cluster_costs(0, w, v, n, 0.0, 0.0)
        for k in range(1, min(3, n) + 1):
            assert costs[k - 1] == pytest.approx(_any_partition_cost(w, v, k), abs=1e-9)


@pytest.mark.parametrize("kind", [0, 1])
def test_convexity_stop_finds_the_penalised_minimum(kind):
    rng = np.random.default_rng(2)
    for trial in range(100):
        n = int(rng.integers(1, 10))
        v = np.sort(rng.normal(size=n))
        w = rng.integers(1, 4, n).astype(float) if kind == 0 else np.ones(n)
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
