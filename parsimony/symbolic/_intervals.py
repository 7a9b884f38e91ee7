"""Interval arithmetic on postfix expressions: an enclosure of an expression's value over a box.

:func:`enclosure` walks the postfix arrays once with an interval ``[lo, hi]`` per stack slot
(Keijzer 2003: interval arithmetic over the training ranges removes singularities from symbolic
regression). Every bound is rounded outward after each operation (one ulp for the correctly
rounded ``+ - * / sqrt``, more for the library's ``exp log pow sin cos``, whose results the
evaluator may compute a few ulps apart), so the enclosure holds both the real value and the
evaluator's floating-point value at every point of the box. An operation undefined somewhere on
its input interval (a divisor interval holding 0, ``log`` or ``sqrt`` of an interval reaching
below 0, ``pow`` of a base reaching 0 or below with a non-integer exponent) or a bound that
overflows makes the enclosure ``(nan, nan)``: the expression is not known to be finite on the box.

Interval arithmetic over-estimates where a feature occurs more than once (``x - x`` on [0, 1] is
[-1, 1]); :func:`refined_enclosure` bisects the box along the widest feature the expression uses
and joins the pieces' enclosures, which tightens the bound and certifies expressions such as
``1 / ((x - 1)^2 + x - x + 1)`` that one walk cannot.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._numba import assign, njit
from ._expressions import (
    ABS, ADD, CONST, COS, CUBE, DIV, EXP, LOG, MUL, POW, SIN, SQRT, SQUARE, SUB, VAR,
)

#: A lower bound of a ``sqrt`` argument at least this far below 0 is a domain error; above it, 0.
#: Outward rounding turns an exact 0 (``x - min(x)``, exact by Sterbenz's lemma) into the
#: smallest negative subnormal, which is no evidence that the argument reaches below 0.
TINY = 1e-300
#: Relative widening of the bounds of ``exp log pow sin cos`` (libm and the evaluator's own
#: sine are within a few ulps of the real value; 1e-15 is about 4.5 ulps).
LIBM_WIDEN = 1e-15
#: Pieces :func:`refined_enclosure` evaluates at most, by default: the admission of every
#: candidate of the search (:func:`admissible`) and of every front row, so its cost is paid per
#: candidate (a rejection spends all of it). On 1,639 random expressions of the default operators
#: (up to 15 tokens, 3 features on [1, 5], finite on a 41^3 grid), bounded by 20 of their own
#: sampled ranges beyond their values on 2,000 uniform rows (as a law by its targets), budgets 8 /
#: 16 / 32 / 128 / 4096 admit 1531 / 1538 / 1542 / 1544 / 1544 at 2.7 / 3.1 / 3.2 / 7.9 / 84.7 us a
#: call on average: 32 misses 2 that more pieces admit, for a third of 128's cost.
REFINE_BUDGET = 32

Box = namedtuple("Box", [
    "lo",      # (features,) lower bound of each feature
    "hi",      # (features,) upper bound of each feature
    "low",     # an admitted expression's enclosure must lie in [low, high]
    "high",
    "active",  # the check is on
])
Box.__doc__ = "The domain an expression must be certified on, and the bounds its enclosure must keep (:func:`make_box`)."


def make_box(lo, hi, low=-np.inf, high=np.inf, active=True) -> Box:
    """The :data:`Box` of per-feature bounds ``lo <= hi`` and enclosure bounds ``[low, high]``."""
    return Box(np.ascontiguousarray(lo, dtype=np.float64), np.ascontiguousarray(hi, dtype=np.float64),
               float(low), float(high), bool(active))


def inactive_box(n_features: int) -> Box:
    """A :data:`Box` that admits everything (the check off)."""
    return make_box(np.zeros(n_features), np.zeros(n_features), active=False)


@njit(inline="always")
def _down(x):
    return np.nextafter(x, -np.inf)


@njit(inline="always")
def _up(x):
    return np.nextafter(x, np.inf)


@njit(inline="always")
def _wide_down(x):
    return _down(x - abs(x) * LIBM_WIDEN)


@njit(inline="always")
def _wide_up(x):
    return _up(x + abs(x) * LIBM_WIDEN)


@njit
def _mul(a, b, c, d):
    p1, p2, p3, p4 = a * c, a * d, b * c, b * d
    return _down(min(min(p1, p2), min(p3, p4))), _up(max(max(p1, p2), max(p3, p4)))


@njit
def _div(a, b, c, d):
    if c <= 0.0 <= d:
        return np.nan, np.nan
    q1, q2, q3, q4 = a / c, a / d, b / c, b / d
    return _down(min(min(q1, q2), min(q3, q4))), _up(max(max(q1, q2), max(q3, q4)))


@njit
def _sin_range(a, b, shift):
    """``sin`` (``shift`` 0) or ``cos`` (``shift`` pi/2, as ``sin(x + pi/2)``) over ``[a, b]``."""
    if not (b - a < 6.0) or abs(a) > 1e6 or abs(b) > 1e6:  # a whole turn, or too large to place extrema
        return -1.0, 1.0
    if shift == 0.0:
        fa, fb = math.sin(a), math.sin(b)
    else:
        fa, fb = math.cos(a), math.cos(b)
    lo = _wide_down(min(fa, fb)) - 1e-16
    hi = _wide_up(max(fa, fb)) + 1e-16
    # maxima at u = pi/2 + 2 k pi, minima at u = -pi/2 + 2 k pi (u = x + shift); the test is
    # widened so that rounding can only add an extremum, never miss one
    ua, ub = a + shift - 1e-9 * (1.0 + abs(a)), b + shift + 1e-9 * (1.0 + abs(b))
    if math.floor((ub - math.pi / 2) / (2 * math.pi)) >= math.ceil((ua - math.pi / 2) / (2 * math.pi)):
        hi = 1.0
    if math.floor((ub + math.pi / 2) / (2 * math.pi)) >= math.ceil((ua + math.pi / 2) / (2 * math.pi)):
        lo = -1.0
    return max(lo, -1.0), min(hi, 1.0)


@njit
def _pow(a, b, c, d):
    """``x ** e`` for ``x`` in [a, b], ``e`` in [c, d]."""
    if c == d and c == math.floor(c) and abs(c) <= 64:  # an integer exponent: any base but 0 if negative
        e = int(c)
        if e < 0 and a <= 0.0 <= b:
            return np.nan, np.nan
        if e == 0:
            return 1.0, 1.0
        pa, pb = a**c, b**c
        lo, hi = min(pa, pb), max(pa, pb)
        if e % 2 == 0 and a < 0.0 < b:
            lo = 0.0 if e > 0 else min(pa, pb)
            hi = max(pa, pb)
        return _wide_down(lo), _wide_up(hi)
    if a <= 0.0:
        return np.nan, np.nan
    p1, p2, p3, p4 = a**c, a**d, b**c, b**d  # x ** e is monotone in each argument for x > 0
    return _wide_down(min(min(p1, p2), min(p3, p4))), _wide_up(max(max(p1, p2), max(p3, p4)))


@njit
def _unary(op, a, b):
    if op == SQUARE:
        if a >= 0.0:
            return _down(a * a), _up(b * b)
        if b <= 0.0:
            return _down(b * b), _up(a * a)
        return 0.0, _up(max(a * a, b * b))
    if op == CUBE:
        return _down(_down(a * a * a)), _up(_up(b * b * b))  # monotone; two roundings
    if op == SQRT:
        if a < -TINY:
            return np.nan, np.nan
        return _down(math.sqrt(max(a, 0.0))), _up(math.sqrt(b))
    if op == EXP:
        return _wide_down(math.exp(a)) if a > -745.0 else 0.0, _wide_up(math.exp(b)) if b < 709.0 else np.inf
    if op == LOG:
        if not a > 0.0:
            return np.nan, np.nan
        return _wide_down(math.log(a)), _wide_up(math.log(b))
    if op == SIN:
        return _sin_range(a, b, 0.0)
    if op == COS:
        return _sin_range(a, b, math.pi / 2)
    if op == ABS:
        if a >= 0.0:
            return a, b
        if b <= 0.0:
            return -b, -a
        return 0.0, max(-a, b)
    return -b, -a  # NEG


@njit
def _binary(op, a, b, c, d):
    if op == ADD:
        return _down(a + c), _up(b + d)
    if op == SUB:
        return _down(a - d), _up(b - c)
    if op == MUL:
        return _mul(a, b, c, d)
    if op == DIV:
        return _div(a, b, c, d)
    return _pow(a, b, c, d)


@njit
def enclosure(ops, feats, vals, length, lo, hi, slo, shi):
    """``(low, high)`` enclosing the expression's value over the box ``lo <= x <= hi``, or
    ``(nan, nan)`` where it is undefined or overflows somewhere on the box. ``slo``, ``shi``:
    scratch of at least ``length`` slots."""
    sp = 0
    for k in range(length):
        op = ops[k]
        if op == CONST:
            slo[sp], shi[sp] = vals[k], vals[k]
            sp += 1
            continue
        if op == VAR:
            slo[sp], shi[sp] = lo[feats[k]], hi[feats[k]]
            sp += 1
            continue
        if op == ADD or op == SUB or op == MUL or op == DIV or op == POW:
            sp -= 1
            a, b = _binary(op, slo[sp - 1], shi[sp - 1], slo[sp], shi[sp])
        else:
            a, b = _unary(op, slo[sp - 1], shi[sp - 1])
        if not (abs(a) < np.inf and abs(b) < np.inf):  # NaN: undefined, inf: overflow
            return np.nan, np.nan
        slo[sp - 1], shi[sp - 1] = a, b
    return slo[0], shi[0]


@njit
def _widest_feature(ops, feats, length, lo, hi):
    """The feature of the expression whose interval is widest (-1: no feature with a width)."""
    best, width = -1, 0.0
    for k in range(length):
        if ops[k] == VAR:
            j = feats[k]
            if hi[j] - lo[j] > width:
                best, width = j, hi[j] - lo[j]
    return best


@njit
def refined_enclosure(ops, feats, vals, length, lo, hi, low, high, budget):
    """``(low', high', ok)``: an enclosure of the expression over the box ``lo <= x <= hi`` and
    whether it lies in ``[low, high]``.

    The whole box first; while it does not fit (undefined, overflowing or outside the bounds),
    the piece that failed is halved along its widest feature, up to ``budget`` pieces evaluated
    in all. ``ok`` is False when a piece still fails once the budget is spent (or cannot be
    split); the enclosure is then ``(nan, nan)``.
    """
    slo, shi = np.empty(length), np.empty(length)
    a, b = enclosure(ops, feats, vals, length, lo, hi, slo, shi)
    if low <= a and b <= high:
        return a, b, True
    d = lo.shape[0]
    stack_lo, stack_hi = np.empty((budget + 1, d)), np.empty((budget + 1, d))
    assign(stack_lo[0], lo)  # (a row slice assignment compiles numba's shape-mismatch message: seconds)
    assign(stack_hi[0], hi)
    top, used = 1, 1
    out_lo, out_hi = np.inf, -np.inf
    while top > 0:
        top -= 1
        plo, phi = stack_lo[top].copy(), stack_hi[top].copy()
        j = _widest_feature(ops, feats, length, plo, phi)
        if j < 0 or used + 2 > budget:
            return np.nan, np.nan, False
        mid = 0.5 * (plo[j] + phi[j])
        for half in range(2):
            qlo, qhi = plo.copy(), phi.copy()
            if half == 0:
                qhi[j] = mid
            else:
                qlo[j] = mid
            used += 1
            a, b = enclosure(ops, feats, vals, length, qlo, qhi, slo, shi)
            if low <= a and b <= high:
                out_lo, out_hi = min(out_lo, a), max(out_hi, b)
            else:
                assign(stack_lo[top], qlo)
                assign(stack_hi[top], qhi)
                top += 1
    return out_lo, out_hi, True


@njit
def admissible(ops, feats, vals, length, box):
    """Whether the expression's enclosure over ``box`` (a :data:`Box`) lies in its bounds (True
    when the box is inactive)."""
    if not box.active:
        return True
    return refined_enclosure(ops, feats, vals, length, box.lo, box.hi, box.low, box.high, REFINE_BUDGET)[2]


@njit
def tight_enclosure(ops, feats, vals, length, lo, hi, budget):
    """An enclosure of the expression over the box ``lo <= x <= hi`` tightened by bisection: the
    box is split breadth-first along each piece's widest feature into at most ``budget`` pieces
    and the pieces' enclosures joined (``(nan, nan)`` where a piece's is undefined)."""
    d = lo.shape[0]
    slo, shi = np.empty(length), np.empty(length)
    queue_lo, queue_hi = np.empty((budget, d)), np.empty((budget, d))
    assign(queue_lo[0], lo)
    assign(queue_hi[0], hi)
    head, tail = 0, 1
    while tail + 2 <= budget:  # split the oldest piece in two
        j = _widest_feature(ops, feats, length, queue_lo[head], queue_hi[head])
        if j < 0:
            break
        mid = 0.5 * (queue_lo[head, j] + queue_hi[head, j])
        assign(queue_lo[tail], queue_lo[head])
        assign(queue_hi[tail], queue_hi[head])
        queue_hi[tail, j] = mid
        assign(queue_lo[tail + 1], queue_lo[head])
        assign(queue_hi[tail + 1], queue_hi[head])
        queue_lo[tail + 1, j] = mid
        head, tail = head + 1, tail + 2
    out_lo, out_hi = np.inf, -np.inf
    for p in range(head, tail):
        a, b = enclosure(ops, feats, vals, length, queue_lo[p], queue_hi[p], slo, shi)
        if not (a == a and b == b):
            return np.nan, np.nan
        out_lo, out_hi = min(out_lo, a), max(out_hi, b)
    return out_lo, out_hi
