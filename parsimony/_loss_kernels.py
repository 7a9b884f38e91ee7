"""The numba side of :mod:`parsimony.losses`: weighted loss sums by loss code, for every kernel.

``loss_kind`` is one of :data:`parsimony.losses.LOSS_SQUARED`, ``LOSS_ABSOLUTE`` and
``LOSS_PINBALL``; ``tau`` is the pinball level (unused by the other two). The functions agree
with the loss objects' ``value`` up to rounding (tests/test_losses.py).
"""

from __future__ import annotations

from ._numba import njit
from .losses import LOSS_PINBALL, LOSS_SQUARED, QUANTILE_TOLERANCE


@njit(error_model="numpy", inline="always")
def _factor(r, loss_kind, tau):
    """``pointwise_loss(r) / r`` without a branch on ``r`` (so the row loops vectorise): the one
    definition of each loss on the numba side."""
    if loss_kind == LOSS_PINBALL:
        return tau - (r < 0.0)
    if loss_kind == LOSS_SQUARED:
        return r
    return 1.0 - 2.0 * (r < 0.0)  # the sign: w * r * sign is w * |r| exactly


@njit(error_model="numpy")
def pointwise_loss(r, loss_kind, tau):
    """Loss of one residual ``r = y - prediction``."""
    return r * _factor(r, loss_kind, tau)


@njit(error_model="numpy")
def loss_of_rows(pred, y, w, loss_kind, tau):
    """Weighted loss sum of the predictions ``pred``; four partial sums so the loop vectorises."""
    n = y.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        r0 = y[i] - pred[i]
        r1 = y[i + 1] - pred[i + 1]
        r2 = y[i + 2] - pred[i + 2]
        r3 = y[i + 3] - pred[i + 3]
        s0 += w[i] * r0 * _factor(r0, loss_kind, tau)
        s1 += w[i + 1] * r1 * _factor(r1, loss_kind, tau)
        s2 += w[i + 2] * r2 * _factor(r2, loss_kind, tau)
        s3 += w[i + 3] * r3 * _factor(r3, loss_kind, tau)
    for i in range(m, n):
        r = y[i] - pred[i]
        s0 += w[i] * r * _factor(r, loss_kind, tau)
    return (s0 + s1) + (s2 + s3)


@njit(error_model="numpy")
def loss_of_scalar(v, y, w, loss_kind, tau):
    """Weighted loss sum of the constant prediction ``v``."""
    total = 0.0
    for i in range(y.shape[0]):
        total += w[i] * pointwise_loss(y[i] - v, loss_kind, tau)
    return total


@njit(error_model="numpy")
def lower_quantile_position(cum, start, stop, level):
    """Position of the lower weighted ``level``-quantile of sorted values ``start..stop-1``.

    ``cum`` holds cumulative weights of values sorted ascending: ``cum[i + 1] - cum[start]`` is the
    weight of values ``start..i``. Returns the first ``i`` whose weight reaches ``level`` of their
    total within :data:`~parsimony.losses.QUANTILE_TOLERANCE` (relative to ``max(cum[stop], 1)``),
    by bisection; the value there minimises the weighted pinball loss at ``level`` over constants
    (the twin of :func:`parsimony.losses.weighted_quantile`); ``start`` when the total is 0.
    """
    base = cum[start]
    top = cum[stop]
    target = level * (top - base) - QUANTILE_TOLERANCE * (top if top > 1.0 else 1.0)
    lo = start
    hi = stop - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid + 1] - base >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo
