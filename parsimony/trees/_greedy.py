"""The fallback of a stopped OSRT search: a good tree by greedy splitting, reusing solved subtrees."""

from __future__ import annotations

import numpy as np

from ..losses import LOSS_SQUARED


def greedy_tree(prep, loss, lam, solved, build):
    """A good tree by greedy splitting (CART's criterion) pruned bottom-up, for stopped searches.

    Subproblems the search solved exactly are taken from the memo table (``solved``/``build``);
    the leaves list input rows. Returns the tree's objective and its nested split dictionary.
    """
    problem = prep.problem
    xc = prep.class_features
    cw, cs, cq = problem.class_weight, problem.class_sum, problem.class_sumsq
    row_class, class_of_row, y_scaled, w = prep.row_class, prep.class_of_row, prep.y_scaled, prep.w
    n_classes = cw.shape[0]
    n_words = prep.root_words.shape[0]

    def leaf(mask):
        if loss.code == LOSS_SQUARED:
            total, s_, q = cw[mask].sum(), cs[mask].sum(), cq[mask].sum()
            return max(q - s_ * s_ / total, 0.0) if total > 0 else 0.0
        rows = mask[row_class]
        return loss.constant_total(y_scaled[rows], w[rows])[1] if rows.any() else 0.0

    def words_of(mask):
        bits = np.zeros(n_words * 64, dtype=bool)
        bits[:n_classes] = mask
        return np.packbits(bits, bitorder="little").view(np.uint64)

    def grow(mask, d):
        words = words_of(mask)
        rows = np.nonzero(mask[class_of_row])[0]
        exact, value = solved(words, d)
        if exact:
            return value, build(words, d, rows, False)
        best = (leaf(mask) + lam, {"rows": rows})
        if d == 0 or mask.sum() <= 1 or best[0] <= 2 * lam:  # a split costs at least 2 * lam
            return best
        choice, choice_loss = -1, np.inf
        for j in range(xc.shape[1]):
            hit = mask & (xc[:, j] == 1)
            miss = mask & (xc[:, j] == 0)
            if hit.any() and miss.any():
                split_loss = leaf(hit) + leaf(miss)
                if split_loss < choice_loss:
                    choice, choice_loss = j, split_loss
        if choice < 0:
            return best
        dc = d if problem.unlimited else d - 1
        v1, t1 = grow(mask & (xc[:, choice] == 1), dc)
        v0, t0 = grow(mask & (xc[:, choice] == 0), dc)
        if v0 + v1 < best[0]:
            return v0 + v1, {"feature": choice, "false": t0, "true": t1}
        return best

    return grow(np.ones(n_classes, dtype=bool), prep.root_depth)
