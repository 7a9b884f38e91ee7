"""Dynamic programming with bounds for optimal sparse regression trees (numba kernels).

A subproblem is a set of equivalence classes (rows with identical binary features), held as a
bitset of ``uint64`` words, together with its remaining depth. Its optimum is

    opt(S, d) = min( leaf(S),  min_j opt(S & ~F_j, d-1) + opt(S & F_j, d-1) )

with ``leaf(S) = loss(S) + lam``. The search is a depth-first branch and bound with budgets: a
subproblem is asked for a solution strictly below a budget and either returns its exact optimum
or a proven lower bound at least the budget. Subproblems are memoised in an open-addressing
hash table over flat arrays (key words, depth, lower bound, exact value, best feature). Under a
depth limit and the squared loss, subproblems of remaining depth two are solved exactly when first
met, by a terminal solver that scores every depth-two tree from per-feature-pair sums (one pass
over the classes; the idea of STreeD, Van der Linden et al., NeurIPS 2023); the two children of a
depth-three subproblem's split take one pass over the smaller child, the larger one's sums being
the parent's minus the smaller's, and the larger is solved first (its value alone most often rules
the split out). Pair sums leave out the features that split nothing. Lower bounds: the k-Means
(k-median for the absolute loss) equivalent-points bound, capped at ``2**d`` leaves under a depth
limit, and every bound proven by earlier searches; the depth-three children of a depth-four
subproblem's split get the lookahead bound below one level deeper (every split, each child a leaf
or split once more; raised by stored depth-two optima) from their pair sums, which again take one
pass over the smaller child and are kept for the children's expansion. For the squared loss, features are first
scored with free bounds (each child is one leaf, of exact cost, or has two or more leaves, costing
at least its equivalent-points loss + 2 lam; or its stored bound); under a depth limit the same
pair sums give a two-level lookahead instead (each child is a leaf or split once more, each
grandchild bounded that way). Features these rule out are dropped, the rest are tried in increasing
order of that score (under a depth limit, subproblems of depth four or more try first the features
whose children do best when split once more: an upper bound from the same pair sums, which finds
good trees, and so tight budgets, early), and a feature's k-Means bounds are computed only when the
loop reaches it. The loop passes over every feature whose bound reaches the budget. A subproblem
that finds no tree below its budget stores the least bound over its leaf and its candidates (often
above the budget), so later visits with higher budgets need not expand it again. Whether a
returned value is exact or only a bound is passed explicitly, never inferred from floating-point
comparisons with the budget.

The kernel runs for a bounded number of node expansions and returns; the explicit stack makes
it resumable, so the Python caller enforces time limits and grows the table between calls. Its
state is three records of plain arrays: the ``Problem`` (fixed data), the ``Memo`` table and the
``Frames`` of the stack; each step of the loop is a small function over them (``_expand`` a
subproblem into sorted candidate splits, ``_receive`` a child's answer, ``_refine_bounds`` of the
next candidate, ``_push`` a child, ``_close`` a frame).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._numba import assign, njit  # one compile per argument type (the k-Means kernels specialise on the loss)
from .._loss_kernels import pointwise_loss
from ..losses import LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED
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
def rehash(memo, grown):
    """Move every entry of the table ``memo`` into the (empty, larger) table ``grown``."""
    for s in range(memo.depth.shape[0]):
        if memo.depth[s] == -1:
            continue
        t = _find(grown.keys, grown.depth, memo.keys[s], memo.depth[s])
        assign(grown.keys[t], memo.keys[s])
        grown.depth[t] = memo.depth[s]
        grown.lower[t] = memo.lower[s]
        grown.value[t] = memo.value[s]
        grown.feature[t] = memo.feature[s]


@njit
def lookup(memo, words, d):
    """Slot of ``(words, d)`` in the table ``memo``, or -1 when absent."""
    s = _find(memo.keys, memo.depth, words, d)
    if memo.depth[s] == -1:
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


# ----------------------------------------------------------------------------------------------
# state records (named tuples of plain arrays: numba passes them by reference, fields by name)
# ----------------------------------------------------------------------------------------------
Problem = namedtuple("Problem", [
    "loss_kind",        # LOSS_SQUARED, LOSS_ABSOLUTE or LOSS_PINBALL
    "bound_kind",       # BOUND_NONE, BOUND_EQUIVALENT or BOUND_KMEANS
    "tau",              # quantile level of the pinball loss (LOSS_PINBALL)
    "lam",              # penalty per leaf
    "unlimited",        # no depth limit (the remaining depth never decreases)
    "class_ones",       # (classes, 1 + width): per equivalence class the number of its features that
    #                     are 1, then those features ascending (padded)
    "feature_bits",     # (features, words) uint64: the classes where each feature is 1, as a bitset
    "class_weight",     # per class: weight, weighted sum, weighted sum of squares, weighted mean of
    "class_sum",        # the scaled targets, and the loss of the class about its own best constant
    "class_sumsq",
    "class_mean",
    "class_within",
    "row_class",        # rows sorted by target (absolute and pinball losses): class, target, weight
    "row_y",
    "row_w",
])
Problem.__doc__ = "The fixed data of a search: loss, bound, penalty and per-class / per-row statistics."

Memo = namedtuple("Memo", [
    "keys",      # (capacity, words) bitset of each stored subproblem
    "depth",     # its remaining depth (-1: empty slot)
    "lower",     # proven lower bound on its optimum
    "value",     # its exact optimum (inf: not solved)
    "feature",   # best split feature (-1: leaf, -2: unknown; with its children's, see pack_splits)
    "counters",  # [0] entries, [1] expansions, [2] bounds computed, [3] entry limit before growing
])
Memo.__doc__ = "The open-addressing table of subproblems (grown by the caller on NEED_SPACE)."

Frames = namedtuple("Frames", [
    "words",          # (frames, words) the subproblem of each frame
    "depth",          # its remaining depth
    "budget",         # solve strictly below this or prove a bound >= it
    "best",           # best objective found so far (starts at the leaf)
    "best_feature",   # its split feature (-1: the leaf)
    "n_candidates",   # number of candidate features (-1: not expanded yet)
    "position",       # candidate being solved
    "phase",          # 0: solving its false child, 1: its true child
    "false_value",    # exact value of the current candidate's false child (in phase 1)
    "order",          # (frames, features) candidate features, best bound first
    "false_bound",    # (frames, features) lower bound of each candidate's false child
    "true_bound",     # (frames, features) and of its true child
    "bounds_final",   # (frames, features) 1 once both children's bounds are computed
    "dropped",        # least bound of the features its expansion ruled out (inf: none)
    "top",            # [0] stack height (0 when the root has returned), [1] unused
    "parent_pairs",   # (features, features, 4) pair sums of the expanded depth-three frame (squared
    #                   loss, depth limit; else (1, 1, 4)): its terminal children's come from them
    "parent_kept",    # (1 + features,) their index: the features that split it (see _index_features)
    "parent_slot",    # (features,) and each feature's place in that list
    "parent_count",   # [0] its number of classes
    "grand_pairs",    # (features, features, 4) and (features, features) pair sums and their within-class
    "grand_within",   #   losses of the expanded depth-four frame (squared loss, depth limit >= 4, not too
    #                   many features; else (1, 1), and children of depth three get no lookahead bound):
    #                   the lookahead bounds of its depth-three children come from them
    "grand_kept",     # (1 + features,) their index (see _index_features)
    "grand_slot",     # (features,)
    "grand_count",    # [0] its number of classes
    "child_pairs",    # (2, features, features, 4) and (2, features, features): the pair sums of the false
    "child_within",   #   and true child of the depth-four frame's candidate ``child_key`` (its index),
    "child_key",      #   kept for their expansion; [side] the candidate feature (-1: none)
    "child_derived",  # [side] 1 when those sums are differences (the frame's minus the other child's)
])
Frames.__doc__ = "The explicit depth-first stack, so a paused search resumes where it stopped."

Buffers = namedtuple("Buffers", [
    "members", "buf_w", "buf_v",                                    # class lists, clustering input
    "feat_weight", "feat_sum", "feat_sumsq", "feat_within",         # per-feature sums on the 1 side
    "child", "other", "buf_c",                                      # three child bitsets
    "cand_feature", "cand_key", "cand_slot_false", "cand_slot_true",  # candidate splits
    "cand_false", "cand_true", "cand_known",
    "pairs", "pair_within",                                         # (features, features, 4) pair sums
    "cells", "cells_up",                                            # and the parts they score (_score_pairs)
    "kept", "slot", "active", "ones",                               # feature index, a class's features
])


def make_problem(loss_kind, bound_kind, lam, unlimited, class_features, feature_bits, class_weight, class_sum,
                 class_sumsq, class_mean, class_within, row_class=None, row_y=None, row_w=None, tau=0.5):
    """A :data:`Problem` with empty row arrays when the loss needs none."""
    if row_class is None:
        row_class, row_y, row_w = np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    n_ones = class_features.sum(axis=1).astype(np.int64)
    ones = np.zeros((class_features.shape[0], 1 + int(n_ones.max(initial=0))), dtype=np.int64)
    ones[:, 0] = n_ones
    cls, feat = np.nonzero(class_features)  # by class, then feature
    ones[cls, 1 + np.arange(cls.size) - (np.cumsum(n_ones) - n_ones)[cls]] = feat
    return Problem(loss_kind, bound_kind, float(tau), float(lam), bool(unlimited), ones, feature_bits, class_weight,
                   class_sum, class_sumsq, class_mean, class_within, row_class, row_y, row_w)


def pair_width(problem):
    """Side of the pair-sum arrays: the number of features under the squared loss and a depth limit
    (the lookahead and the terminal solver use them), else 1."""
    n_feat = problem.feature_bits.shape[0]
    return n_feat if problem.loss_kind == LOSS_SQUARED and not problem.unlimited else 1


@njit
def new_buffers(problem, n_pairs):
    """Work buffers for one kernel call (pair sums of side ``n_pairs``, see :func:`pair_width`)."""
    n_feat = problem.feature_bits.shape[0]
    n_classes = problem.class_weight.shape[0]
    nw = problem.feature_bits.shape[1]
    buf_n = max(n_classes, problem.row_y.shape[0])
    return Buffers(
        np.empty(n_classes, dtype=np.int64), np.empty(buf_n), np.empty(buf_n),
        np.empty(n_feat), np.empty(n_feat), np.empty(n_feat), np.empty(n_feat),
        np.empty(nw, dtype=np.uint64), np.empty(nw, dtype=np.uint64), np.empty(nw, dtype=np.uint64),
        np.empty(n_feat, dtype=np.int64), np.empty(n_feat), np.empty(n_feat, dtype=np.int64),
        np.empty(n_feat, dtype=np.int64), np.empty(n_feat), np.empty(n_feat), np.empty(n_feat, dtype=np.int64),
        np.empty((n_pairs, n_pairs, 4)), np.empty((n_pairs, n_pairs)), np.empty((n_pairs, n_pairs, 4)),
        np.empty((n_pairs, n_pairs, 4)),
        np.empty(n_feat + 1, dtype=np.int64), np.empty(n_feat, dtype=np.int64), np.empty(n_feat, dtype=np.int64),
        np.empty(n_feat, dtype=np.int64),
    )


# ----------------------------------------------------------------------------------------------
# losses and bounds of one subproblem
# ----------------------------------------------------------------------------------------------
@njit
def _cell_loss(w, s, q):
    """Squared loss about the mean of a cell with weight ``w``, sum ``s`` and sum of squares ``q``."""
    if w <= 0.0:
        return 0.0
    v = q - s * s / w
    return v if v > 0.0 else 0.0


@njit(inline="always")  # (a call would count references to every array of the records)
def _class_totals(problem, words, members):
    """Number of classes of ``words`` (listed into ``members``) and their weight, sum and sum of squares."""
    n = _members(words, members)
    w = 0.0
    s = 0.0
    q = 0.0
    for t in range(n):
        c = members[t]
        w += problem.class_weight[c]
        s += problem.class_sum[c]
        q += problem.class_sumsq[c]
    return n, w, s, q


@njit
def leaf_loss(problem, words, members):
    """Normalised loss of one leaf holding the classes of ``words``.

    Squared loss: weighted sum of squares about the weighted mean from the per-class sums of the
    scaled targets. Absolute loss: weighted absolute deviations about the weighted median, from
    the rows sorted by target; pinball loss: weighted pinball losses about the weighted lower
    ``tau``-quantile.
    """
    if problem.loss_kind == LOSS_SQUARED:
        _, w, s, q = _class_totals(problem, words, members)
        return _cell_loss(w, s, q)
    tau = problem.tau if problem.loss_kind == LOSS_PINBALL else 0.5  # the absolute loss: the median
    return _quantile_leaf(words, problem.row_class, problem.row_y, problem.row_w, problem.loss_kind, tau)


@njit
def _quantile_leaf(words, row_class, row_y, row_w, loss_kind, tau):
    """Weighted absolute or pinball loss of the rows of ``words`` about their lower weighted ``tau``-quantile."""
    total = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            total += row_w[r]
    if total <= 0.0:
        return 0.0
    acc = 0.0
    q = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            acc += row_w[r]
            if acc >= tau * total:
                q = row_y[r]
                break
    out = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            out += row_w[r] * pointwise_loss(row_y[r] - q, loss_kind, tau)
    return out


@njit
def lower_bound(problem, words, d, members, buf_w, buf_v):
    """Lower bound on ``opt(words, d)``: the (k-Means) equivalent-points bound.

    Squared loss: weighted k-Means over the sorted class means plus the within-class loss
    (Theorem 3.6 of the paper). Absolute loss: weighted k-median over the rows (clusters may split a
    class, so this relaxes the tree problem), floored per k by the within-class absolute loss.
    Pinball loss: the same over the best k-level step function under the pinball cost.
    Under a depth limit ``d`` at most ``2**d`` clusters are tried.
    """
    lam = problem.lam
    n = _members(words, members)
    within = 0.0
    for t in range(n):
        within += problem.class_within[members[t]]
    if problem.bound_kind == BOUND_NONE:
        return lam
    if problem.bound_kind == BOUND_EQUIVALENT or n <= 1:
        return within + lam
    kmax = n
    if d < 30:
        cap = 1 << d
        if cap < kmax:
            kmax = cap
    if problem.loss_kind == LOSS_SQUARED:
        for t in range(n):
            c = members[t]
            buf_w[t] = problem.class_weight[c]
            buf_v[t] = problem.class_mean[c]
        best, _ = cluster_costs(LOSS_SQUARED, buf_w[:n], buf_v[:n], kmax, lam, 0.0)
        return best + within
    m = 0
    for r in range(problem.row_y.shape[0]):
        if _row_in(words, problem.row_class[r]):
            buf_w[m] = problem.row_w[r]
            buf_v[m] = problem.row_y[r]
            m += 1
    best, _ = cluster_costs(problem.loss_kind, buf_w[:m], buf_v[:m], kmax, lam, within, problem.tau)
    return best


_CHILD_BITS = 21  # a table entry's feature code keeps its split in the low 21 bits


@njit
def pack_splits(j, k0, k1):
    """Feature code of a subproblem solved with its children: split ``j``, children's splits ``k0``, ``k1``.

    The terminal solver's children are not stored, so their splits (-1: leaves) ride along above
    ``_CHILD_BITS`` bits; with both children leaves the code is ``j`` itself.
    """
    if j < 0:
        return j
    return j + ((k0 + 1) << _CHILD_BITS) + ((k1 + 1) << 2 * _CHILD_BITS)


def unpack_splits(code):
    """``(split, false child's split, true child's split)`` of a table entry's feature code
    (children -2: look them up in the table)."""
    code = int(code)
    if code < (1 << _CHILD_BITS):
        return code, -2, -2
    mask = (1 << _CHILD_BITS) - 1
    return code & mask, ((code >> _CHILD_BITS) & mask) - 1, (code >> 2 * _CHILD_BITS) - 1


@njit
def _entry(problem, memo, buffers, words, d, known):
    """Slot of subproblem ``(words, d)``, registered with its lower bound (at least ``known``) if new."""
    t = _find(memo.keys, memo.depth, words, d)
    if memo.depth[t] == -1:
        _register(problem, memo, words, d, t, buffers.members, buffers.buf_w, buffers.buf_v, buffers.pairs,
                  buffers.pair_within, buffers.kept, buffers.slot, buffers.active, buffers.ones, known)
    return t


@njit(inline="always")  # (a call would count references to every array of the records)
def _terminal(problem, d):
    """True when subproblems of remaining depth ``d`` are solved by :func:`_depth_two` on registration."""
    return d == 2 and problem.loss_kind == LOSS_SQUARED and not problem.unlimited


@njit
def _register(problem, memo, words, d, t, members, buf_w, buf_v, pairs, pair_within, kept, slot, active, ones,
              known):
    """Store the new subproblem ``(words, d)`` in the empty slot ``t`` with its lower bound.

    ``known`` is a bound proven already (0 if none). Depth-two subproblems under the squared loss
    and a depth limit are solved at once (the terminal solver costs less than their k-Means
    bound): their bound is their optimum. At depth three the bound is ``known`` alone (the parent's
    lookahead): expanding such a subproblem, whose children are all terminal, proves more for less
    than its k-Means bound. (Plain arrays, not the buffers record: this runs for every subproblem.)
    """
    if _terminal(problem, d):
        value, j, k0, k1 = _depth_two(problem, words, members, pairs, pair_within, kept, slot, active, ones)
        _store_solved(memo, words, d, t, value, j, k0, k1)
        return
    assign(memo.keys[t], words)
    memo.depth[t] = d
    memo.counters[0] += 1
    memo.value[t] = np.inf
    memo.feature[t] = -2
    if d == 3 and problem.loss_kind == LOSS_SQUARED and not problem.unlimited:
        memo.lower[t] = known if known > problem.lam else problem.lam  # a tree has a leaf at least
    else:
        bound = lower_bound(problem, words, d, members, buf_w, buf_v)
        memo.lower[t] = bound if bound > known else known
        memo.counters[2] += 1


@njit
def _store_solved(memo, words, d, t, value, j, k0, k1):
    """Store the new subproblem ``(words, d)``, solved by the terminal solver, in the empty slot ``t``."""
    assign(memo.keys[t], words)
    memo.depth[t] = d
    memo.counters[0] += 1
    memo.counters[2] += 1
    memo.lower[t] = value
    memo.value[t] = value
    memo.feature[t] = pack_splits(j, k0, k1)


@njit
def _split_child(words, fbits, j, side, out):
    """Write the support of child ``side`` (0: feature ``j`` is 0, 1: it is 1) into ``out``."""
    for i in range(words.shape[0]):
        if side == 0:
            out[i] = words[i] & ~fbits[j, i]
        else:
            out[i] = words[i] & fbits[j, i]


@njit
def _splits_nothing(words, fbits, j):
    """True when feature ``j`` puts every class of ``words`` on one side."""
    empty0 = True
    empty1 = True
    for i in range(words.shape[0]):
        if words[i] & fbits[j, i] != _ZERO:
            empty1 = False
        if words[i] & ~fbits[j, i] != _ZERO:
            empty0 = False
    return empty0 or empty1


# ----------------------------------------------------------------------------------------------
# the terminal solver: the optimal tree of depth <= 2 directly (squared loss)
# ----------------------------------------------------------------------------------------------
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
    arrays for it allocated: see ``osrt._new_frames``)."""
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


# ----------------------------------------------------------------------------------------------
# expanding a subproblem: its candidate splits, scored by their children's bounds
# ----------------------------------------------------------------------------------------------
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
                pair = leaf_loss(problem, child, buffers.members) + leaf_loss(problem, other, buffers.members)
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
    leaf = leaf_loss(problem, words, buffers.members) + problem.lam
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


# ----------------------------------------------------------------------------------------------
# moving through the stack
# ----------------------------------------------------------------------------------------------
@njit
def _limit(best, budget, f):
    """What frame ``f`` must beat: its best so far or its budget, whichever is lower."""
    return best[f] if best[f] < budget[f] else budget[f]


@njit
def _refine_bounds(problem, memo, frames, f, buffers):
    """Advance frame ``f`` to its next candidate whose bounds (computed now if lazy) beat the limit,
    passing over those whose bounds reach it.

    Returns False when the table is full (the frame is left consistent to resume).
    """
    words = frames.words[f]
    d = frames.depth[f]
    dc = d if problem.unlimited else d - 1
    limit = _limit(frames.best, frames.budget, f)
    false_bound = frames.false_bound[f]
    true_bound = frames.true_bound[f]
    final = frames.bounds_final[f]
    nf = frames.n_candidates[f]
    counters = memo.counters
    fbits = problem.feature_bits
    child = buffers.child
    terminal = _terminal(problem, dc) and problem.bound_kind != BOUND_NONE
    ahead = _looks_ahead_of_three(problem, frames, dc)
    p = frames.position[f]
    by_bound = _sorted_by_bound(problem, dc)
    while p < nf:
        if false_bound[p] + true_bound[p] >= limit:
            if by_bound and final[p] == 0:
                break  # the later ones are sorted after it
            p += 1
            continue
        if final[p] != 0:
            break
        if counters[0] + 2 > counters[3]:
            frames.position[f] = p
            return False
        j = frames.order[f, p]
        if terminal:
            b0, b1 = _terminal_children(problem, memo, frames, f, j, buffers, limit, false_bound[p], true_bound[p])
            false_bound[p] = b0
            true_bound[p] = b1
        else:
            if ahead:
                _depth_three_children(problem, memo, frames, f, j, buffers, limit, false_bound[p], true_bound[p])
            for side in range(2):
                _split_child(words, fbits, j, side, child)
                t = _entry(problem, memo, buffers, child, dc, false_bound[p] if side == 0 else true_bound[p])
                b = memo.value[t] if memo.value[t] < np.inf else memo.lower[t]
                if side == 0:
                    if b > false_bound[p]:
                        false_bound[p] = b
                elif b > true_bound[p]:
                    true_bound[p] = b
        final[p] = 1
        if false_bound[p] + true_bound[p] >= limit:
            p += 1
    frames.position[f] = p
    return True


@njit
def search(problem, memo, frames, max_steps):
    """Run the search for at most ``max_steps`` node expansions.

    Returns DONE (the root has returned), PAUSED (out of steps) or NEED_SPACE (the caller must
    grow the table; ``memo.counters[3]`` is the entry limit). ``frames.top[0]`` keeps the stack
    height so the next call resumes. The records are unpacked once here: passing a record to a
    helper costs a reference count per array, so the per-frame steps below work on plain arrays.
    """
    n_feat = problem.feature_bits.shape[0]
    fbits = problem.feature_bits
    unlimited = problem.unlimited
    buffers = new_buffers(problem, frames.parent_pairs.shape[0])
    members = buffers.members
    buf_w = buffers.buf_w
    buf_v = buffers.buf_v
    counters = memo.counters
    keys = memo.keys
    depth = memo.depth
    lower = memo.lower
    value = memo.value
    feature = memo.feature
    fr_words = frames.words
    fr_depth = frames.depth
    budget = frames.budget
    best = frames.best
    best_feature = frames.best_feature
    n_candidates = frames.n_candidates
    position = frames.position
    phase = frames.phase
    false_value = frames.false_value
    order = frames.order
    false_bound = frames.false_bound
    true_bound = frames.true_bound
    bounds_final = frames.bounds_final
    steps = 0
    ret = 0.0           # the answer of the frame that just returned: its value ...
    ret_exact = False   # ... exact, or only a lower bound at least its budget
    returning = False
    top = frames.top[0]
    while top > 0:
        f = top - 1
        words = fr_words[f]
        d = fr_depth[f]
        dc = d if unlimited else d - 1
        if returning:
            # a child answered: after the false child, go on to the true one if it can still pay
            returning = False
            limit = _limit(best, budget, f)
            p = position[f]
            if phase[f] == 0:
                if ret > false_bound[f, p]:
                    false_bound[f, p] = ret  # what the child proved (kept for the frame's bound)
                if not ret_exact or ret + true_bound[f, p] >= limit:
                    position[f] = p + 1
                else:
                    false_value[f] = ret
                    phase[f] = 1
                    _split_child(words, fbits, order[f, p], 1, fr_words[top])
                    fr_depth[top] = dc
                    budget[top] = limit - ret
                    n_candidates[top] = -1
                    top += 1
                    continue
            else:
                if ret > true_bound[f, p]:
                    true_bound[f, p] = ret
                if ret_exact and false_value[f] + ret < limit:
                    best[f] = false_value[f] + ret
                    best_feature[f] = order[f, p]
                position[f] = p + 1
        elif n_candidates[f] < 0:
            # entering a subproblem (registered already, except the root on its first visit)
            if counters[0] + 2 * n_feat + 2 > counters[3]:
                frames.top[0] = top
                return NEED_SPACE
            s = _find(keys, depth, words, d)
            if depth[s] == -1:
                _register(problem, memo, words, d, s, members, buf_w, buf_v, buffers.pairs, buffers.pair_within,
                          buffers.kept, buffers.slot, buffers.active, buffers.ones, 0.0)
            if value[s] < np.inf or lower[s] >= budget[f]:
                ret_exact = value[s] < np.inf
                ret = value[s] if ret_exact else lower[s]
                returning = True
                top -= 1
                continue
            if counters[0] + 2 * n_feat + 2 > counters[3]:
                frames.top[0] = top
                return NEED_SPACE
            if steps >= max_steps:
                frames.top[0] = top
                return PAUSED
            steps += 1
            counters[1] += 1
            solved, answer = _expand(problem, memo, frames, f, s, buffers)
            if solved:
                ret = answer
                ret_exact = True
                returning = True
                top -= 1
                continue
        # choose the next candidate (computing its children's k-Means bounds on first visit)
        p = position[f]
        if not _sorted_by_bound(problem, dc):  # pass over the candidates that cannot pay
            limit = _limit(best, budget, f)
            while p < n_candidates[f] and bounds_final[f, p] == 1 and false_bound[f, p] + true_bound[f, p] >= limit:
                p += 1
            position[f] = p
        if (p < n_candidates[f] and bounds_final[f, p] == 0
                and not _refine_bounds(problem, memo, frames, f, buffers)):
            frames.top[0] = top
            return NEED_SPACE
        limit = _limit(best, budget, f)
        p = position[f]
        if p < n_candidates[f] and false_bound[f, p] + true_bound[f, p] < limit:
            phase[f] = 0
            _split_child(words, fbits, order[f, p], 0, fr_words[top])
            fr_depth[top] = dc
            budget[top] = limit - true_bound[f, p]
            n_candidates[top] = -1
            top += 1
            continue
        # every candidate is done: store the exact optimum, or the bound the budget proves
        s = _find(keys, depth, words, d)
        if best[f] < budget[f]:
            value[s] = best[f]
            feature[s] = best_feature[f]
            if lower[s] < best[f]:
                lower[s] = best[f]
            ret = best[f]
            ret_exact = True
        else:
            proven = _closing_bound(frames, f)
            if lower[s] < proven:
                lower[s] = proven
            ret = lower[s]
            ret_exact = False
        returning = True
        top -= 1
    frames.top[0] = 0
    frames.top[1] = 0
    return DONE


@njit
def _closing_bound(frames, f):
    """Lower bound proven by frame ``f`` when it closes without a tree below its budget.

    At least the budget, and often more: the leaf, every candidate (its children's bounds, raised
    by what their searches proved) and the features dropped when it was expanded each cost at
    least their bound, so the least of these is proven.
    Stored, it spares a later visit with a higher budget from expanding the subproblem again.
    """
    proven = frames.best[f]
    if frames.dropped[f] < proven:
        proven = frames.dropped[f]
    nf = frames.n_candidates[f]
    for q in range(nf):
        b = frames.false_bound[f, q] + frames.true_bound[f, q]
        if b < proven:
            proven = b
    budget = frames.budget[f]
    return proven if proven > budget else budget  # (sums of child budgets may round below it)


@njit
def stack_lower_bound(frames, top_lower):
    """Certified lower bound on the root's optimum from a paused stack (time or memory limit).

    The top frame is paused on entry, so its bound is its memoised bound ``top_lower``. Every
    frame below is solving candidate ``position`` (its false child in phase 0, its true child in
    phase 1) and has proven every earlier candidate worth at least ``min(best, budget)``; later
    candidates are worth at least their children's bounds.
    """
    top = frames.top[0]
    inner = top_lower
    last = top - 1
    if frames.n_candidates[last] >= 0:  # paused while choosing its next feature
        inner = _limit(frames.best, frames.budget, last)
        p = frames.position[last]
        for q in range(p, frames.n_candidates[last]):
            if frames.false_bound[last, q] + frames.true_bound[last, q] < inner:
                inner = frames.false_bound[last, q] + frames.true_bound[last, q]
    for f in range(top - 2, -1, -1):
        p = frames.position[f]
        nf = frames.n_candidates[f]
        if frames.phase[f] == 0:
            cand = inner + frames.true_bound[f, p]
        else:
            cand = frames.false_value[f] + inner
        for q in range(p + 1, nf):
            nxt = frames.false_bound[f, q] + frames.true_bound[f, q]
            if nxt < cand:
                cand = nxt
        b = frames.best[f]
        if frames.budget[f] < b:
            b = frames.budget[f]
        if cand < b:
            b = cand
        inner = b
    return inner
