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
state is three records of plain arrays (``_records.py``): the ``Problem`` (fixed data), the
``Memo`` table (``_memo.py``) and the ``Frames`` of the stack. Each pass of :func:`search`'s loop
does one of four things to the top frame: takes a returning child's answer (after the false child,
the true child if the candidate can still pay), enters a new subproblem (registered with its bound
or solved at once, ``_register.py``, then expanded into sorted candidate splits, ``_expand.py``),
pushes the false child of the next candidate that can pay (its bounds computed lazily,
:func:`_refine_bounds`; lookahead bounds from pair sums, ``_lookahead.py``), or closes the frame
(its exact optimum, or the bound it proved, :func:`_closing_bound`). Leaf losses and the k-Means
bounds are in ``_bounds.py``, the terminal solver of depth-two subproblems in ``_terminal.py``.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ..losses import LOSS_SQUARED
from ._expand import _expand, _sorted_by_bound
from ._lookahead import _depth_three_children, _looks_ahead_of_three, _terminal_children
from ._memo import _find, _split_child
from ._records import BOUND_HOST, BOUND_NONE, new_buffers
from ._register import _ask, _entry, _register
from ._terminal import _terminal

# kernel return codes
DONE = 0
PAUSED = 1
NEED_SPACE = 2
NEED_BOUNDS = 3  # (BOUND_HOST) the caller is to compute the bounds of frames.requests
_GO_ON = -1      # (_refine_bounds: the search goes on)
# frames.n_requests[0] under BOUND_HOST before expanding the top frame with another loss than the
# squared one (every child registered with its bound): the caller is to register them ...
EXPAND_REQUEST = -1
EXPAND_READY = -2  # ... and has


@njit
def _limit(best, budget, f):
    """What frame ``f`` must beat: its best so far or its budget, whichever is lower."""
    return best[f] if best[f] < budget[f] else budget[f]


@njit
def _refine_bounds(problem, memo, frames, f, buffers):
    """Advance frame ``f`` to its next candidate whose bounds (computed now if lazy) beat the limit,
    passing over those whose bounds reach it.

    Returns ``_GO_ON``, or NEED_SPACE when the table is full or NEED_BOUNDS when the caller is to
    compute bounds first (BOUND_HOST); the frame is then left consistent to resume.
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
            return NEED_SPACE
        j = frames.order[f, p]
        if terminal:
            b0, b1 = _terminal_children(problem, memo, frames, f, j, buffers, limit, false_bound[p], true_bound[p])
            false_bound[p] = b0
            true_bound[p] = b1
        else:
            if problem.bound_kind == BOUND_HOST:
                asked = False
                for side in range(2):
                    _split_child(words, fbits, j, side, child)
                    if _ask(problem, memo, frames, child, dc, false_bound[p] if side == 0 else true_bound[p]):
                        asked = True
                if asked:
                    frames.position[f] = p
                    return NEED_BOUNDS
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
    return _GO_ON


@njit
def search(problem, memo, frames, max_steps):
    """Run the search for at most ``max_steps`` node expansions; returns DONE (the root has returned),
    PAUSED (out of steps), NEED_SPACE (the caller must grow the table; ``memo.counters[3]`` is the
    entry limit) or, under BOUND_HOST, NEED_BOUNDS (the caller must register ``frames.requests``
    with their bounds). ``frames.top[0]`` keeps the stack height so the next call resumes. The
    records are unpacked once here: passing a record to a helper costs a reference count per
    array, so the per-frame steps below work on plain arrays."""
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
                if _ask(problem, memo, frames, words, d, 0.0):
                    frames.top[0] = top
                    return NEED_BOUNDS
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
            if problem.bound_kind == BOUND_HOST and problem.loss_kind != LOSS_SQUARED:
                if frames.n_requests[0] != EXPAND_READY:
                    frames.n_requests[0] = EXPAND_REQUEST
                    frames.top[0] = top
                    return NEED_BOUNDS
                frames.n_requests[0] = 0
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
        if p < n_candidates[f] and bounds_final[f, p] == 0:
            code = _refine_bounds(problem, memo, frames, f, buffers)
            if code != _GO_ON:
                frames.top[0] = top
                return code
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
