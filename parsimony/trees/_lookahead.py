"""Bounds of a candidate split's children from pair sums: terminal children solved at once,
depth-three children bounded one level deeper (the lookahead bound)."""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ..losses import LOSS_SQUARED
from ._bounds import _cell_loss, _class_totals
from ._memo import _find, _split_child, _store_solved
from ._records import BOUND_NONE
from ._register import _entry
from ._terminal import _active_list, _best_of_pairs, _leaves_of, _pair_sums, _score_pairs, _split_children


@njit
def _split_by_size(words, fbits, j, pairs, slot, count, small_out, large_out):
    """Write the smaller child of split ``j`` of ``words`` (``count`` classes; its size from the pair sums
    ``pairs`` indexed by ``slot``) into ``small_out`` and the larger into ``large_out``; returns the
    smaller one's side and both sizes."""
    jj = slot[j]
    n1 = np.int64(pairs[jj, jj, 3])
    n0 = count - n1
    small = 1 if n1 <= n0 else 0
    _split_child(words, fbits, j, small, small_out)
    _split_child(words, fbits, j, 1 - small, large_out)
    if small == 1:
        return small, n1, n0
    return small, n0, n1


@njit
def _terminal_children(problem, memo, frames, f, j, buffers, limit, bound0, bound1):
    """Solve the depth-two children of candidate ``j`` of the depth-three frame ``f`` as far as needed to
    tell whether their sum is below ``limit``; returns the false and true child's values or bounds.

    ``bound0`` and ``bound1`` are bounds known already; children in the table bring theirs. The
    larger child is solved first (its value most often rules the candidate out alone), the smaller
    one only if the candidate can still pay. The frame's pair sums are kept from its expansion
    (``frames.parent_pairs``, indexed by ``frames.parent_kept``): one pass over the smaller child
    gives its pair sums, and the larger child's are the parent's minus them (a pass over the
    larger child is taken instead when the smaller one is solved already and not much smaller).
    Solved children are stored.
    """
    lam = problem.lam
    keys = memo.keys
    depth = memo.depth
    child = buffers.child
    other = buffers.other
    pairs = buffers.pairs
    parent = frames.parent_pairs
    kept = frames.parent_kept
    slot = frames.parent_slot
    n_kept = kept[0]
    small, n_small, n_large = _split_by_size(frames.words[f], problem.feature_bits, j, parent, slot,
                                             frames.parent_count[0], child, other)
    b_small = bound1 if small == 1 else bound0
    b_large = bound0 if small == 1 else bound1
    t = _find(keys, depth, child, 2)
    if depth[t] != -1:
        b_small = memo.value[t]  # terminal subproblems are stored solved
    t = _find(keys, depth, other, 2)
    if depth[t] != -1:
        b_large = memo.value[t]
    elif b_small + b_large < limit:
        if 2 * n_small + 8 < n_large or memo.depth[_find(keys, depth, child, 2)] == -1:
            _pair_sums(problem, child, buffers.members, pairs, buffers.pair_within, False, slot, n_kept, buffers.ones)
            for a in range(n_kept):
                for c in range(a, n_kept):
                    for q in range(4):
                        pairs[a, c, q] = parent[a, c, q] - pairs[a, c, q]
            n, tw, ts, tq = _class_totals(problem, other, buffers.members)
            value, a, k0, k1 = _best_of_pairs(lam, pairs, buffers.pair_within, n, tw, ts, tq, kept, buffers.active)
            _store_solved(memo, other, 2, t, value, a, k0, k1)
        else:
            value = memo.value[_entry(problem, memo, buffers, other, 2, 0.0)]
        b_large = value
    if memo.depth[_find(keys, depth, child, 2)] == -1 and b_small + b_large < limit:
        b_small = memo.value[_entry(problem, memo, buffers, child, 2, 0.0)]
    if small == 1:
        return b_large, b_small
    return b_small, b_large


@njit(inline="always")  # (a call would count references to every array of the records)
def _looks_ahead_of_three(problem, frames, dc):
    """True when the children of depth ``dc`` are of depth three and get the lookahead bound from pair sums
    (:func:`_depth_three_children`) on registration (squared loss, depth limit, a bound, and the frames'
    arrays for it allocated: see ``_driver._new_frames``)."""
    return (dc == 3 and problem.loss_kind == LOSS_SQUARED and not problem.unlimited
            and problem.bound_kind != BOUND_NONE and frames.grand_pairs.shape[0] == problem.feature_bits.shape[0])


@njit
def _lookahead_bound(lam, pairs, pair_within, n, tw, ts, tq, tv, kept, active, cells, memo, words, fbits, child):
    """Lower bound on the optimum of depth at least two of ``words`` (``n`` classes) from its pair sums: the
    leaf, or any split whose children are each a leaf or split once more, every grandchild bounded by
    :func:`_part` (:func:`_split_children`), each child raised to its optimum if stored (depth two).
    ``active``, ``cells`` and ``child`` are work space."""
    best = _cell_loss(tw, ts, tq) + lam
    n_active = _active_list(pairs, n, kept[0], active)
    _score_pairs(lam, pairs, pair_within, n, tw, ts, tq, tv, False, active, n_active, cells)
    for a in range(n_active):
        leaf0, leaf1 = _leaves_of(pairs, active[a], tw, ts, tq, lam)
        l0, l1, _, _ = _split_children(cells, active[a], leaf0, leaf1, 0.0, active, n_active)
        if l0 + l1 < best:
            j = kept[1 + active[a]]
            for side in range(2):
                _split_child(words, fbits, j, side, child)
                t = _find(memo.keys, memo.depth, child, 2)
                if memo.depth[t] != -1:
                    b = memo.value[t] if memo.value[t] < np.inf else memo.lower[t]
                    if side == 0 and b > l0:
                        l0 = b
                    elif side == 1 and b > l1:
                        l1 = b
            if l0 + l1 < best:
                best = l0 + l1
    return best


_DERIVED = 1e-12  # a bound from differences of sums is lowered by this much (their rounding: objectives are O(1))


@njit
def _depth_three_children(problem, memo, frames, f, j, buffers, limit, known0, known1):
    """Register the missing depth-three children of candidate ``j`` of the depth-four frame ``f`` with
    their lookahead bounds (:func:`_lookahead_bound`), at least ``known0`` and ``known1``, as far as
    needed to tell whether their sum reaches ``limit``.

    The frame's pair sums are kept from its expansion (``frames.grand_pairs``): one pass over the
    smaller child gives its pair sums, and the larger child's are the frame's minus them (its bound is
    lowered by ``_DERIVED`` for their rounding); both are kept for the children's expansions
    (``frames.child_pairs``). The larger child's bound comes first; the smaller one's is computed
    only if the candidate can still pay (else the search registers it with its known bound). Tight
    bounds of both children make the budget the search gives the first child tight, and rule out
    some candidates without expanding either.
    """
    fbits = problem.feature_bits
    lam = problem.lam
    keys = memo.keys
    depth = memo.depth
    child = buffers.child
    other = buffers.other
    grand = frames.grand_pairs
    gw = frames.grand_within
    kept = frames.grand_kept
    n_kept = kept[0]
    small, _, _ = _split_by_size(frames.words[f], fbits, j, grand, frames.grand_slot, frames.grand_count[0], child,
                                 other)
    known_small = known1 if small == 1 else known0
    known_large = known0 if small == 1 else known1
    need_small = depth[_find(keys, depth, child, 3)] == -1
    t = _find(keys, depth, other, 3)
    need_large = depth[t] == -1
    if not need_large:
        b = memo.value[t] if memo.value[t] < np.inf else memo.lower[t]
        known_large = b if b > known_large else known_large
    if not (need_small or need_large):
        return
    small_pairs = frames.child_pairs[small]
    small_pw = frames.child_within[small]
    n_s, tw_s, ts_s, tq_s, tv_s = _pair_sums(problem, child, buffers.members, small_pairs, small_pw, True,
                                             frames.grand_slot, n_kept, buffers.ones)
    frames.child_key[small] = j
    frames.child_derived[small] = 0
    frames.child_key[1 - small] = -1
    if need_large:
        pairs = frames.child_pairs[1 - small]
        pw = frames.child_within[1 - small]
        for a in range(n_kept):
            for c in range(a, n_kept):
                for q in range(4):
                    pairs[a, c, q] = grand[a, c, q] - small_pairs[a, c, q]
                pw[a, c] = gw[a, c] - small_pw[a, c]
        frames.child_key[1 - small] = j
        frames.child_derived[1 - small] = 1
        n, tw, ts, tq = _class_totals(problem, other, buffers.members)
        tv = 0.0
        for i in range(n):
            tv += problem.class_within[buffers.members[i]]
        b = _lookahead_bound(lam, pairs, pw, n, tw, ts, tq, tv, kept, buffers.active, buffers.cells, memo, other,
                             fbits, buffers.buf_c) - _DERIVED
        known_large = b if b > known_large else known_large
        _entry(problem, memo, buffers, other, 3, known_large)
    if need_small and known_small + known_large < limit:
        b = _lookahead_bound(lam, small_pairs, small_pw, n_s, tw_s, ts_s, tq_s, tv_s, kept, buffers.active,
                             buffers.cells, memo, child, fbits, buffers.buf_c)
        _entry(problem, memo, buffers, child, 3, b if b > known_small else known_small)
