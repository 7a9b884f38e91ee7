"""Exhaustive search over trees (no bounds): the oracle for the OSRT tests."""

from __future__ import annotations

import functools

import numpy as np


def pinball(r, tau):
    """Pinball loss of residuals ``r`` (written out here, independently of the package)."""
    return np.maximum(tau * r, (tau - 1.0) * r)


def leaf_loss(values: np.ndarray, loss: str, weights=None, tau=0.5) -> float:
    """Weighted squared error about the weighted mean, or absolute / pinball loss about the best centre."""
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
    if loss == "squared":
        mu = np.sum(w * values) / np.sum(w)
        return float(np.sum(w * (values - mu) ** 2))
    if loss == "quantile":  # a weighted quantile is one of the points
        return float(min(np.sum(w * pinball(values - c, tau)) for c in values))
    return float(min(np.sum(w * np.abs(values - c)) for c in values))  # a weighted median is a point


def brute_force_objective(Xb, y, lam, depth, loss="squared", rows=None, sample_weight=None, tau=0.5):
    """Optimal objective by trying every split at every node (memoised on row sets only)."""
    Xb = np.asarray(Xb)
    y = np.asarray(y, dtype=float)
    n, m = Xb.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    norm = leaf_loss(y, loss, w, tau)
    depth = m if depth is None else depth

    @functools.lru_cache(maxsize=None)
    def opt(subset, d):
        idx = np.fromiter(subset, dtype=np.int64)
        best = leaf_loss(y[idx], loss, w[idx], tau) / norm + lam
        if d == 0:
            return best
        for j in range(m):
            hit = Xb[idx, j] == 1
            if hit.all() or not hit.any():
                continue
            value = opt(tuple(idx[hit]), d - 1) + opt(tuple(idx[~hit]), d - 1)
            best = min(best, value)
        return best

    start = tuple(range(n)) if rows is None else tuple(rows)
    return opt(start, depth)


def random_problem(seed):
    """A tiny random problem: binary X (<= 6 features), y with ties or not, lambda, depth, loss."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 28))
    m = int(rng.integers(1, 7))
    Xb = (rng.random((n, m)) < rng.uniform(0.2, 0.8)).astype(np.uint8)
    if seed % 3 == 0:
        y = rng.integers(0, 4, n).astype(float)
    else:
        y = rng.normal(size=n) * rng.uniform(0.1, 100)
    if np.ptp(y) == 0:
        y[0] += 1.0
    lam = [0.0, 0.005, 0.02, 0.1, 0.3][seed % 5]
    depth = [None, 0, 1, 2, 3][(seed // 5) % 5]
    return Xb, y, lam, depth


def tree_objective(node, y, lam, loss, w=None, tau=0.5):
    """Objective of a nested split dictionary (leaves list their rows), normalised like the search."""
    w = np.ones(len(y)) if w is None else w
    norm = leaf_loss(y, loss, w, tau)
    leaves = []

    def walk(nd):
        if "feature" in nd:
            walk(nd["true"])
            walk(nd["false"])
        else:
            leaves.append(nd["rows"])

    walk(node)
    return sum(leaf_loss(y[r], loss, w[r], tau) for r in leaves) / norm + lam * len(leaves)


def table_splits(tree, Xb, node=0, rows=None):
    """A fitted ``TreeTable`` as nested splits whose leaves list the rows of ``Xb`` they hold."""
    rows = np.arange(len(Xb)) if rows is None else rows
    f = tree.feature[node]
    if f < 0:
        return {"rows": rows}
    hit = Xb[rows, f] == 1
    return {"feature": int(f), "true": table_splits(tree, Xb, tree.children_left[node], rows[hit]),
            "false": table_splits(tree, Xb, tree.children_right[node], rows[~hit])}


def kernel_lower_bound(problem, words, d):
    """The search kernel's lower bound of subproblem ``(words, d)`` (buffers allocated here)."""
    from parsimony.trees import _bounds

    n_classes = problem.class_weight.shape[0]
    buf = max(n_classes, problem.row_y.shape[0])
    return _bounds.lower_bound(problem, words, d, np.empty(n_classes, dtype=np.int64), np.empty(buf), np.empty(buf))
