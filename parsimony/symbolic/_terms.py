"""Additive structure: the loss-optimal coefficients of a sum of terms, and writing the sum.

Under the pinball loss the best coefficients of ``a + b_1 g_1 + ... + b_k g_k`` are a weighted
linear quantile regression on the ``k`` term columns (:func:`pinball_regression`, exact); the
two-parameter scaling of ``_scaling.pinball_line`` is its ``k = 1`` case.
:func:`least_squares_terms` gives the weighted least-squares coefficients in O(n k^2).
:func:`write_sum` writes ``sum_t c_t g_t + a`` as an expression (the additive stage,
:mod:`parsimony.symbolic._stepwise`, uses all three).

The exact regression follows the edges of the problem's polyhedral graph (Barrodale and Roberts,
1973; Koenker and d'Orey, 1987, for quantiles): at a vertex the fit interpolates ``p = k + 1``
basis rows; moving along the edge that frees basis row ``j`` (in either direction) changes the
loss linearly until a residual crosses zero, so the loss along the edge is convex piecewise
linear and its minimum is a weighted quantile of the crossing points, whose row enters the basis.
The walk takes the steepest descending edge until none descends. Ties (several rows exactly on
the fit, as with repeated rows or discrete features) can stall such walks at a degenerate vertex;
the walk runs on targets perturbed by at most ``1e-9`` of their scale (deterministically) so that
every vertex is simple, and the final coefficients are those of the last basis on the true
targets, whose loss exceeds the optimum by at most that perturbation's order.
"""

from __future__ import annotations

import numpy as np

from .._numba import argsort, njit
from ._engine import subtree_start
from ._expressions import ADD, CONST, MUL
from ._optimize import _solve_small


# --------------------------------------------------------------------------- linear algebra
@njit
def _all_finite(cols):
    for t in range(cols.shape[0]):
        for i in range(cols.shape[1]):
            if not np.isfinite(cols[t, i]):
                return False
    return True


@njit(error_model="numpy")
def _independent_columns(cols, w, keep):
    """Mark in ``keep`` the columns of ``cols`` (k x n) that are not (nearly) weighted-linear
    combinations of the intercept and the columns kept before them (Gram-Schmidt on centred
    columns); returns how many are kept."""
    k, n = cols.shape
    basis = np.zeros((k, n))
    wsum = 0.0
    for i in range(n):
        wsum += w[i]
    m = 0
    for t in range(k):
        keep[t] = False
        v = np.empty(n)
        mean = 0.0
        for i in range(n):
            mean += w[i] * cols[t, i]
        mean /= wsum
        norm0 = 0.0
        for i in range(n):
            v[i] = cols[t, i] - mean
            norm0 += w[i] * v[i] * v[i]
        if not (norm0 > 0 and norm0 < np.inf):
            continue
        for b in range(m):
            dot = 0.0
            for i in range(n):
                dot += w[i] * v[i] * basis[b, i]
            for i in range(n):
                v[i] -= dot * basis[b, i]
        norm = 0.0
        for i in range(n):
            norm += w[i] * v[i] * v[i]
        if not norm > 1e-10 * norm0:
            continue
        inv = 1.0 / np.sqrt(norm)
        for i in range(n):
            basis[m, i] = v[i] * inv
        keep[t] = True
        m += 1
    return m


@njit(error_model="numpy")
def least_squares_terms(cols, y, w, coef):
    """Weighted least-squares ``a + sum_t coef[t] cols[t]``: writes ``coef`` (0 for a column that
    is constant or dependent on earlier ones) and returns ``a`` (NaN when a column is not finite)."""
    k, n = cols.shape
    keep = np.zeros(k, dtype=np.bool_)
    coef[:] = 0.0
    if not _all_finite(cols):
        return np.nan
    m = _independent_columns(cols, w, keep)
    wsum, my = 0.0, 0.0
    for i in range(n):
        wsum += w[i]
        my += w[i] * y[i]
    my /= wsum
    if m == 0:
        return my
    idx = np.empty(m, dtype=np.int64)
    means = np.empty(m)
    j = 0
    for t in range(k):
        if keep[t]:
            idx[j] = t
            s = 0.0
            for i in range(n):
                s += w[i] * cols[t, i]
            means[j] = s / wsum
            j += 1
    a = np.zeros((m, m))
    b = np.zeros(m)
    for i in range(n):
        for r in range(m):
            dr = cols[idx[r], i] - means[r]
            b[r] += w[i] * dr * (y[i] - my)
            for c in range(r + 1):
                a[r, c] += w[i] * dr * (cols[idx[c], i] - means[c])
    for r in range(m):
        for c in range(r + 1, m):
            a[r, c] = a[c, r]
    x = np.zeros(m)
    if not _solve_small(a, b, x):
        return my
    offset = my
    for r in range(m):
        coef[idx[r]] = x[r]
        offset -= x[r] * means[r]
    return offset


# ---------------------------------------------------------------- exact pinball regression
@njit(error_model="numpy")
def _pinball_total(design, y, w, tau, beta):
    total = 0.0
    n, p = design.shape
    for i in range(n):
        r = y[i]
        for j in range(p):
            r -= design[i, j] * beta[j]
        total += w[i] * (tau * r if r > 0 else (tau - 1.0) * r)
    return total


@njit(error_model="numpy")
def _basis_solution(design, target, basis, beta):
    """``beta`` interpolating the basis rows of ``target``; False when they are singular."""
    p = basis.shape[0]
    a = np.empty((p, p))
    b = np.empty(p)
    for r in range(p):
        b[r] = target[basis[r]]
        for c in range(p):
            a[r, c] = design[basis[r], c]
    return _solve_small(a, b, beta)


@njit(error_model="numpy")
def _inverse(design, basis, inv):
    """The inverse of the basis rows of ``design`` into ``inv``; False when singular."""
    p = basis.shape[0]
    e = np.empty(p)
    col = np.empty(p)
    a = np.empty((p, p))
    for j in range(p):
        for r in range(p):
            for c in range(p):
                a[r, c] = design[basis[r], c]
            e[r] = 1.0 if r == j else 0.0
        if not _solve_small(a, e, col):
            return False
        for r in range(p):
            inv[r, j] = col[r]
    return True


@njit(error_model="numpy")
def _start_basis(design, resid, basis):
    """A nonsingular basis of rows, taken greedily in increasing ``|resid|`` (rows that extend
    the span of those taken); False when the design has rank below its width."""
    n, p = design.shape
    order = argsort(np.abs(resid))
    span = np.zeros((p, p))  # orthonormal rows spanning the rows taken
    m = 0
    v = np.empty(p)
    for t in range(n):
        i = order[t]
        norm0 = 0.0
        for c in range(p):
            v[c] = design[i, c]
            norm0 += v[c] * v[c]
        if not norm0 > 0:
            continue
        for b in range(m):
            dot = 0.0
            for c in range(p):
                dot += v[c] * span[b, c]
            for c in range(p):
                v[c] -= dot * span[b, c]
        norm = 0.0
        for c in range(p):
            norm += v[c] * v[c]
        if norm > 1e-12 * norm0:
            inv = 1.0 / np.sqrt(norm)
            for c in range(p):
                span[m, c] = v[c] * inv
            basis[m] = i
            m += 1
            if m == p:
                return True
    return False


@njit(error_model="numpy")
def _pinball_design(design, y, w, tau, beta, max_steps):
    """Exact weighted pinball regression of ``y`` on the columns of ``design`` (n x p, full column
    rank): writes ``beta``; returns the loss (a weighted sum), inf when the walk could not start."""
    n, p = design.shape
    scale = 0.0
    for i in range(n):
        scale = max(scale, abs(y[i]))
    target = np.empty(n)
    for i in range(n):  # a deterministic perturbation, distinct per row, keeps every vertex simple
        target[i] = y[i] + scale * 1e-9 * (((i * 7919) % 1009) / 1009.0 - 0.5)
    # start: least squares, then the rows nearest its fit
    lsq_cols = np.empty((p - 1, n))
    for i in range(n):
        for c in range(1, p):
            lsq_cols[c - 1, i] = design[i, c]
    coef = np.empty(p - 1)
    a0 = least_squares_terms(lsq_cols, target, w, coef)
    resid = np.empty(n)
    for i in range(n):
        r = target[i] - a0
        for c in range(1, p):
            r -= coef[c - 1] * design[i, c]
        resid[i] = r
    basis = np.empty(p, dtype=np.int64)
    if not _start_basis(design, resid, basis):
        return np.inf
    inv = np.empty((p, p))
    in_basis = np.zeros(n, dtype=np.bool_)
    for r in range(p):
        in_basis[basis[r]] = True
    z = np.empty((p, n))  # z[j, i] = x_i . d_j, d_j the j-th column of the basis inverse
    bp = np.empty(n)
    mass = np.empty(n)
    rows = np.empty(n, dtype=np.int64)
    for _ in range(max_steps):
        if not _inverse(design, basis, inv) or not _basis_solution(design, target, basis, beta):
            return np.inf
        for i in range(n):
            r = target[i]
            for c in range(p):
                r -= design[i, c] * beta[c]
            resid[i] = r
        for j in range(p):
            for i in range(n):
                s = 0.0
                for c in range(p):
                    s += design[i, c] * inv[c, j]
                z[j, i] = s
        # steepest descending edge: direction sign * d_j moves residual i by -sign * z[j, i]
        best_slope, best_j, best_sign = 0.0, -1, 0.0
        for j in range(p):
            for sgn in (1.0, -1.0):
                slope = w[basis[j]] * ((1.0 - tau) if sgn > 0 else tau)
                for i in range(n):
                    if in_basis[i]:
                        continue
                    dz = -sgn * z[j, i]  # the residual's rate of change
                    if dz > 0:
                        slope += w[i] * dz * (tau if resid[i] >= 0 else tau - 1.0)
                    elif dz < 0:
                        slope += w[i] * dz * (tau if resid[i] > 0 else tau - 1.0)
                norm = 0.0
                for c in range(p):
                    norm += inv[c, j] * inv[c, j]
                slope /= np.sqrt(norm)
                if slope < best_slope - 1e-12 * (1.0 + abs(best_slope)):
                    best_slope, best_j, best_sign = slope, j, sgn
        if best_j < 0:
            break
        # line search: the slope (per unit step) rises by w_i |dz_i| as residual i crosses zero
        j, sgn = best_j, best_sign
        slope = w[basis[j]] * ((1.0 - tau) if sgn > 0 else tau)
        m = 0
        for i in range(n):
            if in_basis[i]:
                continue
            dz = -sgn * z[j, i]
            if dz == 0.0:
                continue
            slope += w[i] * dz * (tau if resid[i] > 0 or (resid[i] == 0 and dz > 0) else tau - 1.0)
            step = -resid[i] / dz
            if step > 0 or (step == 0 and (resid[i] == 0)):
                bp[m], mass[m], rows[m] = step, w[i] * abs(dz), i
                m += 1
        if m == 0 or not slope < 0:
            break
        order = argsort(bp[:m])
        enter = -1
        for t in range(m):
            slope += mass[order[t]]
            if slope >= 0:
                enter = rows[order[t]]
                break
        if enter < 0:
            break  # unbounded along the edge: cannot happen for a loss bounded below
        in_basis[basis[j]] = False
        basis[j] = enter
        in_basis[enter] = True
    if not _basis_solution(design, y, basis, beta):
        return np.inf
    return _pinball_total(design, y, w, tau, beta)


@njit(error_model="numpy")
def pinball_regression(cols, y, w, tau, coef, max_steps=500):
    """The exact weighted pinball regression ``a + sum_t coef[t] cols[t]`` of ``y`` at level ``tau``
    on the term columns ``cols`` (k x n): writes ``coef`` (0 for a constant or dependent column)
    and returns ``(a, loss)``, the loss a weighted sum (``(nan, inf)`` when a column is not
    finite)."""
    k, n = cols.shape
    keep = np.zeros(k, dtype=np.bool_)
    coef[:] = 0.0
    if not _all_finite(cols):
        return np.nan, np.inf
    m = _independent_columns(cols, w, keep)
    design = np.empty((n, m + 1))
    idx = np.empty(m, dtype=np.int64)
    j = 0
    for t in range(k):
        if keep[t]:
            idx[j] = t
            j += 1
    for i in range(n):
        design[i, 0] = 1.0
        for r in range(m):
            design[i, r + 1] = cols[idx[r], i]
    beta = np.zeros(m + 1)
    loss = _pinball_design(design, y, w, tau, beta, max_steps)
    if not loss < np.inf:
        return np.nan, np.inf
    for r in range(m):
        coef[idx[r]] = beta[r + 1]
    return beta[0], loss


# ------------------------------------------------------------------- a sum with new coefficients
@njit
def coefficient_slot(ops, start, end):
    """Position of the constant factor of the term ``ops[start..end]`` (``c * g`` or ``g * c``), -1 if none."""
    if ops[end] != MUL or end - start < 2:
        return -1
    if ops[end - 1] == CONST:
        return end - 1
    if ops[start] == CONST and subtree_start(ops, end - 1) == start + 1:
        return start
    return -1


@njit(error_model="numpy")
def write_sum(ops, feats, vals, k, starts, ends, coefs, offset, o_ops, o_feats, o_vals):
    """Write ``sum_t coefs[t] * term_t + offset`` into ``o_*``; returns its length, -1 when it does
    not fit.

    A term whose coefficient is 0 is left out; a term with a constant factor takes the
    coefficient into it (``coefs[t]`` multiplies the term as it is, sign included by the
    caller), any other gets a factor ``* coefs[t]`` (two nodes), and the offset is one constant
    and ``+`` (two nodes; none when it is 0 and terms remain).
    """
    cap = o_ops.shape[0]
    m = 0
    placed = 0
    for t in range(k):
        c = coefs[t]
        if c == 0.0:
            continue
        s, e = starts[t], ends[t]
        slot = coefficient_slot(ops, s, e)
        size = e - s + 1 + (0 if slot >= 0 else 2) + (1 if placed > 0 else 0)
        if m + size > cap:
            return -1
        for i in range(s, e + 1):
            o_ops[m], o_feats[m], o_vals[m] = ops[i], feats[i], vals[i]
            if i == slot:
                o_vals[m] = vals[i] * c
            m += 1
        if slot < 0:
            o_ops[m], o_feats[m], o_vals[m] = CONST, 0, c
            o_ops[m + 1], o_feats[m + 1], o_vals[m + 1] = MUL, 0, 0.0
            m += 2
        if placed > 0:
            o_ops[m], o_feats[m], o_vals[m] = ADD, 0, 0.0
            m += 1
        placed += 1
    if placed == 0 or offset != 0.0:
        if m + (1 if placed == 0 else 2) > cap:
            return -1
        o_ops[m], o_feats[m], o_vals[m] = CONST, 0, offset
        m += 1
        if placed > 0:
            o_ops[m], o_feats[m], o_vals[m] = ADD, 0, 0.0
            m += 1
    return m
