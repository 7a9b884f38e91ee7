"""The terminal solver of the OSRT search: the optimal tree of depth <= 2 of a subproblem
directly, from per-feature-pair sums (squared loss, depth limit)."""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ..losses import LOSS_SQUARED
from ._bounds import _cell_loss, _class_totals
from ._memo import _splits_nothing

_TIE = 1e-13  # a candidate must beat the best so far by this much (objectives are O(1)), so that
#               rounding noise never decides between splits of one partition: the first one wins


@njit
def _index_features(words, fbits, kept, slot):
    """List the features that split ``words`` (ascending) in ``kept[1:]``, their number in ``kept[0]``,
    and each feature's index in that list in ``slot`` (-1: it splits nothing).

    Pair sums are indexed by that list: a feature that splits nothing here splits nothing below.
    """
    k = 0
    for j in range(fbits.shape[0]):
        if not _splits_nothing(words, fbits, j):
            slot[j] = k
            kept[1 + k] = j
            k += 1
        else:
            slot[j] = -1
    kept[0] = k


@njit
def _pair_sums(problem, words, members, pairs, pair_within, within, slot, n_kept, ones):
    """Sums over the classes of ``words`` for every pair of indexed features ``a <= b`` where both are 1.

    Features are indexed by ``slot`` (see :func:`_index_features`; -1: left out), ``n_kept`` of them.
    ``pairs[a, b]`` gets the weight, sum, sum of squares and count of those classes (``a == b``:
    where ``a`` is 1), and with ``within`` ``pair_within[a, b]`` their within-class loss. ``ones``
    is work space. Returns ``(n_members, weight, sum, sum of squares, within)`` of all of them.
    """
    cw = problem.class_weight
    cs = problem.class_sum
    cq = problem.class_sumsq
    cv = problem.class_within
    class_ones = problem.class_ones
    for a in range(n_kept):
        for b in range(a, n_kept):
            for t in range(4):
                pairs[a, b, t] = 0.0
            if within:
                pair_within[a, b] = 0.0
    n, tw, ts, tq = _class_totals(problem, words, members)
    tv = 0.0
    side = pairs.shape[1]
    flat = pairs.reshape(pairs.shape[0] * side * 4)  # (flat offsets: a little faster than 3-d indexing)
    for i in range(n):
        c = members[i]
        w = cw[c]
        s = cs[c]
        q = cq[c]
        m = 0
        for a in range(1, class_ones[c, 0] + 1):
            k = slot[class_ones[c, a]]
            if k >= 0:
                ones[m] = k
                m += 1
        for a in range(m):
            row = ones[a] * side
            for b in range(a, m):
                o = 4 * (row + ones[b])
                flat[o] += w
                flat[o + 1] += s
                flat[o + 2] += q
                flat[o + 3] += 1.0
        if within:
            v = cv[c]
            tv += v
            if v != 0.0:
                for a in range(m):
                    ja = ones[a]
                    for b in range(a, m):
                        pair_within[ja, ones[b]] += v
    return n, tw, ts, tq, tv


@njit
def _active_list(pairs, n, n_kept, active):
    """Write the indexed features that split a set of ``n`` classes (by its pair sums' counts) into
    ``active`` (ascending); return how many."""
    na = 0
    for a in range(n_kept):
        na_ = pairs[a, a, 3]
        if 0.0 < na_ < n:
            active[na] = a
            na += 1
    return na


@njit
def _part(lam, w, s, q, v, count, leaves):
    """Objective of a part of a split holding ``count`` classes (weight ``w``, sum ``s``, squares ``q``,
    within-class loss ``v``): exact when it must be a leaf, else a lower bound (one leaf, or two or
    more costing at least the within-class loss + 2 lam); inf when empty (no split leaves a part empty)."""
    if count <= 0.0:
        return np.inf
    leaf = _cell_loss(w, s, q) + lam
    if leaves:
        return leaf
    two = v + 2.0 * lam
    return leaf if leaf < two else two


@njit
def _score_pairs(lam, pairs, pw, n, tw, ts, tq, tv, leaves, active, n_active, cells):
    """Score the four parts of every pair of splits ``a < b`` of ``active[:n_active]`` with :func:`_part`,
    from the pair sums of a set of ``n`` classes (totals ``tw``, ``ts``, ``tq``, within-class ``tv``;
    ``pw``: the pairs' within-class losses, unused with ``leaves``).

    ``cells[a, b]`` gets the parts where both are 1, ``a`` only, ``b`` only and neither, and
    ``cells[b, a, 0]`` the last again in the arithmetic of ``b`` splitting first (so that
    :func:`_split_children` scores each split with the sums of its own first split). ``cells`` may
    be ``pairs`` itself (the off-diagonal sums are then overwritten, the diagonal kept).
    """
    for x in range(n_active):
        a = active[x]
        wa, sa, qa, na = pairs[a, a, 0], pairs[a, a, 1], pairs[a, a, 2], pairs[a, a, 3]
        va = 0.0 if leaves else pw[a, a]
        for y in range(x + 1, n_active):
            b = active[y]
            wb, sb, qb, nb = pairs[b, b, 0], pairs[b, b, 1], pairs[b, b, 2], pairs[b, b, 3]
            vb = 0.0 if leaves else pw[b, b]
            w11, s11, q11, n11 = pairs[a, b, 0], pairs[a, b, 1], pairs[a, b, 2], pairs[a, b, 3]
            v11 = 0.0 if leaves else pw[a, b]
            n00 = (n - na) - (nb - n11)
            cells[a, b, 0] = _part(lam, w11, s11, q11, v11, n11, leaves)
            cells[a, b, 1] = _part(lam, wa - w11, sa - s11, qa - q11, va - v11, na - n11, leaves)
            cells[a, b, 2] = _part(lam, wb - w11, sb - s11, qb - q11, vb - v11, nb - n11, leaves)
            cells[a, b, 3] = _part(lam, (tw - wa) - (wb - w11), (ts - sa) - (sb - s11), (tq - qa) - (qb - q11),
                                   (tv - va) - (vb - v11), n00, leaves)
            cells[b, a, 0] = _part(lam, (tw - wb) - (wa - w11), (ts - sb) - (sa - s11), (tq - qb) - (qa - q11),
                                   (tv - vb) - (va - v11), n00, leaves)


@njit
def _split_children(cells, j, best0, best1, tie, active, n_active):
    """The false and true children of split ``j``, each a leaf (of objective ``best0``, ``best1``) or
    split once more by a feature of ``active[:n_active]``, its two parts scored in ``cells`` (see
    :func:`_score_pairs`: exact with leaf parts, else lower bounds). A split must beat the best so
    far by ``tie``. Returns ``(value0, value1, split0, split1)`` (-1: the child stays a leaf)."""
    k1 = -1
    k0 = -1
    for y in range(n_active):
        k = active[y]
        if k == j:
            continue
        if j < k:  # parts of (j, k): both 1, j only, k only, neither
            c11 = cells[j, k, 0]
            c10 = cells[j, k, 1]
            c01 = cells[j, k, 2]
            c00 = cells[j, k, 3]
        else:
            c11 = cells[k, j, 0]
            c10 = cells[k, j, 2]
            c01 = cells[k, j, 1]
            c00 = cells[j, k, 0]
        val = c11 + c10  # the true child (j = 1) split by k
        if val < best1 - tie:
            best1 = val
            k1 = k
        val = c01 + c00  # the false child split by k
        if val < best0 - tie:
            best0 = val
            k0 = k
    return best0, best1, k0, k1


@njit
def _leaves_of(pairs, j, tw, ts, tq, lam):
    """Objectives of the false and true child of split ``j`` as leaves, from the pair sums."""
    leaf1 = _cell_loss(pairs[j, j, 0], pairs[j, j, 1], pairs[j, j, 2]) + lam
    leaf0 = _cell_loss(tw - pairs[j, j, 0], ts - pairs[j, j, 1], tq - pairs[j, j, 2]) + lam
    return leaf0, leaf1


@njit
def _best_of_pairs(lam, pairs, pair_within, n, tw, ts, tq, kept, active):
    """Optimal tree of depth at most two on a set of ``n`` classes (weight ``tw``, sum ``ts``, squares
    ``tq``) from its pair sums, indexed by ``kept`` (see :func:`_index_features`); ``active`` is work
    space. Returns ``(value, j, k0, k1)`` like :func:`_depth_two`.

    The leaves of every pair of splits are scored once (:func:`_score_pairs`, into ``pairs``: the
    off-diagonal sums are overwritten). A split is scored only if its children could beat the best
    so far: each is a leaf or costs at least ``2 lam``.
    """
    best = _cell_loss(tw, ts, tq) + lam
    best_j = -1
    best_k0 = -1
    best_k1 = -1
    two = 2.0 * lam
    n_active = _active_list(pairs, n, kept[0], active)
    _score_pairs(lam, pairs, pair_within, n, tw, ts, tq, 0.0, True, active, n_active, pairs)
    for x in range(n_active):
        j = active[x]
        leaf0, leaf1 = _leaves_of(pairs, j, tw, ts, tq, lam)
        if (leaf0 if leaf0 < two else two) + (leaf1 if leaf1 < two else two) >= best - _TIE:
            continue
        best0, best1, k0, k1 = _split_children(pairs, j, leaf0, leaf1, _TIE, active, n_active)
        if best0 + best1 < best - _TIE:
            best = best0 + best1
            best_j = kept[1 + j]
            best_k0 = kept[1 + k0] if k0 >= 0 else -1
            best_k1 = kept[1 + k1] if k1 >= 0 else -1
    return best, best_j, best_k0, best_k1


@njit
def _depth_two(problem, words, members, pairs, pair_within, kept, slot, active, ones):
    """Optimal tree of depth at most two on the classes of ``words`` under the squared loss.

    One pass over the classes accumulates the sums of every pair of features (:func:`_pair_sums`,
    into the work arrays ``pairs`` and ``pair_within``; ``kept``, ``slot``, ``active`` and ``ones``
    are work space too); the four cells of any pair of splits follow by differences, so every
    depth-two tree is scored without visiting the classes again. Returns ``(value, j, k0, k1)``: the
    optimal objective, the root split (-1: a leaf) and the splits of its false and true children
    (-1: leaves).
    """
    _index_features(words, problem.feature_bits, kept, slot)
    n, tw, ts, tq, _ = _pair_sums(problem, words, members, pairs, pair_within, False, slot, kept[0], ones)
    return _best_of_pairs(problem.lam, pairs, pair_within, n, tw, ts, tq, kept, active)


@njit(inline="always")  # (a call would count references to every array of the records)
def _terminal(problem, d):
    """True when subproblems of remaining depth ``d`` are solved by :func:`_depth_two` on registration."""
    return d == 2 and problem.loss_kind == LOSS_SQUARED and not problem.unlimited
