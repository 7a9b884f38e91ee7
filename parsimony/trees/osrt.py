"""Optimal sparse regression trees: the scikit-learn estimator and the search driver."""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._numba import precompile
from .._validation import (POSITIVE, QUANTILE, InstanceOf, Interval, Options, check_numeric_columns,
                           check_sample_weight, input_feature_names, magnitude_scale, validate_params)
from ..losses import LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED, Squared, loss_from_code
from . import _search
from .binarizer import Binarizer

LOSSES = {"squared": LOSS_SQUARED, "absolute": LOSS_ABSOLUTE, "quantile": LOSS_PINBALL}
BOUNDS = {"none": _search.BOUND_NONE, "equivalent": _search.BOUND_EQUIVALENT, "kmeans": _search.BOUND_KMEANS}


# ----------------------------------------------------------------------------------------------
# search driver
# ----------------------------------------------------------------------------------------------
@dataclass
class SearchResult:
    """Outcome of one search: the tree as nested splits, its objective and the proven bound."""

    objective: float
    lower_bound: float
    status: str
    root: dict
    stats: dict = field(default_factory=dict)
    table: dict | None = None


def _leaf_value(values, weights, loss_kind, tau=0.5):
    """A leaf's prediction: the loss's optimal constant (the weighted mean for the squared loss, the
    lower weighted median or ``tau``-quantile for the absolute and quantile losses)."""
    return loss_from_code(loss_kind, tau).optimal_constant(values, weights)


def _node_loss(values, weights, loss_kind, norm, tau=0.5):
    """Weighted loss of ``values`` about their leaf value, divided by ``norm`` (0 when ``norm <= 0``)."""
    if norm <= 0:
        return 0.0
    loss = loss_from_code(loss_kind, tau)
    return loss.total(values, loss.optimal_constant(values, weights), weights) / norm


def _row_codes(Xb):
    """Each binary row of at most 64 columns as one integer, first column highest: the codes sort
    like the rows (and like their packed bytes)."""
    m = Xb.shape[1]
    return Xb.astype(np.uint64) @ (np.uint64(1) << np.arange(63, 63 - m, -1, dtype=np.uint64))


def _packed_rows(Xb):
    """``np.packbits(Xb, axis=1)`` (rows as big-endian bytes), from :func:`_row_codes` up to 64 columns."""
    n, m = Xb.shape
    if m == 0 or m > 64:
        return np.packbits(Xb, axis=1)
    return _row_codes(Xb).astype(">u8").view(np.uint8).reshape(n, 8)[:, :(m + 7) // 8]


def _merge_repeated_rows(Xb, y, w):
    """Merge identical (row, target) pairs, adding their weights, in a canonical order.

    Repeated rows and integer weights then give the same arithmetic, whatever the row order,
    so ties between equally good trees break the same way. Returns the merged ``Xb, y, w``
    and, for every input row, the index of its merged row.
    """
    n, m = Xb.shape
    y_bytes = np.ascontiguousarray(y)[:, None].view(np.uint8)
    if 0 < m <= 64 and n > 0:
        # the order of np.unique over the bytes of (packed row, target), by a stable sort of two integer keys
        codes = _row_codes(Xb)
        y_key = y_bytes.view(">u8").ravel().astype(np.uint64)  # orders like the target's bytes
        order = np.lexsort((y_key, codes))
        codes, y_key = codes[order], y_key[order]
        new = np.ones(n, dtype=bool)
        new[1:] = (codes[1:] != codes[:-1]) | (y_key[1:] != y_key[:-1])
        first = order[new]
        inverse = np.empty(n, dtype=np.intp)
        inverse[order] = np.cumsum(new) - 1
    else:
        key = np.ascontiguousarray(np.concatenate([_packed_rows(Xb), y_bytes], axis=1))
        _, first, inverse = np.unique(key.view(np.dtype((np.void, key.shape[1]))).ravel(), return_index=True,
                                      return_inverse=True)
        inverse = inverse.ravel()
    return Xb[first], y[first], np.bincount(inverse, weights=w, minlength=first.size), inverse


def _equivalence_classes(Xb, y_scaled, w, loss_kind, tau=0.5):
    """Unique feature rows, sorted by their mean target, with per-class weighted statistics."""
    n, m = Xb.shape
    as_integers = 0 < m <= 64 and n > 0
    if as_integers:
        codes = _row_codes(Xb)  # sort like the rows (lexicographically)
    else:
        packed = _packed_rows(Xb)
        width = packed.shape[1]
        if width <= 8:
            padded = np.zeros((packed.shape[0], 8), dtype=np.uint8)
            padded[:, :width] = packed
            codes = padded.view(">u8").ravel()  # big-endian: codes sort like the rows (lexicographically)
        else:
            codes = np.ascontiguousarray(packed).view(np.dtype((np.void, width))).ravel()
    if as_integers and np.all(codes[1:] >= codes[:-1]):
        # rows sorted already (as _merge_repeated_rows leaves them): np.unique's classes are the runs
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(codes[1:], codes[:-1], out=new[1:])
        first = np.flatnonzero(new)
        inverse = np.cumsum(new) - 1
    else:
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    uniq = Xb[first]
    n_classes = uniq.shape[0]
    cw = np.bincount(inverse, weights=w, minlength=n_classes)
    cs = np.bincount(inverse, weights=w * y_scaled, minlength=n_classes)
    cq = np.bincount(inverse, weights=w * y_scaled * y_scaled, minlength=n_classes)
    cmean = cs / cw
    if loss_kind == LOSS_SQUARED:
        cwithin = np.bincount(inverse, weights=w * Squared().pointwise(y_scaled - cmean[inverse]), minlength=n_classes)
    else:
        cwithin = np.zeros(n_classes)
        order = np.lexsort((y_scaled, inverse))
        starts = np.searchsorted(inverse[order], np.arange(n_classes))
        ends = np.append(starts[1:], len(order))
        for c in range(n_classes):
            rows = order[starts[c]:ends[c]]
            cwithin[c] = _node_loss(y_scaled[rows], w[rows], loss_kind, 1.0, tau)
    # sort classes by mean (ties by their feature rows, for determinism: np.unique sorted the rows)
    perm = np.argsort(cmean, kind="stable")
    rank = np.empty(n_classes, dtype=np.int64)
    rank[perm] = np.arange(n_classes)
    return (np.ascontiguousarray(uniq[perm]), rank[inverse], cw[perm], cs[perm], cq[perm], cmean[perm],
            cwithin[perm])


def _bitsets(mask_rows, n_words):
    """Bitsets (one row of uint64 words per column of the boolean matrix ``mask_rows``): bit ``i`` of
    word ``w`` is row ``64 w + i``."""
    n_classes, n_cols = mask_rows.shape
    bits = np.zeros((n_cols, 64 * n_words), dtype=bool)
    bits[:, :n_classes] = mask_rows.T
    words = np.packbits(bits, axis=1, bitorder="little").view("<u8")
    return words.astype(np.uint64)


def _is_constant(norm, y, w, loss_kind):
    """True when the loss of the best constant is rounding noise relative to the targets' size.

    ``y`` is scaled to ``max |y|`` in [0.5, 1), so the tolerance is relative in both directions: a
    target of spread 1e-7 (or 1e-100) times its size is not constant, a spread of a few thousand
    ulps is.
    """
    per_row = norm / float(np.sum(w))
    tol = 1e-12 * float(np.max(np.abs(y)))
    return per_row <= (tol * tol if loss_kind == LOSS_SQUARED else tol)


_COMPILED = False


def _ensure_compiled():
    """Compile (or load from numba's cache) the search kernels once per process; returns the seconds.

    ``find_tree`` calls it before its clock starts, so first-use compilation never eats a time limit.
    """
    global _COMPILED
    if _COMPILED:
        return 0.0
    _COMPILED = True
    start = time.perf_counter()
    warm_up()
    return time.perf_counter() - start


def _entry_bytes(n_words):
    return 8 * n_words + 4 + 8 + 8 + 8


def _new_memo(capacity, n_words, counters=None):
    """An empty subproblem table of ``capacity`` slots (``counters`` carried over when growing)."""
    if counters is None:
        counters = np.zeros(4, dtype=np.int64)
    counters[3] = int(capacity * 0.6)
    return _search.Memo(np.zeros((capacity, n_words), dtype=np.uint64), np.full(capacity, -1, dtype=np.int32),
                        np.zeros(capacity), np.full(capacity, np.inf), np.full(capacity, -2, dtype=np.int64), counters)


#: Largest size of the pair sums kept for depth-four frames and their children (5 arrays of side
#: ``features``); with more features their children of depth three get no lookahead bound.
_KEPT_PAIR_BYTES = 1 << 28


def _new_frames(n_frames, n_words, n_features, root_words, root_depth, n_pairs=1):
    """The search stack with the root subproblem pushed (unbounded budget); ``n_pairs`` is the side of
    the pair-sum arrays (:func:`_search.pair_width`)."""
    width = max(n_features, 1)
    deep = 4 <= root_depth != _search.UNLIMITED and 120 * n_pairs * n_pairs <= _KEPT_PAIR_BYTES
    n_kept = n_pairs if deep else 1
    frames = _search.Frames(
        np.zeros((n_frames, n_words), dtype=np.uint64), np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames),
        np.zeros(n_frames), np.full(n_frames, -1, dtype=np.int64), np.full(n_frames, -1, dtype=np.int64),
        np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames),
        np.zeros((n_frames, width), dtype=np.int64), np.zeros((n_frames, width)), np.zeros((n_frames, width)),
        np.zeros((n_frames, width), dtype=np.int64), np.full(n_frames, np.inf), np.zeros(2, dtype=np.int64),
        np.zeros((n_pairs, n_pairs, 4)),
        np.zeros(n_pairs + 1, dtype=np.int64), np.zeros(n_pairs, dtype=np.int64), np.zeros(1, dtype=np.int64),
        np.zeros((n_kept, n_kept, 4)), np.zeros((n_kept, n_kept)), np.zeros(n_kept + 1, dtype=np.int64),
        np.zeros(n_kept, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((2, n_kept, n_kept, 4)),
        np.zeros((2, n_kept, n_kept)), np.full(2, -1, dtype=np.int64), np.zeros(2, dtype=np.int64))
    frames.words[0] = root_words
    frames.depth[0] = root_depth
    frames.budget[0] = np.inf
    frames.top[0] = 1
    return frames


@dataclass
class _Prepared:
    """The search's view of the data: merged rows, scaled targets, classes and the kernel's Problem."""

    problem: _search.Problem
    class_features: np.ndarray  # (classes, features) the binary row of every class
    y_scaled: np.ndarray
    w: np.ndarray
    row_class: np.ndarray     # class of every merged row
    class_of_row: np.ndarray  # class of every input row
    root_words: np.ndarray
    root_depth: int


def _prepare(Xb, y, w, merged_row, loss_kind, tau, bound_kind, lam, depth_limit, centre, scale):
    """Scale the targets, group rows into equivalence classes and build the kernel's Problem."""
    y_scaled = (y - centre) / scale
    uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, y_scaled, w, loss_kind, tau)
    n_classes = uniq.shape[0]
    n_words = (n_classes + 63) // 64
    fbits = _bitsets(uniq.astype(bool), n_words)
    rows = (None, None, None)
    if loss_kind != LOSS_SQUARED:
        order = np.argsort(y_scaled, kind="stable")
        rows = (row_class[order].astype(np.int64), y_scaled[order], w[order])
    unlimited = depth_limit is None
    problem = _search.make_problem(loss_kind, bound_kind, lam, unlimited, uniq.astype(np.uint8), fbits, cw, cs, cq,
                                   cmean, cwithin, *rows, tau=tau)
    root_words = _bitsets(np.ones((n_classes, 1), dtype=bool), n_words)[0]
    root_depth = _search.UNLIMITED if unlimited else int(depth_limit)
    return _Prepared(problem, uniq, y_scaled, w, row_class, row_class[merged_row], root_words, root_depth)


def _run(problem, memo, frames, deadline, mem_bytes):
    """Call the kernel in slices until it is done or a limit stops it; returns ``(status, memo)``.

    The table grows (x4, then x2 above a million slots) whenever the kernel asks for space.
    """
    n_words = problem.feature_bits.shape[1]
    steps = 32 if deadline is not None else 1 << 22  # (without a deadline nothing needs the pauses)
    while True:
        tc = time.perf_counter()
        code = _search.search(problem, memo, frames, steps)
        if code == _search.DONE:
            return "optimal", memo
        if code == _search.NEED_SPACE:
            cap = memo.depth.shape[0]
            new_cap = cap * 2 if cap >= 1 << 20 else cap * 4
            if mem_bytes is not None and new_cap * _entry_bytes(n_words) > mem_bytes:
                return "memory_limit", memo
            grown = _new_memo(new_cap, n_words, memo.counters)
            _search.rehash(memo, grown)
            memo = grown
        else:
            elapsed = time.perf_counter() - tc
            if elapsed < 0.05:
                steps = min(steps * 2, 1 << 22)
            elif elapsed > 0.2 and steps > 16:
                steps //= 2
        if deadline is not None and time.perf_counter() >= deadline:
            return "time_limit", memo


def _root_result(memo, frames, prep, lam, status):
    """Objective, certified lower bound and root split of the root, exact or from a stopped stack."""
    root_slot = _search.lookup(memo, prep.root_words, prep.root_depth)
    if status == "optimal":
        objective = float(memo.value[root_slot])
        return objective, objective, _search.unpack_splits(memo.feature[root_slot])[0]
    top = int(frames.top[0])
    top_slot = _search.lookup(memo, frames.words[top - 1], frames.depth[top - 1])
    top_lower = float(memo.lower[top_slot]) if top_slot >= 0 else 0.0
    lower = float(_search.stack_lower_bound(frames, top_lower))
    if root_slot >= 0:
        lower = max(lower, float(memo.lower[root_slot]))
    if top > 1 or frames.n_candidates[0] >= 0:
        return float(frames.best[0]), lower, int(frames.best_feature[0])
    return 1.0 + lam, lower, -1  # the one-leaf tree


def _tree_builder(memo, problem, Xb_all, root_feature):
    """``build(words, d, rows, is_root)``: the nested split dictionary of a subproblem from the memo."""
    fbits = problem.feature_bits

    def build(words, d, rows, is_root, f=-2):
        """``f``: the split, when the parent knows it (-2: look it up; -1: a leaf)."""
        kids = (-2, -2)
        if f == -2:
            f = -1
            slot = _search.lookup(memo, words, d) if d != 0 else -1
            if slot >= 0 and memo.value[slot] < np.inf:
                f, *kids = _search.unpack_splits(memo.feature[slot])
            if is_root:
                f = root_feature
        if f < 0 or d == 0:
            return {"rows": rows}
        dc = d if problem.unlimited else d - 1
        hit = Xb_all[rows, f] == 1
        return {"feature": f, "false": build(words & ~fbits[f], dc, rows[~hit], False, kids[0]),
                "true": build(words & fbits[f], dc, rows[hit], False, kids[1])}

    return build


def _memo_table(memo, class_of_row):
    """The memo as Python data (for tests): rows, remaining depth, lower bound and value of every entry."""
    n_classes = int(class_of_row.max()) + 1 if class_of_row.size else 0
    used = np.nonzero(memo.depth != -1)[0]
    bits = np.unpackbits(memo.keys[used].view(np.uint8), axis=1, bitorder="little")[:, :n_classes].astype(bool)
    return {"rows": [np.nonzero(b[class_of_row])[0] for b in bits], "depth": memo.depth[used].astype(np.int64),
            "lower_bound": memo.lower[used].copy(), "value": memo.value[used].copy()}


def find_tree(Xb, y, regularization, depth_limit=None, loss="squared", bound="kmeans", time_limit=None,
          memory_limit=None, keep_table=False, sample_weight=None, quantile=0.5):
    """Find the tree minimising ``loss / loss(one leaf) + regularization * leaves`` on binary ``Xb``.

    Parameters
    ----------
    Xb : ndarray of shape (n_samples, n_features)
        Binary (0/1) features.
    y : ndarray of shape (n_samples,)
        Targets.
    regularization : float
        Penalty per leaf.
    depth_limit : int or None
        Largest number of splits on a root-to-leaf path (None: no limit).
    loss : {"squared", "absolute", "quantile"}
        "quantile" is the pinball loss at level ``quantile``.
    bound : {"kmeans", "equivalent", "none"}
        Lower bound used to prune (all give the same optimum).
    time_limit : float or None
        Seconds; when reached the best tree so far is returned with status "time_limit".
    memory_limit : float or None
        Megabytes for the subproblem table; when reached the search stops with status
        "memory_limit".
    keep_table : bool
        Also return the memo table (for tests): per stored subproblem its rows, remaining depth,
        proven lower bound and exact value (inf when not solved).
    sample_weight : ndarray of shape (n_samples,) or None
        Positive row weights: the losses are weighted sums (integer weights act as repeated rows).
    quantile : float
        Level tau in (0, 1) of the quantile loss.

    Returns
    -------
    SearchResult
        Its ``stats["compile_seconds"]`` is the first-use compilation done before the clock of
        ``time_limit`` starts (0 once the kernels are loaded).
    """
    compile_seconds = _ensure_compiled()
    t0 = time.perf_counter()
    loss_kind = LOSSES[loss]
    tau = float(quantile) if loss_kind == LOSS_PINBALL else 0.5
    lam = float(regularization)
    Xb = np.ascontiguousarray(Xb, dtype=np.uint8)
    y = np.asarray(y, dtype=np.float64)
    n, m = Xb.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if not np.all(w > 0):
        raise ValueError("find_tree needs positive sample weights (drop the rows of weight 0)")
    Xb_all = Xb
    Xb, y, w, merged_row = _merge_repeated_rows(Xb, y, w)
    y = y / magnitude_scale(y)  # exact (a power of two), so the objective is unchanged
    if loss_kind == LOSS_SQUARED:  # the arithmetic of Squared's optimal_constant and total, without their overhead
        centre = float(np.multiply(y, w).sum() / w.sum())
        r = y - centre
        norm = float(np.sum(w * (r * r)))
    else:
        centre = _leaf_value(y, w, loss_kind, tau)
        norm = _node_loss(y, w, loss_kind, 1.0, tau)
    scale = np.sqrt(norm) if loss_kind == LOSS_SQUARED else norm
    if _is_constant(norm, y, w, loss_kind):
        root = {"rows": np.arange(n)}
        return SearchResult(lam, lam, "optimal", root, {"subproblems": 0, "expansions": 0, "bounds": 0,
                                                         "seconds": time.perf_counter() - t0,
                                                         "compile_seconds": compile_seconds})
    if m == 0:
        return SearchResult(1.0 + lam, 1.0 + lam, "optimal", {"rows": np.arange(n)},
                            {"subproblems": 0, "expansions": 0, "bounds": 0, "seconds": time.perf_counter() - t0,
                             "compile_seconds": compile_seconds})
    prep = _prepare(Xb, y, w, merged_row, loss_kind, tau, BOUNDS[bound], lam, depth_limit, centre, scale)
    problem = prep.problem
    n_words = problem.feature_bits.shape[1]
    n_frames = (m + 2) if problem.unlimited else min(int(depth_limit), m) + 2
    memo = _new_memo(1 << 12, n_words)
    frames = _new_frames(n_frames, n_words, m, prep.root_words, prep.root_depth, _search.pair_width(problem))
    deadline = None if time_limit is None else t0 + float(time_limit)
    mem_bytes = None if memory_limit is None else float(memory_limit) * 1e6
    status, memo = _run(problem, memo, frames, deadline, mem_bytes)

    objective, lower, root_feature = _root_result(memo, frames, prep, lam, status)
    build = _tree_builder(memo, problem, Xb_all, root_feature)
    root = build(prep.root_words, prep.root_depth, np.arange(n), True)
    if status != "optimal":
        # a stopped depth-first search may not have completed a good tree at the root yet:
        # complete one greedily, reusing every subtree the search has solved exactly
        def solved(words, d):
            slot = _search.lookup(memo, words, d)
            return slot >= 0 and memo.value[slot] < np.inf, (float(memo.value[slot]) if slot >= 0 else np.inf)

        value, greedy = _greedy_tree(prep, lam, solved, build)
        if value < objective - 1e-12:
            objective, root = value, greedy
    cap = memo.depth.shape[0]
    counters = memo.counters
    stats = {"subproblems": int(counters[0]), "expansions": int(counters[1]), "bounds": int(counters[2]),
             "table_capacity": cap, "table_megabytes": cap * _entry_bytes(n_words) / 1e6,
             "classes": problem.class_weight.shape[0], "seconds": time.perf_counter() - t0,
             "compile_seconds": compile_seconds}
    table = _memo_table(memo, prep.class_of_row) if keep_table else None
    return SearchResult(objective, lower, status, root, stats, table)


def _greedy_tree(prep, lam, solved, build):
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
        if problem.loss_kind == LOSS_SQUARED:
            total, s_, q = cw[mask].sum(), cs[mask].sum(), cq[mask].sum()
            return max(q - s_ * s_ / total, 0.0) if total > 0 else 0.0
        rows = mask[row_class]
        return _node_loss(y_scaled[rows], w[rows], problem.loss_kind, 1.0, problem.tau) if rows.any() else 0.0

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


def _kernel_steps():
    """The search kernels with arguments of the types a fit passes, for
    :func:`~parsimony._numba.precompile`: this process compiles ``search``; on a cold cache a
    helper process compiles ``lower_bound`` meanwhile (the k-Means bounds, a fifth of search's
    compile, which search then links; its typing reaches it after ``_register``'s other
    callees), then the other kernels called from Python. (Kernels whose callees search shares,
    such as ``_refine_bounds``, did not pay: the helper compiled those callees again.)"""
    rng = np.random.default_rng(0)
    Xb = (rng.random((8, 2)) < 0.5).astype(np.uint8)
    y, w = rng.normal(size=8), np.ones(8)
    prep = _prepare(Xb, y, w, np.arange(8), LOSS_SQUARED, 0.5, BOUNDS["kmeans"], 0.01, None, 0.0, 1.0)
    problem = prep.problem
    n_words = problem.feature_bits.shape[1]
    memo = _new_memo(8, n_words)
    frames = _new_frames(2, n_words, Xb.shape[1], prep.root_words, prep.root_depth, _search.pair_width(problem))
    members, buf = np.zeros(8, dtype=np.int64), np.zeros(8)
    return [(_search.search, (problem, memo, frames, 1), "main"),
            (_search.lower_bound, (problem, prep.root_words, prep.root_depth, members, buf, buf), "helper"),
            (_search.lookup, (memo, prep.root_words, prep.root_depth), "helper"),
            (_search.rehash, (memo, _new_memo(16, n_words)), "helper"),
            (_search.stack_lower_bound, (frames, 0.0), "helper")]


def warm_up():
    """Compile (or load from numba's disk cache) every search kernel, on a tiny problem.

    Useful before timing: the first ``fit`` otherwise pays this once.
    """
    precompile(_kernel_steps())
    rng = np.random.default_rng(0)
    Xb = (rng.random((40, 5)) < 0.5).astype(np.uint8)
    y = rng.normal(size=40)
    find_tree(Xb, y, 0.01, None)
    find_tree(Xb, y, 0.01, 2)
    find_tree(Xb, y, 0.01, 2, loss="absolute")
    find_tree(Xb, y, 0.01, 2, loss="quantile", quantile=0.8)
    _search.rehash(_new_memo(8, 1), _new_memo(16, 1))
    root = np.ones(1, dtype=np.uint64)
    frames = _new_frames(2, 1, 1, root, 1)
    _search.stack_lower_bound(frames, 0.0)


# ----------------------------------------------------------------------------------------------
# fitted tree
# ----------------------------------------------------------------------------------------------
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


def _tree_table(root, y, w, loss_kind, tau=0.5):
    """Preorder node table from the nested split dictionary of a search (``w``: row weights)."""
    norm = _node_loss(y, w, loss_kind, 1.0, tau)
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
        table.value[i] = _leaf_value(vals, weights, loss_kind, tau)
        table.loss[i] = _node_loss(vals, weights, loss_kind, norm, tau)
        table.n_node_samples[i] = len(vals)
    return table


# ----------------------------------------------------------------------------------------------
# estimator
# ----------------------------------------------------------------------------------------------
#: OptimalSparseRegressionTree's parameter table (see :func:`parsimony._validation.validate_params`).
OSRT_PARAMETERS = {
    "regularization": [Interval(numbers.Real, 0)],
    "depth_limit": [None, Interval(numbers.Integral, 0)],
    "loss": [Options(*LOSSES)],
    "quantile": [QUANTILE],
    "bound": [Options(*BOUNDS)],
    "time_limit": [None, POSITIVE],
    "memory_limit": [None, POSITIVE],
    "binarizer": [None, Options("auto"), InstanceOf(Binarizer, "a Binarizer instance")],
}


class OptimalSparseRegressionTree(RegressorMixin, BaseEstimator):
    """Provably optimal sparse regression tree (OSRT, Zhang et al., AAAI 2023).

    Minimises ``loss(t) / loss(one leaf) + regularization * leaves(t)`` over all trees on binary
    features (optionally of depth at most ``depth_limit``), exactly, by dynamic programming
    with bounds. The squared loss is the sum of squared errors about each leaf's mean (so a
    one-leaf tree has loss 1, as in the reference implementation ``osrt``); the absolute
    loss uses absolute errors about each leaf's median.

    Parameters
    ----------
    regularization : float, default=0.05
        Penalty per leaf (``lambda``), >= 0.
    depth_limit : int or None, default=None
        Largest number of splits on a root-to-leaf path; None searches all depths.
    loss : {"squared", "absolute", "quantile"}, default="squared"
        "quantile" is the pinball loss at level ``quantile``: leaves predict the weighted
        ``quantile``-quantile of their rows and the loss is normalised by the pinball loss of the
        best constant (one leaf has loss 1). "absolute" is the same at ``quantile=0.5``.
    quantile : float, default=0.5
        Level tau in (0, 1) of ``loss="quantile"`` (ignored by the other losses).
    bound : {"kmeans", "equivalent", "none"}, default="kmeans"
        Lower bound used to prune: the k-Means (k-median) equivalent-points bound, the plain
        equivalent-points bound, or only the leaf penalty. The optimum does not depend on it.
    time_limit : float or None, default=None
        Seconds. When reached, the best tree found is kept, ``status_`` is "time_limit" and
        ``gap_`` is the certified distance to the optimum. First-use compilation of the kernels
        happens before the clock starts (``search_stats_["compile_seconds"]``).
    memory_limit : float or None, default=None
        Megabytes for the memo table; when exceeded the search stops like a time limit, with
        ``status_`` "memory_limit".
    binarizer : "auto", None or Binarizer, default="auto"
        "auto" binarises numeric columns with ``Binarizer()`` (binary columns pass through
        unchanged); None requires X to be binary (0/1) and raises otherwise; a ``Binarizer``
        instance is cloned and fitted.

    Attributes
    ----------
    tree_ : TreeTable
        Node table of the fitted tree (see ``TreeTable``).
    objective_, loss_ : float
        Objective and normalised loss of the fitted tree on the training data.
    lower_bound_ : float
        Certified lower bound on the optimal objective (equal to ``objective_`` when optimal).
    gap_ : float
        ``objective_ - lower_bound_`` (0 when optimal).
    status_ : str
        "optimal", "time_limit" or "memory_limit".
    n_leaves_, depth_ : int
    complexity_ : int
        Number of nodes (splits and leaves), the SQR paper's tree complexity.
    search_stats_ : dict
        Subproblems stored, node expansions, bounds computed, table size, seconds.
    binarizer_ : Binarizer or None
    binary_feature_names_ : ndarray of str
        Names of the binary columns the tree splits on.
    n_features_in_, feature_names_in_
        Set by ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from parsimony.trees import OptimalSparseRegressionTree
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
    >>> y = 3.0 * X[:, 0] + 0.1 * X[:, 1]
    >>> model = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(X, y)
    >>> model.n_leaves_, model.status_
    (2, 'optimal')
    """

    def __init__(self, regularization=0.05, depth_limit=None, loss="squared", bound="kmeans", time_limit=None,
                 memory_limit=None, binarizer="auto", quantile=0.5):
        self.regularization = regularization
        self.depth_limit = depth_limit
        self.loss = loss
        self.quantile = quantile
        self.bound = bound
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.binarizer = binarizer

    def _binarize_fit(self, X, sample_weight=None):
        names = input_feature_names(self)
        if self.binarizer is None:
            bad = ~np.all((X == 0) | (X == 1), axis=0)
            if bad.any():
                j = int(np.nonzero(bad)[0][0])
                raise ValueError(
                    f"X must be binary (0/1) when binarizer=None, but feature {names[j]!r} holds other values; "
                    "pass binarizer='auto' or a Binarizer to binarise numeric features")
            self.binarizer_ = None
            self.binary_feature_names_ = np.asarray(names, dtype=object)
            self._conditions = self._split_conditions(names)
            return X.astype(np.uint8)
        from sklearn.base import clone

        binarizer = Binarizer() if isinstance(self.binarizer, str) else clone(self.binarizer)
        binarizer.fit(X, sample_weight=sample_weight)
        self.binarizer_ = binarizer
        self._conditions = self._split_conditions(names)
        self.binary_feature_names_ = np.asarray([column for _, _, column in self._conditions], dtype=object)
        return binarizer.transform(X)

    def _split_conditions(self, names):
        """``(true, false, column name)`` of every binary column, with ``names`` for the input features."""
        if self.binarizer_ is None:
            return [(f"{n} = 1", f"{n} = 0", n) for n in names]
        conds = []
        for j, thr in enumerate(self.binarizer_.thresholds_):
            if self.binarizer_.binary_columns_[j]:
                conds.append((f"{names[j]} = 1", f"{names[j]} = 0", names[j]))
            else:
                conds.extend((f"{names[j]} <= {t:.6g}", f"{names[j]} > {t:.6g}", f"{names[j]} <= {t:.6g}")
                             for t in thr)
        return conds

    def _binarize(self, X):
        if self.binarizer_ is None:
            bad = ~np.all((X == 0) | (X == 1), axis=0)
            if bad.any():
                raise ValueError("X must be binary (0/1): this model was fitted with binarizer=None")
            return X.astype(np.uint8)
        return self.binarizer_.transform(X)

    # -- fit / predict ---------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Find the optimal tree for ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary features, or numeric ones when a binarizer is set.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights: losses, leaf means (weighted medians for the absolute
            loss) and the binarizer's thresholds are weighted, so integer weights act as
            repeated rows and rows of weight 0 as absent ones.

        Returns
        -------
        self
        """
        params = validate_params(self.get_params(deep=False), OSRT_PARAMETERS)  # checked once
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        w = check_sample_weight(sample_weight, len(y))
        if w is not None:
            X, y, w = X[w > 0], y[w > 0], w[w > 0]
        Xb = self._binarize_fit(X, w)
        lam, loss, tau = params["regularization"], params["loss"], params["quantile"]
        loss_kind = LOSSES[loss]
        result = find_tree(Xb, y, lam, params["depth_limit"], loss, params["bound"], params["time_limit"],
                       params["memory_limit"], sample_weight=w, quantile=tau)
        size = magnitude_scale(y)  # exact: leaf values scale back, normalised losses do not change
        self.tree_ = _tree_table(result.root, y / size, np.ones(len(y)) if w is None else w, loss_kind, tau)
        self.tree_.value *= size
        leaves = self.tree_.feature < 0
        self.n_leaves_ = int(leaves.sum())
        self.complexity_ = self.tree_.node_count  # the model protocol: nodes of the tree
        self.depth_ = int(self.tree_.depth.max())
        self.loss_ = float(self.tree_.loss[leaves].sum())
        self.objective_ = self.loss_ + lam * self.n_leaves_
        self.status_ = result.status
        self.lower_bound_ = self.objective_ if result.status == "optimal" else min(result.lower_bound,
                                                                                   self.objective_)
        self.gap_ = self.objective_ - self.lower_bound_
        self.search_stats_ = result.stats
        return self

    def predict(self, X):
        """Predicted value of the leaf each row of ``X`` falls into."""
        check_is_fitted(self, "tree_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.tree_.value[self.tree_.apply(self._binarize(X))]

    def apply(self, X):
        """Index (in ``tree_``) of the leaf each row of ``X`` falls into."""
        check_is_fitted(self, "tree_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.tree_.apply(self._binarize(X))

    # -- export ------------------------------------------------------------------------------------
    def node_condition(self, node: int, branch: bool, conditions=None) -> str:
        """Readable condition of ``node``'s true (left) or false (right) branch."""
        return (conditions or self._conditions)[self.tree_.feature[node]][0 if branch else 1]

    def export_text(self, feature_names=None, decimals: int = 3) -> str:
        """The tree as indented text, one condition or leaf per line (leaf values to ``decimals``
        places); ``feature_names`` renames the input features (default: the names seen in ``fit``)."""
        check_is_fitted(self, "tree_")
        conditions = None if feature_names is None else self._split_conditions(input_feature_names(self, feature_names))
        t = self.tree_
        lines = []

        def visit(i, indent):
            pad = "|   " * indent
            if t.feature[i] < 0:
                lines.append(f"{pad}|--- value: {t.value[i]:.{decimals}f}  (n={t.n_node_samples[i]})")
                return
            for branch, child in ((True, t.children_left[i]), (False, t.children_right[i])):
                lines.append(f"{pad}|--- {self.node_condition(i, branch, conditions)}")
                visit(child, indent + 1)

        visit(0, 0)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Nested dictionary: splits hold ``feature``, ``condition``, ``true``, ``false``; leaves ``value``."""
        check_is_fitted(self, "tree_")
        t = self.tree_

        def visit(i):
            out = {"n_samples": int(t.n_node_samples[i]), "value": float(t.value[i]), "loss": float(t.loss[i])}
            if t.feature[i] >= 0:
                out["feature"] = int(t.feature[i])
                out["condition"] = self.node_condition(i, True)
                out["true"] = visit(t.children_left[i])
                out["false"] = visit(t.children_right[i])
            return out

        return visit(0)

    def plot_tree(self, ax=None, decimals: int = 2):
        """Draw the tree with matplotlib; returns the Axes."""
        from ..plotting import plot_osrt_tree

        return plot_osrt_tree(self, ax=ax, decimals=decimals)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
