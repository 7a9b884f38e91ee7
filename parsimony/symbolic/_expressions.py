"""Flat-array expressions: opcodes, operator tables and printing to strings and sympy.

An expression is a tree stored in **postfix** order as three parallel arrays of length
``length``: ``ops`` (opcode per node), ``feats`` (feature index of a ``VAR`` node) and ``vals``
(value of a ``CONST`` node). ``x1*x2 + cos(x3)`` is ``[VAR 1, VAR 2, MUL, VAR 3, COS, ADD]``.
A node's subtree is the contiguous slice ending at the node, so mutations are array splices.
"""

from __future__ import annotations

import math

import numpy as np

from ..tokens import TOKEN_COMPLEXITY  # noqa: F401 (its importers read it here too)
from ..tokens import BINARY_OPERATORS, UNARY_OPERATORS, canonical_operator, token_weights

# opcodes (compile-time constants for the numba kernels)
CONST, VAR = 0, 1
ADD, SUB, MUL, DIV, POW = 2, 3, 4, 5, 6
SQUARE, CUBE, SQRT, EXP, LOG, SIN, COS, ABS, NEG = 7, 8, 9, 10, 11, 12, 13, 14, 15
N_OPCODES = 16
FIRST_UNARY = SQUARE

OP_NAMES = (
    "constant", "feature", "add", "sub", "mul", "div", "pow",
    "square", "cube", "sqrt", "exp", "log", "sin", "cos", "abs", "neg",
)
OPCODE = {name: code for code, name in enumerate(OP_NAMES)}
ARITY = np.array([0, 0, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=np.int64)

#: The operators of the SQR paper's Table 1 (the default search space).
DEFAULT_OPERATORS = ("add", "sub", "mul", "div", "square", "sqrt", "exp", "log", "sin", "cos")


#: The denominators ``q`` of the values a fitted constant may be made
#: (:func:`~parsimony.symbolic._search.snap_values`): an integer, then a half
#: (``exp(-0.5014*x**2)`` fitted to 1% noise is ``exp(-x**2/2)``; a third would print as 0.333,
#: which SRBench's 3-decimal criterion does not take for 1/3). Against
#: integers only (``benchmarks/sqr_recovery.py --noise 0.01 0.1 --jobs 1``): the 60 37 / 29 at
#: 0.01 / 0.1 with both; the other 59 34 -> 35 at 0.01 (I.6.2's Gaussian), 27 at 0.1 with both.
SNAP_DENOMINATORS = (1, 2)
#: The powers ``j`` of pi a simple constant may carry, after none (``p/q pi^j``): the laws of
#: physics write 2 pi, 4 pi and pi^2 where a constant stands (``exp(h*omega/(2*pi*kb*T))``),
#: which fit as ``0.159154943...`` and, rounded to SRBench's 3 decimals inside a function, are no
#: longer the law. ``benchmarks/sqr_recovery.py --noise 0 0.01 0.1 --jobs 1`` (offered on exact
#: fits only, :data:`~parsimony.symbolic._search.SNAP_PI_MULTIPLE`): the 60 40 / 37 / 34 -> 42 /
#: 37 / 34 (I_41_16, III_4_33), the other 59 39 / 37 / 28 -> 41 / 37 / 28.
SNAP_PI_POWERS = (0, 1, -1, 2, -2)


def simple_multiples(value: float) -> list:
    """``(p, q, j, p/q * pi^j)``: the nearest multiple of ``pi^j / q`` to ``value`` for each ``q``
    of :data:`SNAP_DENOMINATORS` and ``j`` of :data:`SNAP_PI_POWERS`, in that order (no ``p``
    when ``value`` is not finite)."""
    out = []
    if not math.isfinite(value):
        return out
    for j, scale in _PI_POWERS:
        for q in SNAP_DENOMINATORS:
            x = value * q / scale
            p = math.copysign(round(x), x) if math.isfinite(x) else x  # (numpy's rint: half to even, -0.0 kept)
            if abs(p) < 2**52:
                out.append((int(p), q, j, p / q * scale))
    return out


_PI_POWERS = tuple((j, math.pi**j) for j in SNAP_PI_POWERS)


def operator_codes(operators) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Validate an operator list; return (binary opcodes, unary opcodes, canonical names)."""
    if isinstance(operators, str):
        operators = [operators]
    names = []
    for op in operators:
        key = canonical_operator(op)
        if key not in names:
            names.append(key)
    binary = np.array([OPCODE[n] for n in names if n in BINARY_OPERATORS], dtype=np.int64)
    unary = np.array([OPCODE[n] for n in names if n in UNARY_OPERATORS], dtype=np.int64)
    if binary.size == 0:
        raise ValueError("operators must contain at least one binary operator (add, sub, mul, div, pow)")
    return binary, unary, tuple(names)


def complexity_weights(complexity_of_operators) -> np.ndarray:
    """Per-opcode integer token weights of the table :func:`token_weights` makes of
    ``complexity_of_operators``."""
    weights = np.ones(N_OPCODES, dtype=np.int64)
    for token, value in token_weights(complexity_of_operators, "complexity_of_operators").items():
        weights[OPCODE[token]] = value
    return weights


# ------------------------------------------------------------------------------------ printing
_INFIX = {ADD: ("+", 1), SUB: ("-", 1), MUL: ("*", 2), DIV: ("/", 2)}
_FUNC = {SQRT: "sqrt", EXP: "exp", LOG: "log", SIN: "sin", COS: "cos", ABS: "abs"}
_ATOM = 9


def _format_constant(value: float, precision: int) -> tuple[str, int]:
    text = f"{value:.{precision}g}"
    return text, (3 if text.startswith("-") else _ATOM)


def to_string(ops, feats, vals, length, feature_names, precision: int = 5) -> str:
    """Infix string of a postfix expression, with only the parentheses precedence needs; a
    feature name that is not an identifier is quoted in backticks."""
    stack: list[tuple[str, int]] = []
    for k in range(int(length)):
        op = int(ops[k])
        if op == CONST:
            stack.append(_format_constant(float(vals[k]), precision))
        elif op == VAR:
            name = str(feature_names[int(feats[k])])
            stack.append((name if name.isidentifier() else f"`{name}`", _ATOM))  # `x-1`, `dose mg`
        elif ARITY[op] == 1:
            text, prec = stack.pop()
            if op in _FUNC:
                stack.append((f"{_FUNC[op]}({text})", _ATOM))
            elif op == NEG and _is_negative_number(text):
                stack.append((text[1:], _ATOM))  # -(-0.035) prints as 0.035
            elif op == NEG:
                # a negated operand that prints with a leading minus keeps its parentheses: -(-x)
                stack.append((f"-{_wrap(text, prec, _ATOM if text.startswith('-') else 3)}", 3))
            else:  # square, cube
                power = 2 if op == SQUARE else 3
                stack.append((f"{_wrap(text, prec, _ATOM)}^{power}", 4))
        else:
            (rt, rp), (lt, lp) = stack.pop(), stack.pop()
            if op == POW:
                stack.append((f"{_wrap(lt, lp, _ATOM)}^{_wrap(rt, rp, _ATOM)}", 4))
                continue
            symbol, prec = _INFIX[op]
            if op in (ADD, SUB) and rt.startswith("-") and (op == ADD or rp > prec):
                # x + -2 -> x - 2, x + -2 * y + z -> x - 2 * y + z, x - -y -> x + y; a right
                # operand of - that is a sum stays in parentheses
                symbol, rt, rp = ("-" if op == ADD else "+"), rt[1:], _ATOM
            left = _wrap(lt, lp, prec)
            # right operand of - and / needs parentheses at equal precedence
            right = _wrap(rt, rp, prec + 1 if op in (SUB, DIV) else prec)
            stack.append((f"{left} {symbol} {right}", prec))
    return stack[-1][0]


def _is_negative_number(text: str) -> bool:
    try:
        return text.startswith("-") and float(text) <= 0
    except ValueError:
        return False


def _wrap(text: str, prec: int, needed: int) -> str:
    return text if prec >= needed else f"({text})"


def to_sympy(ops, feats, vals, length, symbols, precision: int | None = None):
    """sympy expression of a postfix expression (constants rounded to ``precision`` digits; an
    constant the search snapped is exact, an ``Integer``, a ``Rational`` half or a multiple of
    ``pi``, so that ``sqrt(1 - x)``, ``sin(x/2)`` and ``exp(x/(2*pi))`` cancel with the truth),
    written in :func:`~parsimony.symbolic._sympy_names.canonical` form (the same function, its
    constants as short as an exact rewriting makes them)."""
    import sympy

    from ._sympy_names import canonical

    stack = []
    for k in range(int(length)):
        op = int(ops[k])
        if op == CONST:
            v = float(vals[k])
            v = v if precision is None else float(f"{v:.{precision}g}")
            stack.append(_exact_number(v))
        elif op == VAR:
            stack.append(symbols[int(feats[k])])
        elif ARITY[op] == 1:
            a = stack.pop()
            stack.append({
                SQUARE: lambda t: t**2, CUBE: lambda t: t**3, SQRT: sympy.sqrt, EXP: sympy.exp,
                LOG: sympy.log, SIN: sympy.sin, COS: sympy.cos, ABS: sympy.Abs, NEG: lambda t: -t,
            }[op](a))
        else:
            b, a = stack.pop(), stack.pop()
            stack.append({
                ADD: lambda s, t: s + t, SUB: lambda s, t: s - t, MUL: lambda s, t: s * t,
                DIV: lambda s, t: s / t, POW: lambda s, t: s**t,
            }[op](a, b))
    return canonical(stack[-1])


def _exact_number(v: float):
    """``v`` as sympy: ``p/q * pi^j`` exactly when it is one of :func:`simple_multiples` (the values
    the search snaps constants to), else a ``Float``."""
    import sympy

    for p, q, j, simple in simple_multiples(v):
        if simple == v:
            return sympy.Rational(p, q) * sympy.pi**j
    return sympy.Float(v)


def from_tokens(tokens, n_features: int | None = None):
    """Build ``(ops, feats, vals)`` from postfix tokens: numbers, ``"x3"`` and operator names.

    A convenience for tests and examples: ``from_tokens(["x1", "x2", "mul", "x3", "cos", "add"])``.
    """
    ops, feats, vals = [], [], []
    depth = 0
    for tok in tokens:
        if isinstance(tok, (int, float, np.floating, np.integer)) and not isinstance(tok, bool):
            ops.append(CONST), feats.append(0), vals.append(float(tok))
            depth += 1
        elif isinstance(tok, str) and tok.startswith("x") and tok[1:].isdigit():
            j = int(tok[1:])
            if n_features is not None and j >= n_features:
                raise ValueError(f"feature {tok} out of range for {n_features} features")
            ops.append(VAR), feats.append(j), vals.append(0.0)
            depth += 1
        else:
            code = OPCODE[canonical_operator(tok)]
            if depth < ARITY[code]:
                raise ValueError(f"operator {tok!r} lacks operands in the postfix sequence")
            depth -= ARITY[code] - 1
            ops.append(code), feats.append(0), vals.append(0.0)
    if depth != 1:
        raise ValueError("the postfix sequence does not describe a single expression")
    return np.array(ops, dtype=np.int64), np.array(feats, dtype=np.int64), np.array(vals, dtype=np.float64)
