"""Expanding an OSRT subproblem: its candidate splits, scored by their children's bounds and
sorted."""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ..losses import LOSS_SQUARED
from ._bounds import _class_totals, leaf_loss
from ._lookahead import _DERIVED, _looks_ahead_of_three
from ._memo import _find, _members, _split_child, _splits_nothing
from ._records import BOUND_NONE
from ._register import _entry, _terminal
from ._terminal import _active_list, _index_features, _leaves_of, _pair_sums, _score_pairs, _split_children


@njit
def _feature_sums(problem, words, buffers):
    """Totals of the subproblem and per-feature sums over its classes where the feature is 1.

    Returns ``(n_members, weight, sum, sum of squares, within)``; the per-feature sums go to
    ``buffers.feat_*``.
    """
    members = buffers.members
    f_w = buffers.feat_weight
    f_s = buffers.feat_sum
    f_q = buffers.feat_sumsq
    f_v = buffers.feat_within
    ones = problem.class_ones
    cw = problem.class_weight
    cs = problem.class_sum
    cq = problem.class_sumsq
    cwithin = problem.class_within
    n_feat = f_w.shape[0]
    n = _members(words, members)
    tw = 0.0
    ts = 0.0
    tq = 0.0
    tv = 0.0
    for j in range(n_feat):
        f_w[j] = 0.0
        f_s[j] = 0.0
        f_q[j] = 0.0
        f_v[j] = 0.0
    for t in range(n):
        c = members[t]
        tw += cw[c]
        ts += cs[c]
        tq += cq[c]
        tv += cwithin[c]
        for a in range(1, ones[c, 0] + 1):
            j = ones[c, a]
            f_w[j] += cw[c]
            f_s[j] += cs[c]
            f_q[j] += cq[c]
            f_v[j] += cwithin[c]
    return n, tw, ts, tq, tv


@njit
def _two_squared_leaves(f_w, f_s, f_q, j, tw, ts, tq):
    """Squared loss of splitting on feature ``j`` into two leaves, from the per-feature sums."""
    w1 = f_w[j]
    w0 = tw - w1
    v1 = f_q[j] - f_s[j] * f_s[j] / w1
    s0 = ts - f_s[j]
    v0 = (tq - f_q[j]) - s0 * s0 / w0
    v1 = v1 if v1 > 0.0 else 0.0
    v0 = v0 if v0 > 0.0 else 0.0
    return v0 + v1


@njit
def _free_pair(lam, f_w, f_s, f_q, f_v, j, tw, ts, tq, tv):
    """Free bounds on the false and true children of feature ``j``.

    A child is one leaf (exact cost) or has two or more leaves (at least its equivalent-points
    loss + 2 lam), so it costs at least the smaller of the two.
    """
    w1 = f_w[j]
    w0 = tw - w1
    s1 = f_s[j]
    s0 = ts - s1
    leaf1 = f_q[j] - s1 * s1 / w1 + lam
    leaf0 = (tq - f_q[j]) - s0 * s0 / w0 + lam
    two1 = f_v[j] + 2.0 * lam
    two0 = (tv - f_v[j]) + 2.0 * lam
    l1 = leaf1 if leaf1 < two1 else two1
    l0 = leaf0 if leaf0 < two0 else two0
    return l0, l1


@njit
def _duplicate_by_sums(words, fbits, j, tw, ts, f_w, f_s, cand_feature, nf):
    """True when feature ``j`` splits ``words`` exactly like (or mirrored) an earlier candidate."""
    w1 = f_w[j]
    w0 = tw - w1
    s1 = f_s[j]
    s0 = ts - s1
    for e in range(nf):
        je = cand_feature[e]
        same = f_w[je] == w1 and f_s[je] == s1
        flip = f_w[je] == w0 and f_s[je] == s0
        if not (same or flip):
            continue
        equal_same = True
        equal_flip = True
        for i in range(words.shape[0]):
            a = words[i] & fbits[j, i]
            if a != (words[i] & fbits[je, i]):
                equal_same = False
            if a != (words[i] & ~fbits[je, i]):
                equal_flip = False
        if equal_same or equal_flip:
            return True
    return False


@njit
def _duplicate_by_slots(slot_false, slot_true, s0, s1, nf):
    """True when an earlier candidate has the same two children (either way round)."""
    for e in range(nf):
        a = slot_false[e]
        b = slot_true[e]
        if (a == s0 and b == s1) or (a == s1 and b == s0):
            return True
    return False


@njit
def _sort_candidates(buffers, nf):
    """Sort the candidates by their children's bounds (insertion sort, stable)."""
    cand_f = buffers.cand_feature
    cand_key = buffers.cand_key
    cand_l0 = buffers.cand_false
    cand_l1 = buffers.cand_true
    cand_k = buffers.cand_known
    for a in range(1, nf):
        kf = cand_f[a]
        kk = cand_key[a]
        m0 = cand_l0[a]
        m1 = cand_l1[a]
        mk = cand_k[a]
        b = a - 1
        while b >= 0 and cand_key[b] > kk:
            cand_f[b + 1] = cand_f[b]
            cand_key[b + 1] = cand_key[b]
            cand_l0[b + 1] = cand_l0[b]
            cand_l1[b + 1] = cand_l1[b]
            cand_k[b + 1] = cand_k[b]
            b -= 1
        cand_f[b + 1] = kf
        cand_key[b + 1] = kk
        cand_l0[b + 1] = m0
        cand_l1[b + 1] = m1
        cand_k[b + 1] = mk


@njit(inline="always")  # (a call would count references to every array of the records)
def _sorted_by_bound(problem, dc):
    """True when the candidates of subproblems with children of depth ``dc`` are sorted by their
    bounds; else by an upper bound (the lookahead with children of depth three or more)."""
    return (problem.unlimited or problem.bound_kind == BOUND_NONE or problem.loss_kind != LOSS_SQUARED
            or dc < 3)


@njit
def _candidates(problem, memo, words, dc, limit, buffers, pairs, pair_within, kept, slot, given, slack):
    """Fill ``buffers.cand_*`` with the useful splits of ``words``, sorted; returns their number and
    the least bound of the features ruled out (inf: none).

    At the last level (``dc == 0``) the key is the exact two-leaf objective. For the squared loss
    with a bound, features are scored by free bounds (``_free_pair``, or the lookahead of
    :func:`_split_children` under a depth limit; raised by the stored bounds of children already in
    the table); features these rule out (reaching ``limit``) are dropped and the k-Means bounds
    wait until the search reaches them. With children of depth three or more the sort key is
    instead the upper bound of children split at most once (unless both children are stored).
    Otherwise both children are registered in the table with their bounds. Features splitting
    like an earlier one are skipped. Records are unpacked once here: the per-feature helpers take
    plain arrays. The lookahead's pair sums go to ``pairs`` and ``pair_within``, indexed by ``kept``
    and ``slot`` (the frame's, when its children are terminal or of depth three); with ``given`` they
    are there already, and ``slack`` is taken off the bounds from them (differences of sums).
    """
    lam = problem.lam
    lazy = problem.bound_kind != BOUND_NONE and problem.loss_kind == LOSS_SQUARED
    squared = problem.loss_kind == LOSS_SQUARED
    fbits = problem.feature_bits
    keys = memo.keys
    depth = memo.depth
    value = memo.value
    lower = memo.lower
    f_w, f_s, f_q, f_v = buffers.feat_weight, buffers.feat_sum, buffers.feat_sumsq, buffers.feat_within
    child, other = buffers.child, buffers.other
    cand_feature, cand_key, cand_known = buffers.cand_feature, buffers.cand_key, buffers.cand_known
    cand_false, cand_true = buffers.cand_false, buffers.cand_true
    slot_false, slot_true = buffers.cand_slot_false, buffers.cand_slot_true
    n_feat = fbits.shape[0]
    nf = 0
    dropped = np.inf
    lookahead = lazy and dc > 0 and not problem.unlimited
    n_active = 0
    if lookahead:
        if given:
            n, tw, ts, tq = _class_totals(problem, words, buffers.members)
            tv = 0.0
            for i in range(n):
                tv += problem.class_within[buffers.members[i]]
        else:
            _index_features(words, fbits, kept, slot)
            n, tw, ts, tq, tv = _pair_sums(problem, words, buffers.members, pairs, pair_within, True, slot, kept[0],
                                           buffers.ones)
        n_active = _active_list(pairs, n, kept[0], buffers.active)
        _score_pairs(lam, pairs, pair_within, n, tw, ts, tq, tv, dc == 1, buffers.active, n_active, buffers.cells)
        if not _sorted_by_bound(problem, dc):
            _score_pairs(lam, pairs, pair_within, n, tw, ts, tq, tv, True, buffers.active, n_active, buffers.cells_up)
        for j in range(n_feat):
            a = slot[j]
            if a >= 0:
                f_w[j] = pairs[a, a, 0]
                f_s[j] = pairs[a, a, 1]
                f_q[j] = pairs[a, a, 2]
                f_v[j] = pair_within[a, a]
    else:
        n, tw, ts, tq, tv = _feature_sums(problem, words, buffers)
    for j in range(n_feat):
        if _splits_nothing(words, fbits, j):
            continue
        if dc == 0:
            # children are leaves: exact values
            if squared:
                pair = _two_squared_leaves(f_w, f_s, f_q, j, tw, ts, tq)
            else:
                _split_child(words, fbits, j, 0, child)
                _split_child(words, fbits, j, 1, other)
                pair = (leaf_loss(problem, child, buffers.members, buffers.buf_v, buffers.buf_w)
                        + leaf_loss(problem, other, buffers.members, buffers.buf_v, buffers.buf_w))
            cand_feature[nf] = j
            cand_key[nf] = pair + 2.0 * lam
            cand_known[nf] = 1
            nf += 1
        elif lazy:
            order_key = -1.0  # (the sort key when not the bound)
            if lookahead:
                leaf0, leaf1 = _leaves_of(pairs, slot[j], tw, ts, tq, lam)
                l0, l1, _, _ = _split_children(buffers.cells, slot[j], leaf0, leaf1, 0.0, buffers.active, n_active)
                l0 -= slack
                l1 -= slack
                if not _sorted_by_bound(problem, dc):
                    # deep children: try first the split whose children split once do best (an upper bound)
                    u0, u1, _, _ = _split_children(buffers.cells_up, slot[j], leaf0, leaf1, 0.0, buffers.active,
                                                   n_active)
                    order_key = u0 + u1
            else:
                l0, l1 = _free_pair(lam, f_w, f_s, f_q, f_v, j, tw, ts, tq, tv)
            if l0 + l1 >= limit + 1e-12:
                if l0 + l1 < dropped:
                    dropped = l0 + l1
                continue
            if _duplicate_by_sums(words, fbits, j, tw, ts, f_w, f_s, cand_feature, nf):
                continue
            known = 0
            for side in range(2):
                _split_child(words, fbits, j, side, child)
                t = _find(keys, depth, child, dc)
                if depth[t] != -1:
                    b = value[t] if value[t] < np.inf else lower[t]
                    known += 1
                    if side == 0 and b > l0:
                        l0 = b
                    elif side == 1 and b > l1:
                        l1 = b
            cand_feature[nf] = j
            cand_key[nf] = l0 + l1 if order_key < 0.0 or known == 2 else order_key
            cand_false[nf] = l0
            cand_true[nf] = l1
            cand_known[nf] = 1 if known == 2 else 0
            nf += 1
        else:
            _split_child(words, fbits, j, 0, child)
            s0 = _entry(problem, memo, buffers, child, dc, 0.0)
            b0 = value[s0] if value[s0] < np.inf else lower[s0]
            _split_child(words, fbits, j, 1, child)
            s1 = _entry(problem, memo, buffers, child, dc, 0.0)
            b1 = value[s1] if value[s1] < np.inf else lower[s1]
            if _duplicate_by_slots(slot_false, slot_true, s0, s1, nf):
                continue
            cand_feature[nf] = j
            cand_key[nf] = b0 + b1
            slot_false[nf] = s0
            slot_true[nf] = s1
            cand_false[nf] = value[s0] if value[s0] < np.inf else lower[s0]
            cand_true[nf] = value[s1] if value[s1] < np.inf else lower[s1]
            cand_known[nf] = 1
            nf += 1
    _sort_candidates(buffers, nf)
    return nf, dropped


@njit
def _expand(problem, memo, frames, f, s, buffers):
    """Expand frame ``f`` (subproblem in slot ``s``): solve it at once or list its candidate splits.

    Returns ``(solved, value)``: solved when the leaf meets the bound, at depth 0, or at depth one
    (every candidate is exact there); otherwise the frame's candidates are set up.
    """
    words = frames.words[f]
    d = frames.depth[f]
    dc = d if problem.unlimited else d - 1
    leaf = leaf_loss(problem, words, buffers.members, buffers.buf_v, buffers.buf_w) + problem.lam
    frames.best[f] = leaf
    frames.best_feature[f] = -1
    if leaf <= memo.lower[s] or d == 0:
        memo.value[s] = leaf
        memo.feature[s] = -1
        return True, leaf
    limit = leaf if leaf < frames.budget[f] else frames.budget[f]
    if _terminal(problem, dc):
        given, slack = _cached_sums(problem, frames, f, buffers.pair_within)
        nf, dropped = _candidates(problem, memo, words, dc, limit, buffers, frames.parent_pairs, buffers.pair_within,
                                  frames.parent_kept, frames.parent_slot, given, slack)
        frames.parent_count[0] = _members(words, buffers.members)
    elif _looks_ahead_of_three(problem, frames, dc):
        nf, dropped = _candidates(problem, memo, words, dc, limit, buffers, frames.grand_pairs, frames.grand_within,
                                  frames.grand_kept, frames.grand_slot, False, 0.0)
        frames.grand_count[0] = _members(words, buffers.members)
        frames.child_key[0] = -1
        frames.child_key[1] = -1
    else:
        nf, dropped = _candidates(problem, memo, words, dc, limit, buffers, buffers.pairs, buffers.pair_within,
                                  buffers.kept, buffers.slot, False, 0.0)
    if dc == 0:
        # depth one: every candidate value is exact, so the optimum is exact too
        best = leaf
        bestf = -1
        if nf > 0 and buffers.cand_key[0] < leaf:
            best = buffers.cand_key[0]
            bestf = buffers.cand_feature[0]
        memo.value[s] = best
        memo.feature[s] = bestf
        if memo.lower[s] < best:
            memo.lower[s] = best
        return True, best
    for a in range(nf):
        frames.order[f, a] = buffers.cand_feature[a]
        frames.false_bound[f, a] = buffers.cand_false[a]
        frames.true_bound[f, a] = buffers.cand_true[a]
        frames.bounds_final[f, a] = buffers.cand_known[a]
    frames.n_candidates[f] = nf
    frames.dropped[f] = dropped
    frames.position[f] = 0
    frames.phase[f] = 0
    return False, 0.0


@njit
def _cached_sums(problem, frames, f, pair_within):
    """Copy the pair sums of the depth-three frame ``f`` kept by its parent (:func:`_depth_three_children`)
    into ``frames.parent_pairs`` and ``pair_within``, with the parent's index; returns ``(found, slack)``
    (``slack``: what to take off bounds from them, see ``_DERIVED``)."""
    if f == 0 or not _looks_ahead_of_three(problem, frames, frames.depth[f - 1] - 1):
        return False, 0.0
    side = frames.phase[f - 1]
    if frames.child_key[side] != frames.order[f - 1, frames.position[f - 1]]:
        return False, 0.0
    n_kept = frames.grand_kept[0]
    src = frames.child_pairs[side]
    src_w = frames.child_within[side]
    dst = frames.parent_pairs
    for a in range(n_kept):
        for c in range(a, n_kept):
            for t in range(4):
                dst[a, c, t] = src[a, c, t]
            pair_within[a, c] = src_w[a, c]
    for a in range(n_kept + 1):
        frames.parent_kept[a] = frames.grand_kept[a]
    for j in range(frames.grand_slot.shape[0]):
        frames.parent_slot[j] = frames.grand_slot[j]
    return True, _DERIVED if frames.child_derived[side] == 1 else 0.0
