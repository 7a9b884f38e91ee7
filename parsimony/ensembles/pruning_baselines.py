"""Baselines ForestPrune is compared with (paper Section 4): LASSO tree weights (problem 8),
per-tree cost-complexity pruning with one shared parameter, and random tree removal (bagging) or
truncation of the boosting sequence.

Every function takes a fitted supported ensemble and returns a DataFrame with the columns
``method, param, n_trees, n_nodes, train_error, val_error`` (mean squared errors; ``val_error``
is NaN without validation data), ordered from the largest model to the smallest, so the paths
can be plotted and compared with ``ForestPrune.path``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, lasso_path
from sklearn.utils.validation import check_array

from .._validation import check_array_1d, check_same_length
from ._depth_matrices import check_ensemble, ensemble_leaves, ensemble_offset, unpack_ensemble, unwrap_frozen

__all__ = ["lasso_tree_weights", "cost_complexity_path", "random_removal_path", "ccp_prune_tree"]

_COLUMNS = ["method", "param", "n_trees", "n_nodes", "train_error", "val_error"]


def _prepare(estimator, X, y, X_val, y_val):
    X = check_array(X, dtype=np.float64)
    estimator = unwrap_frozen(estimator)
    check_ensemble(estimator, X.shape[1])
    y = check_array_1d(y, "y")
    check_same_length(("X", X), ("y", y))
    if (X_val is None) != (y_val is None):
        raise ValueError("pass both X_val and y_val, or neither")
    if X_val is not None:
        X_val = check_array(X_val, dtype=np.float64)
        check_ensemble(estimator, X_val.shape[1])
        y_val = check_array_1d(y_val, "y_val")
        check_same_length(("X_val", X_val), ("y_val", y_val))
    return unpack_ensemble(estimator), X, y, X_val, y_val


def _tree_predictions(tables, X):
    """(m, n_trees) matrix of the individual trees' predictions."""
    leaves = ensemble_leaves(tables, X)
    return (tables.value[tables.node_offset[:-1, None] + leaves]).T


def _mse(pred, y):
    return float(np.mean((pred - y) ** 2))


def lasso_tree_weights(estimator, X, y, lambdas=None, X_val=None, y_val=None, n_lambdas=50):
    """LASSO re-weighting of whole trees (problem 8): ``(1/m)||y - gamma T b||^2 + lambda ||b||_1``.

    Solved along ``lambdas`` (default: ``n_lambdas`` values from the smallest lambda that removes
    every tree down to 1e-3 of it) with scikit-learn's coordinate descent (``Lasso`` objective
    times 2, so ``alpha = lambda / 2``). Rows also hold the coefficients (``coef``).
    """
    tables, X, y, X_val, y_val = _prepare(estimator, X, y, X_val, y_val)
    T = tables.gamma * _tree_predictions(tables, X)
    t = y - ensemble_offset(tables, X)
    if lambdas is None:
        lam_max = 2.0 * np.max(np.abs(T.T @ t)) / len(t)
        lambdas = np.geomspace(lam_max, lam_max * 1e-3, n_lambdas)
    lambdas = np.sort(check_array_1d(lambdas, "lambdas"))[::-1]
    if np.any(lambdas < 0):
        raise ValueError("lambdas must be >= 0")
    sizes = np.diff(tables.node_offset)
    Tv = tv = None
    if X_val is not None:
        Tv = tables.gamma * _tree_predictions(tables, X_val)
        tv = y_val - ensemble_offset(tables, X_val)
    positive = lambdas > 0
    coefs = np.zeros((len(lambdas), T.shape[1]))
    with warnings.catch_warnings():
        # trees' predictions are strongly correlated: coordinate descent converges slowly near lambda = 0
        warnings.simplefilter("ignore", ConvergenceWarning)
        if positive.any():
            _, path, _ = lasso_path(T, t, alphas=lambdas[positive] / 2.0, max_iter=5000, tol=1e-8)
            coefs[positive] = path.T
        for r in np.flatnonzero(~positive):  # lambda = 0: least squares via a tiny penalty
            coefs[r] = Lasso(alpha=1e-12, fit_intercept=False, max_iter=10000).fit(T, t).coef_
    rows = []
    for lam, b in zip(lambdas, coefs):
        keep = b != 0
        rows.append({
            "method": "lasso", "param": float(lam), "n_trees": int(keep.sum()), "n_nodes": int(sizes[keep].sum()),
            "train_error": _mse(T @ b, t), "val_error": np.nan if Tv is None else _mse(Tv @ b, tv),
            "coef": b,
        })
    return pd.DataFrame(rows, columns=[*_COLUMNS, "coef"])


def ccp_prune_tree(tree, ccp_alpha: float) -> np.ndarray:
    """Minimal cost-complexity pruning of a fitted scikit-learn ``Tree`` at ``ccp_alpha``.

    Returns, for every node, the node whose value it predicts with (itself, or its highest pruned
    ancestor); nodes ``n`` with ``rep[n] == n`` are kept. Bottom-up: a subtree is collapsed when
    ``R(t) + alpha <= sum of its leaves' R + alpha * leaves`` with ``R`` the weighted impurity
    (scikit-learn's normalisation), which gives the smallest optimally pruned subtree.
    """
    left, right = tree.children_left, tree.children_right
    w = tree.weighted_n_node_samples
    risk = tree.impurity * w / w[0]
    n = tree.node_count
    cost = np.zeros(n)
    collapse = np.zeros(n, dtype=bool)
    for node in range(n - 1, -1, -1):  # children have larger ids than their parent
        own = risk[node] + ccp_alpha
        if left[node] < 0:
            cost[node] = own
            continue
        sub = cost[left[node]] + cost[right[node]]
        if own <= sub:
            collapse[node] = True
            cost[node] = own
        else:
            cost[node] = sub
    rep = np.arange(n)
    for node in range(n):
        if left[node] < 0:
            continue
        top = rep[node] if rep[node] != node else (node if collapse[node] else -1)
        for child in (left[node], right[node]):
            rep[child] = top if top >= 0 else child
    return rep


def cost_complexity_path(estimator, X, y, ccp_alphas=None, X_val=None, y_val=None):
    """Every tree pruned by minimal cost-complexity pruning with one shared ``ccp_alpha``."""
    tables, X, y, X_val, y_val = _prepare(estimator, X, y, X_val, y_val)
    if ccp_alphas is None:
        top = max(float(t.impurity[0]) for t in tables.trees)
        ccp_alphas = np.concatenate([[0.0], np.geomspace(top * 1e-5, top, 30)])
    ccp_alphas = np.sort(check_array_1d(ccp_alphas, "ccp_alphas"))
    if np.any(ccp_alphas < 0):
        raise ValueError("ccp_alphas must be >= 0")
    leaves = ensemble_leaves(tables, X)
    leaves_val = None if X_val is None else ensemble_leaves(tables, X_val)
    off, off_val = ensemble_offset(tables, X), None if X_val is None else ensemble_offset(tables, X_val)
    rows = []
    for a in ccp_alphas:
        pred = off.copy()
        pred_val = None if X_val is None else off_val.copy()
        n_nodes = 0
        for i, tree in enumerate(tables.trees):
            rep = ccp_prune_tree(tree, float(a))
            vals = tree.value[:, 0, 0][rep]
            n_nodes += int(np.count_nonzero(rep == np.arange(tree.node_count)))
            pred += tables.gamma * vals[leaves[i]]
            if pred_val is not None:
                pred_val += tables.gamma * vals[leaves_val[i]]
        rows.append({
            "method": "cost_complexity", "param": float(a), "n_trees": tables.n_trees, "n_nodes": n_nodes,
            "train_error": _mse(pred, y), "val_error": np.nan if pred_val is None else _mse(pred_val, y_val),
        })
    return pd.DataFrame(rows, columns=_COLUMNS)


def random_removal_path(estimator, X, y, X_val=None, y_val=None, random_state=None):
    """Fewer bagging/boosting iterations: remove random trees one by one (bagging, the average
    is over the remaining trees), or cut the boosting sequence from its tail. ``param`` is the
    number of trees kept."""
    tables, X, y, X_val, y_val = _prepare(estimator, X, y, X_val, y_val)
    n = tables.n_trees
    order = np.arange(n) if tables.boosting else np.random.default_rng(random_state).permutation(n)
    sizes = np.diff(tables.node_offset)[order]
    P = _tree_predictions(tables, X)[:, order]
    off = ensemble_offset(tables, X)
    Pv = offv = None
    if X_val is not None:
        Pv = _tree_predictions(tables, X_val)[:, order]
        offv = ensemble_offset(tables, X_val)
    cum = np.cumsum(P, axis=1)
    cumv = None if Pv is None else np.cumsum(Pv, axis=1)
    rows = []
    for k in range(n, 0, -1):
        scale = tables.gamma if tables.boosting else 1.0 / k
        pred = off + scale * cum[:, k - 1]
        val = np.nan if cumv is None else _mse(offv + scale * cumv[:, k - 1], y_val)
        rows.append({
            "method": "truncation" if tables.boosting else "random_removal", "param": k, "n_trees": k,
            "n_nodes": int(sizes[:k].sum()), "train_error": _mse(pred, y), "val_error": val,
        })
    return pd.DataFrame(rows, columns=_COLUMNS)
