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

Waves have one more kind of base, the *shifted product* ``(x_i + b)*(x_j + c)`` (``sin(pi*u0*u1)``
of Friedman #1 on standardised features is ``sin(a*(x0 + b)*(x1 + c))``, out of reach of the
plain product): for every pair of the ``pair_features``, the shifts on the features'
quartiles (minus each) and the frequency on its grid are screened on the target; the
``shifted_pairs`` best are refined by Levenberg-Marquardt (the wave's argument is linear in
``(a, a*c, a*b)``) and kept with a shift only where it is needed (``b = 0`` or ``c = 0`` when that
fits as well), beside the pair's plain product as a base of waves (4 tokens fewer; the forward
step weighs the two per token). Backfitting refines a shifted product's shifts on its term's
partial residual. A wave's phase is written only where it pays its tokens: a screened wave is
tried with its phase and without, and a term that entered without one keeps none.

A wave times a factor is out of reach of a sum of waves: the *modulated waves*
(:func:`_modulated_bases`) are bases that are terms as they are (no inner constants of their own,
no heredity). On every argument ``P`` (a feature or a product of two of the ``pair_features``)
the best of a factor (1, a feature or a product of two) times ``sin(a*P + b)``, ``cos(a*P)^2`` or
``sin(a*P)^2`` is screened on the target; for the ``modulated`` best arguments the family's
frequency is fitted on all its waves at once (1 and the single features as factors, times
``sin``, ``cos`` and ``cos^2`` of ``a*P``: the waves of ``x1*(cos(w*t) + alpha*cos(w*t)^2)`` share
it, while the best single term's factor, ``w*t*cos(w*t)^2`` there, pulls it off), and every factor
times each of those waves is a base, with the pair of them that fits the target best as one more
(``x1*cos(w*t) + r*x1*alpha*cos(w*t)^2``: a step at a time, the best single wave first fills the
room the law needs). A frequency is 1 wherever a fitted one is not worth its parameter
(:data:`PARAMETER_PRICE`).

Forward stepwise selection starts from the best constant. Each step screens every candidate by
its least-squares gain on the current residual per token it adds (``screened`` of them, and
the one of highest gain), refits their inner constants on that residual and adds the one that
lowers the loss of the whole sum most per token, the outer coefficients and intercept refitted
exactly for the fit's loss (the weighted linear quantile regression
:func:`~parsimony.symbolic._terms.pinball_regression` for the pinball and absolute losses, least
squares for the squared loss). A candidate *replaces* the terms of the sum on its own features
only (``(x2 - b)^2`` replaces ``x2``; ``sin(a*x0*x1 + b)`` replaces ``x0``, ``x1`` and
``(x0*x1 - b)^2``): it is screened and fitted on the residual with their part added back, and
pays only for the tokens it adds. A product or ratio is a candidate once both its features are
in the sum (strong heredity: a product of two relevant features is not mistaken for their sum);
a wave of a shifted product needs no such heredity, as its pair was screened on the target (where
the pair's features are correlated, a wave of one of them can stand for the interaction and keep
the other out of the sum: 620_fri_c1_1000_25 of PMLB, ``corr(x0, x1) = 0.89``).
After a step, every term's inner constants are refitted on its partial residual (backfitting,
its operator free among those no more complex), a term worth less per token than a share
(``drop_share``, a half) of the last one added leaves, and the candidates on the sum's bases are refitted on what they would
replace. When no candidate fits the room left, the inner shift the sum misses least (a wave's
phase, its frequency refitted without it; a square's shift) is dropped and the step tried again
with the tokens that frees, the new term kept only where the sum then fits better than with the
shift (in the paper's ``maxsize`` 20 ``sin(a*x0*x1)`` beside two linear terms beats
``sin(a*x0*x1 + b)`` beside one: 579_fri_c0_250_5 tau .5, folds 1-3, test NQL .045-.048 ->
.032-.035). It stops when no candidate lowers the loss, the sum reproduces the targets, or no
candidate fits in ``maxsize``. Every step's sum (written by
:func:`~parsimony.symbolic._terms.write_sum`, simplified) is one model: the search offers them to
its halls of fame and plants them in its populations.

The kernel's choices (``screened``, ``max_terms``, ...) are the fields of
:class:`~parsimony.symbolic.seeds.additive.AdditiveSettings`, which says why each has its value;
the seeder (:mod:`parsimony.symbolic.seeds.additive`) picks the rows and the features. The stage
is deterministic, and integer weights give the sums of repeated rows.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._numba import argsort, assign, njit
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._engine import simplify_tree, tree_complexity
from ._evaluator import unary_scalar
from ._expressions import ABS, ADD, CONST, COS, CUBE, DIV, EXP, LOG, MUL, SIN, SQRT, SQUARE, VAR
from ._optimize import _solve_small
from ._terms import least_squares_terms, pinball_regression, write_sum

# numerical precision of the fits (not tuning: the stage's choices are in ``Knobs``)
SNAP = 1e-6  # a = 1 or b = 0 (a shift of 0) is taken when it loses at most this fraction of the gain
# golden-section steps of a refit (0.618^24: 1e-5 of the bracket; measured on the stage alone as
# the grids below: 12 and 48 steps give the same figures on the 60 and Friedman #1, 15.3 and 20.6
# s for 17.3 s)
GOLDEN_STEPS = 24
GOLDEN = 0.6180339887498949  # (sqrt(5) - 1)/2: the golden section's step
# Levenberg-Marquardt steps refining a shifted product's shifts and frequency (measured on the
# stage alone as the grids below: 0 / 30 / 60 steps give .3098 / .3002 / .3003 on the 60, 419 /
# 411 / 411 sums; Friedman #1 unmoved)
LM_STEPS = 30
# Its damping, measured on the refinement alone (``NUMBA_CACHE_DIR=$(mktemp -d) python
# benchmarks/sqr_lm_constants.py --set NAME=VALUE`` on 38748eb: 2,000 hand-built waves
# A sin(a (x + b)(z + c) + phi) + d from the stage's own coarse start; recovered = the true
# parameters' gain reached; defaults 1913 / 1923 of 2000 at noise 0 / 0.1, 26.5 evaluations a fit at
# noise 0): LM_DAMPING 1e-4 / 1e-2 1901 / 1910 at noise 0 (1907 / 1915 at 0.1); LM_MIN_DAMPING 1e-12
# the same fits, 1e-6 1915; LM_SOFTER 2 / 5 1916 / 1909 (29.5 / 24.1 evaluations); LM_HARDER 2 / 8
# 1835 / 1914; LM_TRIES 4 / 16 1817 / 1919 (19.0 / 41.6 evaluations). Only a softer rejection (HARDER
# 2) or fewer tries (4) lose laws (4-5%); the rest are within 1%: no value changed.
LM_DAMPING, LM_MIN_DAMPING = 1e-3, 1e-9  # its first and smallest damping (a share of the Hessian's diagonal)
LM_SOFTER, LM_HARDER, LM_TRIES = 3.0, 4.0, 8  # damping / 3 after a step that lowers the loss, * 4 after one
#                                               that does not, up to 8 tries a step
TINY = 1e-300  # a sum of squares below this is zero (underflow, not data)
COLLINEAR = 1e-12  # two columns whose Gram determinant is below this share of its diagonal's product are one
BETTER = 1e-12  # a refit counts as better when it gains more than this fraction (rounding does not)
ENTERS = 1e-9  # a term enters the sum when it lowers the sum's loss by more than this fraction
EXACT = 1e-10  # a sum whose loss is this fraction of the best constant's reproduces the targets
# a modulated wave's frequency is 1 where that adds less to the squared error than a fitted
# parameter is worth (Akaike's price, 2 sigma^2 with sigma^2 the error per row): under noise a
# fitted frequency is never exactly 1, and its constant costs the sum two tokens
PARAMETER_PRICE = 2.0
LOCAL_WIDTH, LOCAL_FLOOR = 0.1, 1e-3  # a local refit of an inner constant p: on p +- 0.1*max(|p|, 1e-3)
# the starting points of an inner fit (_grid), on a base whose range has width ``span``: a wave's
# frequency times ``span`` (radians over the range: half a period to 2 periods), exp's scale times
# ``span``, the shift of log and sqrt past the base's minimum in units of ``span``, the shifts of
# square, cube and abs at evenly spaced points of the range (and the constant-free form of each).
# Measured on the stage alone, replayed on the problems the search gave it (the 60 AI Feynman
# problems of ``benchmarks/sqr_recovery.py`` at noise 0, and the quick suite's Friedman #1 on unit
# and on standardised features, 5 folds x tau .5 / .9; figures: the 60's mean training loss of the
# best sum over the best constant's, problems reproduced exactly, stage CPU): the defaults .3002,
# 5 exact, 17.3 s. Every other point of a grid: waves (0.5 1.5 3 6 12) .3051, 15.6 s; exp (-4 -1
# -0.25 0.25 1 4), roots (1e-3 0.1 1 10) and 5 shift points the same figures (411 sums, .3002),
# as 17 shift points. Denser waves up to 6 and none above (0.5 to 2 by quarters, 2 to 4 by
# halves, 5, 6: 13 points) .3079, 18.4 s.
# Friedman #1 (.1784 unit, .1780 standardised) moves with none of them. The stage CPU of identical
# sums spread over 16.9-17.6 s between runs (a loaded machine).
WAVE_GRID = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)
EXP_GRID = (-4.0, -2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0, 4.0)
ROOT_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
SHIFT_POINTS = 9
GRID_ROOM = 16  # room for a grid: exp's, the longest, has 12 points
LINEAR = -1  # the op of a term that is its base
BASE_NODES = 25  # the longest: a pair of modulated waves x_h*x_k*cos(a*x_i*x_j)^2, r* and + (shifted product: 7)
TERM_NODES = BASE_NODES + 5  # a base, a*, +b and g


class Knobs(NamedTuple):
    """The stage's choices the kernel reads (set by
    :class:`~parsimony.symbolic.seeds.additive.AdditiveSettings`, where each is explained)."""

    screened: int
    max_terms: int
    backfit_passes: int
    shifted_pairs: int
    screen_steps: int
    drop_share: float
    modulated: int


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
    if not (den > TINY and den < np.inf and np.isfinite(num)):
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
    if not det > COLLINEAR * (suu * svv) or not det > 0:
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
def _objective(base, op, p, rc, w, s, c, phased):
    """Gain of the term of ``op`` with inner parameter ``p`` (a scale for sin, cos and exp, a
    shift otherwise) and the phase of sin/cos (0 otherwise; without ``phased``, sin/cos of
    ``p*base`` with no phase)."""
    if op == SIN or op == COS:
        if phased:
            return _wave_gain(base, p, rc, w, s, c)
        _term_values(base, op, p, 0.0, s)
    else:
        _term_values(base, op, p, p, s)
    return _gain(s, rc, w), 0.0


@njit(error_model="numpy")
def _golden(base, op, lo, hi, rc, w, s, c, steps, phased):
    """Golden-section search (``steps`` steps) of the gain (:func:`_objective`) on ``[lo, hi]``;
    returns ``(p, gain, phase)``."""
    phi = GOLDEN
    x1 = hi - phi * (hi - lo)
    x2 = lo + phi * (hi - lo)
    f1, b1 = _objective(base, op, x1, rc, w, s, c, phased)
    f2, b2 = _objective(base, op, x2, rc, w, s, c, phased)
    for _ in range(steps):
        if f1 >= f2:
            hi, x2, f2, b2 = x2, x1, f1, b1
            x1 = hi - phi * (hi - lo)
            f1, b1 = _objective(base, op, x1, rc, w, s, c, phased)
        else:
            lo, x1, f1, b1 = x1, x2, f2, b2
            x2 = lo + phi * (hi - lo)
            f2, b2 = _objective(base, op, x2, rc, w, s, c, phased)
    if f1 >= f2:
        return x1, f1, b1
    return x2, f2, b2


@njit(error_model="numpy")
def _phase_free(base, op, a, lo, hi, rc, w, grid, s, c):
    """The frequency of the wave ``sin(a*base)`` (or cos) without a phase that fits ``rc`` best: its
    grid's points and ``a``, then golden section between the neighbours of the best; returns
    ``(a, evaluations)``."""
    m = _grid(op, lo, hi, grid)
    grid[m] = a
    m += 1
    best, best_g = 0, -np.inf
    for z in range(m):
        g, _ = _objective(base, op, grid[z], rc, w, s, c, False)
        if g > best_g:
            best, best_g = z, g
    p = grid[best]
    lo_p, hi_p = p, p
    for z in range(m):  # the bracket: the nearest points of the grid on either side
        if grid[z] < p and (lo_p == p or grid[z] > lo_p):
            lo_p = grid[z]
        if grid[z] > p and (hi_p == p or grid[z] < hi_p):
            hi_p = grid[z]
    q, g, _ = _golden(base, op, lo_p, hi_p, rc, w, s, c, GOLDEN_STEPS, False)
    return (q if g > best_g else p), m + 2 + GOLDEN_STEPS


@njit(error_model="numpy")
def _grid(op, lo, hi, out):
    """Starting points of the inner parameter of ``op`` for a base in ``[lo, hi]`` into ``out``
    (sorted); returns their number."""
    span = hi - lo
    if not span > 0:
        span = max(abs(lo), 1.0)
    m = 0
    if op == SIN or op == COS:
        for f in WAVE_GRID:
            out[m] = f / span
            m += 1
        out[m] = 1.0
        m += 1
    elif op == EXP:
        for f in EXP_GRID:
            out[m] = f / span
            m += 1
        out[m], out[m + 1] = 1.0, -1.0
        m += 2
    elif op == LOG or op == SQRT:
        for f in ROOT_GRID:
            out[m] = -lo + f * span
            m += 1
        if lo > 0 or (op == SQRT and lo == 0):
            out[m] = 0.0
            m += 1
    else:  # square, cube, abs: shifts across the range
        for k in range(SHIFT_POINTS):
            out[m] = -(lo + span * k / (SHIFT_POINTS - 1.0))
            m += 1
        out[m] = 0.0
        m += 1
    order = argsort(out[:m])  # (np.sort compiles numba's quicksort: seconds of a cold start)
    values = out[:m].copy()
    for i in range(m):
        out[i] = values[order[i]]
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
        g, phase = _objective(base, op, grid[k], rc, w, s, c, True)
        if g > best:
            best, best_k, best_phase = g, k, phase
    evals = m
    if best_k < 0:
        return op, 1.0, 0.0, -1.0, evals
    left = grid[max(best_k - 1, 0)]
    right = grid[min(best_k + 1, m - 1)]
    p = grid[best_k]
    if right > left:
        q, g, phase = _golden(base, op, left, right, rc, w, s, c, steps, True)
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
    width = LOCAL_WIDTH * max(abs(p), LOCAL_FLOOR)
    q, g, phase = _golden(base, op, p - width, p + width, rc, w, s, c, GOLDEN_STEPS, True)
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


# ---------------------------------------------------------------------- shifted products
@njit(error_model="numpy")
def _shifted_gain(xi, xj, p, rc, w, base, s, c):
    """Gain of the best ``sin(p[2]*(xi + p[0])*(xj + p[1]) + phase)`` on ``rc`` (its base written
    into ``base``)."""
    for r in range(xi.shape[0]):
        base[r] = (xi[r] + p[0]) * (xj[r] + p[1])
    return _wave_gain(base, p[2], rc, w, s, c)[0]


@njit(error_model="numpy")
def _quartiles(x):
    """The minimum, quartiles and maximum of ``x``."""
    order = argsort(x)
    out = np.empty(5)
    for k in range(5):
        out[k] = x[order[(k * (x.shape[0] - 1)) // 4]]
    return out


@njit(error_model="numpy")
def _coarse_shifts(xi, xj, qi, qj, rc, w, grid, base, s, c, p):
    """The best wave on ``(xi + b)*(xj + c)`` on ``rc`` with ``-b`` and ``-c`` among the quartiles
    ``qi`` and ``qj`` and the frequency on its grid: writes ``p = (b, c, a)``, returns its gain and
    the evaluations used."""
    best = -1.0
    evals = 0
    for u in range(qi.shape[0]):
        for v in range(qj.shape[0]):
            lo, hi = np.inf, -np.inf
            for r in range(xi.shape[0]):
                base[r] = (xi[r] - qi[u]) * (xj[r] - qj[v])
                lo = min(lo, base[r])
                hi = max(hi, base[r])
            m = _grid(SIN, lo, hi, grid)
            for k in range(m):
                g = _wave_gain(base, grid[k], rc, w, s, c)[0]
                if g > best:
                    best = g
                    p[0], p[1], p[2] = -qi[u], -qj[v], grid[k]
            evals += m
    return best, evals


@njit(error_model="numpy")
def _wave_loss(xi, xj, q, rc, w):
    """Weighted squared error of ``q[3] sin(t) + q[4] cos(t) + q[5]`` on ``rc``, ``t = q[0] xi xj +
    q[1] xi + q[2] xj``."""
    total = 0.0
    for r in range(xi.shape[0]):
        t = q[0] * xi[r] * xj[r] + q[1] * xi[r] + q[2] * xj[r]
        e = rc[r] - q[3] * math.sin(t) - q[4] * math.cos(t) - q[5]
        total += w[r] * e * e
    return total if np.isfinite(total) else np.inf


@njit(error_model="numpy")
def _refine_shifts(xi, xj, p, gain, rc, w, base, s, c):
    """Levenberg-Marquardt refinement of the wave on ``(xi + b)*(xj + c)`` from ``p = (b, c, a)``
    (its argument ``a xi xj + a c xi + a b xj`` is linear in ``(a, a c, a b)``, amplitudes and
    offset free), then ``b = 0`` and ``c = 0`` wherever the wave fits as well (up to
    :data:`SNAP`); updates ``p``, returns the gain and the evaluations used."""
    n = xi.shape[0]
    _shifted_gain(xi, xj, p, rc, w, base, s, c)
    bs, bc, _ = _two_columns(s, c, rc, w)
    q = np.array([p[2], p[2] * p[1], p[2] * p[0], bs, bc, 0.0])
    # the offset of the centred fit
    sw, m = 0.0, 0.0
    for r in range(n):
        sw += w[r]
        m += w[r] * (rc[r] - bs * s[r] - bc * c[r])
    q[5] = m / sw
    loss = _wave_loss(xi, xj, q, rc, w)
    lam = LM_DAMPING
    jt = np.empty(6)
    H = np.empty((6, 6))
    g = np.empty(6)
    trial = np.empty(6)
    rhs = np.empty(6)
    evals = 1
    for _it in range(LM_STEPS):
        H[:] = 0.0
        g[:] = 0.0
        for r in range(n):
            t = q[0] * xi[r] * xj[r] + q[1] * xi[r] + q[2] * xj[r]
            sn, cs = math.sin(t), math.cos(t)
            d = q[3] * cs - q[4] * sn
            jt[0], jt[1], jt[2] = d * xi[r] * xj[r], d * xi[r], d * xj[r]
            jt[3], jt[4], jt[5] = sn, cs, 1.0
            e = rc[r] - q[3] * sn - q[4] * cs - q[5]
            for u in range(6):
                g[u] += w[r] * jt[u] * e
                for v in range(u, 6):
                    H[u, v] += w[r] * jt[u] * jt[v]
        improved = False
        for _try in range(LM_TRIES):
            A = np.empty((6, 6))
            for u in range(6):
                for v in range(u, 6):
                    A[u, v] = H[u, v]
                    A[v, u] = H[u, v]
                A[u, u] += lam * (H[u, u] + TINY)
            assign(rhs, g)
            evals += 1
            if _solve_small(A, rhs, trial):
                trial += q
                new = _wave_loss(xi, xj, trial, rc, w)
                if new < loss:
                    improved = loss - new > BETTER * loss
                    assign(q, trial)
                    loss = new
                    lam = max(lam / LM_SOFTER, LM_MIN_DAMPING)
                    break
            lam *= LM_HARDER
        if not improved:
            break
    if q[0] != 0.0 and np.isfinite(q).all():
        trial_p = np.array([q[2] / q[0], q[1] / q[0], q[0]])
        g1 = _shifted_gain(xi, xj, trial_p, rc, w, base, s, c)
        evals += 1
        if g1 > gain:
            assign(p, trial_p)
            gain = g1
    for j in range(2):
        if p[j] != 0.0:
            keep = p[j]
            p[j] = 0.0
            evals += 1
            if _shifted_gain(xi, xj, p, rc, w, base, s, c) < gain * (1.0 - SNAP):
                p[j] = keep
    return gain, evals


# ------------------------------------------------------------------------------- the records
class Data(NamedTuple):
    """The rows the stage fits (features by rows), the loss (its code and level) and the grammar:
    the unary operators ``unops``, ``allowed[op]`` for every operator the search may use, the
    token ``weights`` and ``maxsize`` (:func:`stage_data` makes one)."""

    Xt: np.ndarray
    y: np.ndarray
    w: np.ndarray
    loss_kind: int
    tau: float
    unops: np.ndarray
    allowed: np.ndarray
    weights: np.ndarray
    maxsize: int


class Bases(NamedTuple):
    """The bases of terms, one row each: the postfix ``(ops, feats, vals)`` of each (``length``
    nodes), its ``pair`` of features (twice for one feature), whether it is a shifted product
    (a base of waves only) and its ``shift``, whether it is a modulated wave (a term as it is:
    :func:`_modulated_bases`), its ``values`` on the rows, their range ``[lo, hi]`` and whether
    the base is usable (``ok``: finite and not constant)."""

    ops: np.ndarray
    feats: np.ndarray
    vals: np.ndarray
    length: np.ndarray
    pair: np.ndarray
    shifted: np.ndarray
    shift: np.ndarray
    modulated: np.ndarray
    values: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ok: np.ndarray


class Terms(NamedTuple):
    """Terms ``g(a*B + b)``, one row each: the index of the base ``B`` (in :class:`Bases`), the
    operator ``g`` (``op``, :data:`LINEAR` for the base itself), the inner constants and the
    term's values on the rows (``cols``). The candidates are one such record, the sum another."""

    base: np.ndarray
    op: np.ndarray
    a: np.ndarray
    b: np.ndarray
    cols: np.ndarray


class Work(NamedTuple):
    """Scratch rows of the stage's fits: ``r`` the residual being fitted, ``rp`` a partial residual,
    ``col``, ``col0``, ``best`` and ``s``, ``c`` columns, ``grid`` the starting points of an inner
    fit, ``p3`` a shifted product's ``(b, c, a)``."""

    r: np.ndarray
    rp: np.ndarray
    col: np.ndarray
    col0: np.ndarray
    best: np.ndarray
    s: np.ndarray
    c: np.ndarray
    grid: np.ndarray
    p3: np.ndarray


def stage_data(Xt, y, w, loss_kind, tau, binops, unops, weights, maxsize) -> Data:
    """The :class:`Data` of rows ``(Xt, y, w)`` (features by rows), the loss and the grammar, with
    the types the kernel is compiled for."""
    allowed = np.zeros(32, dtype=np.bool_)
    allowed[np.asarray(binops, dtype=np.int64)] = True
    allowed[np.asarray(unops, dtype=np.int64)] = True
    f64 = np.float64
    return Data(np.ascontiguousarray(Xt, dtype=f64), np.ascontiguousarray(y, dtype=f64),
                np.ascontiguousarray(w, dtype=f64), int(loss_kind), float(tau), np.asarray(unops, dtype=np.int64),
                allowed, np.asarray(weights, dtype=np.int64), int(maxsize))


@njit
def _work(n):
    """A :class:`Work` record for ``n`` rows."""
    return Work(np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
                np.empty(GRID_ROOM), np.empty(3))


@njit
def _terms(size, n):
    """A :class:`Terms` record with room for ``size`` terms on ``n`` rows."""
    return Terms(np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size), np.empty(size),
                 np.empty((size, n)))


# ---------------------------------------------------------------------------- the bases
@njit(error_model="numpy")
def _set_shifted(B, k, i, j, bs, cs, Xt):
    """Write the base ``(x_i + bs)*(x_j + cs)`` (a shift only where nonzero) as base ``k``, its
    values and range; returns whether it is usable (finite, not constant)."""
    m = 0
    for f, sh in ((i, bs), (j, cs)):
        B.ops[k, m], B.feats[k, m], B.vals[k, m] = VAR, f, 0.0
        m += 1
        if sh != 0.0:
            B.ops[k, m], B.feats[k, m], B.vals[k, m] = CONST, 0, sh
            B.ops[k, m + 1], B.feats[k, m + 1], B.vals[k, m + 1] = ADD, 0, 0.0
            m += 2
    B.ops[k, m], B.feats[k, m], B.vals[k, m] = MUL, 0, 0.0
    B.length[k] = m + 1
    B.lo[k], B.hi[k] = np.inf, -np.inf
    for r in range(Xt.shape[1]):
        B.values[k, r] = (Xt[i, r] + bs) * (Xt[j, r] + cs)
        B.lo[k] = min(B.lo[k], B.values[k, r])
        B.hi[k] = max(B.hi[k], B.values[k, r])
    return np.isfinite(B.lo[k]) and np.isfinite(B.hi[k]) and B.hi[k] > B.lo[k]


@njit(error_model="numpy")
def _plain_bases(Xt, single_features, pair_features, with_ratios, n_bases):
    """A :class:`Bases` record with room for ``n_bases``, holding the ``single_features`` and the
    products (and ratios, ``with_ratios``) of two ``pair_features``, their ranges and usability;
    returns it and how many it holds."""
    n = Xt.shape[1]
    B = Bases(np.zeros((n_bases, BASE_NODES), dtype=np.int64), np.zeros((n_bases, BASE_NODES), dtype=np.int64),
              np.zeros((n_bases, BASE_NODES)), np.zeros(n_bases, dtype=np.int64),
              np.zeros((n_bases, 2), dtype=np.int64), np.zeros(n_bases, dtype=np.bool_), np.zeros((n_bases, 2)),
              np.zeros(n_bases, dtype=np.bool_), np.empty((n_bases, n)), np.empty(n_bases), np.empty(n_bases),
              np.zeros(n_bases, dtype=np.bool_))
    nb = 0
    for j in single_features:
        B.ops[nb, 0], B.feats[nb, 0], B.length[nb] = VAR, j, 1
        B.pair[nb, 0], B.pair[nb, 1] = j, j
        assign(B.values[nb], Xt[j])
        nb += 1
    n_pair = pair_features.shape[0]
    for u in range(n_pair):
        for v in range(u + 1, n_pair):
            i, j = pair_features[u], pair_features[v]
            for kind in range(3):
                if kind > 0 and not with_ratios:
                    break
                first, second = (i, j) if kind < 2 else (j, i)
                B.ops[nb, 0], B.ops[nb, 1], B.ops[nb, 2] = VAR, VAR, (MUL if kind == 0 else DIV)
                B.feats[nb, 0], B.feats[nb, 1] = first, second
                B.pair[nb, 0], B.pair[nb, 1] = first, second
                B.length[nb] = 3
                for r in range(n):
                    B.values[nb, r] = Xt[first, r] * Xt[second, r] if kind == 0 else Xt[first, r] / Xt[second, r]
                nb += 1
    for k in range(nb):
        B.lo[k], B.hi[k] = np.inf, -np.inf
        ok = True
        for r in range(n):
            v = B.values[k, r]
            if not np.isfinite(v):
                ok = False
                break
            B.lo[k] = min(B.lo[k], v)
            B.hi[k] = max(B.hi[k], v)
        B.ok[k] = ok and B.hi[k] > B.lo[k]
    return B, nb


@njit(error_model="numpy")
def _shifted_bases(D, B, nb, pair_features, n_shifted, rc, W):
    """Shifted products ``(x_i + b)*(x_j + c)`` as bases of waves, appended to ``B`` after its
    ``nb``: the shifts on the features' quartiles for every pair screened on ``rc``, the
    ``n_shifted`` best refined, each kept (a shift is 0 wherever that fits as well) with its
    plain product ``x_i*x_j`` (as a base of waves, which needs no heredity either); returns the
    number of bases and the evaluations used."""
    Xt = D.Xt
    n_pair = pair_features.shape[0]
    quart = np.empty((n_pair, 5))
    for u in range(n_pair):
        assign(quart[u], _quartiles(Xt[pair_features[u]]))
    n_pairs = n_pair * (n_pair - 1) // 2
    pair_p = np.empty((n_pairs, 3))
    pair_g = np.empty(n_pairs)
    pair_u = np.empty(n_pairs, dtype=np.int64)
    pair_v = np.empty(n_pairs, dtype=np.int64)
    evals = 0
    z = 0
    for u in range(n_pair):
        for v in range(u + 1, n_pair):
            pair_u[z], pair_v[z] = u, v
            pair_g[z], used = _coarse_shifts(Xt[pair_features[u]], Xt[pair_features[v]], quart[u], quart[v], rc, D.w,
                                             W.grid, W.col0, W.s, W.c, pair_p[z])
            evals += used
            z += 1
    for z in argsort(-pair_g)[:n_shifted]:
        if not pair_g[z] > 0:
            continue
        i, j = pair_features[pair_u[z]], pair_features[pair_v[z]]
        _, used = _refine_shifts(Xt[i], Xt[j], pair_p[z], pair_g[z], rc, D.w, W.col0, W.s, W.c)
        evals += used
        # the plain product too (its wave 4 tokens cheaper, its own shifts 0 for good), and the
        # shifted one where its shifts are needed: the forward step weighs their gains per token
        for bs, cs in ((0.0, 0.0), (pair_p[z, 0], pair_p[z, 1])):
            if (nb > 0 and B.shifted[nb - 1] and B.pair[nb - 1, 0] == i and B.pair[nb - 1, 1] == j
                    and B.shift[nb - 1, 0] == bs and B.shift[nb - 1, 1] == cs):
                continue  # the same base (shifts of 0)
            B.ok[nb] = _set_shifted(B, nb, i, j, bs, cs, Xt)
            B.pair[nb, 0], B.pair[nb, 1] = i, j
            B.shift[nb, 0], B.shift[nb, 1] = bs, cs
            B.shifted[nb] = True
            nb += 1
    return nb, evals


# ---------------------------------------------------------------------- modulated waves
WAVE_KIND, COS_SQUARED, SIN_SQUARED = 0, 1, 2  # the kinds screened: g(aP + b), cos(aP)^2, sin(aP)^2


@njit(error_model="numpy")
def _factors(Xt, pair_features):
    """The factors of modulated waves: 1, each of ``pair_features`` and each product of two, as
    feature pairs (``-1`` for none) and their values (factor by rows)."""
    n_pair = pair_features.shape[0]
    n_f = 1 + n_pair + n_pair * (n_pair - 1) // 2
    idx = np.full((n_f, 2), -1, dtype=np.int64)
    values = np.ones((n_f, Xt.shape[1]))
    f = 1
    for u in range(n_pair):
        idx[f, 0] = pair_features[u]
        assign(values[f], Xt[pair_features[u]])
        f += 1
    for u in range(n_pair):
        for v in range(u + 1, n_pair):
            idx[f, 0], idx[f, 1] = pair_features[u], pair_features[v]
            for r in range(Xt.shape[1]):
                values[f, r] = Xt[pair_features[u], r] * Xt[pair_features[v], r]
            f += 1
    return idx, values


@njit(error_model="numpy")
def _kind_gain(m, kind, rc, w, s, c, u, v):
    """Gain on ``rc`` of the factor ``m`` times the wave of ``kind`` whose sines and cosines are ``s``
    and ``c`` (``WAVE_KIND``: at its best phase); -1 when degenerate."""
    n = s.shape[0]
    if kind == WAVE_KIND:
        for r in range(n):
            u[r] = m[r] * s[r]
            v[r] = m[r] * c[r]
        return _two_columns(u, v, rc, w)[2]
    for r in range(n):
        u[r] = m[r] * (c[r] * c[r] if kind == COS_SQUARED else s[r] * s[r])
    return _gain(u, rc, w)


@njit(error_model="numpy")
def _screen_family(p, M, kinds, rc, w, grid, s, c, u, v):
    """The best wave on the argument values ``p``: over the frequencies of its grid, the factors
    ``M`` and the ``kinds`` allowed, the gain of a factor times the wave on ``rc``; returns
    ``(gain, a, evaluations)``."""
    lo, hi = np.inf, -np.inf
    for r in range(p.shape[0]):
        lo, hi = min(lo, p[r]), max(hi, p[r])
    best, best_a = -1.0, 1.0
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        return best, best_a, 0
    n_grid = _grid(SIN, lo, hi, grid)
    for z in range(n_grid):
        for r in range(p.shape[0]):
            s[r] = math.sin(grid[z] * p[r])
            c[r] = math.cos(grid[z] * p[r])
        for f in range(M.shape[0]):
            for kind in range(3):
                if kinds[kind]:
                    g = _kind_gain(M[f], kind, rc, w, s, c, u, v)
                    if g > best:
                        best, best_a = g, grid[z]
    return best, best_a, n_grid * M.shape[0]


@njit(error_model="numpy")
def _family_columns(p, M, forms, combos, a, cols):
    """The ``combos`` (rows: a factor of ``M`` and a wave of ``forms``, rows ``(op, squared)``) on the
    argument ``a*p``: each factor times its wave, into ``cols``."""
    for q in range(combos.shape[0]):
        f, z = combos[q, 0], combos[q, 1]
        for r in range(p.shape[0]):
            g = unary_scalar(forms[z, 0], a * p[r])
            cols[q, r] = M[f, r] * (g * g if forms[z, 1] == 1 else g)


@njit(error_model="numpy")
def _family_loss(p, M, forms, combos, a, rc, w, cols, coef):
    """Weighted squared error of the least squares of ``rc`` on the ``combos`` at frequency ``a``."""
    _family_columns(p, M, forms, combos, a, cols)
    total = _least_squares_loss(cols, rc, w, coef)[1]
    return total if np.isfinite(total) else np.inf


@njit(error_model="numpy")
def _family_frequency(p, M, forms, combos, a, grid, rc, w):
    """The frequency the ``combos`` share (factors of ``M`` times waves of ``forms``, fitted at once:
    the waves of a law such as ``x1*(cos(w*t) + alpha*cos(w*t)^2)`` share it, where the best
    single term's frequency is off): golden section between the grid's neighbours of ``a``, then
    ``a = 1`` where what it adds to the loss is worth less than a fitted parameter
    (:data:`PARAMETER_PRICE`); returns it and the evaluations."""
    lo, hi = np.inf, -np.inf
    for r in range(p.shape[0]):
        lo, hi = min(lo, p[r]), max(hi, p[r])
    n_grid = _grid(SIN, lo, hi, grid)
    left, right = a, a
    for z in range(n_grid):
        if grid[z] < a and (left == a or grid[z] > left):
            left = grid[z]
        if grid[z] > a and (right == a or grid[z] < right):
            right = grid[z]
    cols, coef = np.empty((combos.shape[0], p.shape[0])), np.empty(combos.shape[0])
    best = _family_loss(p, M, forms, combos, a, rc, w, cols, coef)
    for _ in range(GOLDEN_STEPS):  # golden section, the best point seen kept
        x1, x2 = right - GOLDEN * (right - left), left + GOLDEN * (right - left)
        l1 = _family_loss(p, M, forms, combos, x1, rc, w, cols, coef)
        l2 = _family_loss(p, M, forms, combos, x2, rc, w, cols, coef)
        if l1 < best and l1 <= l2:
            a, best = x1, l1
        elif l2 < best:
            a, best = x2, l2
        if l1 <= l2:
            right = x2
        else:
            left = x1
    if a != 1.0 and _family_loss(p, M, forms, combos, 1.0, rc, w, cols, coef) <= best * (1.0 + PARAMETER_PRICE
                                                                                       / _kish_rows(w)):
        a = 1.0
    return a, 2 * GOLDEN_STEPS + 2


@njit
def _kish_rows(w):
    """Kish's effective number of rows, ``(sum w)^2 / sum w^2``, on ``w / max(w)`` (free of the weights'
    scale, no overflow at 1e300): the ``n`` of a per-row price on weighted data."""
    top = np.max(w)
    s1, s2 = 0.0, 0.0
    for r in range(w.shape[0]):
        s1 += w[r] / top
        s2 += (w[r] / top) ** 2
    return s1 * s1 / s2


@njit
def _put_factor(B, k, at, idx):
    """Append the factor ``idx`` (a feature pair, ``-1`` for none) to base ``k`` at ``at``; returns the end."""
    m = at
    for j in range(2):
        if idx[j] >= 0:
            B.ops[k, m], B.feats[k, m], B.vals[k, m] = VAR, idx[j], 0.0
            m += 1
    if idx[1] >= 0:
        B.ops[k, m], B.feats[k, m], B.vals[k, m] = MUL, 0, 0.0
        m += 1
    return m


@njit
def _put_wave(B, k, at, fidx, pidx, op, a, squared):
    """Append ``factor * op(a*P)`` (squared or not; ``a`` only where it is not 1; the factor and ``P``
    feature pairs, ``-1`` for none) to base ``k`` at ``at``; returns the end."""
    m = _put_factor(B, k, _put_factor(B, k, at, fidx), pidx)  # postfix: the factor, the wave, their product
    if a != 1.0:
        B.ops[k, m], B.feats[k, m], B.vals[k, m] = CONST, 0, a
        B.ops[k, m + 1], B.feats[k, m + 1], B.vals[k, m + 1] = MUL, 0, 0.0
        m += 2
    B.ops[k, m], B.feats[k, m], B.vals[k, m] = op, 0, 0.0
    m += 1
    for node, needed in ((SQUARE, squared), (MUL, fidx[0] >= 0)):
        if needed:
            B.ops[k, m], B.feats[k, m], B.vals[k, m] = node, 0, 0.0
            m += 1
    return m


@njit(error_model="numpy")
def _set_modulated(B, k, length, pidx, values):
    """Base ``k`` (written by :func:`_put_wave`, ``length`` nodes) a modulated wave on the argument
    ``pidx`` with ``values``; returns whether it is usable (finite, not constant)."""
    B.length[k] = length
    B.pair[k, 0], B.pair[k, 1] = pidx[0], (pidx[1] if pidx[1] >= 0 else pidx[0])
    B.modulated[k] = True
    assign(B.values[k], values)
    B.lo[k], B.hi[k] = np.inf, -np.inf
    for r in range(values.shape[0]):
        B.lo[k] = min(B.lo[k], values[r])
        B.hi[k] = max(B.hi[k], values[r])
    return np.isfinite(B.lo[k]) and np.isfinite(B.hi[k]) and B.hi[k] > B.lo[k]


@njit(error_model="numpy")
def _best_pair(cols, rc, w):
    """The two of ``cols`` whose least squares fits ``rc`` best: their indices and the second's
    coefficient over the first's (-1, -1, 0 when none fits)."""
    best, q1, q2, ratio = 0.0, -1, -1, 0.0
    for i in range(cols.shape[0]):
        for j in range(i + 1, cols.shape[0]):
            bi, bj, g = _two_columns(cols[i], cols[j], rc, w)
            if g > best and bi != 0.0:
                best, q1, q2, ratio = g, i, j, bj / bi
    return q1, q2, ratio


@njit
def _wave_forms(allowed):
    """The waves of a family, rows ``(op, squared)``: sin and cos (those allowed) and the square
    of one (where ``square`` is allowed)."""
    forms = np.zeros((3, 2), dtype=np.int64)
    m = 0
    for op in (SIN, COS):
        if allowed[op]:
            forms[m, 0] = op
            m += 1
    if allowed[SQUARE]:
        forms[m, 0], forms[m, 1] = (COS if allowed[COS] else SIN), 1
        m += 1
    return forms[:m]


@njit(error_model="numpy")
def _modulated_bases(D, B, nb, pair_features, n_families, rc, W):
    """Modulated waves as bases of terms (each a term as it is, with no heredity), appended to ``B`` after its ``nb``: on every argument ``P`` (one of
    ``pair_features`` or a product of two) the best wave screened on ``rc`` (a factor -- 1, a
    feature or a product of two -- times ``sin(a*P + b)``, ``cos(a*P)^2`` or ``sin(a*P)^2``); for
    the ``n_families`` best arguments, the frequency of the whole family
    (:func:`_family_frequency`) and each factor times each of its waves. Returns the number of
    bases and the evaluations used."""
    idx, M = _factors(D.Xt, pair_features)
    n = D.Xt.shape[1]
    u, v = np.empty(n), np.empty(n)
    kinds = np.array([True, D.allowed[COS] and D.allowed[SQUARE], D.allowed[SIN] and D.allowed[SQUARE]])
    forms = _wave_forms(D.allowed)
    n_args = M.shape[0] - 1  # the arguments: the factors but 1
    gains, freq = np.empty(n_args), np.empty(n_args)
    evals = 0
    for z in range(n_args):
        gains[z], freq[z], used = _screen_family(M[z + 1], M, kinds, rc, D.w, W.grid, W.s, W.c, u, v)
        evals += used
    for z in argsort(-gains)[:n_families]:
        if not gains[z] > 0:
            continue
        p = M[z + 1]
        n_forms = forms.shape[0]
        combos = np.empty((M.shape[0] * n_forms, 2), dtype=np.int64)
        for q in range(combos.shape[0]):
            combos[q, 0], combos[q, 1] = q // n_forms, q % n_forms
        # the frequency on 1 and the single features as factors (their products: 3 times the columns)
        a, used = _family_frequency(p, M, forms, combos[:(1 + pair_features.shape[0]) * n_forms], freq[z], W.grid,
                                    rc, D.w)
        evals += used
        cols = np.empty((M.shape[0] * n_forms, n))
        _family_columns(p, M, forms, combos, a, cols)
        for q in range(cols.shape[0]):
            f, y = q // n_forms, q % n_forms
            length = _put_wave(B, nb, 0, idx[f], idx[z + 1], forms[y, 0], a, forms[y, 1] == 1)
            B.ok[nb] = _set_modulated(B, nb, length, idx[z + 1], cols[q])
            nb += 1
        # the pair of them that fits best, as one term (a law's two waves, out of reach of a step
        # at a time when the best single wave's factor is not the law's)
        q1, q2, _ = _best_pair(cols, rc, D.w)
        evals += cols.shape[0] * (cols.shape[0] - 1) // 2
        if q1 < 0:
            continue
        pair = combos[np.array([q1, q2])]
        a, used = _family_frequency(p, M, forms, pair, a, W.grid, rc, D.w)  # the pair's own
        evals += used
        _family_columns(p, M, forms, pair, a, cols[:2])
        bu, bv, _ = _two_columns(cols[0], cols[1], rc, D.w)
        if bu == 0.0:
            continue
        length = _put_wave(B, nb, 0, idx[pair[0, 0]], idx[z + 1], forms[pair[0, 1], 0], a, forms[pair[0, 1], 1] == 1)
        length = _put_wave(B, nb, length, idx[pair[1, 0]], idx[z + 1], forms[pair[1, 1], 0], a,
                           forms[pair[1, 1], 1] == 1)
        B.ops[nb, length], B.feats[nb, length], B.vals[nb, length] = CONST, 0, bv / bu
        B.ops[nb, length + 1], B.ops[nb, length + 2] = MUL, ADD
        for r in range(n):
            u[r] = cols[0, r] + bv / bu * cols[1, r]
        B.ok[nb] = _set_modulated(B, nb, length + 3, idx[z + 1], u)
        nb += 1
    return nb, evals


@njit
def _term_ops(unops, allowed):
    """The operators of terms: the base itself, then each unary operator with an inner form (sin
    and cos are one wave family: its phase picks the operator, :func:`_wave_form`); returns them
    and how many."""
    term_ops = np.empty(1 + unops.shape[0], dtype=np.int64)
    term_ops[0] = LINEAR
    n_ops = 1
    for op in unops:
        if (op == SQUARE or op == CUBE or op == ABS or op == SQRT or op == LOG or op == EXP or op == SIN
                or (op == COS and not allowed[SIN])):
            term_ops[n_ops] = op
            n_ops += 1
    return term_ops, n_ops


@njit(error_model="numpy")
def _candidates(D, B, nb, term_ops, n_ops, wave, rc, W, steps):
    """Every term of every usable base (a shifted product's of the ``wave`` only) fitted on ``rc``
    (``steps`` golden-section steps), those that gain kept: returns them (:class:`Terms`), the
    first of each base's (``first[k]`` to ``first[k + 1] - 1``), their number and the evaluations
    used."""
    C = _terms(nb * n_ops, D.Xt.shape[1])
    first = np.zeros(nb + 1, dtype=np.int64)
    nc = 0
    evals = 0
    for k in range(nb):
        first[k] = nc
        if not B.ok[k]:
            continue
        for t in range(n_ops):
            if (B.shifted[k] and term_ops[t] != wave) or (B.modulated[k] and term_ops[t] != LINEAR):
                continue
            op, a, b, gain, used = _fit_inner(B.values[k], term_ops[t], B.lo[k], B.hi[k], rc, D.w, D.allowed, W.grid,
                                              W.s, W.c, steps)
            evals += used
            if not gain > 0:
                continue
            _term_values(B.values[k], op, a, b, C.cols[nc])
            C.base[nc], C.op[nc], C.a[nc], C.b[nc] = k, op, a, b
            nc += 1
    first[nb] = nc
    return C, first, nc, evals


# ---------------------------------------------------------------------------- writing a term
@njit
def _write_term(b_ops, b_feats, b_vals, b_len, op, a, b, out_ops, out_feats, out_vals, at):
    """Append the term ``g(a*base + b)`` (constants only where needed) at ``at``; returns the end."""
    m = at
    for i in range(b_len):
        out_ops[m], out_feats[m], out_vals[m] = b_ops[i], b_feats[i], b_vals[i]
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
    """Complexity of ``g(a*base + b)`` as :func:`_write_term` writes it (``b_ops``: the base's)."""
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


@njit
def _complexity(B, kb, op, a, b, weights):
    """Complexity of the term ``g(a*B + b)`` on base ``kb`` of ``B``."""
    return _term_complexity(B.ops[kb], B.length[kb], op, a, b, weights)


@njit
def _term_cost(B, T, t, weights):
    """Complexity of term ``t`` of ``T``."""
    return _complexity(B, T.base[t], T.op[t], T.a[t], T.b[t], weights)


# ------------------------------------------------------------------------- the sum's loss
@njit(error_model="numpy")
def _fit_sum(D, cols, coef):
    """Exact outer coefficients of ``a + sum_t coef[t] cols[t]`` for the loss: writes ``coef`` and
    returns ``(a, loss)`` (the loss a weighted sum; inf when not finite)."""
    if D.loss_kind == LOSS_SQUARED:
        return _least_squares_loss(cols, D.y, D.w, coef)
    return pinball_regression(cols, D.y, D.w, D.tau if D.loss_kind == LOSS_PINBALL else 0.5, coef)


@njit(error_model="numpy")
def _least_squares_loss(cols, y, w, coef):
    """Weighted least squares ``a + sum_t coef[t] cols[t]`` of ``y``: writes ``coef``, returns ``(a,
    squared error)`` (the error a weighted sum; inf when ``a`` is not finite)."""
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
def _covers(B, kb, kt):
    """Whether the features of base ``kt`` are among those of base ``kb`` (the variables of their
    expressions)."""
    for i in range(B.length[kt]):
        if B.ops[kt, i] != VAR:
            continue
        found = False
        for j in range(B.length[kb]):
            found = found or (B.ops[kb, j] == VAR and B.feats[kb, j] == B.feats[kt, i])
        if not found:
            return False
    return True


@njit
def _replaced(B, kb, S, k, weights, per_term, replace):
    """Mark in ``replace`` the terms of the sum ``S`` (``k`` terms) that a term on the base ``kb``
    replaces: those on its features only; returns the complexity they free."""
    freed = 0
    for t in range(k):
        replace[t] = _covers(B, kb, S.base[t])
        if replace[t]:
            freed += _term_cost(B, S, t, weights) + per_term
    return freed


# ------------------------------------------------------------------------- a forward step
@njit(error_model="numpy")
def _screen(D, B, C, nc, used, S, k, coef, budget, per_term, W, picked, rates):
    """The candidates worth an exact fit this step: the ``picked.shape[0] - 1`` of highest
    least-squares gain on the residual ``W.r`` per token they add (net of the terms a candidate
    replaces: those on its features only), and the one of highest gain; a product or ratio once
    both its features are in the sum (strong heredity), a shifted product's wave at once. Writes
    their indices into ``picked``, returns how many."""
    weights = D.weights
    present = np.zeros(D.Xt.shape[0], dtype=np.bool_)
    for t in range(k):
        present[B.pair[S.base[t], 0]] = True
        present[B.pair[S.base[t], 1]] = True
    replace = np.zeros(S.base.shape[0], dtype=np.bool_)
    room = picked.shape[0] - 1
    n_scr = 0
    top_q, top_g = -1, 0.0
    for q in range(nc):
        kb = C.base[q]
        if used[q] or (B.length[kb] > 1 and not (B.shifted[kb] or B.modulated[kb])
                       and not (present[B.pair[kb, 0]] and present[B.pair[kb, 1]])):
            continue
        cost = _term_cost(B, C, q, weights)
        freed = _replaced(B, kb, S, k, weights, per_term, replace)
        if cost > budget + freed:
            continue
        if freed > 0:
            had = _partial(W.r, S.cols, coef, replace, k, D.w, W.rp)
            g = _gain(C.cols[q], W.rp, D.w) - had
        else:
            g = _gain(C.cols[q], W.r, D.w)
        if not g > 0:
            continue
        if g > top_g:
            top_q, top_g = q, g
        g /= max(cost + per_term - freed, 1)
        if n_scr < room:
            picked[n_scr], rates[n_scr] = q, g
            n_scr += 1
        else:
            worst = 0
            for z in range(1, room):
                if rates[z] < rates[worst]:
                    worst = z
            if g > rates[worst]:
                picked[worst], rates[worst] = q, g
    if top_q >= 0:
        for z in range(n_scr):
            if picked[z] == top_q:
                top_q = -1
        if top_q >= 0:
            picked[n_scr] = top_q
            n_scr += 1
    return n_scr


@njit(error_model="numpy")
def _best_screened(D, B, C, picked, n_scr, S, k, coef, loss, budget, per_term, W, cols2, coef2):
    """The screened candidate that lowers the loss of the sum most per token (its inner constants
    refitted on the residual, with the part of the terms it replaces added back; the outer
    coefficients exact): returns ``(rate, index, op, a, b, evaluations)`` (index -1: none lowers
    the loss), its values in ``W.best``."""
    weights = D.weights
    replace = np.zeros(S.base.shape[0], dtype=np.bool_)
    best_rate, best_q = 0.0, -1
    best_op, best_a, best_b = LINEAR, 1.0, 0.0
    evals = 0
    for z in range(n_scr):
        q = picked[z]
        kb = C.base[q]
        freed = _replaced(B, kb, S, k, weights, per_term, replace)
        target = W.r
        if freed > 0:
            _partial(W.r, S.cols, coef, replace, k, D.w, W.rp)
            target = W.rp
        op, a, b, g, used = _refit_inner(B.values[kb], C.op[q], C.a[q], C.b[q], B.lo[kb], B.hi[kb], target, D.w,
                                         D.allowed, W.grid, W.s, W.c)
        evals += used
        if _complexity(B, kb, op, a, b, weights) > budget + freed:
            op, a, b = C.op[q], C.a[q], C.b[q]
        kept = 0
        for t in range(k):
            if not replace[t]:
                assign(cols2[kept], S.cols[t])
                kept += 1
        # a wave with its phase and without (2 tokens fewer): the better gain per token enters
        for variant in range(2 if (op == SIN or op == COS) and b != 0.0 else 1):
            phase = b if variant == 0 else 0.0
            _term_values(B.values[kb], op, a, phase, cols2[kept])
            _, trial = _fit_sum(D, cols2[:kept + 1], coef2[:kept + 1])
            evals += 1
            rate = (loss - trial) / max(_complexity(B, kb, op, a, phase, weights) + per_term - freed, 1)
            if trial < loss - ENTERS * abs(loss) - TINY and rate > best_rate:
                best_rate, best_q, best_op, best_a, best_b = rate, q, op, a, phase
                assign(W.best, cols2[kept])
    return best_rate, best_q, best_op, best_a, best_b, evals


@njit
def _add_term(B, C, q, op, a, b, col, S, k, weights, per_term):
    """Add candidate ``q`` as ``g(a*B + b)`` (values ``col``) to the sum ``S`` of ``k`` terms in place
    of the terms it replaces; returns the number of terms."""
    replace = np.zeros(S.base.shape[0], dtype=np.bool_)
    _replaced(B, C.base[q], S, k, weights, per_term, replace)
    kept = 0
    for t in range(k):
        if not replace[t]:
            S.base[kept], S.op[kept], S.a[kept], S.b[kept] = S.base[t], S.op[t], S.a[t], S.b[t]
            assign(S.cols[kept], S.cols[t])
            kept += 1
    S.base[kept], S.op[kept], S.a[kept], S.b[kept] = C.base[q], op, a, b
    assign(S.cols[kept], col)
    return kept + 1


# ------------------------------------------------------------------------------ backfitting
@njit(error_model="numpy")
def _refit_shifts(D, B, S, t, k, coef, coef2, offset, loss, wave, W):
    """Refine the shifts and frequency of term ``t`` of the sum (a wave of a shifted product) on its
    partial residual ``W.r``, kept where the sum's loss falls (``W.r`` then recomputed); returns
    ``(offset, loss, evaluations)``."""
    Xt, w = D.Xt, D.w
    kb = S.base[t]
    i, j = B.pair[kb, 0], B.pair[kb, 1]
    p3 = W.p3
    p3[0], p3[1], p3[2] = B.shift[kb, 0], B.shift[kb, 1], S.a[t]
    g0 = _shifted_gain(Xt[i], Xt[j], p3, W.r, w, W.col0, W.s, W.c)
    g3, used = _refine_shifts(Xt[i], Xt[j], p3, g0, W.r, w, W.col0, W.s, W.c)
    evals = used + 1
    if not (g3 > g0 * (1.0 + BETTER) and (p3[0] == 0.0 or B.shift[kb, 0] != 0.0)
            and (p3[1] == 0.0 or B.shift[kb, 1] != 0.0)):
        return offset, loss, evals
    old_ops, old_feats, old_vals, old_len = B.ops[kb].copy(), B.feats[kb].copy(), B.vals[kb].copy(), B.length[kb]
    old_lo, old_hi = B.lo[kb], B.hi[kb]
    old_cplx = _term_cost(B, S, t, D.weights)
    assign(W.col0, B.values[kb])
    assign(W.col, S.cols[t])
    _set_shifted(B, kb, i, j, p3[0], p3[1], Xt)
    op, a, b, g, used = _refit_inner(B.values[kb], wave, p3[2], 0.0, B.lo[kb], B.hi[kb], W.r, w, D.allowed, W.grid,
                                     W.s, W.c)
    evals += used + 1
    if _complexity(B, kb, op, a, b, D.weights) > old_cplx:
        b = 0.0  # a term that entered without its phase stays without (it did not pay for one)
    _term_values(B.values[kb], op, a, b, S.cols[t])
    new_offset, new_loss = _fit_sum(D, S.cols[:k], coef2[:k])
    if new_loss < loss:
        S.op[t], S.a[t], S.b[t] = op, a, b
        B.shift[kb, 0], B.shift[kb, 1] = p3[0], p3[1]
        assign(coef[:k], coef2[:k])
        _residual(S.cols, k, coef, new_offset, D.y, w, t, W.r)
        return new_offset, new_loss, evals
    assign(B.ops[kb], old_ops)
    assign(B.feats[kb], old_feats)
    assign(B.vals[kb], old_vals)
    B.length[kb] = old_len
    B.lo[kb], B.hi[kb] = old_lo, old_hi
    assign(B.values[kb], W.col0)
    assign(S.cols[t], W.col)
    return offset, loss, evals


@njit(error_model="numpy")
def _refit_term(D, B, S, t, k, coef, coef2, offset, loss, term_ops, n_ops, wave, W):
    """Refit term ``t`` of the sum on its partial residual ``W.r``, its operator free among its base's
    as long as the term grows no more complex, kept where the sum's loss falls; returns
    ``(offset, loss, evaluations)``."""
    kb = S.base[t]
    old_cplx = _term_cost(B, S, t, D.weights)
    _term_values(B.values[kb], S.op[t], S.a[t], S.b[t], W.col)
    best_g = _gain(W.col, W.r, D.w)
    best_op, best_a, best_b = S.op[t], S.a[t], S.b[t]
    evals = 0
    for z in range(n_ops):
        g_op = term_ops[z]
        if (B.shifted[kb] and g_op != wave) or (B.modulated[kb] and g_op != LINEAR):
            continue
        same = g_op == S.op[t]
        op, a, b, g, used = _refit_inner(B.values[kb], g_op, S.a[t] if same else 1.0, S.b[t] if same else 0.0,
                                         B.lo[kb], B.hi[kb], W.r, D.w, D.allowed, W.grid, W.s, W.c)
        evals += used
        if g > best_g * (1.0 + BETTER) and _complexity(B, kb, op, a, b, D.weights) <= old_cplx:
            best_g, best_op, best_a, best_b = g, op, a, b
    if best_op == S.op[t] and best_a == S.a[t] and best_b == S.b[t]:
        return offset, loss, evals
    assign(W.col, S.cols[t])
    _term_values(B.values[kb], best_op, best_a, best_b, S.cols[t])
    new_offset, new_loss = _fit_sum(D, S.cols[:k], coef2[:k])
    evals += 1
    if new_loss < loss:
        S.op[t], S.a[t], S.b[t] = best_op, best_a, best_b
        assign(coef[:k], coef2[:k])
        return new_offset, new_loss, evals
    assign(S.cols[t], W.col)
    return offset, loss, evals


@njit(error_model="numpy")
def _backfit(D, B, S, k, coef, coef2, offset, loss, term_ops, n_ops, wave, passes, W):
    """Backfitting: up to ``passes`` passes refitting each term of the sum on its partial residual
    (a shifted product's shifts first), until a pass no longer lowers the loss; returns
    ``(offset, loss, evaluations)``."""
    evals = 0
    for _pass in range(passes):
        before = loss
        for t in range(k):
            if coef[t] == 0.0:
                continue
            _residual(S.cols, k, coef, offset, D.y, D.w, t, W.r)
            if B.shifted[S.base[t]]:
                offset, loss, used = _refit_shifts(D, B, S, t, k, coef, coef2, offset, loss, wave, W)
                evals += used
            offset, loss, used = _refit_term(D, B, S, t, k, coef, coef2, offset, loss, term_ops, n_ops, wave, W)
            evals += used
        if not loss < before * (1.0 - BETTER):
            break
    return offset, loss, evals


@njit(error_model="numpy")
def _backward(D, B, S, k, coef, coef2, cols2, offset, loss, rate, drop_share, per_term):
    """A term worth less per token than ``drop_share`` of ``rate`` (the last one added's) leaves the
    sum, for good (the last term stays); returns ``(k, offset, loss, evaluations)``."""
    evals = 0
    t = 0
    while t < k - 1 and k > 1:
        for z in range(k - 1):
            assign(cols2[z], S.cols[z if z < t else z + 1])
        new_offset, new_loss = _fit_sum(D, cols2[:k - 1], coef2[:k - 1])
        evals += 1
        cost = _term_cost(B, S, t, D.weights) + per_term
        if (new_loss - loss) / cost < drop_share * rate:
            for z in range(t, k - 1):
                S.base[z], S.op[z], S.a[z], S.b[z] = S.base[z + 1], S.op[z + 1], S.a[z + 1], S.b[z + 1]
                assign(S.cols[z], S.cols[z + 1])
            k -= 1
            offset, loss = new_offset, new_loss
            assign(coef[:k], coef2[:k])
        else:
            t += 1
    return k, offset, loss, evals


@njit(error_model="numpy")
def _refit_candidates(D, B, C, first, used, S, k, coef, offset, per_term, steps, W):
    """The unused candidates on the bases of the sum's terms refitted on what they would replace
    (the residual with those terms' part added back); returns the evaluations used."""
    replace = np.zeros(S.base.shape[0], dtype=np.bool_)
    _residual(S.cols, k, coef, offset, D.y, D.w, -1, W.r)
    evals = 0
    for t in range(k):
        kb = S.base[t]
        seen = False
        for z in range(t):
            seen = seen or S.base[z] == kb
        if seen:
            continue
        _replaced(B, kb, S, k, D.weights, per_term, replace)
        _partial(W.r, S.cols, coef, replace, k, D.w, W.rp)
        for q in range(first[kb], first[kb + 1]):
            if used[q]:
                continue
            op, a, b, g, n_evals = _fit_inner(B.values[kb], C.op[q], B.lo[kb], B.hi[kb], W.rp, D.w, D.allowed, W.grid,
                                              W.s, W.c, steps)
            evals += n_evals
            if g > 0:
                C.op[q], C.a[q], C.b[q] = op, a, b
                _term_values(B.values[kb], op, a, b, C.cols[q])
    return evals


@njit(error_model="numpy")
def _budget(D, B, S, k, per_term):
    """The room a new term has in ``maxsize`` beside the sum's ``k`` terms (each with its coefficient
    and a +) and the offset."""
    budget = D.maxsize - D.weights[CONST] - per_term
    for t in range(k):
        budget -= _term_cost(B, S, t, D.weights) + per_term
    return budget


@njit(error_model="numpy")
def _make_room(D, B, C, nc, used, S, k, loss, per_term, W, picked, rates, cols2, coef2, coef3, keep):
    """When no candidate fits the room left: the inner shift (a wave's phase, a square's shift) the
    sum misses least is dropped and the step tried again with the tokens it frees, the new term
    kept only if the sum then beats ``loss`` (the sum with the shift). Returns
    :func:`_best_screened`'s ``(rate, index, op, a, b, evaluations)``; with an index of -1 the
    sum is as it was."""
    evals = 0
    drop, drop_loss, drop_a = -1, np.inf, 1.0
    offset, _ = _fit_sum(D, S.cols[:k], coef3[:k])
    for t in range(k):
        if S.b[t] == 0.0 or S.op[t] == LINEAR or S.op[t] == EXP:
            continue
        kb = S.base[t]
        a = S.a[t]
        if S.op[t] == SIN or S.op[t] == COS:  # the frequency refitted without the phase
            _residual(S.cols, k, coef3, offset, D.y, D.w, t, W.r)
            a, used_evals = _phase_free(B.values[kb], S.op[t], a, B.lo[kb], B.hi[kb], W.r, D.w, W.grid, W.s,
                                        W.c)
            evals += used_evals
        for z in range(k):
            assign(cols2[z], S.cols[z])
        _term_values(B.values[kb], S.op[t], a, 0.0, cols2[t])
        _, trial = _fit_sum(D, cols2[:k], coef2[:k])
        evals += 1
        if trial < drop_loss:
            drop, drop_loss, drop_a = t, trial, a
    if drop < 0:
        return 0.0, -1, LINEAR, 1.0, 0.0, evals
    old_a, old_b = S.a[drop], S.b[drop]
    assign(keep, S.cols[drop])
    S.a[drop], S.b[drop] = drop_a, 0.0
    _term_values(B.values[S.base[drop]], S.op[drop], drop_a, 0.0, S.cols[drop])
    offset, _ = _fit_sum(D, S.cols[:k], coef3[:k])
    _residual(S.cols, k, coef3, offset, D.y, D.w, -1, W.r)
    budget = _budget(D, B, S, k, per_term)
    n_scr = _screen(D, B, C, nc, used, S, k, coef3, budget, per_term, W, picked, rates)
    evals += nc + 1
    rate, q, op, a, b, n_evals = _best_screened(D, B, C, picked, n_scr, S, k, coef3, loss, budget, per_term, W,
                                                cols2, coef2)
    evals += n_evals
    if q < 0:
        S.a[drop], S.b[drop] = old_a, old_b
        assign(S.cols[drop], keep)
    return rate, q, op, a, b, evals


# ------------------------------------------------------------------------------ the stage
@njit
def _write_model(D, B, S, k, coef, offset, out, at):
    """Write the sum ``offset + sum_t coef[t] S[t]`` (simplified) as model ``at`` of ``out``;
    returns -1 when it cannot be written, 0 when it is longer than ``maxsize``, else 1."""
    size = S.base.shape[0] * TERM_NODES
    t_ops, t_feats, t_vals = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size)
    starts, ends = np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
    w_ops, w_feats, w_vals = (np.empty(D.maxsize, dtype=np.int64), np.empty(D.maxsize, dtype=np.int64),
                              np.empty(D.maxsize))
    end = 0
    for t in range(k):
        starts[t] = end
        kb = S.base[t]
        end = _write_term(B.ops[kb], B.feats[kb], B.vals[kb], B.length[kb], S.op[t], S.a[t], S.b[t], t_ops, t_feats,
                          t_vals, end)
        ends[t] = end - 1
    written = write_sum(t_ops, t_feats, t_vals, k, starts, ends, coef, offset, w_ops, w_feats, w_vals)
    if written < 0:
        return -1
    out_ops, out_feats, out_vals, out_length = out
    length = simplify_tree(w_ops, w_feats, w_vals, written, out_ops[at], out_feats[at], out_vals[at])
    if tree_complexity(out_ops[at], length, D.weights) > D.maxsize:
        return 0
    out_length[at] = length
    return 1


@njit(error_model="numpy")
def _forward(D, B, C, first, nc, term_ops, n_ops, wave, knobs, W, out):
    """Forward stepwise selection from the best constant (a step a sum, ``out[0].shape[0]`` at
    most): screen the candidates, add the best per token, backfit, drop the terms worth too
    little, refit the candidates on the sum's bases, write the sum; returns ``(sums written,
    evaluations used)``."""
    weights = D.weights
    n = D.Xt.shape[1]
    max_terms = knobs.max_terms
    S = _terms(max_terms, n)
    cols2 = np.empty((max_terms, n))
    coef, coef2, coef3 = np.zeros(max_terms), np.zeros(max_terms), np.zeros(max_terms)
    used = np.zeros(nc, dtype=np.bool_)
    picked, rates = np.empty(knobs.screened + 1, dtype=np.int64), np.empty(knobs.screened + 1)
    offset, loss = _fit_sum(D, S.cols[:0], coef[:0])  # the best constant, exactly
    exact = EXACT * loss  # a sum this close reproduces the targets: no term can gain
    evals = 1
    n_models = 0
    k = 0  # terms in the sum
    per_term = weights[CONST] + weights[MUL] + weights[ADD]  # a term's coefficient and +
    for _step in range(out[0].shape[0]):
        if k >= max_terms or loss <= exact:
            break
        budget = _budget(D, B, S, k, per_term)
        _residual(S.cols, k, coef, offset, D.y, D.w, -1, W.r)
        n_scr = _screen(D, B, C, nc, used, S, k, coef, budget, per_term, W, picked, rates)
        evals += nc
        rate, q, op, a, b, n_evals = _best_screened(D, B, C, picked, n_scr, S, k, coef, loss, budget, per_term, W,
                                                    cols2, coef2)
        evals += n_evals
        if q < 0:
            rate, q, op, a, b, n_evals = _make_room(D, B, C, nc, used, S, k, loss, per_term, W, picked, rates, cols2,
                                                    coef2, coef3, W.col)
            evals += n_evals
        if q < 0:
            break
        used[q] = True
        k = _add_term(B, C, q, op, a, b, W.best, S, k, weights, per_term)
        offset, loss = _fit_sum(D, S.cols[:k], coef[:k])
        offset, loss, n_evals = _backfit(D, B, S, k, coef, coef2, offset, loss, term_ops, n_ops, wave,
                                         knobs.backfit_passes, W)
        evals += n_evals
        k, offset, loss, n_evals = _backward(D, B, S, k, coef, coef2, cols2, offset, loss, rate, knobs.drop_share,
                                               per_term)
        evals += n_evals
        evals += _refit_candidates(D, B, C, first, used, S, k, coef, offset, per_term, knobs.screen_steps, W)
        written = _write_model(D, B, S, k, coef, offset, out, n_models)
        if written < 0:
            break
        n_models += written
    return n_models, evals


@njit(error_model="numpy")
def additive_models(data, single_features, pair_features, knobs, out):
    """The additive stage on ``data`` (a :class:`Data`): writes each step's sum (simplified) into
    ``out = (ops, feats, vals, length)`` (model ``k`` in row ``k``, up to ``data.maxsize`` nodes;
    ``ops.shape[0]`` sums at most) and returns ``(number of sums, evaluations used)``.
    ``single_features`` are the features that are bases, ``pair_features`` those whose products
    (and ratios, when ``div`` is allowed) are bases; only the operators ``data.allowed`` are used
    (none when ``add`` or ``mul`` is not among them); ``knobs`` (a :class:`Knobs`) are the stage's
    choices."""
    Xt, y, w, allowed = data.Xt, data.y, data.w, data.allowed
    n = Xt.shape[1]
    if not (allowed[ADD] and allowed[MUL]) or n < 3:
        return 0, 0
    n_pair = pair_features.shape[0]
    wave = SIN if allowed[SIN] else (COS if allowed[COS] else -1)
    n_shifted = min(knobs.shifted_pairs, n_pair * (n_pair - 1) // 2) if wave >= 0 else 0
    n_families = min(knobs.modulated, n_pair * (n_pair + 1) // 2) if wave >= 0 else 0
    n_factors = 1 + n_pair * (n_pair + 1) // 2
    n_bases = (single_features.shape[0] + (n_pair * (n_pair - 1) // 2) * (3 if allowed[DIV] else 1) + 2 * n_shifted
               + n_families * (3 * n_factors + 1))
    B, nb = _plain_bases(Xt, single_features, pair_features, allowed[DIV], n_bases)
    term_ops, n_ops = _term_ops(data.unops, allowed)
    # the candidates are fitted to the residual of the best constant
    wsum, ybar = 0.0, 0.0
    for i in range(n):
        wsum += w[i]
        ybar += w[i] * y[i]
    ybar /= wsum
    rc = np.empty(n)
    for i in range(n):
        rc[i] = y[i] - ybar
    W = _work(n)
    evals = 0
    if n_shifted > 0:
        nb, evals = _shifted_bases(data, B, nb, pair_features, n_shifted, rc, W)
    if n_families > 0:
        nb, used = _modulated_bases(data, B, nb, pair_features, n_families, rc, W)
        evals += used
    C, first, nc, used = _candidates(data, B, nb, term_ops, n_ops, wave, rc, W, knobs.screen_steps)
    n_models, more = _forward(data, B, C, first, nc, term_ops, n_ops, wave, knobs, W, out)
    return n_models, evals + used + more
