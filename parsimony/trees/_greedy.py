"""The fallback of a stopped OSRT search: a good tree by greedy splitting, reusing solved subtrees."""

from __future__ import annotations

import time

import numpy as np

from ..losses import LOSS_SQUARED


def _squared_split_losses(xc, cw, cs, cq, mask):
    """Squared loss of the two leaves of every feature's split of the classes in ``mask``
    (inf where a side is empty), from the per-class sums: one matrix product per sum."""
    ones = xc[mask].astype(np.float64)
    w, s, q = cw[mask], cs[mask], cq[mask]
    w1, s1, q1 = ones.T @ w, ones.T @ s, ones.T @ q
    n1 = ones.sum(axis=0)
    w0, s0, q0 = w.sum() - w1, s.sum() - s1, q.sum() - q1
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.maximum(q1 - s1 * s1 / w1, 0.0) + np.maximum(q0 - s0 * s0 / w0, 0.0)
    loss[(n1 == 0) | (n1 == mask.sum())] = np.inf
    return loss


def greedy_tree(prep, loss, lam, solved, build, deadline=None):
    """A good tree by greedy splitting (CART's criterion) pruned bottom-up, for stopped searches.

    Subproblems the search solved exactly are taken from the memo table (``solved``/``build``);
    the leaves list input rows. Past ``deadline`` (a ``time.perf_counter()`` time) the nodes
    still to grow become leaves. Returns the tree's objective and its nested split dictionary.
    """
    problem = prep.problem
    xc = prep.class_features
    cw, cs, cq = problem.class_weight, problem.class_sum, problem.class_sumsq
    row_class, class_of_row, y_scaled, w = prep.row_class, prep.class_of_row, prep.y_scaled, prep.w
    n_classes = cw.shape[0]
    n_words = prep.root_words.shape[0]
    squared = loss.code == LOSS_SQUARED

    def late():
        return deadline is not None and time.perf_counter() >= deadline

    def leaf(mask):
        if squared:
            total, s_, q = cw[mask].sum(), cs[mask].sum(), cq[mask].sum()
            return max(q - s_ * s_ / total, 0.0) if total > 0 else 0.0
        rows = mask[row_class]
        return loss.constant_total(y_scaled[rows], w[rows])[1] if rows.any() else 0.0

    def words_of(mask):
        bits = np.zeros(n_words * 64, dtype=bool)
        bits[:n_classes] = mask
        return np.packbits(bits, bitorder="little").view(np.uint64)

    def best_split(mask):
        if squared:
            split_loss = _squared_split_losses(xc, cw, cs, cq, mask)
            choice = int(np.argmin(split_loss))
            return (choice, split_loss[choice]) if np.isfinite(split_loss[choice]) else (-1, np.inf)
        choice, choice_loss = -1, np.inf
        for j in range(xc.shape[1]):
            hit = mask & (xc[:, j] == 1)
            miss = mask & (xc[:, j] == 0)
            if hit.any() and miss.any():
                split_loss = leaf(hit) + leaf(miss)
                if split_loss < choice_loss:
                    choice, choice_loss = j, split_loss
            if late():
                break
        return choice, choice_loss

    def grow(mask, d):
        words = words_of(mask)
        rows = np.nonzero(mask[class_of_row])[0]
        exact, value = solved(words, d)
        if exact:
            return value, build(words, d, rows, False)
        best = (leaf(mask) + lam, {"rows": rows})
        if d == 0 or mask.sum() <= 1 or best[0] <= 2 * lam or late():  # a split costs at least 2 * lam
            return best
        choice, _ = best_split(mask)
        if choice < 0:
            return best
        dc = d if problem.unlimited else d - 1
        v1, t1 = grow(mask & (xc[:, choice] == 1), dc)
        v0, t0 = grow(mask & (xc[:, choice] == 0), dc)
        if v0 + v1 < best[0]:
            return v0 + v1, {"feature": choice, "false": t0, "true": t1}
        return best

    return grow(np.ones(n_classes, dtype=bool), prep.root_depth)
