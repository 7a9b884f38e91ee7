"""The additive stage: sums of transformed features and interactions, built by forward stepwise
selection before evolution (the interaction-transformation representation of ITEA, FFX and
Rils-Rols, in which additive structure is cheap).

A *term* is ``g(a*B + b)``: a *base* ``B`` (a feature ``x_i``, among the 50 most relevant, or a
product ``x_i*x_j`` or ratio ``x_i/x_j`` of two of the 6 most relevant; relevance is the squared
rank correlation with the target) under one of the search's unary operators
``g``, or the base itself. Its inner constants are what ``g`` needs: a shift for ``square``,
``cube``, ``abs``, ``sqrt`` and ``log`` (``g(B + b)``: their scale is the outer coefficient's, up
to a constant), a scale for ``exp`` (``exp(a*B)``: its shift is a factor), both for ``sin`` and
``cos``. They are fitted by weighted least squares against the residual: a grid, then golden
section between the grid's neighbours of its best point; the phase of ``sin``/``cos`` in closed
form (``sin(aB + b)`` is a combination of ``sin(aB)`` and ``cos(aB)``), the shift of ``square``
in closed form. A constant is written only where it is needed: ``a = 1`` and ``b = 0`` are
taken whenever they explain the residual as well (up to ``SNAP``).

Forward stepwise selection starts from the best constant. Each step screens every candidate by
its least-squares gain on the current residual per token it adds (:data:`SCREENED` of them, and
the one of highest gain), refits their inner constants on that residual and adds the one that
lowers the loss of the whole sum most per token, the outer coefficients and intercept refitted
exactly for the fit's loss (the weighted linear quantile regression
:func:`~parsimony.symbolic._terms.pinball_regression` for the pinball and absolute losses, least
squares for the squared loss). A candidate *replaces* the terms of the sum on its own features
only (``(x2 - b)^2`` replaces ``x2``; ``sin(a*x0*x1 + b)`` replaces ``x0``, ``x1`` and
``(x0*x1 - b)^2``): it is screened and fitted on the residual with their part added back, and
pays only for the tokens it adds. A product or ratio is a candidate once both its features are
in the sum (strong heredity: a product of two relevant features is not mistaken for their sum).
After a step, every term's inner constants are refitted on its partial residual (backfitting,
its operator free among those no more complex), a term worth less per token than half the last
one added leaves, and the candidates on the sum's bases are refitted on what they would
replace. It stops when no candidate lowers the loss, the sum reproduces the targets, or no
candidate fits in ``maxsize``. Every step's sum (written by
:func:`~parsimony.symbolic._terms.write_sum`, simplified) is one model: the search offers them to
its halls of fame and plants them in its populations.

The stage works on at most :data:`STAGE_ROWS` rows (every k-th row of positive weight), so its
cost does not grow with the data, and needs :data:`MIN_ROWS` distinct rows; it is deterministic,
and integer weights give the sums of repeated rows.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._engine import simplify_tree, tree_complexity
from ._evaluator import unary_scalar
from ._expressions import ABS, ADD, CONST, COS, CUBE, DIV, EXP, LOG, MUL, SIN, SQRT, SQUARE, VAR
from ._terms import least_squares_terms, pinball_regression, write_sum

STAGE_ROWS = 1000  # rows the stage works on at most
MIN_ROWS = 100  # distinct rows the stage needs: on fewer its sums (inner constants and all) fit noise
SINGLE_FEATURES = 50  # terms of one feature for this many of the most relevant features
PAIR_FEATURES = 6  # products and ratios among this many of the most relevant features
SCREENED = 4  # candidates refitted on the residual and tried exactly per step
MAX_TERMS = 12  # terms of a sum at most
MAX_STEPS = 24  # steps (each writes at most one sum) at most
SNAP = 1e-6  # a = 1 or b = 0 is taken when it loses at most this fraction of the gain
GOLDEN_STEPS = 24  # golden-section steps of a refit (0.618^24: 1e-5 of the bracket)
SCREEN_STEPS = 12  # and of a candidate's first fit, refitted when screened
BACKFIT_PASSES = 3  # passes of backfitting after each step, at most
LINEAR = -1  # the op of a term that is its base
BASE_NODES = 3
TERM_NODES = BASE_NODES + 5  # a base, a*, +b and g


# ------------------------------------------------------------------------------ term values
@njit(error_model="numpy")
def _term_values(base, op, a, b, out):
    """``g(a*base + b)`` for the inner form of ``op`` (``LINEAR``: the base) into ``out``."""
    n = base.shape[0]
    if op == LINEAR:
        for i in range(n):
            out[i] = base[i]
    elif op == SIN or op == COS:
        for i in range(n):
            out[i] = unary_scalar(op, a * base[i] + b)
    elif op == EXP:
        for i in range(n):
            out[i] = unary_scalar(op, a * base[i])
    else:
        for i in range(n):
            out[i] = unary_scalar(op, base[i] + b)


@njit(error_model="numpy")
def _gain(col, rc, w):
    """Weighted least-squares gain ``(sum w d rc)^2 / sum w d^2`` of the centred column ``d`` on the
    centred residual ``rc``; -1 when the column is constant or not finite."""
    n = col.shape[0]
    sw, st = 0.0, 0.0
    for i in range(n):
        sw += w[i]
        st += w[i] * col[i]
    if not np.isfinite(st):
        return -1.0
    mean = st / sw
    num, den = 0.0, 0.0
    for i in range(n):
        d = col[i] - mean
        num += w[i] * d * rc[i]
        den += w[i] * d * d
    if not (den > 1e-300 and den < np.inf and np.isfinite(num)):
        return -1.0
    return num * num / den


@njit(error_model="numpy")
def _two_columns(u, v, rc, w):
    """Weighted least squares of the centred ``rc`` on the centred columns ``u`` and ``v``: their
    coefficients and the gain; (0, 0, -1) when the columns are (nearly) collinear or not finite."""
    n = u.shape[0]
    sw, mu, mv = 0.0, 0.0, 0.0
    for i in range(n):
        sw += w[i]
        mu += w[i] * u[i]
        mv += w[i] * v[i]
    if not (np.isfinite(mu) and np.isfinite(mv)):
        return 0.0, 0.0, -1.0
    mu /= sw
    mv /= sw
    suu, svv, suv, sur, svr = 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        du, dv = u[i] - mu, v[i] - mv
        suu += w[i] * du * du
        svv += w[i] * dv * dv
        suv += w[i] * du * dv
        sur += w[i] * du * rc[i]
        svr += w[i] * dv * rc[i]
    det = suu * svv - suv * suv
    if not det > 1e-12 * (suu * svv) or not det > 0:
        return 0.0, 0.0, -1.0
    bu = (svv * sur - suv * svr) / det
    bv = (suu * svr - suv * sur) / det
    return bu, bv, bu * sur + bv * svr


@njit(error_model="numpy")
def _wave_gain(base, a, rc, w, s, c):
    """Gain of the best ``sin(a*base + b)`` on ``rc`` (the pair ``sin(a base)``, ``cos(a base)``) and
    its phase ``b``; (-1, 0) when degenerate."""
    for i in range(base.shape[0]):
        s[i] = math.sin(a * base[i])
        c[i] = math.cos(a * base[i])
    bs, bc, gain = _two_columns(s, c, rc, w)
    if not gain > -1.0:
        return -1.0, 0.0
    return gain, math.atan2(bc, bs)


@njit(error_model="numpy")
def _objective(base, op, p, rc, w, s, c):
    """Gain of the term of ``op`` with inner parameter ``p`` (a scale for sin, cos and exp, a
    shift otherwise) and the phase of sin/cos (0 otherwise)."""
    if op == SIN or op == COS:
        return _wave_gain(base, p, rc, w, s, c)
    _term_values(base, op, p, p, s)
    return _gain(s, rc, w), 0.0


@njit(error_model="numpy")
def _golden(base, op, lo, hi, rc, w, s, c, steps):
    """Golden-section search (``steps`` steps) of the gain on ``[lo, hi]``; returns ``(p, gain, phase)``."""
    phi = 0.6180339887498949
    x1 = hi - phi * (hi - lo)
    x2 = lo + phi * (hi - lo)
    f1, b1 = _objective(base, op, x1, rc, w, s, c)
    f2, b2 = _objective(base, op, x2, rc, w, s, c)
    for _ in range(steps):
        if f1 >= f2:
            hi, x2, f2, b2 = x2, x1, f1, b1
            x1 = hi - phi * (hi - lo)
            f1, b1 = _objective(base, op, x1, rc, w, s, c)
        else:
            lo, x1, f1, b1 = x1, x2, f2, b2
            x2 = lo + phi * (hi - lo)
            f2, b2 = _objective(base, op, x2, rc, w, s, c)
    if f1 >= f2:
        return x1, f1, b1
    return x2, f2, b2


@njit(error_model="numpy")
def _grid(op, lo, hi, out):
    """Starting points of the inner parameter of ``op`` for a base in ``[lo, hi]`` into ``out``
    (sorted); returns their number."""
    span = hi - lo
    if not span > 0:
        span = max(abs(lo), 1.0)
    m = 0
    if op == SIN or op == COS:
        for f in (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0):
            out[m] = f / span
            m += 1
        out[m] = 1.0
        m += 1
    elif op == EXP:
        for f in (-4.0, -2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0, 4.0):
            out[m] = f / span
            m += 1
        out[m], out[m + 1] = 1.0, -1.0
        m += 2
    elif op == LOG or op == SQRT:
        for f in (1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0):
            out[m] = -lo + f * span
            m += 1
        if lo > 0 or (op == SQRT and lo == 0):
            out[m] = 0.0
            m += 1
    else:  # square, cube, abs: shifts across the range
        for k in range(9):
            out[m] = -(lo + span * k / 8.0)
            m += 1
        out[m] = 0.0
        m += 1
    out[:m] = np.sort(out[:m])
    return m


@njit(error_model="numpy")
def _square_shift(base, rc, w, s):
    """The least-squares shift ``b`` of ``(base + b)^2`` on ``rc`` in closed form (the fit of ``rc``
    on ``base`` and ``base^2``, the latter written into ``s``); NaN when degenerate."""
    for i in range(base.shape[0]):
        s[i] = base[i] * base[i]
    b1, b2, gain = _two_columns(base, s, rc, w)
    if not (gain > -1.0 and abs(b2) > 0):
        return np.nan
    return b1 / (2.0 * b2)


@njit(error_model="numpy")
def _wave_form(op, ops_allowed, a, phase):
    """The operator (sin or cos among those allowed) and phase in ``(-pi/2, pi/2]`` writing
    ``sin(a*base + phase)`` up to the sign of its coefficient."""
    best_op, best_b = op, 0.0
    best = np.inf
    for g in (SIN, COS):
        if not ops_allowed[g]:
            continue
        b = phase - (0.5 * math.pi if g == COS else 0.0)
        b = b - math.pi * math.floor(b / math.pi + 0.5)  # sign of the coefficient absorbs pi
        if abs(b) < best:
            best, best_op, best_b = abs(b), g, b
    return best_op, best_b


@njit(error_model="numpy")
def _snapped(base, op, a, b, gain, rc, w, s):
    """``(a, b)`` with ``a = 1`` and then ``b = 0`` wherever the term explains ``rc`` as well (up to
    :data:`SNAP`); ``a`` and ``b`` as the inner form of ``op`` reads them."""
    floor = gain * (1.0 - SNAP)
    if (op == SIN or op == COS or op == EXP) and a != 1.0:
        _term_values(base, op, 1.0, b, s)
        if _gain(s, rc, w) >= floor:
            a = 1.0
    if op != EXP and op != LINEAR and b != 0.0:
        _term_values(base, op, a, 0.0, s)
        if _gain(s, rc, w) >= floor:
            b = 0.0
    return a, b


@njit(error_model="numpy")
def _fit_inner(base, op, lo, hi, rc, w, ops_allowed, grid, s, c, steps):
    """Fit the term of ``op`` on base values ``base`` (in ``[lo, hi]``) to ``rc``: returns
    ``(op, a, b, gain)`` (the op may turn from sin to cos or back) and the evaluations used."""
    if op == LINEAR:
        return op, 1.0, 0.0, _gain(base, rc, w), 1
    if op == SQUARE:
        b = _square_shift(base, rc, w, s)
        if not np.isfinite(b):
            b = 0.0
        _term_values(base, op, 1.0, b, s)
        gain = _gain(s, rc, w)
        a, b = _snapped(base, op, 1.0, b, gain, rc, w, s)
        return op, a, b, gain, 3
    m = _grid(op, lo, hi, grid)
    best, best_k, best_phase = -1.0, -1, 0.0
    for k in range(m):
        g, phase = _objective(base, op, grid[k], rc, w, s, c)
        if g > best:
            best, best_k, best_phase = g, k, phase
    evals = m
    if best_k < 0:
        return op, 1.0, 0.0, -1.0, evals
    left = grid[max(best_k - 1, 0)]
    right = grid[min(best_k + 1, m - 1)]
    p = grid[best_k]
    if right > left:
        q, g, phase = _golden(base, op, left, right, rc, w, s, c, steps)
        evals += steps + 2
        if g > best:
            p, best, best_phase = q, g, phase
    if op == SIN or op == COS:
        op, b = _wave_form(op, ops_allowed, p, best_phase)
        a = p
    elif op == EXP:
        a, b = p, 0.0
    else:
        a, b = 1.0, p
    a, b = _snapped(base, op, a, b, best, rc, w, s)
    return op, a, b, best, evals + 2


@njit(error_model="numpy")
def _local_inner(base, op, a, b, rc, w, ops_allowed, s, c):
    """Refine the inner constants of a term on ``rc`` around ``(a, b)`` (golden section on a
    narrow bracket); returns ``(op, a, b, gain)``."""
    _term_values(base, op, a, b, s)
    start = _gain(s, rc, w)
    if op == LINEAR or op == SQUARE:
        return op, a, b, start
    p = a if (op == SIN or op == COS or op == EXP) else b
    width = 0.1 * max(abs(p), 1e-3)
    q, g, phase = _golden(base, op, p - width, p + width, rc, w, s, c, GOLDEN_STEPS)
    if not g > start:
        return op, a, b, start
    if op == SIN or op == COS:
        op, b = _wave_form(op, ops_allowed, q, phase)
        a = q
    elif op == EXP:
        a = q
    else:
        b = q
    a, b = _snapped(base, op, a, b, g, rc, w, s)
    return op, a, b, g


@njit(error_model="numpy")
def _refit_inner(base, op, a, b, lo, hi, rc, w, ops_allowed, grid, s, c):
    """The inner constants of a term of ``op`` refitted on ``rc``: the better of a fresh fit
    (:func:`_fit_inner`) and a local refinement of ``(a, b)``; returns ``(op, a, b, gain,
    evaluations)``."""
    op1, a1, b1, g1, evals = _fit_inner(base, op, lo, hi, rc, w, ops_allowed, grid, s, c, GOLDEN_STEPS)
    if op == LINEAR or op == SQUARE:
        return op1, a1, b1, g1, evals
    op2, a2, b2, g2 = _local_inner(base, op, a, b, rc, w, ops_allowed, s, c)
    if g2 > g1:
        return op2, a2, b2, g2, evals + GOLDEN_STEPS + 3
    return op1, a1, b1, g1, evals + GOLDEN_STEPS + 3


# ---------------------------------------------------------------------------- writing a term
@njit
def _write_term(b_ops, b_feats, b_len, op, a, b, out_ops, out_feats, out_vals, at):
    """Append the term ``g(a*base + b)`` (constants only where needed) at ``at``; returns the end."""
    m = at
    for i in range(b_len):
        out_ops[m], out_feats[m], out_vals[m] = b_ops[i], b_feats[i], 0.0
        m += 1
    if op == LINEAR:
        return m
    if a != 1.0:
        out_ops[m], out_feats[m], out_vals[m] = CONST, 0, a
        out_ops[m + 1], out_feats[m + 1], out_vals[m + 1] = MUL, 0, 0.0
        m += 2
    if b != 0.0:
        out_ops[m], out_feats[m], out_vals[m] = CONST, 0, b
        out_ops[m + 1], out_feats[m + 1], out_vals[m + 1] = ADD, 0, 0.0
        m += 2
    out_ops[m], out_feats[m], out_vals[m] = op, 0, 0.0
    return m + 1


@njit
def _term_complexity(b_ops, b_len, op, a, b, weights):
    c = 0
    for i in range(b_len):
        c += weights[b_ops[i]]
    if op == LINEAR:
        return c
    c += weights[op]
    if a != 1.0:
        c += weights[CONST] + weights[MUL]
    if b != 0.0:
        c += weights[CONST] + weights[ADD]
    return c


# ------------------------------------------------------------------------- the sum's loss
@njit(error_model="numpy")
def _fit_sum(cols, y, w, loss_kind, tau, coef):
    """Exact outer coefficients of ``a + sum_t coef[t] cols[t]`` for the loss: writes ``coef`` and
    returns ``(a, loss)`` (the loss a weighted sum; inf when not finite)."""
    if loss_kind == LOSS_SQUARED:
        a = least_squares_terms(cols, y, w, coef)
        if not np.isfinite(a):
            return a, np.inf
        total = 0.0
        for i in range(y.shape[0]):
            r = y[i] - a
            for t in range(cols.shape[0]):
                r -= coef[t] * cols[t, i]
            total += w[i] * r * r
        return a, total
    return pinball_regression(cols, y, w, tau if loss_kind == LOSS_PINBALL else 0.5, coef)


@njit(error_model="numpy")
def _residual(cols, k, coef, a, y, w, skip, r):
    """``r = y - a - sum_{t != skip} coef[t] cols[t]``, weighted-centred; returns nothing."""
    n = y.shape[0]
    sw, mean = 0.0, 0.0
    for i in range(n):
        v = y[i] - a
        for t in range(k):
            if t != skip:
                v -= coef[t] * cols[t, i]
        r[i] = v
        sw += w[i]
        mean += w[i] * v
    mean /= sw
    for i in range(n):
        r[i] -= mean


@njit(error_model="numpy")
def _partial(r, cols, coef, replace, k, w, out):
    """``out = r + sum of coef[t] cols[t] over the terms replaced``, weighted-centred; returns the
    least-squares gain on ``out`` of what it added (what the replaced terms explain of it)."""
    n = r.shape[0]
    sw, mean = 0.0, 0.0
    for i in range(n):
        v = r[i]
        for t in range(k):
            if replace[t]:
                v += coef[t] * cols[t, i]
        out[i] = v
        sw += w[i]
        mean += w[i] * v
    mean /= sw
    num, den = 0.0, 0.0
    for i in range(n):
        out[i] -= mean
        v = out[i] - r[i]
        num += w[i] * v * out[i]
        den += w[i] * v * v
    return num * num / den if den > 0 else 0.0


@njit
def _covers(kb, kt, b_feats, b_len):
    """Whether the features of base ``kt`` are among those of base ``kb``."""
    for j in range(1 if b_len[kt] == 1 else 2):
        f = b_feats[kt, j]
        if f != b_feats[kb, 0] and not (b_len[kb] > 1 and f == b_feats[kb, 1]):
            return False
    return True


@njit
def _replaced(kb, b_ops, b_feats, b_len, m_base, m_op, m_a, m_b, k, weights, per_term, replace):
    """Mark in ``replace`` the terms of the sum (``k`` terms) that a term on the base ``kb``
    replaces: those on its features only; returns the complexity they free."""
    freed = 0
    for t in range(k):
        kt = m_base[t]
        replace[t] = _covers(kb, kt, b_feats, b_len)
        if replace[t]:
            freed += _term_complexity(b_ops[kt], b_len[kt], m_op[t], m_a[t], m_b[t], weights) + per_term
    return freed


# ------------------------------------------------------------------------------- the stage
@njit(error_model="numpy")
def additive_models(Xt, y, w, loss_kind, tau, binops, unops, weights, maxsize, single_features, pair_features,
                    out_ops, out_feats, out_vals, out_length):
    """The additive stage on the rows ``(Xt, y, w)`` (features by rows): writes each step's sum
    (simplified) into ``out_*[k]`` (up to ``maxsize`` nodes; ``out_ops.shape[0]`` sums at most)
    and returns ``(number of sums, evaluations used)``. ``single_features`` are the features that
    are bases, ``pair_features`` those whose products (and ratios, when ``div`` is allowed) are
    bases; only the operators of ``binops`` and ``unops`` are used (none when ``add`` or ``mul``
    is not among them)."""
    d, n = Xt.shape
    allowed = np.zeros(32, dtype=np.bool_)
    for op in binops:
        allowed[op] = True
    for op in unops:
        allowed[op] = True
    if not (allowed[ADD] and allowed[MUL]) or n < 3:
        return 0, 0
    # ---- bases
    n_pair = pair_features.shape[0]
    n_bases = single_features.shape[0] + (n_pair * (n_pair - 1) // 2) * (3 if allowed[DIV] else 1)
    b_ops = np.zeros((n_bases, BASE_NODES), dtype=np.int64)
    b_feats = np.zeros((n_bases, BASE_NODES), dtype=np.int64)
    b_len = np.zeros(n_bases, dtype=np.int64)
    bases = np.empty((n_bases, n))
    nb = 0
    for j in single_features:
        b_ops[nb, 0], b_feats[nb, 0], b_len[nb] = VAR, j, 1
        bases[nb] = Xt[j]
        nb += 1
    for u in range(n_pair):
        for v in range(u + 1, n_pair):
            i, j = pair_features[u], pair_features[v]
            for kind in range(3):
                if kind > 0 and not allowed[DIV]:
                    break
                first, second = (i, j) if kind < 2 else (j, i)
                b_ops[nb, 0], b_ops[nb, 1], b_ops[nb, 2] = VAR, VAR, (MUL if kind == 0 else DIV)
                b_feats[nb, 0], b_feats[nb, 1] = first, second
                b_len[nb] = 3
                for r in range(n):
                    bases[nb, r] = Xt[first, r] * Xt[second, r] if kind == 0 else Xt[first, r] / Xt[second, r]
                nb += 1
    base_ok = np.zeros(nb, dtype=np.bool_)
    lo = np.empty(nb)
    hi = np.empty(nb)
    for k in range(nb):
        lo[k], hi[k] = np.inf, -np.inf
        ok = True
        for r in range(n):
            v = bases[k, r]
            if not np.isfinite(v):
                ok = False
                break
            lo[k] = min(lo[k], v)
            hi[k] = max(hi[k], v)
        base_ok[k] = ok and hi[k] > lo[k]
    # ---- the operators of terms: the base itself, then each unary operator with an inner form
    term_ops = np.empty(1 + unops.shape[0], dtype=np.int64)
    term_ops[0] = LINEAR
    n_ops = 1
    for op in unops:  # sin and cos: one wave family (its phase picks the operator, _wave_form)
        if (op == SQUARE or op == CUBE or op == ABS or op == SQRT or op == LOG or op == EXP or op == SIN
                or (op == COS and not allowed[SIN])):
            term_ops[n_ops] = op
            n_ops += 1
    # ---- candidates, fitted to the residual of the best constant
    wsum, ybar = 0.0, 0.0
    for i in range(n):
        wsum += w[i]
        ybar += w[i] * y[i]
    ybar /= wsum
    rc = np.empty(n)
    for i in range(n):
        rc[i] = y[i] - ybar
    n_cand = nb * n_ops
    c_base = np.empty(n_cand, dtype=np.int64)
    c_op = np.empty(n_cand, dtype=np.int64)
    c_a = np.empty(n_cand)
    c_b = np.empty(n_cand)
    cols = np.empty((n_cand, n))
    s = np.empty(n)
    c = np.empty(n)
    grid = np.empty(16)
    evals = 0
    nc = 0
    c_first = np.zeros(nb + 1, dtype=np.int64)  # the candidates of base k: c_first[k] .. c_first[k + 1] - 1
    for k in range(nb):
        c_first[k] = nc
        if not base_ok[k]:
            continue
        for t in range(n_ops):
            op, a, b, gain, used = _fit_inner(bases[k], term_ops[t], lo[k], hi[k], rc, w, allowed, grid, s, c,
                                              SCREEN_STEPS)
            evals += used
            if not gain > 0:
                continue
            _term_values(bases[k], op, a, b, cols[nc])
            c_base[nc], c_op[nc], c_a[nc], c_b[nc] = k, op, a, b
            nc += 1
    c_first[nb] = nc
    # ---- forward stepwise
    max_terms = MAX_TERMS
    m_base = np.empty(max_terms, dtype=np.int64)
    m_op = np.empty(max_terms, dtype=np.int64)
    m_a = np.empty(max_terms)
    m_b = np.empty(max_terms)
    m_cols = np.empty((max_terms, n))
    m_cols2 = np.empty((max_terms, n))
    rp = np.empty(n)
    coef = np.zeros(max_terms)
    trial_coef = np.zeros(max_terms)
    r = np.empty(n)
    used_cand = np.zeros(nc, dtype=np.bool_)
    scr_idx = np.empty(SCREENED + 1, dtype=np.int64)
    scr_gain = np.empty(SCREENED + 1)
    col = np.empty(n)
    best_col = np.empty(n)
    # the best constant, exactly
    offset, loss = _fit_sum(m_cols[:0], y, w, loss_kind, tau, coef[:0])
    exact = 1e-10 * loss  # a sum this close reproduces the targets: no term can gain
    evals += 1
    n_models = 0
    k = 0  # terms in the sum
    t_ops = np.empty(max_terms * TERM_NODES, dtype=np.int64)
    t_feats = np.empty(max_terms * TERM_NODES, dtype=np.int64)
    t_vals = np.empty(max_terms * TERM_NODES)
    starts = np.empty(max_terms, dtype=np.int64)
    ends = np.empty(max_terms, dtype=np.int64)
    w_ops = np.empty(maxsize, dtype=np.int64)
    w_feats = np.empty(maxsize, dtype=np.int64)
    w_vals = np.empty(maxsize)
    fixed = weights[CONST]  # the offset (its + counts with the terms)
    per_term = weights[CONST] + weights[MUL] + weights[ADD]  # a term's coefficient and +
    replace = np.zeros(max_terms, dtype=np.bool_)
    present = np.zeros(d, dtype=np.bool_)
    for _step in range(out_ops.shape[0]):  # a sum a step at most
        if k >= max_terms or loss <= exact:
            break
        # complexity of the sum so far: each term with its coefficient and a +, plus the offset
        used_cplx = fixed
        for t in range(k):
            used_cplx += _term_complexity(b_ops[m_base[t]], b_len[m_base[t]], m_op[t], m_a[t], m_b[t], weights)
            used_cplx += weights[CONST] + weights[MUL] + weights[ADD]
        budget = maxsize - used_cplx - weights[CONST] - weights[MUL] - weights[ADD]
        _residual(m_cols, k, coef, offset, y, w, -1, r)
        # screening: the best few by least-squares gain per token (net of the terms a candidate
        # replaces: those on its features only), and the best by gain; a product or ratio once
        # both its features are in the sum (strong heredity)
        present[:] = False
        for t in range(k):
            present[b_feats[m_base[t], 0]] = True
            if b_len[m_base[t]] > 1:
                present[b_feats[m_base[t], 1]] = True
        n_scr = 0
        top_q, top_g = -1, 0.0
        for q in range(nc):
            kb = c_base[q]
            if used_cand[q] or (b_len[kb] > 1 and not (present[b_feats[kb, 0]] and present[b_feats[kb, 1]])):
                continue
            cost = _term_complexity(b_ops[kb], b_len[kb], c_op[q], c_a[q], c_b[q], weights)
            freed = _replaced(kb, b_ops, b_feats, b_len, m_base, m_op, m_a, m_b, k, weights, per_term, replace)
            if cost > budget + freed:
                continue
            if freed > 0:
                had = _partial(r, m_cols, coef, replace, k, w, rp)
                g = _gain(cols[q], rp, w) - had
            else:
                g = _gain(cols[q], r, w)
            if not g > 0:
                continue
            if g > top_g:
                top_q, top_g = q, g
            g /= max(cost + per_term - freed, 1)
            if n_scr < SCREENED:
                scr_idx[n_scr], scr_gain[n_scr] = q, g
                n_scr += 1
            else:
                worst = 0
                for z in range(1, SCREENED):
                    if scr_gain[z] < scr_gain[worst]:
                        worst = z
                if g > scr_gain[worst]:
                    scr_idx[worst], scr_gain[worst] = q, g
        evals += nc
        if top_q >= 0:
            for z in range(n_scr):
                if scr_idx[z] == top_q:
                    top_q = -1
            if top_q >= 0:
                scr_idx[n_scr] = top_q
                n_scr += 1
        # the screened term that lowers the loss of the sum most per token, coefficients exact
        best_rate, best_q = 0.0, -1
        best_op, best_a, best_b = LINEAR, 1.0, 0.0
        for z in range(n_scr):
            q = scr_idx[z]
            kb = c_base[q]
            freed = _replaced(kb, b_ops, b_feats, b_len, m_base, m_op, m_a, m_b, k, weights, per_term, replace)
            target = r
            if freed > 0:
                _partial(r, m_cols, coef, replace, k, w, rp)
                target = rp
            op, a, b, g, used = _refit_inner(bases[kb], c_op[q], c_a[q], c_b[q], lo[kb], hi[kb], target, w, allowed,
                                             grid, s, c)
            evals += used
            if _term_complexity(b_ops[kb], b_len[kb], op, a, b, weights) > budget + freed:
                op, a, b = c_op[q], c_a[q], c_b[q]
            _term_values(bases[kb], op, a, b, col)
            kept = 0
            for t in range(k):
                if not replace[t]:
                    m_cols2[kept] = m_cols[t]
                    kept += 1
            m_cols2[kept] = col
            _, trial = _fit_sum(m_cols2[:kept + 1], y, w, loss_kind, tau, trial_coef[:kept + 1])
            evals += 1
            rate = (loss - trial) / max(_term_complexity(b_ops[kb], b_len[kb], op, a, b, weights) + per_term - freed, 1)
            if trial < loss - 1e-9 * abs(loss) - 1e-300 and rate > best_rate:
                best_rate, best_q, best_op, best_a, best_b = rate, q, op, a, b
                best_col[:] = col
        if best_q < 0:
            break
        used_cand[best_q] = True
        _replaced(c_base[best_q], b_ops, b_feats, b_len, m_base, m_op, m_a, m_b, k, weights, per_term, replace)
        kept = 0
        for t in range(k):
            if not replace[t]:
                m_base[kept], m_op[kept], m_a[kept], m_b[kept] = m_base[t], m_op[t], m_a[t], m_b[t]
                m_cols[kept] = m_cols[t]
                kept += 1
        k = kept
        m_base[k], m_op[k], m_a[k], m_b[k] = c_base[best_q], best_op, best_a, best_b
        m_cols[k] = best_col
        k += 1
        offset, loss = _fit_sum(m_cols[:k], y, w, loss_kind, tau, coef[:k])
        # backfitting: each term refitted on its partial residual, its operator free among the base's
        # as long as the term grows no more complex
        for _pass in range(BACKFIT_PASSES):
            before = loss
            for t in range(k):
                if coef[t] == 0.0:
                    continue
                _residual(m_cols, k, coef, offset, y, w, t, r)
                kb = m_base[t]
                old_cplx = _term_complexity(b_ops[kb], b_len[kb], m_op[t], m_a[t], m_b[t], weights)
                _term_values(bases[kb], m_op[t], m_a[t], m_b[t], col)
                best_g = _gain(col, r, w)
                best_op, best_a, best_b = m_op[t], m_a[t], m_b[t]
                for z in range(n_ops):
                    op, a, b, g, used = _refit_inner(bases[kb], term_ops[z], m_a[t] if term_ops[z] == m_op[t] else 1.0,
                                                     m_b[t] if term_ops[z] == m_op[t] else 0.0, lo[kb], hi[kb], r, w,
                                                     allowed, grid, s, c)
                    evals += used
                    if g > best_g * (1.0 + 1e-12) and _term_complexity(b_ops[kb], b_len[kb], op, a, b,
                                                                       weights) <= old_cplx:
                        best_g, best_op, best_a, best_b = g, op, a, b
                if best_op == m_op[t] and best_a == m_a[t] and best_b == m_b[t]:
                    continue
                col[:] = m_cols[t]
                _term_values(bases[kb], best_op, best_a, best_b, m_cols[t])
                new_offset, new_loss = _fit_sum(m_cols[:k], y, w, loss_kind, tau, trial_coef[:k])
                evals += 1
                if new_loss < loss:
                    m_op[t], m_a[t], m_b[t] = best_op, best_a, best_b
                    offset, loss = new_offset, new_loss
                    coef[:k] = trial_coef[:k]
                else:
                    m_cols[t] = col
            if not loss < before * (1.0 - 1e-12):
                break
        # backward: a term worth less per token than half the last one added leaves (for good)
        t = 0
        while t < k - 1 and k > 1:
            kb = m_base[t]
            for z in range(k - 1):
                m_cols2[z] = m_cols[z if z < t else z + 1]
            new_offset, new_loss = _fit_sum(m_cols2[:k - 1], y, w, loss_kind, tau, trial_coef[:k - 1])
            evals += 1
            cost = _term_complexity(b_ops[kb], b_len[kb], m_op[t], m_a[t], m_b[t], weights) + per_term
            if (new_loss - loss) / cost < 0.5 * best_rate:
                for z in range(t, k - 1):
                    m_base[z], m_op[z], m_a[z], m_b[z] = m_base[z + 1], m_op[z + 1], m_a[z + 1], m_b[z + 1]
                    m_cols[z] = m_cols[z + 1]
                k -= 1
                offset, loss = new_offset, new_loss
                coef[:k] = trial_coef[:k]
            else:
                t += 1
        # the candidates on the bases of the sum's terms, refitted on what they would replace
        _residual(m_cols, k, coef, offset, y, w, -1, r)
        for t in range(k):
            kb = m_base[t]
            seen = False
            for z in range(t):
                seen = seen or m_base[z] == kb
            if seen:
                continue
            _replaced(kb, b_ops, b_feats, b_len, m_base, m_op, m_a, m_b, k, weights, per_term, replace)
            _partial(r, m_cols, coef, replace, k, w, rp)
            for q in range(c_first[kb], c_first[kb + 1]):
                if used_cand[q]:
                    continue
                op, a, b, g, used = _fit_inner(bases[kb], c_op[q], lo[kb], hi[kb], rp, w, allowed, grid, s, c,
                                               SCREEN_STEPS)
                evals += used
                if g > 0:
                    c_op[q], c_a[q], c_b[q] = op, a, b
                    _term_values(bases[kb], op, a, b, cols[q])
        # write the sum
        at = 0
        for t in range(k):
            starts[t] = at
            kb = m_base[t]
            at = _write_term(b_ops[kb], b_feats[kb], b_len[kb], m_op[t], m_a[t], m_b[t], t_ops, t_feats, t_vals, at)
            ends[t] = at - 1
        written = write_sum(t_ops, t_feats, t_vals, k, starts, ends, coef, offset, w_ops, w_feats, w_vals)
        if written < 0:
            break
        new_length = simplify_tree(w_ops, w_feats, w_vals, written, out_ops[n_models], out_feats[n_models],
                                   out_vals[n_models])
        if tree_complexity(out_ops[n_models], new_length, weights) <= maxsize:
            out_length[n_models] = new_length
            n_models += 1
    return n_models, evals


def stage_models(X, y, w, loss_kind, tau, binops, unops, weights, maxsize, relevance):
    """The additive stage's sums on ``(X, y, w)`` (at most :data:`STAGE_ROWS` rows of positive
    weight, every k-th, repeated rows merged): terms of one of the :data:`SINGLE_FEATURES`
    features of highest ``relevance`` (ties: the first), products and ratios among the
    :data:`PAIR_FEATURES` first; a list of ``(ops, feats, vals)``, simplest first, and the
    evaluations used."""
    rows = np.flatnonzero(w > 0)
    rows = rows[::math.ceil(rows.size / STAGE_ROWS)] if rows.size > STAGE_ROWS else rows
    # repeated rows become one row of their summed weight (in sorted order): integer weights and
    # repeated rows give the same sums, ties and all
    unique, inverse = np.unique(np.c_[X[rows], y[rows]], axis=0, return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=w[rows], minlength=len(unique))
    X, y = unique[:, :-1], unique[:, -1]
    if len(y) < MIN_ROWS:
        return [], 0
    Xt = np.ascontiguousarray(X.T, dtype=np.float64)
    order = np.argsort(-np.asarray(relevance, dtype=float), kind="stable").astype(np.int64)
    singles, pairs = np.sort(order[:SINGLE_FEATURES]), np.sort(order[:PAIR_FEATURES])
    shape = (MAX_STEPS, maxsize)
    out = (np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64), np.zeros(shape))
    length = np.zeros(MAX_STEPS, dtype=np.int64)
    count, evals = additive_models(Xt, np.ascontiguousarray(y, dtype=np.float64),
                                   np.ascontiguousarray(w, dtype=np.float64), int(loss_kind), float(tau),
                                   np.asarray(binops, dtype=np.int64), np.asarray(unops, dtype=np.int64),
                                   np.asarray(weights, dtype=np.int64), int(maxsize), singles, pairs, *out, length)
    return [tuple(a[k, :length[k]].copy() for a in out) for k in range(count)], int(evals)


def compile_step(binops, unops, weights, maxsize):
    """The stage's kernel with arguments of the types :func:`stage_models` passes it, for
    :func:`~parsimony._numba.precompile` (a helper step: on a cold cache another core compiles
    it while the search's kernels compile)."""
    shape = (MAX_STEPS, maxsize)
    index = np.zeros(1, dtype=np.int64)
    args = (np.zeros((1, 1)), np.zeros(1), np.ones(1), 0, 0.5, np.asarray(binops, dtype=np.int64),
            np.asarray(unops, dtype=np.int64), np.asarray(weights, dtype=np.int64), int(maxsize), index, index,
            np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64), np.zeros(shape),
            np.zeros(MAX_STEPS, dtype=np.int64))
    return additive_models, args, "helper"
