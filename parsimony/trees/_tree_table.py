"""The fitted OSRT tree as flat arrays (``TreeTable``) and its construction from a search's splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TreeTable:
    """A fitted tree as flat arrays, one entry per node in preorder (node 0 is the root).

    ``feature[i]`` is the binary column tested at node ``i`` (-1 at a leaf);
    ``children_left[i]`` is the node for rows where that column is 1 (the condition holds),
    ``children_right[i]`` the node for rows where it is 0 (-1 at a leaf). ``value`` is the
    prediction (mean, or median for the absolute loss) of the node's training rows, ``loss``
    their loss normalised like the objective, ``n_node_samples`` their number and ``depth``
    the node's depth.
    """

    feature: np.ndarray
    children_left: np.ndarray
    children_right: np.ndarray
    value: np.ndarray
    loss: np.ndarray
    n_node_samples: np.ndarray
    depth: np.ndarray

    @property
    def node_count(self) -> int:
        return int(self.feature.shape[0])

    def apply(self, Xb: np.ndarray) -> np.ndarray:
        """Leaf index reached by every row of the binary matrix ``Xb``."""
        node = np.zeros(Xb.shape[0], dtype=np.int64)
        active = np.ones(Xb.shape[0], dtype=bool)
        while active.any():
            f = self.feature[node]
            active = f >= 0
            if not active.any():
                break
            idx = np.nonzero(active)[0]
            hit = Xb[idx, f[idx]] == 1
            node[idx] = np.where(hit, self.children_left[node[idx]], self.children_right[node[idx]])
        return node


def tree_table(root, y, w, loss):
    """Preorder node table from the nested split dictionary of a search (leaves list their rows;
    ``w``: row weights); node losses are normalised by the loss of one leaf, 0 when that is 0."""
    norm = loss.constant_total(y, w)[1]
    rows_out = []

    def visit(node, depth):
        i = len(rows_out)
        rows_out.append(None)
        if "feature" in node:
            left = visit(node["true"], depth + 1)
            right = visit(node["false"], depth + 1)
            rows_out[i] = (node["feature"], left, right, depth)
        else:
            rows_out[i] = (-1, -1, -1, depth, node["rows"])
        return i

    visit(root, 0)
    n_nodes = len(rows_out)
    table = TreeTable(
        feature=np.full(n_nodes, -1, dtype=np.int64),
        children_left=np.full(n_nodes, -1, dtype=np.int64),
        children_right=np.full(n_nodes, -1, dtype=np.int64),
        value=np.zeros(n_nodes),
        loss=np.zeros(n_nodes),
        n_node_samples=np.zeros(n_nodes, dtype=np.int64),
        depth=np.zeros(n_nodes, dtype=np.int64),
    )
    members = [None] * n_nodes
    for i, entry in enumerate(rows_out):
        table.depth[i] = entry[3]
        if entry[0] >= 0:
            table.feature[i], table.children_left[i], table.children_right[i] = entry[0], entry[1], entry[2]
        else:
            members[i] = entry[4]
    for i in range(n_nodes - 1, -1, -1):  # children come after their parent in preorder
        if table.feature[i] >= 0:
            members[i] = np.concatenate([members[table.children_left[i]], members[table.children_right[i]]])
        vals, weights = y[members[i]], w[members[i]]
        table.value[i], total = loss.constant_total(vals, weights)
        table.loss[i] = total / norm if norm > 0 else 0.0
        table.n_node_samples[i] = len(vals)
    return table
