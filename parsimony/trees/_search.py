"""Dynamic programming with bounds for optimal sparse regression trees (numba kernels).

A subproblem is a set of equivalence classes (rows with identical binary features), held as a
bitset of ``uint64`` words, together with its remaining depth. Its optimum is

    opt(S, d) = min( leaf(S),  min_j opt(S & ~F_j, d-1) + opt(S & F_j, d-1) )

with ``leaf(S) = loss(S) + lam``. The search is a depth-first branch and bound with budgets: a
subproblem is asked for a solution strictly below a budget and either returns its exact optimum
or a proven lower bound at least the budget. Subproblems are memoised in an open-addressing
hash table over flat arrays (key words, depth, lower bound, exact value, best feature). Lower
bounds: the k-Means (k-median for the absolute loss) equivalent-points bound, capped at
``2**d`` leaves under a depth limit, and every bound proven by earlier searches. For the squared
loss, features are first scored with free bounds (each child is one leaf, of exact cost, or has two
or more leaves, costing at least its equivalent-points loss + 2 lam; or its stored bound): features
these rule out are dropped, the rest are tried in increasing order of that score, and a
feature's k-Means bounds are computed only when the loop reaches it (then it is skipped if they
reach the budget). The loop stops at the first feature whose bound reaches the budget
(hierarchical bound and one-step lookahead). Whether a returned value is exact or only a bound is
passed explicitly, never inferred from floating-point comparisons with the budget.

The kernel runs for a bounded number of node expansions and returns; the explicit stack makes
it resumable, so the Python caller enforces time limits and grows the table between calls.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ..losses import LOSS_ABSOLUTE, LOSS_SQUARED
from ._kmeans import cluster_costs

# kernel return codes
DONE = 0
PAUSED = 1
NEED_SPACE = 2

UNLIMITED = 1 << 30
BOUND_NONE = 0
BOUND_EQUIVALENT = 1
BOUND_KMEANS = 2

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_S1 = np.uint64(31)
_S2 = np.uint64(29)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_FIFTY_EIGHT = np.uint64(58)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)


def _debruijn_index():
    table = np.zeros(64, dtype=np.int64)
    for i in range(64):
        table[((1 << i) * 0x03F79D71B4CB0A89 & 0xFFFFFFFFFFFFFFFF) >> 58] = i
    return table


_DEBRUIJN_INDEX = _debruijn_index()


@njit
def _hash(words, d):
    h = np.uint64(d) * _M1 + _ONE
    for i in range(words.shape[0]):
        h ^= words[i]
        h *= _M2
        h ^= h >> _S1
    h *= _M1
    h ^= h >> _S2
    return h


@njit
def _find(keys, depth, words, d):
    """Slot of ``(words, d)`` in the table, or of the empty slot where it would go."""
    mask = np.uint64(depth.shape[0] - 1)
    slot = np.int64(_hash(words, d) & mask)
    nw = words.shape[0]
    while True:
        dd = depth[slot]
        if dd == -1:
            return slot
        if dd == d:
            same = True
            for i in range(nw):
                if keys[slot, i] != words[i]:
                    same = False
                    break
            if same:
                return slot
        slot = (slot + 1) & (depth.shape[0] - 1)


@njit
def rehash(keys, depth, lb, val, feat, new_keys, new_depth, new_lb, new_val, new_feat):
    """Move every entry of the old table into the (empty, larger) new one."""
    for s in range(depth.shape[0]):
        if depth[s] == -1:
            continue
        t = _find(new_keys, new_depth, keys[s], depth[s])
        new_keys[t, :] = keys[s, :]
        new_depth[t] = depth[s]
        new_lb[t] = lb[s]
        new_val[t] = val[s]
        new_feat[t] = feat[s]


@njit
def lookup(keys, depth, words, d):
    """Slot of ``(words, d)`` or -1 when absent."""
    s = _find(keys, depth, words, d)
    if depth[s] == -1:
        return -1
    return s


@njit
def _members(words, out):
    """Write the class indices of a bitset (ascending) into ``out``; return how many."""
    n = 0
    for wi in range(words.shape[0]):
        x = words[wi]
        while x:
            low = x & (~x + _ONE)
            out[n] = wi * 64 + _DEBRUIJN_INDEX[np.int64((low * _DEBRUIJN) >> _FIFTY_EIGHT)]
            n += 1
            x ^= low
    return n


@njit
def _row_in(words, c):
    return (words[c >> 6] >> np.uint64(c & 63)) & _ONE


@njit
def leaf_loss(loss_kind, words, cw, cs, cq, row_class, row_y, row_w, members):
    """Normalised loss of one leaf holding the classes of ``words``.

    Squared loss: weighted sum of squares about the weighted mean from per-class (weight,
    weighted sum, weighted sum of squares) of the scaled targets. Absolute loss: weighted
    absolute deviations about the weighted median, from the rows sorted by target
    (``row_class``/``row_y``/``row_w``).
    """
    if loss_kind == LOSS_SQUARED:
        n = _members(words, members)
        w = 0.0
        s = 0.0
        q = 0.0
        for t in range(n):
            c = members[t]
            w += cw[c]
            s += cs[c]
            q += cq[c]
        if w <= 0.0:
            return 0.0
        v = q - s * s / w
        return v if v > 0.0 else 0.0
    # absolute loss: rows are sorted by target
    total = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            total += row_w[r]
    if total <= 0.0:
        return 0.0
    acc = 0.0
    med = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            acc += row_w[r]
            if 2.0 * acc >= total:  # the weighted (lower) median
                med = row_y[r]
                break
    tot = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            tot += row_w[r] * abs(row_y[r] - med)
    return tot


@njit
def lower_bound(bound_kind, loss_kind, words, d, lam, cw, cmean, cwithin, row_class, row_y, row_w, members, buf_w,
                buf_v):
    """Lower bound on ``opt(words, d)``: the (k-Means) equivalent-points bound.

    Squared loss: weighted k-Means over the sorted class means plus the within-class loss
    (Theorem 3.6 of the paper). Absolute loss: weighted k-median over the rows (clusters may split a
    class, so this relaxes the tree problem), floored per k by the within-class absolute loss.
    Under a depth limit ``d`` at most ``2**d`` clusters are tried.
    """
    n = _members(words, members)
    within = 0.0
    for t in range(n):
        within += cwithin[members[t]]
    if bound_kind == BOUND_NONE:
        return lam
    if bound_kind == BOUND_EQUIVALENT or n <= 1:
        return within + lam
    kmax = n
    if d < 30:
        cap = 1 << d
        if cap < kmax:
            kmax = cap
    if loss_kind == LOSS_SQUARED:
        for t in range(n):
            c = members[t]
            buf_w[t] = cw[c]
            buf_v[t] = cmean[c]
        best, _ = cluster_costs(LOSS_SQUARED, buf_w[:n], buf_v[:n], kmax, lam, 0.0)
        return best + within
    m = 0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            buf_w[m] = row_w[r]
            buf_v[m] = row_y[r]
            m += 1
    best, _ = cluster_costs(LOSS_ABSOLUTE, buf_w[:m], buf_v[:m], kmax, lam, within)
    return best


@njit
def _entry(keys, depth, lb, val, feat, counters, words, d, bound_kind, loss_kind, lam, cw, cmean, cwithin, row_class,
           row_y, row_w, members, buf_w, buf_v):
    """Slot of subproblem ``(words, d)``, registered with its lower bound if new."""
    t = _find(keys, depth, words, d)
    if depth[t] == -1:
        keys[t, :] = words
        depth[t] = d
        lb[t] = lower_bound(bound_kind, loss_kind, words, d, lam, cw, cmean, cwithin, row_class, row_y, row_w, members,
                            buf_w, buf_v)
        val[t] = np.inf
        feat[t] = -2
        counters[0] += 1
        counters[2] += 1
    return t


@njit
def _split_child(words, fbits, j, side, out):
    """Write the support of child ``side`` (0: feature ``j`` is 0, 1: it is 1) into ``out``."""
    for i in range(words.shape[0]):
        if side == 0:
            out[i] = words[i] & ~fbits[j, i]
        else:
            out[i] = words[i] & fbits[j, i]


@njit
def search(
    # problem
    loss_kind, bound_kind, lam, unlimited, xc, fbits, cw, cs, cq, cmean, cwithin, row_class, row_y, row_w,
    # table
    keys, depth, lb, val, feat, counters,
    # stack
    st_words, st_d, st_ub, st_best, st_bestf, st_nf, st_pos, st_phase, st_v0, st_order, st_lb0, st_lb1, st_ref,
    st_top, max_steps,
):
    """Run the search for at most ``max_steps`` node expansions.

    ``counters``: [0] entries in the table, [1] expansions, [2] bounds computed, [3] capacity
    limit for entries. ``st_top[0]`` is the stack height (0 when the root has returned) and
    ``st_top[1]`` receives the value the root returned. Returns DONE, PAUSED or NEED_SPACE.
    """
    n_feat = fbits.shape[0]
    n_classes = cw.shape[0]
    nw = fbits.shape[1]
    members = np.empty(n_classes, dtype=np.int64)
    buf_n = max(n_classes, row_y.shape[0])
    buf_w = np.empty(buf_n)
    buf_v = np.empty(buf_n)
    f_w = np.empty(n_feat)
    f_s = np.empty(n_feat)
    f_q = np.empty(n_feat)
    f_v = np.empty(n_feat)
    child = np.empty(nw, dtype=np.uint64)
    other = np.empty(nw, dtype=np.uint64)
    cand_f = np.empty(n_feat, dtype=np.int64)
    cand_key = np.empty(n_feat)
    cand_s0 = np.empty(n_feat, dtype=np.int64)
    cand_s1 = np.empty(n_feat, dtype=np.int64)
    cand_l0 = np.empty(n_feat)
    cand_l1 = np.empty(n_feat)
    lazy = bound_kind != BOUND_NONE and loss_kind == LOSS_SQUARED
    steps = 0
    ret = 0.0
    ret_exact = False
    returning = False
    top = st_top[0]
    while top > 0:
        f = top - 1
        d = st_d[f]
        words = st_words[f]
        dc = d if unlimited else d - 1
        if returning:
            returning = False
            v = ret
            bound = st_best[f] if st_best[f] < st_ub[f] else st_ub[f]
            p = st_pos[f]
            if st_phase[f] == 0:
                if not ret_exact or v + st_lb1[f, p] >= bound:
                    st_pos[f] = p + 1
                else:
                    st_v0[f] = v
                    st_phase[f] = 1
                    j = st_order[f, p]
                    for i in range(nw):
                        st_words[top, i] = words[i] & fbits[j, i]
                    st_d[top] = dc
                    st_ub[top] = bound - v
                    st_nf[top] = -1
                    top += 1
                    continue
            else:
                if ret_exact and st_v0[f] + v < bound:
                    st_best[f] = st_v0[f] + v
                    st_bestf[f] = st_order[f, p]
                st_pos[f] = p + 1
        elif st_nf[f] < 0:
            # entering a subproblem
            if counters[0] + 2 * n_feat + 2 > counters[3]:
                st_top[0] = top
                return NEED_SPACE
            # registered already, except the root on its first visit
            s = _entry(keys, depth, lb, val, feat, counters, words, d, bound_kind, loss_kind, lam, cw, cmean,
                       cwithin, row_class, row_y, row_w, members, buf_w, buf_v)
            if val[s] < np.inf:
                ret = val[s]
                ret_exact = True
                returning = True
                top -= 1
                continue
            if lb[s] >= st_ub[f]:
                ret = lb[s]
                ret_exact = False
                returning = True
                top -= 1
                continue
            if counters[0] + 2 * n_feat + 2 > counters[3]:
                st_top[0] = top
                return NEED_SPACE
            if steps >= max_steps:
                st_top[0] = top
                return PAUSED
            steps += 1
            counters[1] += 1
            leaf = leaf_loss(loss_kind, words, cw, cs, cq, row_class, row_y, row_w, members) + lam
            st_best[f] = leaf
            st_bestf[f] = -1
            if leaf <= lb[s] or d == 0:
                val[s] = leaf
                feat[s] = -1
                ret = leaf
                ret_exact = True
                returning = True
                top -= 1
                continue
            # children's bounds for every useful feature
            nf = 0
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
                for j in range(n_feat):
                    if xc[c, j]:
                        f_w[j] += cw[c]
                        f_s[j] += cs[c]
                        f_q[j] += cq[c]
                        f_v[j] += cwithin[c]
            bound_now = leaf if leaf < st_ub[f] else st_ub[f]
            for j in range(n_feat):
                empty0 = True
                empty1 = True
                for i in range(nw):
                    a = words[i] & fbits[j, i]
                    b = words[i] & ~fbits[j, i]
                    if a != _ZERO:
                        empty1 = False
                    if b != _ZERO:
                        empty0 = False
                if empty0 or empty1:
                    continue
                if dc == 0:
                    # children are leaves: exact values
                    if loss_kind == LOSS_SQUARED:
                        w1 = f_w[j]
                        w0 = tw - w1
                        v1 = f_q[j] - f_s[j] * f_s[j] / w1
                        s0 = ts - f_s[j]
                        v0 = (tq - f_q[j]) - s0 * s0 / w0
                        v1 = v1 if v1 > 0.0 else 0.0
                        v0 = v0 if v0 > 0.0 else 0.0
                    else:
                        for i in range(nw):
                            child[i] = words[i] & ~fbits[j, i]
                            other[i] = words[i] & fbits[j, i]
                        v0 = leaf_loss(loss_kind, child, cw, cs, cq, row_class, row_y, row_w, members)
                        v1 = leaf_loss(loss_kind, other, cw, cs, cq, row_class, row_y, row_w, members)
                    cand_f[nf] = j
                    cand_key[nf] = v0 + v1 + 2.0 * lam
                    cand_s0[nf] = -1
                    cand_s1[nf] = -1
                    nf += 1
                    continue
                if lazy:
                    # free bounds: a child is one leaf (exact cost) or has >= 2 leaves (>= its
                    # equivalent-points loss + 2 lam); stored bounds when the table has the child.
                    # The k-Means bounds are computed later, only for features the loop reaches.
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
                    if l0 + l1 >= bound_now + 1e-12:
                        continue
                    # skip a feature that splits exactly like an earlier one
                    dup = False
                    for e in range(nf):
                        je = cand_f[e]
                        same = f_w[je] == w1 and f_s[je] == s1
                        flip = f_w[je] == w0 and f_s[je] == s0
                        if not (same or flip):
                            continue
                        equal_same = True
                        equal_flip = True
                        for i in range(nw):
                            a = words[i] & fbits[j, i]
                            if a != (words[i] & fbits[je, i]):
                                equal_same = False
                            if a != (words[i] & ~fbits[je, i]):
                                equal_flip = False
                        if equal_same or equal_flip:
                            dup = True
                            break
                    if dup:
                        continue
                    known = 0
                    for side in range(2):
                        _split_child(words, fbits, j, side, child)
                        t = _find(keys, depth, child, dc)
                        if depth[t] != -1:
                            b = val[t] if val[t] < np.inf else lb[t]
                            known += 1
                            if side == 0 and b > l0:
                                l0 = b
                            elif side == 1 and b > l1:
                                l1 = b
                    cand_f[nf] = j
                    cand_key[nf] = l0 + l1
                    cand_l0[nf] = l0
                    cand_l1[nf] = l1
                    cand_s0[nf] = 1 if known == 2 else 0
                    nf += 1
                    continue
                lbs = 0.0
                slots0 = 0
                slots1 = 0
                for side in range(2):
                    _split_child(words, fbits, j, side, child)
                    t = _entry(keys, depth, lb, val, feat, counters, child, dc, bound_kind, loss_kind, lam, cw,
                               cmean, cwithin, row_class, row_y, row_w, members, buf_w, buf_v)
                    b = val[t] if val[t] < np.inf else lb[t]
                    lbs += b
                    if side == 0:
                        slots0 = t
                    else:
                        slots1 = t
                # skip a feature that splits exactly like an earlier one
                dup = False
                for e in range(nf):
                    if (cand_s0[e] == slots0 and cand_s1[e] == slots1) or (cand_s0[e] == slots1 and cand_s1[e] == slots0):
                        dup = True
                        break
                if dup:
                    continue
                cand_f[nf] = j
                cand_key[nf] = lbs
                cand_s0[nf] = slots0
                cand_s1[nf] = slots1
                cand_l0[nf] = val[slots0] if val[slots0] < np.inf else lb[slots0]
                cand_l1[nf] = val[slots1] if val[slots1] < np.inf else lb[slots1]
                nf += 1
            # sort candidates by children's lower bound (insertion sort, stable)
            for a in range(1, nf):
                kf = cand_f[a]
                kk = cand_key[a]
                k0 = cand_s0[a]
                k1 = cand_s1[a]
                m0 = cand_l0[a]
                m1 = cand_l1[a]
                b = a - 1
                while b >= 0 and cand_key[b] > kk:
                    cand_f[b + 1] = cand_f[b]
                    cand_key[b + 1] = cand_key[b]
                    cand_s0[b + 1] = cand_s0[b]
                    cand_s1[b + 1] = cand_s1[b]
                    cand_l0[b + 1] = cand_l0[b]
                    cand_l1[b + 1] = cand_l1[b]
                    b -= 1
                cand_f[b + 1] = kf
                cand_key[b + 1] = kk
                cand_s0[b + 1] = k0
                cand_s1[b + 1] = k1
                cand_l0[b + 1] = m0
                cand_l1[b + 1] = m1
            if dc == 0:
                # depth one: every candidate value is exact, so the optimum is exact too
                best = leaf
                bestf = -1
                if nf > 0 and cand_key[0] < leaf:
                    best = cand_key[0]
                    bestf = cand_f[0]
                val[s] = best
                feat[s] = bestf
                if lb[s] < best:
                    lb[s] = best
                ret = best
                ret_exact = True
                returning = True
                top -= 1
                continue
            for a in range(nf):
                st_order[f, a] = cand_f[a]
                st_lb0[f, a] = cand_l0[a]
                st_lb1[f, a] = cand_l1[a]
                # bounds final when eager, or when both children were already in the table
                st_ref[f, a] = 1 if (not lazy or cand_s0[a] == 1) else 0
            st_nf[f] = nf
            st_pos[f] = 0
            st_phase[f] = 0
        # choose the next feature (computing its children's k-Means bounds on first visit)
        bound = st_best[f] if st_best[f] < st_ub[f] else st_ub[f]
        p = st_pos[f]
        while p < st_nf[f] and st_lb0[f, p] + st_lb1[f, p] < bound and st_ref[f, p] == 0:
            if counters[0] + 2 > counters[3]:
                st_pos[f] = p
                st_top[0] = top
                return NEED_SPACE
            j = st_order[f, p]
            for side in range(2):
                _split_child(words, fbits, j, side, child)
                t = _entry(keys, depth, lb, val, feat, counters, child, dc, bound_kind, loss_kind, lam, cw, cmean,
                           cwithin, row_class, row_y, row_w, members, buf_w, buf_v)
                b = val[t] if val[t] < np.inf else lb[t]
                if side == 0:
                    if b > st_lb0[f, p]:
                        st_lb0[f, p] = b
                elif b > st_lb1[f, p]:
                    st_lb1[f, p] = b
            st_ref[f, p] = 1
            if st_lb0[f, p] + st_lb1[f, p] >= bound:
                p += 1
        st_pos[f] = p
        if p < st_nf[f] and st_lb0[f, p] + st_lb1[f, p] < bound:
            j = st_order[f, p]
            st_phase[f] = 0
            for i in range(nw):
                st_words[top, i] = words[i] & ~fbits[j, i]
            st_d[top] = dc
            st_ub[top] = bound - st_lb1[f, p]
            st_nf[top] = -1
            top += 1
            continue
        s = _find(keys, depth, words, d)
        if st_best[f] < st_ub[f]:
            val[s] = st_best[f]
            feat[s] = st_bestf[f]
            if lb[s] < st_best[f]:
                lb[s] = st_best[f]
            ret = st_best[f]
            ret_exact = True
        else:
            if lb[s] < st_ub[f]:
                lb[s] = st_ub[f]
            ret = lb[s]
            ret_exact = False
        returning = True
        top -= 1
    st_top[0] = 0
    st_top[1] = 0
    return DONE


@njit
def stack_lower_bound(st_best, st_ub, st_nf, st_pos, st_phase, st_v0, st_lb0, st_lb1, top, top_lb):
    """Certified lower bound on the root's optimum from a paused stack (time or memory limit).

    The top frame is paused on entry, so its bound is its memoised bound ``top_lb``. Every
    frame below is solving feature ``st_pos`` (child 0 in phase 0, child 1 in phase 1) and has
    proven every earlier feature worth at least ``min(best, budget)``; later features are
    worth at least their sorted children's bounds.
    """
    inner = top_lb
    last = top - 1
    if st_nf[last] >= 0:  # paused while choosing its next feature
        inner = st_best[last] if st_best[last] < st_ub[last] else st_ub[last]
        p = st_pos[last]
        if p < st_nf[last] and st_lb0[last, p] + st_lb1[last, p] < inner:
            inner = st_lb0[last, p] + st_lb1[last, p]
    for f in range(top - 2, -1, -1):
        p = st_pos[f]
        nf = st_nf[f]
        if st_phase[f] == 0:
            cand = inner + st_lb1[f, p]
        else:
            cand = st_v0[f] + inner
        if p + 1 < nf:
            nxt = st_lb0[f, p + 1] + st_lb1[f, p + 1]
            if nxt < cand:
                cand = nxt
        b = st_best[f]
        if st_ub[f] < b:
            b = st_ub[f]
        if cand < b:
            b = cand
        inner = b
    return inner
