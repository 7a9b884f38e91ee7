"""Constant optimisation for a non-smooth loss: Nelder-Mead with restarts on the exact loss.

The pinball loss is piecewise linear in the predictions, so gradient methods stall on its
kinks; the derivative-free Nelder-Mead simplex method works on the exact loss, and a few
restarts from perturbed points (a fresh simplex each time) escape the flat regions and
premature collapses of the simplex. Expressions have few constants (usually 1 to 5), where
Nelder-Mead is both cheap and reliable.
"""

from __future__ import annotations

import numpy as np

from .._numba import njit
from ._evaluator import tree_loss
from ._expressions import CONST
from ._random import normal


@njit(error_model="numpy")
def _loss_at(point, positions, ops, feats, vals, length, data, ws):
    for j in range(positions.shape[0]):
        vals[positions[j]] = point[j]
    return tree_loss(ops, feats, vals, length, data, ws)


@njit(error_model="numpy")
def nelder_mead(start, step, positions, ops, feats, vals, length, data, ws, max_evals, tol):
    """Minimise the loss over the constants at ``positions``, from ``start`` with ``step``.

    Returns ``(best point, best loss, evaluations used)``; ``vals`` is left unspecified.
    """
    k = start.shape[0]
    simplex = np.empty((k + 1, k))
    fvals = np.empty(k + 1)
    for i in range(k + 1):
        for j in range(k):
            simplex[i, j] = start[j]
        if i > 0:
            simplex[i, i - 1] += step[i - 1]
        fvals[i] = _loss_at(simplex[i], positions, ops, feats, vals, length, data, ws)
    evals = k + 1
    centroid = np.empty(k)
    trial = np.empty(k)
    trial2 = np.empty(k)
    while evals < max_evals:
        # order: best first (insertion sort, k is small)
        for i in range(1, k + 1):
            j = i
            while j > 0 and fvals[j] < fvals[j - 1]:
                fvals[j], fvals[j - 1] = fvals[j - 1], fvals[j]
                for t in range(k):
                    simplex[j, t], simplex[j - 1, t] = simplex[j - 1, t], simplex[j, t]
                j -= 1
        if fvals[k] - fvals[0] <= tol * (abs(fvals[0]) + 1e-300):
            spread = 0.0
            for i in range(1, k + 1):
                for t in range(k):
                    spread = max(spread, abs(simplex[i, t] - simplex[0, t]))
            if spread <= 1e-12 * (1.0 + np.max(np.abs(simplex[0]))):
                break
        for t in range(k):
            acc = 0.0
            for i in range(k):
                acc += simplex[i, t]
            centroid[t] = acc / k
        for t in range(k):
            trial[t] = centroid[t] + (centroid[t] - simplex[k, t])
        f_reflect = _loss_at(trial, positions, ops, feats, vals, length, data, ws)
        evals += 1
        if f_reflect < fvals[0]:
            for t in range(k):
                trial2[t] = centroid[t] + 2.0 * (centroid[t] - simplex[k, t])
            f_expand = _loss_at(trial2, positions, ops, feats, vals, length, data, ws)
            evals += 1
            if f_expand < f_reflect:
                simplex[k, :] = trial2
                fvals[k] = f_expand
            else:
                simplex[k, :] = trial
                fvals[k] = f_reflect
        elif f_reflect < fvals[k - 1]:
            simplex[k, :] = trial
            fvals[k] = f_reflect
        else:
            outside = f_reflect < fvals[k]
            for t in range(k):
                if outside:
                    trial2[t] = centroid[t] + 0.5 * (trial[t] - centroid[t])
                else:
                    trial2[t] = centroid[t] + 0.5 * (simplex[k, t] - centroid[t])
            f_contract = _loss_at(trial2, positions, ops, feats, vals, length, data, ws)
            evals += 1
            if f_contract < min(f_reflect, fvals[k]):
                simplex[k, :] = trial2
                fvals[k] = f_contract
            else:  # shrink towards the best vertex
                for i in range(1, k + 1):
                    for t in range(k):
                        simplex[i, t] = simplex[0, t] + 0.5 * (simplex[i, t] - simplex[0, t])
                    fvals[i] = _loss_at(simplex[i], positions, ops, feats, vals, length, data, ws)
                evals += k
    best = 0
    for i in range(1, k + 1):
        if fvals[i] < fvals[best]:
            best = i
    return simplex[best].copy(), fvals[best], evals


@njit(error_model="numpy")
def optimize_constants(ops, feats, vals, length, data, ws, state, current_loss, max_evals, n_restarts):
    """Improve the constants of an expression in place; return its (never worse) loss.

    The first run starts from the current constants with steps of 10% (at least 0.1); each
    restart starts from the best point so far, randomly perturbed, with larger steps.
    """
    k = 0
    for i in range(length):
        if ops[i] == CONST:
            k += 1
    if k == 0:
        return current_loss
    positions = np.empty(k, dtype=np.int64)
    k = 0
    for i in range(length):
        if ops[i] == CONST:
            positions[k] = i
            k += 1
    best_x = np.empty(k)
    for j in range(k):
        best_x[j] = vals[positions[j]]
    best_f = current_loss
    start = np.empty(k)
    step = np.empty(k)
    for attempt in range(n_restarts + 1):
        for j in range(k):
            scale = max(abs(best_x[j]), 0.1)
            if attempt == 0:
                start[j] = best_x[j]
                step[j] = 0.1 * scale
            else:
                start[j] = best_x[j] + 0.5 * scale * normal(state)
                step[j] = 0.5 * scale
        x, f, _ = nelder_mead(start, step, positions, ops, feats, vals, length, data, ws, max_evals, 1e-10)
        if f < best_f:
            best_f = f
            best_x[:] = x
    for j in range(k):
        vals[positions[j]] = best_x[j]
    return best_f
