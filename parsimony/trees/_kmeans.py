"""Optimal 1-D clustering by dynamic programming: the k-Means / k-median lower bounds of OSRT.

Points are sorted, so an optimal clustering uses contiguous runs (for squared error, absolute
error and the pinball loss alike: each is a convex function of the point minus its centre). Row ``k`` of the table holds, for every prefix of the points, the
cheapest way to cut it into ``k`` runs; the optimal cut point is monotone in the prefix end
(quadrangle inequality), so each row is filled by divide and conquer in O(n log n) cost
evaluations (each O(1) for squared error, O(log n) for the weighted median or tau-quantile of the others).
Rows are added one at a time and the search stops by convexity (Theorem 3.7 of the paper):
once one more cluster saves less than the penalty ``lam``, more clusters never pay. The cost of all
points in one more cluster is scanned first (over the start of its last cluster, at least where it
starts with one cluster fewer), so the row that ends the search is never filled.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit_by_constant as njit  # the loss kind selects the hot loop
from .._loss_kernels import lower_quantile_position
from ..losses import LOSS_PINBALL, LOSS_SQUARED


@njit
def _sq_cost(pw, pm, pq, a, b):
    """Weighted squared error of points ``a..b`` (inclusive) about their weighted mean."""
    w = pw[b + 1] - pw[a]
    if w <= 0.0:
        return 0.0
    s = pm[b + 1] - pm[a]
    c = (pq[b + 1] - pq[a]) - s * s / w
    return c if c > 0.0 else 0.0


@njit
def _quantile_cost(pw, pm, a, b, values, tau, below_weight, above_weight):
    """Weighted cost of sorted points ``a..b`` (inclusive) about their lower weighted ``tau``-quantile q.

    ``below_weight`` times the sum of ``w (q - y)`` at or below q plus ``above_weight`` times the sum
    of ``w (y - q)`` above it: absolute error with weights 1, 1 at tau = 0.5; the pinball loss with
    ``1 - tau``, ``tau``.
    """
    total = pw[b + 1] - pw[a]
    if total <= 0.0:
        return 0.0
    lo = lower_quantile_position(pw, a, b + 1, tau)
    q = values[lo]
    below = q * (pw[lo + 1] - pw[a]) - (pm[lo + 1] - pm[a])
    above = (pm[b + 1] - pm[lo + 1]) - q * (pw[b + 1] - pw[lo + 1])
    c = below_weight * below + above_weight * above
    return c if c > 0.0 else 0.0


@njit
def _cost(kind, pw, pm, pq, values, a, b, tau):
    if kind == LOSS_SQUARED:
        return _sq_cost(pw, pm, pq, a, b)
    if kind == LOSS_PINBALL:
        return _quantile_cost(pw, pm, a, b, values, tau, 1.0 - tau, tau)
    return _quantile_cost(pw, pm, a, b, values, 0.5, 1.0, 1.0)


@njit
def _fill_row(kind, pw, pm, pq, values, prev, cur, prev_start, cur_start, k, n, stack, tau):
    """Fill ``cur[b]`` = best cost of points 0..b in ``k`` clusters from row ``prev`` (k-1).

    Divide and conquer over b in [k-1, n-1]: the optimal start of the last cluster is monotone in
    b, and at least its start with one cluster fewer (``prev_start``); ``cur_start`` gets the
    (leftmost) optimal starts of this row.
    """
    stack[0, 0] = k - 1
    stack[0, 1] = n - 1
    stack[0, 2] = k - 1
    stack[0, 3] = n - 1
    top = 1
    while top > 0:
        top -= 1
        lo = stack[top, 0]
        hi = stack[top, 1]
        olo = stack[top, 2]
        ohi = stack[top, 3]
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        best = np.inf
        first = olo if olo > prev_start[mid] else prev_start[mid]
        last = ohi if ohi < mid else mid
        arg = first
        for a in range(first, last + 1):
            c = prev[a - 1] + _cost(kind, pw, pm, pq, values, a, mid, tau)
            if c < best:
                best = c
                arg = a
        cur[mid] = best
        cur_start[mid] = arg
        stack[top, 0] = lo
        stack[top, 1] = mid - 1
        stack[top, 2] = olo
        stack[top, 3] = arg
        top += 1
        stack[top, 0] = mid + 1
        stack[top, 1] = hi
        stack[top, 2] = arg
        stack[top, 3] = ohi
        top += 1


@njit
def cluster_costs(kind, weights, values, max_clusters, lam, floor, tau=0.5):
    """Optimal 1-D clustering costs for 1, 2, ... clusters, stopped by convexity.

    Parameters
    ----------
    kind : int
        :data:`parsimony.losses.LOSS_SQUARED` for weighted squared error (k-Means),
        ``LOSS_ABSOLUTE`` for weighted absolute error (k-median), ``LOSS_PINBALL`` for the
        weighted pinball loss at level ``tau`` (the best k-level step function under it).
    weights, values : ndarray
        Points sorted by value, with their weights.
    max_clusters : int
        Largest number of clusters to try.
    lam : float
        Penalty per cluster; rows stop once a cluster saves no more than ``lam`` (convexity).
    floor : float
        Constant lower bound on the loss for every number of clusters (added through max).
    tau : float, default=0.5
        Quantile level of the pinball loss (ignored by the other kinds).

    Returns
    -------
    best : float
        ``min_k max(cost_k, floor) + lam * k`` over the rows computed.
    costs : ndarray
        ``cost_k`` for k = 1 .. number of rows computed.
    """
    n = values.shape[0]
    pw = np.zeros(n + 1)
    pm = np.zeros(n + 1)
    pq = np.zeros(n + 1)
    for i in range(n):
        pw[i + 1] = pw[i] + weights[i]
        pm[i + 1] = pm[i] + weights[i] * values[i]
        pq[i + 1] = pq[i] + weights[i] * values[i] * values[i]
    kmax = max_clusters if max_clusters < n else n
    costs = np.empty(max(kmax, 1))
    prev = np.empty(n)
    cur = np.empty(n)
    prev_start = np.zeros(n, dtype=np.int64)  # one cluster starts at 0
    cur_start = np.zeros(n, dtype=np.int64)
    for b in range(n):
        prev[b] = _cost(kind, pw, pm, pq, values, 0, b, tau)
    c1 = prev[n - 1]
    costs[0] = c1
    best = (c1 if c1 > floor else floor) + lam
    rows = 1
    stack = np.empty((64, 4), dtype=np.int64)
    last = best
    for k in range(2, kmax + 1):
        # first the cost of all points in k clusters alone (one scan over the start of the last one): when
        # it does not pay, the search stops without the rest of the row
        ck = np.inf
        for a in range(prev_start[n - 1] if prev_start[n - 1] > k - 1 else k - 1, n):
            c = prev[a - 1] + _cost(kind, pw, pm, pq, values, a, n - 1, tau)
            if c < ck:
                ck = c
        if (ck if ck > floor else floor) + lam * k >= last:
            costs[k - 1] = ck
            rows = k
            break
        for b in range(k - 1):
            cur[b] = np.inf
        _fill_row(kind, pw, pm, pq, values, prev, cur, prev_start, cur_start, k, n, stack, tau)
        ck = cur[n - 1]
        costs[k - 1] = ck
        rows = k
        obj = (ck if ck > floor else floor) + lam * k
        if obj < best:
            best = obj
        if obj >= last:
            break
        last = obj
        prev, cur = cur, prev
        prev_start, cur_start = cur_start, prev_start
    return best, costs[:rows]
