"""The search's own units: features and target divided by powers of ten, formulas written back
in the user's units by rescaling their constants.

SQR's search has absolute scales in it (inner constants drawn near 1, step sizes, tolerances),
so ``y * 1e-6`` or ``X * 1e8`` is not the same problem as ``y`` or ``X``. :class:`Units` divides
the features by the power of ten that puts their median RMS in [0.447, 4.47)
(:data:`FEATURE_OFFSET`; one scale for all, so that features in the same units stay comparable):
features scaled by ``10 ** k`` give the same search data (up to the rounding of one division),
and features in [0, 1] or [1, 5] are not rescaled, so a law simple in the user's units stays
simple in the search's. The target is rescaled when its standard deviation is below 1 or from
1e4 (:data:`TARGET_BAND`), to one in [1, 10): ``y * 10 ** k`` is the search of ``y`` for every
``k`` that takes it out of the band. With
``shift``, a feature that takes negative values is first shifted to start near 0
(:func:`round_down`; its RMS taken after): standardised features (PMLB's ``fri_c*`` sets) are
then searched as the nonnegative features the additive stage's products and waves are built on,
whatever their offset. Whether a signed feature's origin is the law's (``sin(x) cos(y)`` on
[-1, 1]) or the data's is not known before the search, so ``rescale=True`` searches both units
and keeps the front whose pick is better
(:func:`~parsimony.symbolic.regressor.search_units`).

:func:`to_user_units` writes an expression found on the search's data in the user's units,
exactly (the constants rescaled, the structure kept): each feature ``x_j`` stands for
``x_j / s_j`` and the output for ``y / s_y``. Factors are lifted up the tree and pushed down
into constants (``c * x`` takes the factor into ``c``; ``1 + x`` becomes ``(1/s + x) * s``);
only where no constant can take a factor (the argument of ``sin(x)``, a sum of terms that would
each need one) is a ``* c`` added. A shift that enters linearly is folded into the expression's
constant term (:func:`_folded`: ``c*(x - m) + d`` is written ``c*x + (d - c*m)``), so a linear
term of a shifted feature costs the user's formula no tokens the search's did not pay (PMLB's
standardised ``fri_c*`` sets: each linear term 2 tokens fewer); a shift inside a product stays.
The formula is then written with one coefficient per product (:func:`_canonical`: the constants
of a product or quotient multiplied into one, those of a square taken out of it, where that adds
no token): ``10 / (x * -5066) * -2.5e5`` is written ``493.5 / x``, ``(-1.88 * x)^2`` is
``3.53 * x^2``; the search's own formula too where it is not so written (identity units).

:func:`unit_free_complexity` counts the tokens of an expression written the same way for generic
units: what model selection charges, so that its choice does not depend on the features' or the
target's scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._engine import simplify_tree
from ._expressions import (
    ABS, ADD, ARITY, CONST, CUBE, DIV, MUL, NEG, POW, SQRT, SQUARE, SUB, VAR,
)


#: Significant bits of the search's data, in every units (the identity's too). ``(y * 1e-3) / 1e-3``
#: differs from ``y`` in its last bit, which a stochastic search amplifies into another model;
#: rounded to 36 bits (a relative 1.5e-11 at most) the two are the same data but for a value within
#: an ulp or two of a rounding boundary. The price is exactness: a law evaluated on the rounded
#: features misses the rounded targets by about that much. ``python benchmarks/sqr_units_constants.py``
#: on 573eea3 (1,092 random expressions on 1,000 rows of [1, 5]^3, times 10^k and back, k = -6..6):
#: at 32 / 36 / 40 / 44 bits 0 / 5 / 128 / 1,805 of the 13,104 rescaled targets differ from the
#: plain one in a row, and 84 / 888 / 1,006 / 1,058 of the 1,092 laws still pass the additive
#: stage's exactness test (``_stepwise.EXACT``). On the search (``sqr_recovery.py --noise 0`` with the
#: constant set): 36 / 40 bits solve 38 / 38 of the 60 (40 gains feynman_test_18, loses
#: feynman_I_50_26; median fit 2.6 / 2.5 s CPU). No figure asks for another value: kept.
SEARCH_BITS = 36


def round_down(low: float, width: float) -> float:
    """``low`` rounded down to a multiple of a tenth of the power of ten below ``width``: a
    shift whose digits are few (-3 for [-2.99, 3], -1.8 for [-1.73, 1.73]), so that a law
    simple in the user's units keeps round constants in the search's (``cos(x)`` is
    ``cos(x' - 3)``, whose 3 the search makes an integer)."""
    if not (np.isfinite(width) and width > 0):
        return float(low)
    step = 10.0 ** (np.floor(np.log10(width)) - 1)
    return float(np.floor(low / step) * step)


#: The features' scale is the power of ten that puts their median RMS in [0.447, 4.47) (``log10``
#: offset 0.35): features in [0, 1] (RMS 0.58) and in [1, 5] (RMS 3.2, 96% of the Feynman problems'
#: variables) are searched as given, and a feature divided by ten multiplies the constants that
#: act on it by ten, which keeps a law's integers integers. ``python benchmarks/sqr_units_constants.py``
#: on 573eea3 (the data as ``sqr_recovery.py`` draws it): offsets 0.25 / 0.35 / 0.5 search the
#: features of 60 / 59 / 16 of the 60 as given (58 / 58 / 14 of the 59 others, 19 / 17 / 17 of the 34
#: PMLB sets of ../shared, plain units); 0.25 changes the units of feynman_I_15_3x alone (and of 4 PMLB sets),
#: unsolved either way (``sqr_recovery.py --noise 0`` with the constant set), 0.5 divides [1, 5] by
#: ten: on 18 of the 60 it changed 8 searches and solved the same 10. No search figure prefers 0.35
#: to either: kept for the reason above.
FEATURE_OFFSET = 0.35
#: The target is rescaled only outside [1, 1e4) of standard deviation, to a standard deviation in
#: [1, 10): a small target multiplied by a power of ten keeps its law's integers integers (the
#: search makes constants integers in its own units), a large one (up to 1e4, the Feynman laws'
#: largest) is searched as given. ``python benchmarks/sqr_units_constants.py`` on 573eea3: bands
#: (0, 3) / (0, 4) / (0, 5) / (-1, 4) search the target of 37 / 38 / 38 / 54 of the 60 as given (39 /
#: 40 / 40 / 51 of the 59 others, 20 / 20 / 20 / 33 of the 34 PMLB sets): no target's standard
#: deviation is in [1e4, 1e5); (0, 3) changes feynman_test_9 alone (unsolved either way: R2 0.85 /
#: 0.69 with it); (-1, 4) leaves as given the 16 of the 60 with a standard deviation in [0.1, 1),
#: whose searches ``sqr_recovery.py`` with the band set changes without changing what they solve
#: (10 of 16 at noise 0, 9 at 0.01; on the 11 such of the 59 others, 4 at noise 0). No search figure
#: prefers (0, 4) to (-1, 4): kept for the reason above.
TARGET_BAND = (0, 4)


def power_of_ten(magnitude: float, offset: float = 0.5) -> float:
    """``10 ** floor(log10(magnitude) + offset)`` (``offset`` 0.5 rounds), 1 for a magnitude
    that is 0 or not finite."""
    if not (np.isfinite(magnitude) and magnitude > 0):
        return 1.0
    return float(10.0 ** int(np.floor(np.log10(magnitude) + offset)))


def target_scale(std: float) -> float:
    """The target's scale: 1 for a standard deviation in [1, 1e4) (:data:`TARGET_BAND`), else
    the power of ten that puts it in [1, 10)."""
    scale = power_of_ten(std, 0.0)
    return 1.0 if 10.0 ** TARGET_BAND[0] <= scale < 10.0 ** TARGET_BAND[1] else scale


@dataclass(frozen=True)
class Units:
    """The search's units: feature ``j`` in the search is ``x_j / x_scale[j]``, the target ``y / y_scale``."""

    x_scale: np.ndarray
    y_scale: float
    x_shift: np.ndarray | None = None  # feature j is (x_j - x_shift[j]) / x_scale[j] (None: no shift)

    @classmethod
    def of(cls, X, y, w, shift=True) -> Units:
        """The units of training data: each feature's root mean square and the target's
        standard deviation (weighted by ``w``), rounded to powers of ten; with ``shift``, a
        feature that takes negative values is shifted to start near 0 first."""
        w = np.asarray(w, dtype=float) / np.sum(w)
        shift = np.array([round_down(low, high - low) if shift and low < 0 else 0.0
                          for low, high in zip(X.min(axis=0), X.max(axis=0))])
        X = X - shift
        with np.errstate(over="ignore"):  # magnitudes near the largest double: the RMS of X / max|X|
            top = np.max(np.abs(X), axis=0)
            top = np.where(top > 0, top, 1.0)
            rms = top * np.sqrt(w @ ((X / top) ** 2))
            y_top = float(np.max(np.abs(y))) or 1.0
            yc = y / y_top
            std = y_top * float(np.sqrt(w @ (yc - w @ yc) ** 2))
        # one scale for all features (their median RMS): features in the same units stay in the
        # same units, so a difference x12 - x0 stays one (1089_USCrime: per-feature scales cost 23% NQL)
        scale = power_of_ten(float(np.median(rms)), FEATURE_OFFSET)
        return cls(np.full(X.shape[1], scale), target_scale(std if std > 0 else y_top),
                   shift if np.any(shift != 0) else None)

    @classmethod
    def identity(cls, n_features: int) -> Units:
        return cls(np.ones(n_features), 1.0)

    @property
    def is_identity(self) -> bool:
        return self.y_scale == 1.0 and bool(np.all(self.x_scale == 1.0)) and self.x_shift is None

    def features(self, X):
        """``X`` in the search's units (rounded to :data:`SEARCH_BITS` bits)."""
        return rounded((X if self.x_shift is None else X - self.x_shift) / self.x_scale)

    def target(self, y):
        """``y`` in the search's units (rounded to :data:`SEARCH_BITS` bits)."""
        return rounded(y / self.y_scale)


def rounded(values, bits=None):
    """``values`` rounded to ``bits`` (:data:`SEARCH_BITS`) significant bits."""
    bits = SEARCH_BITS if bits is None else bits
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.round(mantissa * 2.0**bits) / 2.0**bits, exponent)


# ---------------------------------------------------------------------- trees as nested tuples
def _nest(ops, feats, vals):
    stack = []
    for op, f, v in zip(ops.tolist(), feats.tolist(), vals.tolist()):
        arity = int(ARITY[op])
        args = tuple(stack[len(stack) - arity:]) if arity else ()
        del stack[len(stack) - arity:]
        stack.append((op, f if op == VAR else 0, v if op == CONST else 0.0, args))
    return stack[-1]


def _flatten(node, out):
    op, f, v, args = node
    for a in args:
        _flatten(a, out)
    out.append((op, f, v))
    return out


def _const(v):
    return (CONST, 0, float(v), ())


def _cost(node, weights) -> int:
    """Tokens that multiplying ``node`` by a factor adds (0 where a constant takes it)."""
    op, _, _, args = node
    if op == CONST:
        return 0
    if op in (ADD, SUB):
        return min(_cost(args[0], weights) + _cost(args[1], weights), int(weights[MUL] + weights[CONST]))
    if op == NEG:
        return _cost(args[0], weights)
    if op == MUL:
        return min(_cost(args[0], weights), _cost(args[1], weights))
    if op == DIV:
        return min(_cost(args[0], weights), _cost(args[1], weights))
    if op in (SQUARE, CUBE, SQRT):
        return _cost(args[0], weights)
    return int(weights[MUL] + weights[CONST])


def _scaled(node, s, weights):
    """A tree for ``s * node``, the factor pushed into constants where one can take it."""
    if s == 1.0:
        return node
    op, f, v, args = node
    if op == CONST:
        return _const(v * s)
    if op in (ADD, SUB):
        if _cost(args[0], weights) + _cost(args[1], weights) > weights[MUL] + weights[CONST]:  # (x0 + x1) * s
            return (MUL, 0, 0.0, (node, _const(s)))
        return (op, f, v, (_scaled(args[0], s, weights), _scaled(args[1], s, weights)))
    if op == NEG:
        return (op, f, v, (_scaled(args[0], s, weights),))
    if op == MUL:
        k = int(_cost(args[1], weights) < _cost(args[0], weights))
        new = list(args)
        new[k] = _scaled(args[k], s, weights)
        return (op, f, v, tuple(new))
    if op == DIV:
        if _cost(args[1], weights) < _cost(args[0], weights):
            return (op, f, v, (args[0], _scaled(args[1], 1.0 / s, weights)))
        return (op, f, v, (_scaled(args[0], s, weights), args[1]))
    if op in (SQUARE, CUBE, SQRT) and s > 0:  # s * a^2 = (sqrt(s) a)^2, s * sqrt(a) = sqrt(s^2 a)
        inner = {SQUARE: np.sqrt(s), CUBE: np.cbrt(s), SQRT: s * s}[op]
        if _cost(args[0], weights) == 0 and np.isfinite(inner) and inner > 0:
            return (op, f, v, (_scaled(args[0], inner, weights),))
    return (MUL, 0, 0.0, (node, _const(s)))


def _lifted(node, x_factor, x_shift, weights):
    """``(s, tree)`` with ``s * tree`` equal to ``node`` once each feature ``x_j`` stands for
    ``x_factor[j] * x_j``; ``s`` is a factor pulled out of the subtree (1 where none can be)."""
    op, f, v, args = node
    if op == CONST:
        return 1.0, node
    if op == VAR:
        if x_shift is not None and x_shift[f] != 0:  # the search's feature is (x - m) / s
            return float(x_factor[f]), (SUB, 0, 0.0, (node, _const(x_shift[f])))
        return float(x_factor[f]), node
    if op in (ADD, SUB):
        (sa, a), (sb, b) = _lifted(args[0], x_factor, x_shift, weights), _lifted(args[1], x_factor, x_shift, weights)
        if sa == sb:
            return sa, (op, f, v, (a, b))
        # factor out the side whose ratio the other side absorbs more cheaply
        if _cost(b, weights) <= _cost(a, weights):
            return sa, (op, f, v, (a, _scaled(b, sb / sa, weights)))
        return sb, (op, f, v, (_scaled(a, sa / sb, weights), b))
    if op == MUL:
        (sa, a), (sb, b) = _lifted(args[0], x_factor, x_shift, weights), _lifted(args[1], x_factor, x_shift, weights)
        return sa * sb, (op, f, v, (a, b))
    if op == DIV:
        (sa, a), (sb, b) = _lifted(args[0], x_factor, x_shift, weights), _lifted(args[1], x_factor, x_shift, weights)
        return sa / sb, (op, f, v, (a, b))
    if op == NEG:
        sa, a = _lifted(args[0], x_factor, x_shift, weights)
        return sa, (op, f, v, (a,))
    if op == POW:  # both sides carry their factor into the tree
        (sa, a), (sb, b) = _lifted(args[0], x_factor, x_shift, weights), _lifted(args[1], x_factor, x_shift, weights)
        return 1.0, (op, f, v, (_scaled(a, sa, weights), _scaled(b, sb, weights)))
    sa, a = _lifted(args[0], x_factor, x_shift, weights)
    if op == SQUARE:
        return sa * sa, (op, f, v, (a,))
    if op == CUBE:
        return sa * sa * sa, (op, f, v, (a,))
    if op == SQRT and sa > 0:
        return float(np.sqrt(sa)), (op, f, v, (a,))
    if op == ABS:
        return abs(sa), (op, f, v, (a,))
    return 1.0, (op, f, v, (_scaled(a, sa, weights),))  # exp log sin cos (and sqrt of a negative factor)


def _size(node, weights) -> int:
    """Complexity of the tree ``node``."""
    return int(weights[node[0]]) + sum(_size(a, weights) for a in node[3])


def _parts(node, weights):
    """``(tree, c)`` with ``tree + c`` equal to ``node`` (``tree`` None for a constant): the
    constant terms of ``node``'s affine part (sums, negations, products and quotients by
    constants) gathered into ``c``, every other subtree folded on its own (:func:`_folded`)."""
    op, f, v, args = node
    if op == CONST:
        return None, v
    if op in (ADD, SUB):
        (a, ca), (b, cb) = _parts(args[0], weights), _parts(args[1], weights)
        sign = 1.0 if op == ADD else -1.0
        if b is None:
            return a, ca + sign * cb
        if a is None:  # c - x: the constant stays where it is
            return ((op, f, v, (_const(ca), b)), sign * cb) if op == SUB else (b, ca + cb)
        return (op, f, v, (a, b)), ca + sign * cb
    if op == NEG:
        a, ca = _parts(args[0], weights)
        return (None if a is None else (op, f, v, (a,))), -ca
    if op in (MUL, DIV):
        (a, ca), (b, cb) = _parts(args[0], weights), _parts(args[1], weights)
        if b is None and cb != 0.0 and np.isfinite(cb):  # a * k, a / k
            k = cb if op == MUL else 1.0 / cb
            return (None if a is None else (op, f, v, (a, _const(cb)))), ca * k
        if a is None and op == MUL:  # k * b
            return (op, f, v, (_const(ca), b)), cb * ca
    return (op, f, v, tuple(_folded(a, weights) for a in args)), 0.0


def _folded(node, weights):
    """``node`` with the constant terms of its affine part gathered into one (``c*(x + m) + d``
    is ``c*x + (c*m + d)``), the same inside every function's argument, where that is no more
    complex: the shift of a feature (:attr:`Units.x_shift`) costs tokens only where it does not
    enter linearly."""
    if node[0] == CONST or not node[3]:
        return node
    tree, c = _parts(node, weights)
    if tree is None or not np.isfinite(c):
        return node
    new = tree if c == 0.0 else (ADD, 0, 0.0, (tree, _const(c)))
    return new if _size(new, weights) < _size(node, weights) else node


def _factors(node):
    """``(c, num, den)`` with ``node`` equal to ``c * prod(num) / prod(den)``: the constants of a
    chain of products, quotients and negations gathered into ``c``, also from inside a square, a
    cube or a square root (``(c x)^2`` is ``c^2 x^2``; ``sqrt(c x)`` is ``sqrt(c) sqrt(x)`` for
    ``c > 0``); ``num`` and ``den`` are the other factors."""
    op, f, v, args = node
    if op == CONST:
        return v, [], []
    if op in (MUL, DIV):
        (ca, na, da), (cb, nb, db) = _factors(args[0]), _factors(args[1])
        return (ca * cb, na + nb, da + db) if op == MUL else (ca / cb, na + db, da + nb)
    if op == NEG:
        ca, na, da = _factors(args[0])
        return -ca, na, da
    if op in (SQUARE, CUBE, SQRT):
        ca, na, da = _factors(args[0])
        if op != SQRT or ca > 0:
            rest = _product(1.0, na, da)
            outer = ca * ca if op == SQUARE else ca * ca * ca if op == CUBE else float(np.sqrt(ca))
            return (outer, [], []) if rest is None else (outer, [(op, f, v, (rest,))], [])
    return 1.0, [node], []


def _product(c, num, den):
    """The tree of ``c * prod(num) / prod(den)``: the coefficient first (none when 1), the
    factors in their order; None for ``c`` 1 and no factor."""
    def chain(factors):
        out = None
        for a in factors:
            out = a if out is None else (MUL, 0, 0.0, (out, a))
        return out

    top, bottom = chain(num), chain(den)
    if top is None:
        top = None if c == 1.0 and bottom is None else _const(c)
    elif c != 1.0:
        top = (MUL, 0, 0.0, (_const(c), top))
    if bottom is None:
        return top
    return (DIV, 0, 0.0, (_const(1.0) if top is None else top, bottom))


def _chain_constants(node, inside=False):
    """``(n, k)``: the constants of ``node``'s chain of products, quotients, negations and
    powers (:func:`_factors`), and how many of them sit inside a power."""
    op, _, _, args = node
    if op == CONST:
        return 1, int(inside)
    if op in (MUL, DIV, NEG, SQUARE, CUBE, SQRT):
        power = inside or op in (SQUARE, CUBE, SQRT)
        counts = [_chain_constants(a, power) for a in args]
        return sum(n for n, _ in counts), sum(k for _, k in counts)
    return 0, 0


def _canonical(node, weights):
    """``node`` written with one coefficient per product: the constants of each chain of
    products and quotients multiplied into one, taken out of squares, cubes and square roots
    (``10 / (x * -5066) * -2.5e5`` is ``493.5 / x``, ``(-1.88 * x)^2`` is ``3.53 * x^2``), where
    that adds no token and the coefficient is finite and nonzero; the same value up to rounding."""
    op, f, v, args = node
    if not args:
        return node
    children = tuple(_canonical(a, weights) for a in args)
    if any(new is not old for new, old in zip(children, args)):
        node = (op, f, v, children)
    if op not in (MUL, DIV, NEG, SQUARE, CUBE, SQRT):
        return node
    c, num, den = _factors(node)
    new = _product(c, num, den)
    if new is None or not (np.isfinite(c) and c != 0.0):
        return node
    before = (_size(node, weights), *_chain_constants(node))
    after = (_size(new, weights), *_chain_constants(new))
    return new if after < before else node


def _written(ops, feats, vals, weights):
    """``(ops, feats, vals)`` simplified (:func:`_simplified`), then in :func:`_canonical` form."""
    ops, feats, vals = _simplified(ops, feats, vals)
    return _arrays(_canonical(_nest(ops, feats, vals), weights))


def to_user_units(ops, feats, vals, units: Units, weights):
    """``(ops, feats, vals)`` of the expression found on the search's data, written for the
    user's: the same value as ``y_scale * f((X - x_shift) / x_scale)`` (up to rounding), the
    constants rescaled and the shifts subtracted from the features, then simplified, one
    coefficient per product (:func:`_canonical`; the search's own formula where it already is)."""
    if units.is_identity:
        tree = _nest(ops, feats, vals)
        new = _canonical(tree, weights)
        return (ops, feats, vals) if new is tree else _arrays(new)
    s, tree = _lifted(_nest(ops, feats, vals), 1.0 / units.x_scale, units.x_shift, weights)
    tree = _scaled(tree, s * units.y_scale, weights)
    # (simplified: (x - m1) + c folds the shift into c)
    return _written(*_arrays(tree if units.x_shift is None else _folded(tree, weights)), weights)


#: Generic units of :func:`unit_free_complexity`: feature ``j`` read as ``x_j / GENERIC_SCALE **
#: (j + 1)``, the target as ``y * GENERIC_SCALE``. Each feature in units of its own (PMLB
#: standardises each feature on its own); irrational and unlike any constant a search writes, so
#: that no coefficient of a formula becomes 1 in them (any such value gives the same counts; this
#: is ``sqrt(2) + 0.1``). Not one scale for all features: ``(x0 + x1 + x3) * c`` would then count
#: one coefficient, a saving as unit-bound as an elided 1 (standardised Friedman #1 at tau .9,
#: quick suite: such linear rows chosen, NQL 0.0161 against 0.0069). Scales, not shifts: a feature's origin is
#: often its own (counts, prices, pixel values), and the search shifts signed features to start
#: near 0 (:class:`Units`) while a shift that enters linearly is folded away; charging every
#: feature a generic origin made products and differences of features dear and cost the 24
#: non-Friedman PMLB sets 3% of NQL at tau .5 (0.0443 -> 0.0456, paper budget, 5 folds), and a
#: generic origin of the target made every constant term free (at noise 0.1 on the 60 AI Feynman
#: problems ``1.004 g m z + 0.087`` then replaced ``g m z``: 25 solved -> 14).
GENERIC_SCALE = 1.5142135623730951


def unit_free_complexity(ops, feats, vals, weights) -> int:
    """Complexity of the expression written for features and target in generic units (each
    rescaled, :data:`GENERIC_SCALE`) as :func:`to_user_units` writes it, shifts that enter
    linearly folded: every coefficient the expression's terms need in general is counted, also
    where the user's units let it drop (a coefficient of 1, two features sharing one). It does not change when a feature or the
    target is rescaled: ``x4 + 3 + sin(3 x0 x1)`` and ``1.44 x4 + 5 + sin(0.26 x0 x1)`` both
    count as ``c1 x4 + c2 + sin(c3 x0 x1) * c4``, 16 tokens."""
    ops, feats, vals = _simplified(np.asarray(ops), np.asarray(feats), np.asarray(vals, dtype=float))
    j = np.arange(1, int(feats[ops == VAR].max()) + 2 if np.any(ops == VAR) else 1, dtype=float)
    s, tree = _lifted(_nest(ops, feats, vals), GENERIC_SCALE ** -j, None, weights)
    tree = _folded(_scaled(tree, s * GENERIC_SCALE, weights), weights)  # (x - m) * c + d counts as x * c + d
    return int(np.asarray(weights)[_written(*_arrays(tree), weights)[0]].sum())


def _arrays(tree):
    """``(ops, feats, vals)`` of a nested tree."""
    flat = _flatten(tree, [])
    return (np.array([n[0] for n in flat], dtype=np.int64), np.array([n[1] for n in flat], dtype=np.int64),
            np.array([n[2] for n in flat], dtype=np.float64))


def _simplified(ops, feats, vals):
    """``(ops, feats, vals)`` through :func:`simplify_tree`."""
    out = tuple(np.empty(len(ops) + 2, dtype=a.dtype) for a in (ops, feats, vals))
    m = simplify_tree(ops, feats, vals, len(ops), *out)
    return tuple(a[:m].copy() for a in out)
