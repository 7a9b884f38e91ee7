"""The numba side of :mod:`parsimony.losses`: weighted loss sums by loss code, for every kernel.

``loss_kind`` is one of :data:`parsimony.losses.LOSS_SQUARED`, ``LOSS_ABSOLUTE`` and
``LOSS_PINBALL``; ``tau`` is the pinball level (unused by the other two). The functions agree
with the loss objects' ``value`` up to rounding (tests/test_losses.py).
"""

from __future__ import annotations

from ._numba import njit
from .losses import LOSS_PINBALL, LOSS_SQUARED


@njit(error_model="numpy")
def pointwise_loss(r, loss_kind, tau):
    """Loss of one residual ``r = y - prediction``."""
    if loss_kind == LOSS_PINBALL:
        return tau * r if r >= 0 else (tau - 1.0) * r
    if loss_kind == LOSS_SQUARED:
        return r * r
    return abs(r)


@njit(error_model="numpy")
def loss_of_rows(pred, y, w, loss_kind, tau):
    """Weighted loss sum; branch-free terms and four partial sums so the loop vectorises."""
    n = y.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    if loss_kind == LOSS_PINBALL:
        for i in range(0, m, 4):
            r0 = y[i] - pred[i]
            r1 = y[i + 1] - pred[i + 1]
            r2 = y[i + 2] - pred[i + 2]
            r3 = y[i + 3] - pred[i + 3]
            s0 += w[i] * r0 * (tau - (r0 < 0.0))
            s1 += w[i + 1] * r1 * (tau - (r1 < 0.0))
            s2 += w[i + 2] * r2 * (tau - (r2 < 0.0))
            s3 += w[i + 3] * r3 * (tau - (r3 < 0.0))
        for i in range(m, n):
            r = y[i] - pred[i]
            s0 += w[i] * r * (tau - (r < 0.0))
    elif loss_kind == LOSS_SQUARED:
        for i in range(0, m, 4):
            r0 = y[i] - pred[i]
            r1 = y[i + 1] - pred[i + 1]
            r2 = y[i + 2] - pred[i + 2]
            r3 = y[i + 3] - pred[i + 3]
            s0 += w[i] * r0 * r0
            s1 += w[i + 1] * r1 * r1
            s2 += w[i + 2] * r2 * r2
            s3 += w[i + 3] * r3 * r3
        for i in range(m, n):
            r = y[i] - pred[i]
            s0 += w[i] * r * r
    else:
        for i in range(0, m, 4):
            s0 += w[i] * abs(y[i] - pred[i])
            s1 += w[i + 1] * abs(y[i + 1] - pred[i + 1])
            s2 += w[i + 2] * abs(y[i + 2] - pred[i + 2])
            s3 += w[i + 3] * abs(y[i + 3] - pred[i + 3])
        for i in range(m, n):
            s0 += w[i] * abs(y[i] - pred[i])
    return (s0 + s1) + (s2 + s3)


@njit(error_model="numpy")
def loss_of_scalar(v, y, w, loss_kind, tau):
    """Weighted loss sum of the constant prediction ``v``."""
    total = 0.0
    for i in range(y.shape[0]):
        total += w[i] * pointwise_loss(y[i] - v, loss_kind, tau)
    return total
