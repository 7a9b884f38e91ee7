"""Exact linear scaling under the pinball loss: the best ``a + b * f`` for given values ``f``.

Minimising ``sum_i w_i rho_tau(y_i - a - b f_i)`` over ``(a, b)`` is a quantile regression on
one regressor: a linear programme whose optimum lies on a line through two data points. The
direct descent of Wesolowsky (1981, written for least absolute deviations; here with the
pinball loss's asymmetric weights) walks such lines. Through a pivot point ``k`` the loss of the
slope ``b`` is ``sum_j w_j |e_j| rho_(tau_j)(s_j - b)`` with ``e_j = f_j - f_k``, ``s_j = (y_j -
y_k) / e_j`` and ``tau_j = tau`` right of the pivot, ``1 - tau`` left of it, so the best slope is a
weighted quantile of the ``s_j``; the point it passes through becomes the next pivot. The loss
never rises and the walk stops when it no longer falls: at a vertex of this convex
piecewise-linear objective where neither edge descends, which is the optimum.
"""

from __future__ import annotations

import numpy as np

from .._loss_kernels import pointwise_loss
from .._numba import argsort, njit
from ..losses import LOSS_PINBALL


@njit(error_model="numpy")
def _pinball_sum(f, y, w, tau, a, b):
    total = 0.0
    for i in range(y.shape[0]):
        total += w[i] * pointwise_loss(y[i] - a - b * f[i], LOSS_PINBALL, tau)
    return total


@njit(error_model="numpy")
def _slope_through(f, y, w, tau, k, slopes, mass, rows):
    """Best slope of a line through point ``k`` and the point it then passes through (-1: none)."""
    m = 0
    below = 0.0  # minus the loss's derivative in b as b -> -inf
    for j in range(y.shape[0]):
        e = f[j] - f[k]
        if e == 0.0 or w[j] == 0.0:
            continue
        slopes[m] = (y[j] - y[k]) / e
        mass[m] = w[j] * abs(e)
        rows[m] = j
        below += mass[m] * (tau if e > 0 else 1.0 - tau)
        m += 1
    if m == 0:
        return 0.0, -1
    order = argsort(slopes[:m])
    acc = -below
    for t in range(m):  # passing s_j raises the derivative by mass_j: stop where it turns >= 0
        acc += mass[order[t]]
        if acc >= 0.0:
            return slopes[order[t]], rows[order[t]]
    last = order[m - 1]
    return slopes[last], rows[last]


#: Pivot steps :func:`pinball_line` takes at most unless its caller says (the final front's linear
#: scaling). Callers pass it explicitly: a call leaving the default out compiled a specialisation
#: of its own (an ``omitted`` argument type) beside the exhaustive seeder's, which passes a row
#: count (0.32 s CPU of a cold SQR fit, first_use.py --profile --no-helper, load 4.4).
LINE_STEPS = 200


@njit(error_model="numpy")
def pinball_line(f, y, w, tau, max_steps=LINE_STEPS):
    """The pair ``(a, b)`` minimising the weighted pinball loss of ``y - a - b * f``, and that loss
    (a weighted sum, not a mean).

    Starts from ``b = 1`` with the best offset, so the result is never worse than ``f`` plus its
    best constant. Non-finite ``f`` gives ``(0, 1, inf)``.
    """
    n = y.shape[0]
    for i in range(n):
        if not np.isfinite(f[i]):
            return 0.0, 1.0, np.inf
    # the start: b = 1, a = the weighted tau-quantile of y - f; its row is the first pivot
    resid = np.empty(n)
    for i in range(n):
        resid[i] = y[i] - f[i]
    order = argsort(resid)
    wsum = 0.0
    for i in range(n):
        wsum += w[i]
    acc = 0.0
    k = order[n - 1]
    for t in range(n):
        acc += w[order[t]]
        if acc >= tau * wsum and w[order[t]] > 0:
            k = order[t]
            break
    b = 1.0
    a = resid[k]
    loss = _pinball_sum(f, y, w, tau, a, b)
    slopes, mass = np.empty(n), np.empty(n)
    rows = np.empty(n, dtype=np.int64)
    for _ in range(max_steps):
        b_new, j = _slope_through(f, y, w, tau, k, slopes, mass, rows)
        if j < 0:
            break
        a_new = y[k] - b_new * f[k]
        loss_new = _pinball_sum(f, y, w, tau, a_new, b_new)
        if not loss_new < loss - 1e-14 * abs(loss):
            break
        a, b, loss, k = a_new, b_new, loss_new, j
    return a, b, loss
