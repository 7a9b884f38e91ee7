"""Physical dimensions of the features and the target, and the dimensional consistency of an
expression: the optional prior of ``SymbolicQuantileRegressor(feature_units=..., target_units=...)``.

A unit is a product of powers of base units: a string (``"m^1 * s^(-1)"``, ``"kg"``, ``"m/s^2"``,
``"m**(1/2)"``; ``""``, ``"1"`` or ``"dimensionless"`` for none) or a mapping ``{"m": 1, "s": -1}``.
Base units are names and nothing more: ``T`` is whatever the user means by it (the AI Feynman
metadata's temperature), and two names are two independent dimensions. :func:`parse_unit` reads one
unit into a :data:`Dimension` (base name -> exponent, a :class:`~fractions.Fraction`);
:func:`feature_dimensions` reads the estimator's parameters.

:func:`is_consistent` decides whether a postfix expression (``_expressions``' flat arrays) is
dimensionally consistent. The rules:

- a feature has its unit's dimension; ``+`` and ``-`` need operands of one dimension; ``*`` and
  ``/`` add and subtract dimensions; ``square``, ``cube`` and ``sqrt`` scale them by 2, 3 and 1/2;
  ``pow`` by its exponent when that is a number that is not fitted (below), else base and exponent
  must both be dimensionless; ``exp``, ``log``, ``sin`` and ``cos`` need a dimensionless argument
  and are dimensionless; ``abs`` and ``neg`` keep it;
- a *fitted* constant may carry any dimension (its own unknown: ``c*x`` is consistent with any
  target, and so is ``x + c``), a *simple* constant (one the search made an integer, a half or
  a multiple of pi, :func:`~parsimony.symbolic._search.snap_values`: exactly the constants
  :func:`~parsimony.symbolic._search.fitted_constants` does not count as fitted) is a pure number.
  The search makes a constant simple only where the data do not tell it from its fitted value, so
  a simple constant is the law's number, not a quantity: ``1 - v^2/c^2`` is consistent with ``v``
  and ``c`` velocities, ``1 - v/c^2`` is not, whatever constant multiplies it. Zero is zero in
  every unit (the search writes ``-p E cos(t)`` as ``0 - p*E*cos(t)``);
- with a target unit the expression's dimension must be the target's.

Every unknown enters the dimensions linearly with exponents fixed by the expression, and each
base unit's exponents obey the same equations, so the expression is consistent exactly when one
linear system ``A U = R`` (a row per constraint, a column of ``U`` per base unit) has a solution:
:func:`is_consistent` solves it exactly in rationals (``rank A = rank [A | R]``).

What the rule cannot see: a sum of logarithms ``log(x) - log(y)`` is ``log(x/y)`` but each term
needs its own dimensionless argument (flagged), and a simple constant that is a quantity (an
offset of 1 on a dimensional feature) is flagged: a prior, not a proof.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from ._expressions import (
    ABS, ADD, ARITY, CONST, COS, CUBE, DIV, EXP, LOG, MUL, NEG, POW, SIN, SQRT, SQUARE, SUB, VAR,
)

#: A dimension: base unit name -> nonzero exponent (an empty dict is dimensionless).
Dimension = dict
_DIMENSIONLESS = ("", "1", "dimensionless", "none")
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<num>\d+(?:\.\d*)?|\.\d+)|(?P<op>\*\*|\^|\*|/|\(|\)|-|\+))")


def parse_unit(unit, name: str = "unit") -> Dimension:
    """The :data:`Dimension` of ``unit``: a string such as ``"m^1 * s^(-1)"``, ``"kg"``, ``"m/s^2"``
    or ``"kg*m**2/s**2"`` (exponents integers, decimals or ``(p/q)``; ``""``, ``"1"`` or
    ``"dimensionless"`` for none), or a mapping ``{"m": 1, "s": -1}``. A ValueError or TypeError
    names ``name`` when ``unit`` is neither."""
    if isinstance(unit, Mapping):
        out = {}
        for base, power in unit.items():
            if not isinstance(base, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", base):
                raise ValueError(f"{name}: a base unit must be a name such as 'm' or 'kg', got {base!r}")
            if (isinstance(power, bool) or not isinstance(power, (int, float, Fraction, np.integer, np.floating))
                    or not np.isfinite(float(power))):
                raise ValueError(f"{name}: the exponent of {base!r} must be a finite number, got {power!r}")
            out[base] = out.get(base, Fraction(0)) + _fraction(power)
        return {b: p for b, p in out.items() if p != 0}
    if not isinstance(unit, str):
        raise TypeError(f"{name} must be a unit string such as 'm^1 * s^(-1)' or a mapping such as "
                        f"{{'m': 1, 's': -1}}, got {unit!r}")
    if unit.strip().lower() in _DIMENSIONLESS:
        return {}
    tokens = _tokens(unit, name)
    out, pos, sign = {}, 0, 1
    while pos < len(tokens):
        kind, text = tokens[pos]
        if kind == "num" and text == "1" and (pos + 1 == len(tokens) or tokens[pos + 1] in (("op", "*"), ("op", "/"))):
            pos += 1  # "1/s"
        elif kind == "name":
            power, pos = _exponent(tokens, pos + 1, unit, name)
            out[text] = out.get(text, Fraction(0)) + sign * power
        else:
            raise ValueError(f"{name}: cannot read the unit {unit!r} (expected a base unit name at {text!r})")
        if pos < len(tokens):
            if tokens[pos] not in (("op", "*"), ("op", "/")):
                raise ValueError(f"{name}: cannot read the unit {unit!r} (expected '*' or '/' at {tokens[pos][1]!r})")
            sign = 1 if tokens[pos][1] == "*" else -1
            pos += 1
            if pos == len(tokens):
                raise ValueError(f"{name}: cannot read the unit {unit!r} (it ends with an operator)")
    return {b: p for b, p in out.items() if p != 0}


def _fraction(value) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(float(value)).limit_denominator(1000)


def _tokens(unit: str, name: str) -> list:
    out, pos = [], 0
    while pos < len(unit):
        m = _TOKEN.match(unit, pos)
        if m is None or m.end() == pos:
            if unit[pos:].strip() == "":
                break
            raise ValueError(f"{name}: cannot read the unit {unit!r} at {unit[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _exponent(tokens, pos, unit, name) -> tuple:
    """The exponent after a base unit (1 when none) and the position after it."""
    if pos >= len(tokens) or tokens[pos] not in (("op", "^"), ("op", "**")):
        return Fraction(1), pos
    pos += 1
    depth = 0
    if pos < len(tokens) and tokens[pos] == ("op", "("):
        depth, pos = 1, pos + 1
    sign = 1
    if pos < len(tokens) and tokens[pos] in (("op", "-"), ("op", "+")):
        sign, pos = (-1 if tokens[pos][1] == "-" else 1), pos + 1
    if pos >= len(tokens) or tokens[pos][0] != "num":
        raise ValueError(f"{name}: cannot read the unit {unit!r} (an exponent must be a number)")
    value, pos = Fraction(tokens[pos][1]), pos + 1
    if depth and pos + 1 < len(tokens) and tokens[pos] == ("op", "/") and tokens[pos + 1][0] == "num":
        value, pos = value / Fraction(tokens[pos + 1][1]), pos + 2
    if depth:
        if pos >= len(tokens) or tokens[pos] != ("op", ")"):
            raise ValueError(f"{name}: cannot read the unit {unit!r} (an unclosed parenthesis)")
        pos += 1
    return sign * value, pos


def feature_dimensions(feature_units, n_features: int, feature_names) -> list:
    """One :data:`Dimension` per feature from ``feature_units``: a sequence of ``n_features`` units
    (:func:`parse_unit`), or a mapping ``feature name -> unit`` naming every feature of
    ``feature_names``. Errors name ``feature_units`` and the feature."""
    names = [str(n) for n in feature_names]
    if isinstance(feature_units, Mapping):
        unknown = [k for k in feature_units if str(k) not in names]
        missing = [n for n in names if n not in {str(k) for k in feature_units}]
        if unknown or missing:
            raise ValueError(f"feature_units keyed by name must give one unit per feature {names}: "
                             + (f"unknown {unknown}" if unknown else f"missing {missing}"))
        units = {str(k): v for k, v in feature_units.items()}
        return [parse_unit(units[n], f"feature_units[{n!r}]") for n in names]
    if isinstance(feature_units, str) or not hasattr(feature_units, "__len__"):
        raise TypeError(f"feature_units must be a sequence of units (one per feature) or a dict keyed by feature "
                        f"name, got {feature_units!r}")
    if len(feature_units) != n_features:
        raise ValueError(f"feature_units must give one unit per feature ({n_features}), got {len(feature_units)}")
    return [parse_unit(u, f"feature_units[{j}] ({names[j]!r})") for j, u in enumerate(feature_units)]


def check_units_parameter(value, name):
    """The parameter table's check of ``feature_units`` / ``target_units`` (types and syntax; the
    number of features is checked in ``fit``)."""
    if name == "target_units":
        parse_unit(value, name)
        return value
    items = value.values() if isinstance(value, Mapping) else value
    if isinstance(value, str) or not hasattr(items, "__iter__"):
        raise TypeError(f"{name} must be a sequence of units (one per feature) or a dict keyed by feature name, "
                        f"got {value!r}")
    for j, unit in enumerate(items):
        parse_unit(unit, f"{name}[{j}]")
    return value


def is_consistent(ops, feats, vals, features: list, target: Dimension | None, fitted) -> bool:
    """Whether the postfix expression ``(ops, feats, vals)`` is dimensionally consistent with the
    features' dimensions ``features`` (one :data:`Dimension` per feature) and, when not None, the
    ``target``'s (see the module's rules). ``fitted(value) -> bool`` tells a fitted constant (any
    dimension) from a simple one (a pure number)."""
    return constant_dimensions(ops, feats, vals, features, target, fitted) is not None


def constant_dimensions(ops, feats, vals, features: list, target: Dimension | None, fitted) -> list | None:
    """A dimension for each fitted constant of ``(ops, feats, vals)`` (in postfix order, a
    :data:`Dimension` each) under which the expression is consistent (:func:`is_consistent`), or
    None when there is none."""
    bases = sorted({b for d in features for b in d} | set(target or {}))
    zero = tuple(Fraction(0) for _ in bases)
    vec = [tuple(Fraction(d.get(b, 0)) for b in bases) for d in features]
    rows: list = []  # constraints: (coefficients {unknown: c}, right-hand side) meaning sum c u = rhs
    unknowns = 0
    stack: list = []  # (known part, {unknown: coefficient}, number or None)

    def equal(a, b):
        coeffs = {k: a[1].get(k, 0) - b[1].get(k, 0) for k in set(a[1]) | set(b[1])}
        rows.append(({k: c for k, c in coeffs.items() if c != 0}, tuple(y - x for x, y in zip(a[0], b[0]))))

    def scaled(a, p):
        return (tuple(p * x for x in a[0]), {k: p * c for k, c in a[1].items()}, None)

    def free():
        nonlocal unknowns
        unknowns += 1
        return (zero, {unknowns - 1: Fraction(1)}, None)

    for k in range(len(ops)):
        op = int(ops[k])
        if op == CONST:
            v = float(vals[k])
            stack.append(free() if v == 0 or fitted(v) else (zero, {}, Fraction(v) if np.isfinite(v) else None))
        elif op == VAR:
            stack.append((vec[int(feats[k])], {}, None))
        elif ARITY[op] == 1:
            a = stack.pop()
            if op in (SQUARE, CUBE, SQRT):
                stack.append(scaled(a, {SQUARE: Fraction(2), CUBE: Fraction(3), SQRT: Fraction(1, 2)}[op]))
            elif op in (EXP, LOG, SIN, COS):
                equal(a, (zero, {}, None))
                stack.append((zero, {}, None))
            elif op in (ABS, NEG):
                stack.append((a[0], a[1], None))
            else:
                raise ValueError(f"unknown opcode {op}")
        else:
            b, a = stack.pop(), stack.pop()
            if op in (ADD, SUB):
                equal(a, b)
                stack.append((a[0], a[1], None))
            elif op in (MUL, DIV):
                s = 1 if op == MUL else -1
                coeffs = dict(a[1])
                for key, c in b[1].items():
                    coeffs[key] = coeffs.get(key, 0) + s * c
                stack.append((tuple(x + s * y for x, y in zip(a[0], b[0])), coeffs, None))
            elif op == POW:
                if b[2] is not None:
                    stack.append(scaled(a, b[2]))
                else:
                    equal(a, (zero, {}, None))
                    equal(b, (zero, {}, None))
                    stack.append((zero, {}, None))
            else:
                raise ValueError(f"unknown opcode {op}")
    root = stack.pop()
    if target is not None:
        equal(root, (tuple(Fraction(target.get(b, 0)) for b in bases), {}, None))
    solution = _solve(rows, unknowns, len(bases))
    if solution is None:
        return None
    return [{b: p for b, p in zip(bases, u) if p != 0} for u in solution]


def _solve(rows, unknowns: int, n_bases: int) -> list | None:
    """A solution ``u`` (one exponent vector per unknown) of ``sum_k c_k u_k = rhs`` in every row,
    or None: Gaussian elimination in rationals on the augmented matrix (reduced row echelon form),
    no solution when a row reduces to ``0 = nonzero``; the unknowns without a pivot are 0."""
    matrix = [[c.get(k, Fraction(0)) for k in range(unknowns)] + list(rhs) for c, rhs in rows]
    pivot_row = 0
    for col in range(unknowns):
        pivot = next((r for r in range(pivot_row, len(matrix)) if matrix[r][col] != 0), None)
        if pivot is None:
            continue
        matrix[pivot_row], matrix[pivot] = matrix[pivot], matrix[pivot_row]
        head = matrix[pivot_row]
        for r in range(len(matrix)):
            if r != pivot_row and matrix[r][col] != 0:
                f = matrix[r][col] / head[col]
                matrix[r] = [x - f * y for x, y in zip(matrix[r], head)]
        pivot_row += 1
    if not all(any(x != 0 for x in row[:unknowns]) or all(x == 0 for x in row[unknowns:]) for row in matrix):
        return None
    solution = [[Fraction(0)] * n_bases for _ in range(unknowns)]
    for row in matrix[:pivot_row]:
        col = next(k for k in range(unknowns) if row[k] != 0)
        solution[col] = [x / row[col] for x in row[unknowns:]]
    return solution
