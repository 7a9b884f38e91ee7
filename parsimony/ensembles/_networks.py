"""Numba kernel: full-batch iRprop- training of many one-hidden-layer networks, one after another.

Each network (logistic hidden units, linear output) minimises
``sum_n w_n (f(x_n) - y_n)^2 / 2 + decay * (||W1||^2 + ||w2||^2) / 2`` on its own sample
``xb[i], yb[i]`` with row weights ``wb[i]``; every epoch is one exact gradient over the sample followed by an iRprop- step
(per-weight step sizes grown by ``grow`` while the gradient keeps its sign, shrunk by ``shrink``
and the move skipped when it flips).
"""

from __future__ import annotations

import numpy as np

from parsimony._numba import njit


@njit
def _rprop_step(param, grad, previous, step, grow, shrink, step_min, step_max):
    for k in range(param.shape[0]):
        agree = grad[k] * previous[k]
        if agree > 0:
            step[k] = min(step[k] * grow, step_max)
        elif agree < 0:
            step[k] = max(step[k] * shrink, step_min)
            grad[k] = 0.0
        if grad[k] > 0:
            param[k] -= step[k]
        elif grad[k] < 0:
            param[k] += step[k]
        previous[k] = grad[k]


@njit  # no fastmath: reassociated sums would depend on memory alignment, breaking random_state
def train_networks(xb, yb, wb, w1, b1, w2, b2, decay, epochs, step0, grow, shrink, step_min, step_max):
    """Train network ``i`` on ``(xb[i], yb[i])`` weighted by ``wb[i]`` for every ``i``; updates the
    weights in place.

    Shapes: ``xb (m, n, d)``, ``yb (m, n)``, ``wb (m, n)``, ``w1 (m, d, h)``, ``b1 (m, h)``, ``w2 (m, h)``, ``b2 (m,)``.
    """
    m, n, d = xb.shape
    h = w1.shape[2]
    size = d * h + 2 * h + 1  # all weights of one network, flattened: w1 (as h x d), b1, w2, b2
    for i in range(m):
        theta = np.empty(size)
        theta[: d * h] = w1[i].T.copy().ravel()  # row k = weights into hidden unit k (contiguous)
        theta[d * h: d * h + h] = b1[i]
        theta[d * h + h: d * h + 2 * h] = w2[i]
        theta[size - 1] = b2[i]
        grad = np.empty(size)
        previous = np.zeros(size)
        step = np.full(size, step0)
        hidden = np.empty(h)
        x = xb[i]
        y = yb[i]
        w = wb[i]
        for _ in range(epochs):
            grad[:] = 0.0
            for j in range(n):
                out = theta[size - 1]
                for k in range(h):
                    z = theta[d * h + k]
                    base = k * d
                    for col in range(d):
                        z += x[j, col] * theta[base + col]
                    a = 1.0 / (1.0 + np.exp(-z))
                    hidden[k] = a
                    out += theta[d * h + h + k] * a
                r = (out - y[j]) * w[j]
                grad[size - 1] += r
                for k in range(h):
                    a = hidden[k]
                    grad[d * h + h + k] += r * a
                    delta = r * theta[d * h + h + k] * a * (1.0 - a)
                    grad[d * h + k] += delta
                    base = k * d
                    for col in range(d):
                        grad[base + col] += x[j, col] * delta
            for k in range(d * h):
                grad[k] += decay * theta[k]
            for k in range(h):
                grad[d * h + h + k] += decay * theta[d * h + h + k]
            _rprop_step(theta, grad, previous, step, grow, shrink, step_min, step_max)
        w1[i] = theta[: d * h].reshape((h, d)).T
        b1[i] = theta[d * h: d * h + h]
        w2[i] = theta[d * h + h: d * h + 2 * h]
        b2[i] = theta[size - 1]
