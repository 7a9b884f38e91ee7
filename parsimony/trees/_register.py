"""A subproblem entering the OSRT memo table: solved at once by the terminal solver, or
stored with its lower bound."""

from __future__ import annotations

import numpy as np

from .._numba import assign, njit
from ..losses import LOSS_SQUARED
from ._bounds import lower_bound
from ._memo import _find, _store_solved
from ._records import BOUND_HOST
from ._terminal import _depth_two, _terminal


@njit(inline="always")  # (a call would count references to every array of the records)
def _bounded(problem, d):
    """True when registering a subproblem of remaining depth ``d`` computes its :func:`lower_bound`:
    not solved at once (:func:`_terminal`) and not of depth three under the squared loss and a
    depth limit (whose bound is the parent's lookahead, see :func:`_register`)."""
    return not _terminal(problem, d) and not (d == 3 and problem.loss_kind == LOSS_SQUARED and not problem.unlimited)


@njit
def _entry(problem, memo, buffers, words, d, known):
    """Slot of subproblem ``(words, d)``, registered with its lower bound (at least ``known``) if new."""
    t = _find(memo.keys, memo.depth, words, d)
    if memo.depth[t] == -1:
        _register(problem, memo, words, d, t, buffers.members, buffers.buf_w, buffers.buf_v, buffers.pairs,
                  buffers.pair_within, buffers.kept, buffers.slot, buffers.active, buffers.ones, known)
    return t


@njit(inline="always")  # (a call would count references to every array of the records)
def _open(memo, words, d, t):
    """Store the subproblem ``(words, d)`` in the empty slot ``t``, unsolved (its bound comes next)."""
    assign(memo.keys[t], words)
    memo.depth[t] = d
    memo.counters[0] += 1
    memo.value[t] = np.inf
    memo.feature[t] = -2


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
    _open(memo, words, d, t)
    if not _bounded(problem, d):  # depth three, the squared loss, a depth limit
        memo.lower[t] = known if known > problem.lam else problem.lam  # a tree has a leaf at least
    else:
        bound = lower_bound(problem, words, d, members, buf_w, buf_v)
        memo.lower[t] = bound if bound > known else known
        memo.counters[2] += 1


@njit
def _ask(problem, memo, frames, words, d, known):
    """Under BOUND_HOST: True when ``(words, d)`` is new and registering it needs its bound, which is
    then listed in ``frames.requests`` for the caller to compute; else False.

    ``known`` is the bound the search has proven of it already (as :func:`_register` takes it).
    """
    if problem.bound_kind != BOUND_HOST or not _bounded(problem, d):
        return False
    t = _find(memo.keys, memo.depth, words, d)
    if memo.depth[t] != -1:
        return False
    n = frames.n_requests[0]
    assign(frames.requests[n], words)
    frames.request_depth[n] = d
    frames.request_known[n] = known
    frames.n_requests[0] = n + 1
    return True


@njit
def store_bounds(memo, frames, bounds):
    """Register every subproblem of ``frames.requests`` with its bound ``bounds[r]`` from the caller
    (at least its known bound), as :func:`_register` would have with the native bound (the list
    names each once), and empty it."""
    for r in range(frames.n_requests[0]):
        words = frames.requests[r]
        d = frames.request_depth[r]
        t = _find(memo.keys, memo.depth, words, d)
        if memo.depth[t] != -1:
            continue
        _open(memo, words, d, t)
        known = frames.request_known[r]
        memo.lower[t] = bounds[r] if bounds[r] > known else known
        memo.counters[2] += 1
    frames.n_requests[0] = 0
