"""A subproblem entering the OSRT memo table: solved at once by the terminal solver, or
stored with its lower bound."""

from __future__ import annotations

import numpy as np

from .._numba import assign, njit
from ..losses import LOSS_SQUARED
from ._bounds import lower_bound
from ._memo import _find, _store_solved
from ._terminal import _depth_two, _terminal


@njit
def _entry(problem, memo, buffers, words, d, known):
    """Slot of subproblem ``(words, d)``, registered with its lower bound (at least ``known``) if new."""
    t = _find(memo.keys, memo.depth, words, d)
    if memo.depth[t] == -1:
        _register(problem, memo, words, d, t, buffers.members, buffers.buf_w, buffers.buf_v, buffers.pairs,
                  buffers.pair_within, buffers.kept, buffers.slot, buffers.active, buffers.ones, known)
    return t


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
