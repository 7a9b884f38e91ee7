"""Depth-difference matrices of scikit-learn tree ensembles (ForestPrune, paper Algorithm 1).

For tree ``i`` and sample ``j`` visiting the nodes ``N_1 -> ... -> N_k`` (root first) with node
means ``mu_1 ... mu_k``, row ``j`` of ``D_i`` is ``[mu_1, mu_2 - mu_1, ..., mu_k - mu_{k-1}, 0, ...]``.
The root mean is kept, so ``D_i @ 1`` is the tree's prediction and the first ``k`` columns summed
are the prediction of the tree truncated to ``k`` layers (depth ``k - 1``).

A row only depends on the leaf the sample reaches, so the rows of every node are tabulated once
(``table``) and ``D`` is a gather of that table at the leaves returned by ``Tree.apply``: no
Python loop over rows. ``depth_difference_matrices`` materialises all of them in one contiguous
array of shape ``(n_trees, n_layers, n_samples)``. The solver uses the same matrices in factored
form ``D_i = E_i T_i``: ``E_i`` is the sample-to-leaf indicator (stored as one int32 leaf index per
sample and tree, ``leaf_indices``) and ``T_i`` the leaves' rows of the table (``leaf_table``), so
a block update streams 4 bytes per sample instead of ``8 d``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor, GradientBoostingRegressor, RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._numba import njit

SUPPORTED_ENSEMBLES = (RandomForestRegressor, ExtraTreesRegressor, GradientBoostingRegressor)
SUPPORTED_NAMES = ", ".join(cls.__name__ for cls in SUPPORTED_ENSEMBLES)


@dataclass
class EnsembleTables:
    """Flat node tables of a fitted ensemble.

    Attributes
    ----------
    trees : list of sklearn ``Tree`` objects.
    gamma : float, the factor of every tree in the ensemble prediction (1/n or the learning rate).
    boosting : bool, True for gradient boosting (trees are ordered).
    node_offset : (n_trees + 1,) int64, start of each tree's nodes in the flat arrays.
    left, right, feature : (n_nodes_total,) int64 (local child ids, -1 at leaves).
    threshold, value : (n_nodes_total,) float64.
    depth : (n_nodes_total,) int64, node depth (root 0).
    table : (n_nodes_total, n_layers) float64, the depth-difference row of a sample ending in a node.
    layer_nodes : (n_trees, n_layers) int64, number of nodes in each layer of each tree.
    n_layers : (n_trees,) int64, number of layers (depth + 1) of each tree.
    leaf_of_node : (n_nodes_total,) int64, index of a leaf among its tree's leaves (-1 if internal).
    leaf_offset : (n_trees + 1,) int64, start of each tree's leaves in ``leaf_table``.
    leaf_table : (n_leaves_total, n_layers) float64, the ``table`` rows of the leaves (``T_i``).
    leaf_table_t : its transpose, C-contiguous (one layer of one tree is a contiguous slice).
    child, split_feature, split_threshold : branch-free walking tables: ``child[2 g + (x > thr)]``
        is the next (global) node, leaves loop onto themselves (threshold +inf).
    init : the boosting initial estimator, ``"zero"`` or None (bagging).
    """

    trees: list
    gamma: float
    boosting: bool
    node_offset: np.ndarray
    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    depth: np.ndarray
    table: np.ndarray
    layer_nodes: np.ndarray
    n_layers: np.ndarray
    leaf_of_node: np.ndarray
    leaf_offset: np.ndarray
    leaf_table: np.ndarray
    leaf_table_t: np.ndarray
    child: np.ndarray
    split_feature: np.ndarray
    split_threshold: np.ndarray
    init: object = None

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def max_layers(self) -> int:
        return self.table.shape[1]


def unwrap_frozen(estimator):
    """The ensemble inside a ``sklearn.frozen.FrozenEstimator`` (kept fitted through ``clone``)."""
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # scikit-learn < 1.6
        return estimator
    return estimator.estimator if isinstance(estimator, FrozenEstimator) else estimator


def check_ensemble(estimator, n_features: int | None = None):
    """Raise a ``ValueError`` unless ``estimator`` is a fitted, supported tree ensemble."""
    if not isinstance(estimator, SUPPORTED_ENSEMBLES):
        raise ValueError(
            f"estimator must be a fitted {SUPPORTED_NAMES} (or None to fit a random forest), "
            f"got {type(estimator).__name__}"
        )
    try:
        check_is_fitted(estimator, "estimators_")
    except NotFittedError:
        raise ValueError(
            f"estimator {type(estimator).__name__} is not fitted: fit it first (wrap it in "
            "sklearn.frozen.FrozenEstimator to keep it fitted through clone/cross-validation), or pass "
            "estimator=None to let ForestPrune fit a random forest"
        ) from None
    if n_features is not None and estimator.n_features_in_ != n_features:
        raise ValueError(
            f"X has {n_features} features but the ensemble was fitted with {estimator.n_features_in_}"
        )
    if getattr(estimator, "n_outputs_", 1) != 1:
        raise ValueError("ForestPrune supports single-output ensembles only")


@njit
def _path_tables(left, right, value, node_offset, max_layers):
    total = left.shape[0]
    n_trees = node_offset.shape[0] - 1
    table = np.zeros((total, max_layers))
    depth = np.zeros(total, dtype=np.int64)
    layer_nodes = np.zeros((n_trees, max_layers), dtype=np.int64)
    for t in range(n_trees):
        start = node_offset[t]
        table[start, 0] = value[start]
        layer_nodes[t, 0] = 1
        # scikit-learn numbers a node before its children, so parents are visited first
        for node in range(start, node_offset[t + 1]):
            if left[node] < 0:
                continue
            dc = depth[node] + 1
            for side in range(2):
                child = start + (left[node] if side == 0 else right[node])
                for layer in range(dc):
                    table[child, layer] = table[node, layer]
                table[child, dc] = value[child] - value[node]
                depth[child] = dc
                layer_nodes[t, dc] += 1
    return table, depth, layer_nodes


def unpack_ensemble(estimator) -> EnsembleTables:
    """Flatten the trees of a fitted supported ensemble into node tables."""
    estimator = unwrap_frozen(estimator)
    check_ensemble(estimator)
    if isinstance(estimator, GradientBoostingRegressor):
        trees = [est.tree_ for est in np.asarray(estimator.estimators_).ravel()]
        gamma = float(estimator.learning_rate)
        boosting = True
        init = estimator.init_
    else:
        trees = [est.tree_ for est in estimator.estimators_]
        gamma = 1.0 / len(trees)
        boosting = False
        init = None
    sizes = np.array([tree.node_count for tree in trees], dtype=np.int64)
    node_offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    left = np.concatenate([tree.children_left for tree in trees]).astype(np.int64)
    right = np.concatenate([tree.children_right for tree in trees]).astype(np.int64)
    feature = np.concatenate([tree.feature for tree in trees]).astype(np.int64)
    threshold = np.concatenate([tree.threshold for tree in trees]).astype(np.float64)
    value = np.concatenate([tree.value[:, 0, 0] for tree in trees]).astype(np.float64)
    max_layers = int(max(tree.max_depth for tree in trees)) + 1
    table, depth, layer_nodes = _path_tables(left, right, value, node_offset, max_layers)
    n_layers = np.array([tree.max_depth + 1 for tree in trees], dtype=np.int64)
    is_leaf = left < 0
    leaf_global = np.flatnonzero(is_leaf)
    leaf_counts = np.add.reduceat(is_leaf.astype(np.int64), node_offset[:-1])
    leaf_offset = np.concatenate([[0], np.cumsum(leaf_counts)]).astype(np.int64)
    leaf_of_node = np.full(left.shape[0], -1, dtype=np.int64)
    tree_of_leaf = np.repeat(np.arange(len(trees)), leaf_counts)
    leaf_of_node[leaf_global] = np.arange(leaf_global.size) - leaf_offset[tree_of_leaf]
    start = np.repeat(node_offset[:-1], sizes)
    gid = np.arange(left.shape[0], dtype=np.int64)
    child = np.empty(2 * left.shape[0], dtype=np.int64)
    child[0::2] = np.where(is_leaf, gid, start + left)
    child[1::2] = np.where(is_leaf, gid, start + right)
    split_feature = np.where(is_leaf, 0, feature).astype(np.int64)
    split_threshold = np.where(is_leaf, np.inf, threshold)
    return EnsembleTables(
        trees, gamma, boosting, node_offset, left, right, feature, threshold, value, depth, table,
        layer_nodes, n_layers, leaf_of_node, leaf_offset, np.ascontiguousarray(table[leaf_global]),
        np.ascontiguousarray(table[leaf_global].T), child, split_feature, split_threshold, init,
    )


def ensemble_offset(tables: EnsembleTables, X) -> np.ndarray:
    """The part of the ensemble prediction outside the trees (boosting's initial prediction)."""
    m = X.shape[0]
    if tables.init is None or (isinstance(tables.init, str) and tables.init == "zero"):
        return np.zeros(m)
    return np.asarray(tables.init.predict(X), dtype=np.float64).reshape(m)


def ensemble_leaves(tables: EnsembleTables, X, trees=None) -> np.ndarray:
    """Leaf index (local to its tree) reached by every row in every tree: shape (n_trees, m)."""
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    idx = range(tables.n_trees) if trees is None else trees
    idx = list(idx)
    out = np.empty((len(idx), X32.shape[0]), dtype=np.int64)
    for row, t in enumerate(idx):
        out[row] = tables.trees[t].apply(X32)
    return out


@njit
def _walk(X32, child, split_feature, split_threshold, node_offset, leaf_of_node, n_layers):
    n_trees = node_offset.shape[0] - 1
    m = X32.shape[0]
    out = np.empty((n_trees, m), dtype=np.int32)
    node = np.empty(m, dtype=np.int64)
    for t in range(n_trees):
        node[:] = node_offset[t]
        # one level at a time over all rows, without branches: the rows' walks overlap in the CPU
        for _ in range(n_layers[t] - 1):
            for j in range(m):
                nd = node[j]
                # scikit-learn's test: the float32 feature value against the float64 threshold
                right = X32[j, split_feature[nd]] > split_threshold[nd]
                node[j] = child[2 * nd + right]
        for j in range(m):
            out[t, j] = leaf_of_node[node[j]]
    return out


def leaf_indices(tables: EnsembleTables, X) -> np.ndarray:
    """Index of the leaf (among its tree's leaves) of every row in every tree: (n_trees, m) int32.

    Row ``j`` of the paper's ``D_i`` is ``leaf_table[leaf_offset[i] + leaf_indices[i, j]]``. A
    branch-free numba walk with scikit-learn's split test (checked against ``Tree.apply``).
    """
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    return _walk(X32, tables.child, tables.split_feature, tables.split_threshold, tables.node_offset,
                 tables.leaf_of_node, tables.n_layers)


@njit
def _gather(table, offset, leaves, n_layers, max_layers):
    n_trees, m = leaves.shape
    D = np.empty((n_trees, max_layers, m))
    for t in range(n_trees):
        start = offset[t]
        for layer in range(max_layers):
            row = D[t, layer]
            if layer >= n_layers[t]:
                row[:] = 0.0
                continue
            for j in range(m):
                row[j] = table[start + leaves[t, j], layer]
    return D


def depth_difference_matrices(tables: EnsembleTables, X) -> np.ndarray:
    """All depth-difference matrices at once, shape ``(n_trees, n_layers, n_samples)``.

    ``D[i].T`` is the paper's ``D_i`` (m x d); ``gamma * D.sum(axis=(0, 1))`` plus the offset is the
    ensemble's prediction on ``X``.
    """
    leaves = leaf_indices(tables, X)
    return _gather(tables.leaf_table, tables.leaf_offset, leaves, tables.n_layers, tables.max_layers)


def layer_weights(tables: EnsembleTables, weighting: str) -> tuple[np.ndarray, float]:
    """Per-layer penalty weights ``w[i, k]`` and their total ``K``.

    ``"node"``: the number of nodes of layer ``k`` of tree ``i`` (root layer included);
    ``"depth"``: 1 for every layer the tree has, 0 beyond its depth.
    """
    if weighting == "node":
        w = tables.layer_nodes.astype(np.float64)
    else:
        w = (np.arange(tables.max_layers)[None, :] < tables.n_layers[:, None]).astype(np.float64)
    return w, float(w.sum())


def truncated_node_values(tables: EnsembleTables, tree: int, layers: int) -> np.ndarray:
    """Prediction of tree ``tree`` truncated to ``layers`` layers, for each of its nodes."""
    start, stop = tables.node_offset[tree], tables.node_offset[tree + 1]
    return tables.table[start:stop, :layers].sum(axis=1)
