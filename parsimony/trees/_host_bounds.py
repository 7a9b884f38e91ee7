"""The k-Means bounds of an OSRT search computed outside its kernel (``BOUND_HOST``): by a twin of
:func:`parsimony.trees._kmeans.cluster_costs` with its contract, such as the Julia one
(:mod:`parsimony.trees._kmeans_julia`).

The kernel lists the new subproblems whose bounds it needs (``Frames.requests``) and returns
``NEED_BOUNDS``; before expanding a subproblem under another loss than the squared one (which
registers every child) it asks instead for the children to be listed here
(:func:`_expansion_requests`, as ``_expand._candidates`` would register them). :func:`serve`
computes the bounds as :func:`parsimony.trees._bounds.lower_bound` does (the same points in the
same order, the same sums), and ``_register.store_bounds`` registers them before the search
resumes, so the search is the native one.
"""

from __future__ import annotations

import numpy as np

from ..losses import LOSS_SQUARED
from ._bounds import leaf_loss
from ._memo import lookup
from ._register import store_bounds
from ._stack import EXPAND_READY, EXPAND_REQUEST


def _classes(words, n_classes):
    """The classes of the bitset ``words``, ascending (bit ``i`` of word ``k``: class ``64 k + i``)."""
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits[:n_classes])


def subproblem_bound(problem, words, d, cluster_costs):
    """``lower_bound(problem, words, d, ...)`` of the k-Means kind, its clustering by ``cluster_costs``."""
    lam = problem.lam
    n_classes = problem.class_weight.shape[0]
    members = _classes(words, n_classes)
    n = members.shape[0]
    within = float(np.cumsum(problem.class_within[members])[-1]) if n else 0.0  # (a running sum, as the kernel)
    if n <= 1:
        return within + lam
    kmax = n if d >= 30 else min(n, 1 << int(d))
    if problem.loss_kind == LOSS_SQUARED:
        best, _ = cluster_costs(LOSS_SQUARED, problem.class_weight[members], problem.class_mean[members], kmax, lam,
                                0.0)
        return float(best) + within
    inside = np.zeros(n_classes, dtype=bool)
    inside[members] = True
    rows = np.flatnonzero(inside[problem.row_class])
    best, _ = cluster_costs(problem.loss_kind, problem.row_w[rows], problem.row_y[rows], kmax, lam, within,
                            problem.tau)
    return float(best)


def _bounded(problem, d):
    """Python twin of ``_register._bounded``: registering at remaining depth ``d`` computes a bound."""
    squared_limited = problem.loss_kind == LOSS_SQUARED and not problem.unlimited
    return not (squared_limited and d in (2, 3))


def _expansion_requests(problem, memo, frames):
    """List in ``frames.requests`` the new children that expanding the top frame registers with
    their bounds (another loss than the squared one: every child of every feature that splits it),
    unless the expansion stops first (a leaf at its bound, depth one or zero), as ``_expand`` does."""
    f = int(frames.top[0]) - 1
    words, d = frames.words[f], int(frames.depth[f])
    dc = d if problem.unlimited else d - 1
    n = 0
    if d != 0 and dc != 0 and _bounded(problem, dc):
        n_classes = problem.class_weight.shape[0]
        members = np.empty(n_classes, dtype=np.int64)
        size = max(n_classes, problem.row_y.shape[0])
        leaf = leaf_loss(problem, words, members, np.empty(size), np.empty(size + 1)) + problem.lam
        if not leaf <= memo.lower[lookup(memo, words, d)]:
            listed = set()
            for bits in problem.feature_bits:
                children = (words & ~bits, words & bits)
                if not all(child.any() for child in children):
                    continue  # splits nothing
                for child in children:
                    key = child.tobytes()
                    if key not in listed and lookup(memo, child, dc) < 0:
                        listed.add(key)
                        frames.requests[n] = child
                        frames.request_depth[n] = dc
                        frames.request_known[n] = 0.0
                        n += 1
    frames.n_requests[0] = n


def serve(problem, memo, frames, cluster_costs):
    """Answer the kernel's NEED_BOUNDS: compute the bounds of ``frames.requests`` (listing them first
    when it asks before an expansion) with ``cluster_costs`` and register them."""
    expanding = frames.n_requests[0] == EXPAND_REQUEST
    if expanding:
        _expansion_requests(problem, memo, frames)
    n = int(frames.n_requests[0])
    bounds = np.array([subproblem_bound(problem, frames.requests[r], int(frames.request_depth[r]), cluster_costs)
                       for r in range(n)], dtype=np.float64)
    store_bounds(memo, frames, bounds)
    if expanding:
        frames.n_requests[0] = EXPAND_READY
