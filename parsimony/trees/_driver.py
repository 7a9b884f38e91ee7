"""The OSRT search driver: a loss object and binary data in, the optimal tree (or, under a limit,
the best found with a certified bound) out, in the units of the targets.

It prepares the search's view of the data (``_classes.py``), calls the kernel (``_stack.search``)
in slices until it is done or a limit stops it, growing the memo table as asked, reads the tree
back from the table, completes a stopped search greedily (``_greedy.py``) and builds the node
table (``_tree_table.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._numba import precompile
from .._validation import magnitude_scale
from ..losses import LOSS_SQUARED, Absolute, Pinball, Squared
from ._bounds import lower_bound
from ._classes import _is_constant, _merge_repeated_rows, _prepare
from ._greedy import greedy_tree
from ._memo import lookup, rehash, unpack_splits
from ._host_bounds import serve
from ._records import BOUND_EQUIVALENT, BOUND_HOST, BOUND_KMEANS, BOUND_NONE, UNLIMITED, Frames, Memo, pair_width
from ._stack import DONE, NEED_BOUNDS, NEED_SPACE, search, stack_lower_bound
from ._tree_table import TreeTable, tree_table

BOUNDS = {"none": BOUND_NONE, "equivalent": BOUND_EQUIVALENT, "kmeans": BOUND_KMEANS}


@dataclass
class SearchResult:
    """Outcome of one search: the tree (predicting in the units of the targets), its objective and
    the proven lower bound, the status, counters and, for tests, the memo table."""

    objective: float
    lower_bound: float
    status: str
    tree: TreeTable
    stats: dict = field(default_factory=dict)
    table: dict | None = None


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
    return Memo(np.zeros((capacity, n_words), dtype=np.uint64), np.full(capacity, -1, dtype=np.int32),
                        np.zeros(capacity), np.full(capacity, np.inf), np.full(capacity, -2, dtype=np.int64), counters)


#: Largest size of the pair sums kept for depth-four frames and their children (5 arrays of side
#: ``features``); with more features their children of depth three get no lookahead bound.
_KEPT_PAIR_BYTES = 1 << 28


def _new_frames(n_frames, n_words, n_features, root_words, root_depth, n_pairs=1):
    """The search stack with the root subproblem pushed (unbounded budget); ``n_pairs`` is the side of
    the pair-sum arrays (:func:`pair_width`)."""
    width = max(n_features, 1)
    deep = 4 <= root_depth != UNLIMITED and 120 * n_pairs * n_pairs <= _KEPT_PAIR_BYTES
    n_kept = n_pairs if deep else 1
    frames = Frames(
        np.zeros((n_frames, n_words), dtype=np.uint64), np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames),
        np.zeros(n_frames), np.full(n_frames, -1, dtype=np.int64), np.full(n_frames, -1, dtype=np.int64),
        np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames, dtype=np.int64), np.zeros(n_frames),
        np.zeros((n_frames, width), dtype=np.int64), np.zeros((n_frames, width)), np.zeros((n_frames, width)),
        np.zeros((n_frames, width), dtype=np.int64), np.full(n_frames, np.inf), np.zeros(2, dtype=np.int64),
        np.zeros((n_pairs, n_pairs, 4)),
        np.zeros(n_pairs + 1, dtype=np.int64), np.zeros(n_pairs, dtype=np.int64), np.zeros(1, dtype=np.int64),
        np.zeros((n_kept, n_kept, 4)), np.zeros((n_kept, n_kept)), np.zeros(n_kept + 1, dtype=np.int64),
        np.zeros(n_kept, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros((2, n_kept, n_kept, 4)),
        np.zeros((2, n_kept, n_kept)), np.full(2, -1, dtype=np.int64), np.zeros(2, dtype=np.int64),
        np.zeros((2 * width + 2, n_words), dtype=np.uint64), np.zeros(2 * width + 2, dtype=np.int64),
        np.zeros(2 * width + 2), np.zeros(1, dtype=np.int64))
    frames.words[0] = root_words
    frames.depth[0] = root_depth
    frames.budget[0] = np.inf
    frames.top[0] = 1
    return frames


def _run(problem, memo, frames, deadline, mem_bytes, progress=None, cluster_costs=None):
    """Call the kernel in slices until it is done or a limit stops it; returns ``(status, memo)``.

    The table grows (x4, then x2 above a million slots) whenever the kernel asks for space; under
    BOUND_HOST the bounds it asks for are computed with ``cluster_costs``. ``progress`` (a
    :class:`_Progress`) is shown the search's state after every slice.
    """
    n_words = problem.feature_bits.shape[1]
    paused = deadline is not None or progress is not None
    # slices start at one node expansion (one may take 0.1 s: the k-median bounds of a thousand
    # children) and double while they take under 0.05 s (without a deadline or a bar, no pauses)
    steps = 1 if paused else 1 << 22
    while True:
        tc = time.perf_counter()
        code = search(problem, memo, frames, steps)
        if code == DONE:
            return "optimal", memo
        if deadline is not None and time.perf_counter() >= deadline:
            return "time_limit", memo
        if code == NEED_BOUNDS:
            serve(problem, memo, frames, cluster_costs)
        elif code == NEED_SPACE:
            cap = memo.depth.shape[0]
            new_cap = cap * 2 if cap >= 1 << 20 else cap * 4
            if mem_bytes is not None and new_cap * _entry_bytes(n_words) > mem_bytes:
                return "memory_limit", memo
            grown = _new_memo(new_cap, n_words, memo.counters)
            rehash(memo, grown)
            memo = grown
        else:
            elapsed = time.perf_counter() - tc
            if elapsed < 0.05:
                steps = min(steps * 2, 1 << 22)
            elif elapsed > 0.2 and steps > 16:
                steps //= 2
        if progress is not None:
            progress.show(memo, frames)
        if deadline is not None and time.perf_counter() >= deadline:
            return "time_limit", memo


class _Progress:
    """A tqdm bar of a running search: seconds (out of the time limit, if any), the best objective
    found at the root, the certified lower bound and the subproblems stored."""

    def __init__(self, time_limit, start):
        from tqdm.auto import tqdm

        self.start = start
        self.shown = 0.0
        self.bar = tqdm(total=time_limit, desc="OSRT", unit="s", leave=False,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s{postfix}"
                        if time_limit is not None else "{desc}: {n:.1f} s{postfix}")

    def show(self, memo, frames):
        now = time.perf_counter()
        if now - self.shown < 0.1:  # (under BOUND_HOST the kernel returns every few bounds)
            return
        self.shown = now
        best = float(frames.best[0]) if frames.n_candidates[0] >= 0 else np.inf
        top = int(frames.top[0])
        lower = 0.0
        if top > 0:
            slot = lookup(memo, frames.words[top - 1], frames.depth[top - 1])
            lower = float(stack_lower_bound(frames, float(memo.lower[slot]) if slot >= 0 else 0.0))
        elapsed = now - self.start
        if self.bar.total is not None:
            elapsed = min(elapsed, self.bar.total)
        self.bar.n = elapsed
        self.bar.set_postfix_str(f"best {best:.5g}, bound {lower:.5g}, subproblems {int(memo.counters[0])}",
                                 refresh=False)
        self.bar.refresh()

    def close(self):
        self.bar.close()


def _root_result(memo, frames, prep, lam, status):
    """Objective, certified lower bound and root split of the root, exact or from a stopped stack."""
    root_slot = lookup(memo, prep.root_words, prep.root_depth)
    if status == "optimal":
        objective = float(memo.value[root_slot])
        return objective, objective, unpack_splits(memo.feature[root_slot])[0]
    top = int(frames.top[0])
    top_slot = lookup(memo, frames.words[top - 1], frames.depth[top - 1])
    top_lower = float(memo.lower[top_slot]) if top_slot >= 0 else 0.0
    lower = float(stack_lower_bound(frames, top_lower))
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
            slot = lookup(memo, words, d) if d != 0 else -1
            if slot >= 0 and memo.value[slot] < np.inf:
                f, *kids = unpack_splits(memo.feature[slot])
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


def find_tree(Xb, y, loss, regularization, depth_limit=None, bound="kmeans", time_limit=None, memory_limit=None,
              sample_weight=None, keep_table=False, clock_start=None, progress=False, cluster_costs=None):
    """Find the tree minimising ``loss / loss(one leaf) + regularization * leaves`` on binary ``Xb``.

    Parameters
    ----------
    Xb : ndarray of shape (n_samples, n_features)
        Binary (0/1) features.
    y : ndarray of shape (n_samples,)
        Targets.
    loss : Squared, Absolute or Pinball
        The loss (:func:`parsimony.losses.as_loss` turns an estimator's ``loss`` into one).
    regularization : float
        Penalty per leaf.
    depth_limit : int or None
        Largest number of splits on a root-to-leaf path (None: no limit).
    bound : {"kmeans", "equivalent", "none"}
        Lower bound used to prune (all give the same optimum).
    time_limit : float or None
        Seconds from ``clock_start``: the search stops in time to complete its best tree greedily
        (:func:`_finish_time`) and returns it with status "time_limit".
    memory_limit : float or None
        Megabytes for the subproblem table; when reached the search stops with status
        "memory_limit".
    sample_weight : ndarray of shape (n_samples,) or None
        Positive row weights: the losses are weighted sums (integer weights act as repeated rows).
    keep_table : bool
        Also return the memo table (for tests): per stored subproblem its rows, remaining depth,
        proven lower bound and exact value (inf when not solved).
    clock_start : float or None
        ``time.perf_counter()`` time the ``time_limit`` counts from (default: after compilation).
    progress : bool
        Show a progress bar of the search (tqdm).
    cluster_costs : callable or None
        A twin of :func:`parsimony.trees._kmeans.cluster_costs` (the Julia one) computing the
        k-Means bounds for the search (``bound="kmeans"`` only; None: the kernel's own).

    Returns
    -------
    SearchResult
        Its ``tree`` predicts in the units of ``y``; ``stats["compile_seconds"]`` is the first-use
        compilation done before the clock of ``time_limit`` starts (0 once the kernels are loaded).
    """
    compile_seconds = _ensure_compiled()
    t0 = time.perf_counter() if clock_start is None else clock_start
    lam = float(regularization)
    Xb = np.ascontiguousarray(Xb, dtype=np.uint8)
    y = np.asarray(y, dtype=np.float64)
    n, m = Xb.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if not np.all(w > 0):
        raise ValueError("find_tree needs positive sample weights (drop the rows of weight 0)")
    size = magnitude_scale(y)  # a power of two: dividing by it is exact, so the objective is unchanged
    Xb_merged, y_merged, w_merged, merged_row = _merge_repeated_rows(Xb, y, w)
    y_merged = y_merged / size
    centre, norm = loss.constant_total(y_merged, w_merged)
    root = {"rows": np.arange(n)}
    stats = {"subproblems": 0, "expansions": 0, "bounds": 0}
    table = None
    if _is_constant(norm, y_merged, w_merged, loss):
        status, objective, lower = "optimal", lam, lam
    elif m == 0:
        status, objective, lower = "optimal", 1.0 + lam, 1.0 + lam
    else:
        scale = np.sqrt(norm) if loss.code == LOSS_SQUARED else norm
        kind = BOUND_HOST if cluster_costs is not None and bound == "kmeans" else BOUNDS[bound]
        prep = _prepare(Xb_merged, y_merged, w_merged, merged_row, loss, kind, lam, depth_limit, centre, scale)
        status, objective, lower, root, memo = _run_search(prep, loss, lam, Xb, time_limit, memory_limit, t0,
                                                           progress, cluster_costs)
        cap = memo.depth.shape[0]
        counters = memo.counters
        stats = {"subproblems": int(counters[0]), "expansions": int(counters[1]), "bounds": int(counters[2]),
                 "table_capacity": cap, "table_megabytes": cap * _entry_bytes(prep.root_words.shape[0]) / 1e6,
                 "classes": prep.problem.class_weight.shape[0]}
        table = _memo_table(memo, prep.class_of_row) if keep_table else None
    stats.update(seconds=time.perf_counter() - t0, compile_seconds=compile_seconds)
    tree = tree_table(root, y / size, w, loss)
    tree.value *= size
    return SearchResult(objective, lower, status, tree, stats, table)


def _finish_time(time_limit):
    """Seconds of a time limit kept for completing a stopped search's tree (:func:`greedy_tree`,
    a few milliseconds to a fraction of a second): a tenth, at most one second. The completion gets
    that much even when the search's last slice ran late, so a fit ends at most that late."""
    return min(0.1 * float(time_limit), 1.0)


def _run_search(prep, loss, lam, Xb, time_limit, memory_limit, t0, progress=False, cluster_costs=None):
    """Run the search on a prepared problem; returns the status, the objective and certified lower
    bound, the tree as nested splits (leaves list input rows) and the memo table."""
    problem = prep.problem
    n_words, m = problem.feature_bits.shape[1], Xb.shape[1]
    n_frames = (m + 2) if problem.unlimited else min(prep.root_depth, m) + 2
    memo = _new_memo(1 << 12, n_words)
    frames = _new_frames(n_frames, n_words, m, prep.root_words, prep.root_depth, pair_width(problem))
    end = None if time_limit is None else t0 + float(time_limit)
    deadline = None if end is None else end - _finish_time(time_limit)
    mem_bytes = None if memory_limit is None else float(memory_limit) * 1e6
    bar = _Progress(time_limit, t0) if progress else None
    try:
        status, memo = _run(problem, memo, frames, deadline, mem_bytes, bar, cluster_costs)
    finally:
        if bar is not None:
            bar.close()
    objective, lower, root_feature = _root_result(memo, frames, prep, lam, status)
    build = _tree_builder(memo, problem, Xb, root_feature)
    root = build(prep.root_words, prep.root_depth, np.arange(Xb.shape[0]), True)
    if status != "optimal":
        # a stopped depth-first search may not have completed a good tree at the root yet:
        # complete one greedily, reusing every subtree the search has solved exactly
        def solved(words, d):
            slot = lookup(memo, words, d)
            return slot >= 0 and memo.value[slot] < np.inf, (float(memo.value[slot]) if slot >= 0 else np.inf)

        finish = None if end is None else max(end, time.perf_counter() + _finish_time(time_limit))
        value, greedy = greedy_tree(prep, loss, lam, solved, build, finish)
        if value < objective - 1e-12:
            objective, root = value, greedy
    return status, objective, lower, root, memo


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
    prep = _prepare(Xb, y, w, np.arange(8), Squared(), BOUNDS["kmeans"], 0.01, None, 0.0, 1.0)
    problem = prep.problem
    n_words = problem.feature_bits.shape[1]
    memo = _new_memo(8, n_words)
    frames = _new_frames(2, n_words, Xb.shape[1], prep.root_words, prep.root_depth, pair_width(problem))
    members, buf = np.zeros(8, dtype=np.int64), np.zeros(8)
    return [(search, (problem, memo, frames, 1), "main"),
            (lower_bound, (problem, prep.root_words, prep.root_depth, members, buf, buf), "helper"),
            (lookup, (memo, prep.root_words, prep.root_depth), "helper"),
            (rehash, (memo, _new_memo(16, n_words)), "helper"),
            (stack_lower_bound, (frames, 0.0), "helper")]


def warm_up():
    """Compile (or load from numba's disk cache) every search kernel, on a tiny problem.

    Useful before timing: the first ``fit`` otherwise pays this once.
    """
    precompile(_kernel_steps())
    rng = np.random.default_rng(0)
    Xb = (rng.random((40, 5)) < 0.5).astype(np.uint8)
    y = rng.normal(size=40)
    find_tree(Xb, y, Squared(), 0.01, None)
    find_tree(Xb, y, Squared(), 0.01, 2)
    find_tree(Xb, y, Absolute(), 0.01, 2)
    find_tree(Xb, y, Pinball(0.8), 0.01, 2)
    rehash(_new_memo(8, 1), _new_memo(16, 1))
    root = np.ones(1, dtype=np.uint64)
    frames = _new_frames(2, 1, 1, root, 1)
    stack_lower_bound(frames, 0.0)
