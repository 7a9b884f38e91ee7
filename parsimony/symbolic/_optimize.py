"""Constant optimisation for a non-smooth loss, always judged on the exact loss.

Two stages. First iteratively reweighted Gauss-Newton: the pinball loss ``sum rho(r_i)`` equals
``sum q_i r_i^2`` with weights ``q_i = (tau or 1 - tau) / |r_i|``, so each step linearises the
expression in its constants (forward differences) and solves the weighted least-squares
problem, with a backtracking line search on the exact loss; this finds expressions that are
(nearly) linear in their constants in a few steps. Then Nelder-Mead with restarts on the exact
loss: derivative-free, so the kinks of the pinball loss do not stall it, and restarts from
perturbed points escape flat regions and collapsed simplices. Expressions have few constants
(usually 1 to 5), where both stages are cheap.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._numba import assign, njit
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._evaluator import evaluate, tree_loss
from ._expressions import CONST
from ._random import normal

# numerical precision (not tuning): a relative forward-difference step near the square root of
# the float64 epsilon; the floor of a residual in the IRLS weights (a share of the mean absolute
# residual: an interpolated row does not get an infinite weight); the ridge on the normal
# equations (a share of their mean diagonal); a line-search step counts only when it gains more
# than rounding; Nelder-Mead stops when its vertices agree to this share of the best point
DIFF_STEP, RESIDUAL_FLOOR, RIDGE, GAIN, SIMPLEX_SPREAD = 1e-7, 1e-8, 1e-10, 1e-9, 1e-12
HALVINGS = 6  # the IRLS line search halves a step at most this many times (to 1/64 of it)
# the Nelder-Mead coefficients are the textbook ones (Nelder and Mead 1965): reflection 1,
# expansion 2, contraction and shrink 1/2
EXPAND, CONTRACT = 2.0, 0.5
#: Reweighted Gauss-Newton steps before Nelder-Mead (:func:`optimize_constants`, in the evolution
#: and the polish): a constant that enters linearly is exact after one or two, the rest of the
#: budget goes to Nelder-Mead. On 1,489 random expressions of the default operators fitted to their
#: own values (300 rows on [1, 5]^3, tau .5, constants perturbed by 30%, the evolution's 40
#: evaluations and 2 restarts), 0 / 2 / 4 / 8 / 16 steps recover the constants (loss at most 1e-6
#: of the targets' mean deviation) on 719 / 869 / 1209 / 1301 / 1314 at 423 / 494 / 550 / 610 /
#: 653 us a call. ``benchmarks/sqr_constant_fitting.py --irls N`` (the same protocol, its own
#: 1,114 expressions, 2 restarts) repeats it: 2 / 4 / 8 steps recover 620 / 878 / 960 at 40
#: evaluations and 1003 / 1022 / 1033 at the polish's 120. More steps recover more here; what 8
#: does to the search was not measured, so 4 stays.
IRLS_STEPS = 4
#: Nelder-Mead's first simplex: steps of this share of each constant (at least :data:`MIN_SCALE`)
#: from the current point; each restart draws its start within ``RESTART_STEP`` of the best point's
#: scale (Gaussian) and steps of that share: a restart looks farther than the first run.
#: ``benchmarks/sqr_constant_fitting.py --set NAME=VALUE`` (1,114 random expressions of the default
#: operators fitted to their own values, 300 rows on [1, 5]^3, tau .5, constants perturbed by 30%,
#: 2 restarts; recovered: loss at most 1e-6 of the targets' mean deviation): the defaults recover
#: 878 at the evolution's 40 evaluations and 1022 at the polish's 120; FIRST_STEP 0.05 / 0.2
#: 880 / 882 and 1016 / 1023, RESTART_STEP 0.25 / 1.0 886 / 872 and 1024 / 1020, MIN_SCALE
#: 0.05 / 0.2 878 / 875 and 1021 / 1019: within 1% either way, so they stay.
FIRST_STEP, RESTART_STEP, MIN_SCALE = 0.1, 0.5, 0.1
#: Nelder-Mead's relative tolerance on the spread of its vertices' losses. On the same 1,114 fits,
#: 1e-12 / 1e-8 / 1e-6 recover 878 and 1022 as 1e-10 does (1e-2: 878 at 40 evaluations): the
#: evaluation budget, not this, ends the runs; it stays far below the recovery threshold.
TOLERANCE = 1e-10


Objective = namedtuple("Objective", [
    "positions",             # the nodes of the constants optimised
    "ops", "feats", "vals",  # the expression (``vals`` holds the point being scored)
    "length",                # its number of nodes
    "data",                  # Data it is scored on
    "ws",                    # the evaluator's Workspace
])
Objective.__doc__ = "The loss of an expression as a function of its constants at ``positions``."


@njit(error_model="numpy")
def _loss_at(point, positions, ops, feats, vals, length, data, ws):
    """The loss at ``point`` of the constants at ``positions`` (written into ``vals``); the
    fields of an :data:`Objective`, taken apart once by the caller: this runs per evaluation."""
    for j in range(positions.shape[0]):
        vals[positions[j]] = point[j]
    return tree_loss(ops, feats, vals, length, data, ws)


@njit(error_model="numpy")
def nelder_mead(start, step, objective, max_evals, tol):
    """Minimise the :data:`Objective` from ``start`` with ``step``.

    Returns ``(best point, best loss, evaluations used)``; the objective's ``vals`` are left unspecified.
    """
    positions, ops, feats, vals, length, data, ws = objective
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
            largest = 0.0
            for t in range(k):
                largest = max(largest, abs(simplex[0, t]))
            if spread <= SIMPLEX_SPREAD * (1.0 + largest):
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
                trial2[t] = centroid[t] + EXPAND * (centroid[t] - simplex[k, t])
            f_expand = _loss_at(trial2, positions, ops, feats, vals, length, data, ws)
            evals += 1
            if f_expand < f_reflect:
                assign(simplex[k], trial2)
                fvals[k] = f_expand
            else:
                assign(simplex[k], trial)
                fvals[k] = f_reflect
        elif f_reflect < fvals[k - 1]:
            assign(simplex[k], trial)
            fvals[k] = f_reflect
        else:
            outside = f_reflect < fvals[k]
            for t in range(k):
                if outside:
                    trial2[t] = centroid[t] + CONTRACT * (trial[t] - centroid[t])
                else:
                    trial2[t] = centroid[t] + CONTRACT * (simplex[k, t] - centroid[t])
            f_contract = _loss_at(trial2, positions, ops, feats, vals, length, data, ws)
            evals += 1
            if f_contract < min(f_reflect, fvals[k]):
                assign(simplex[k], trial2)
                fvals[k] = f_contract
            else:  # shrink towards the best vertex
                for i in range(1, k + 1):
                    for t in range(k):
                        simplex[i, t] = simplex[0, t] + CONTRACT * (simplex[i, t] - simplex[0, t])
                    fvals[i] = _loss_at(simplex[i], positions, ops, feats, vals, length, data, ws)
                evals += k
    best = 0
    for i in range(1, k + 1):
        if fvals[i] < fvals[best]:
            best = i
    return simplex[best].copy(), fvals[best], evals


@njit(error_model="numpy")
def _solve_small(a, b, x):
    """Solve ``a x = b`` for a small dense system by Gaussian elimination with partial pivoting,
    overwriting ``a`` and ``b``; returns False (``x`` unspecified) when a pivot vanishes or the
    solution is not finite (LAPACK's solve would raise there)."""
    k = b.shape[0]
    for c in range(k):
        p = c
        for r in range(c + 1, k):
            if abs(a[r, c]) > abs(a[p, c]):
                p = r
        if not abs(a[p, c]) > 0.0:
            return False
        if p != c:
            for t in range(k):
                a[c, t], a[p, t] = a[p, t], a[c, t]
            b[c], b[p] = b[p], b[c]
        for r in range(c + 1, k):
            f = a[r, c] / a[c, c]
            for t in range(c, k):
                a[r, t] -= f * a[c, t]
            b[r] -= f * b[c]
    for c in range(k - 1, -1, -1):
        acc = b[c]
        for t in range(c + 1, k):
            acc -= a[c, t] * x[t]
        x[c] = acc / a[c, c]
        if not abs(x[c]) < np.inf:
            return False
    return True


@njit(error_model="numpy")
def reweighted_gauss_newton(objective, current_loss, iterations):
    """Improve the constants of the :data:`Objective` in place by IRLS Gauss-Newton; return the loss."""
    positions, ops, feats, vals, length, data, ws = objective
    Xt, y, w, loss_kind, tau = data.Xt, data.y, data.w, data.loss_kind, data.tau
    n = y.shape[0]
    k = positions.shape[0]
    base = np.empty(n)
    jac = np.empty((k, n))
    q = np.empty(n)
    old = np.empty(k)
    best = current_loss
    for _ in range(iterations):
        evaluate(ops, feats, vals, length, Xt, ws, base)
        for j in range(k):
            c = vals[positions[j]]
            h = DIFF_STEP * (1.0 + abs(c))
            vals[positions[j]] = c + h
            evaluate(ops, feats, vals, length, Xt, ws, jac[j])
            vals[positions[j]] = c
            for i in range(n):
                jac[j, i] = (jac[j, i] - base[i]) / h
        scale = 0.0
        for i in range(n):
            scale += abs(y[i] - base[i])
        floor = RESIDUAL_FLOOR * (scale / n) + 1e-300
        for i in range(n):
            r = y[i] - base[i]
            if loss_kind == LOSS_SQUARED:
                q[i] = w[i]
            elif loss_kind == LOSS_PINBALL:
                q[i] = w[i] * (tau if r >= 0 else 1.0 - tau) / max(abs(r), floor)
            else:
                q[i] = w[i] / max(abs(r), floor)
        a = np.zeros((k, k))
        b = np.zeros(k)
        for j in range(k):
            for i in range(n):
                qj = q[i] * jac[j, i]
                b[j] += qj * (y[i] - base[i])
                for t in range(j, k):
                    a[j, t] += qj * jac[t, i]
        trace = 0.0
        for j in range(k):
            for t in range(j):
                a[j, t] = a[t, j]
            trace += a[j, j]
        if not (trace > 0 and trace < np.inf):
            break
        for j in range(k):
            a[j, j] += RIDGE * trace / k
        for j in range(k):
            old[j] = vals[positions[j]]
        step = np.empty(k)
        if not _solve_small(a, b, step):  # singular to working precision: no step
            break
        improved = False
        factor = 1.0
        for _ls in range(HALVINGS):
            for j in range(k):
                vals[positions[j]] = old[j] + factor * step[j]
            trial = tree_loss(ops, feats, vals, length, data, ws)
            if trial < best:
                improved = trial < best * (1.0 - GAIN)
                best = trial
                break
            factor *= 0.5
        else:
            for j in range(k):
                vals[positions[j]] = old[j]
        if not improved:
            break
    return best


@njit(error_model="numpy")
def optimize_constants(ops, feats, vals, length, data, ws, state, current_loss, max_evals, n_restarts, n_irls=IRLS_STEPS):
    """Improve the constants of an expression in place; return its (never worse) loss.

    ``n_irls`` reweighted Gauss-Newton steps first (when the current loss is finite), then
    Nelder-Mead: the first run starts from the current constants with steps of :data:`FIRST_STEP`
    (10%, of at least :data:`MIN_SCALE`); each restart starts from the best point so far, randomly
    perturbed, with larger steps (:data:`RESTART_STEP`).
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
    return optimize_at(positions, ops, feats, vals, length, data, ws, state, current_loss, max_evals, n_restarts,
                       n_irls)


@njit(error_model="numpy")
def optimize_at(positions, ops, feats, vals, length, data, ws, state, current_loss, max_evals, n_restarts, n_irls):
    """:func:`optimize_constants` on the constants at ``positions`` (nonempty) alone: the others stay."""
    k = positions.shape[0]
    objective = Objective(positions, ops, feats, vals, length, data, ws)
    best_f = current_loss
    if n_irls > 0 and current_loss < np.inf:
        best_f = reweighted_gauss_newton(objective, current_loss, n_irls)
    best_x = np.empty(k)
    for j in range(k):
        best_x[j] = vals[positions[j]]
    start = np.empty(k)
    step = np.empty(k)
    for attempt in range(n_restarts + 1):
        for j in range(k):
            scale = max(abs(best_x[j]), MIN_SCALE)
            if attempt == 0:
                start[j] = best_x[j]
                step[j] = FIRST_STEP * scale
            else:
                start[j] = best_x[j] + RESTART_STEP * scale * normal(state)
                step[j] = RESTART_STEP * scale
        x, f, _ = nelder_mead(start, step, objective, max_evals, TOLERANCE)
        if f < best_f:
            best_f = f
            assign(best_x, x)
    for j in range(k):
        vals[positions[j]] = best_x[j]
    return best_f
