"""Losses and lower bounds of one OSRT subproblem: the leaf loss and the (k-Means)
equivalent-points bound."""

from __future__ import annotations

from .._loss_kernels import lower_quantile_position, pointwise_loss
from .._numba import njit
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._kmeans import cluster_costs
from ._memo import _members, _row_in
from ._records import BOUND_EQUIVALENT, BOUND_NONE


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
def leaf_loss(problem, words, members, values, cum):
    """Normalised loss of one leaf holding the classes of ``words`` (``values`` and ``cum`` are work
    buffers: plain arrays, not the buffers record, which would cost a reference count per array and call).

    Squared loss: weighted sum of squares about the weighted mean from the per-class sums of the
    scaled targets. Absolute loss: weighted absolute deviations about the weighted median, from
    the rows sorted by target; pinball loss: weighted pinball losses about the weighted lower
    ``tau``-quantile.
    """
    if problem.loss_kind == LOSS_SQUARED:
        _, w, s, q = _class_totals(problem, words, members)
        return _cell_loss(w, s, q)
    tau = problem.tau if problem.loss_kind == LOSS_PINBALL else 0.5  # the absolute loss: the median
    return _quantile_leaf(words, problem.row_class, problem.row_y, problem.row_w, problem.loss_kind, tau, values, cum)


@njit
def _quantile_leaf(words, row_class, row_y, row_w, loss_kind, tau, values, cum):
    """Weighted absolute or pinball loss of the rows of ``words`` about their lower weighted ``tau``-quantile.

    The rows' targets (sorted) are gathered into ``values`` and their cumulative weights into
    ``cum`` (one longer), for the package's one quantile kernel; the loss sums over the rows in
    the same order.
    """
    n = 0
    cum[0] = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            values[n] = row_y[r]
            cum[n + 1] = cum[n] + row_w[r]
            n += 1
    if cum[n] <= 0.0:
        return 0.0
    q = values[lower_quantile_position(cum, 0, n, tau)]
    total = 0.0
    for r in range(row_y.shape[0]):
        if _row_in(words, row_class[r]):
            total += row_w[r] * pointwise_loss(row_y[r] - q, loss_kind, tau)
    return total


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
