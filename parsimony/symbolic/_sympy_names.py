"""sympy helpers for printing equations: one symbol per feature name, constants at a display precision.

Imported only when an equation is turned into sympy (sympy is slow to import).
"""

from __future__ import annotations

import math

import sympy

_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%", "&": r"\&",
                  "#": r"\#", "$": r"\$", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


class QuotedSymbol(sympy.Symbol):
    """A feature whose name is not an identifier (``dose mg``, ``x-1``): printed as one symbol,
    in backticks as in the equation strings, and as upright text in LaTeX."""

    def _sympystr(self, printer):
        return f"`{self.name}`"

    def _latex(self, printer):
        return r"\text{" + "".join(_LATEX_ESCAPES.get(c, c) for c in self.name) + "}"


def feature_symbol(name) -> sympy.Symbol:
    """The sympy symbol of a feature: a plain Symbol for an identifier, else a ``QuotedSymbol``."""
    name = str(name)
    return sympy.Symbol(name) if name.isidentifier() else QuotedSymbol(name)


class DisplayFloat(sympy.Float):
    """A Float holding a rounded constant at full float precision that prints as its short text."""

    def _text(self):
        value = float(self)
        return repr(int(value)) + ".0" if value.is_integer() and abs(value) < 1e15 else repr(value)

    def _sympystr(self, printer):
        return self._text()

    def _latex(self, printer):
        mantissa, _, exponent = self._text().partition("e")
        return mantissa if not exponent else rf"{mantissa} \cdot 10^{{{int(exponent)}}}"


def display_float(value: float, precision: int) -> sympy.Float:
    """``value`` rounded to ``precision`` significant digits, as a Float that prints those digits
    (``0.12346``, not ``0.123460000000000``) and keeps the rounded value exactly."""
    return DisplayFloat(float(f"{float(value):.{precision}g}"))


def round_constants(expr, precision: int):
    """``expr`` with every Float rounded for display by ``display_float``."""
    return expr.xreplace({n: display_float(float(n), precision) for n in expr.atoms(sympy.Float)})


#: A constant is written with the fewest significant digits that keep it within this share of
#: its value (:func:`_digits`): fitted constants of exact data carry errors near 1e-10. It is also
#: how far from a multiple of pi/2 a cosine's shift may be and still be written away (an inexact
#: rewrite by that much). ``benchmarks/sqr_canonical_constants.py --tolerance T`` (400 ratio laws
#: with 1-2 digit constants, scaled and given a relative fitting error eps): 1e-6 scales back all
#: 400 up to eps 1e-7 (365 at 1e-6, 337 at 1e-5); 1e-7 376 at 1e-7, 332 at 1e-6; 1e-5 all 400 up
#: to 1e-6 (373 at 1e-5) but also drops shifts 1e-5 off pi/2, where 1e-6 stops at 1e-6: 1e-6 keeps
#: the fits of exact data whole at a function change no larger than that.
SHORT_TOLERANCE = 1e-6
#: Digits beyond which a constant counts as having no short decimal text. At SHORT_TOLERANCE 1e-6
#: seven digits always suffice (rounding errs by at most 5e-7 of a value), so any value from 6 on
#: ranks the forms alike: 6 and 10 give the figures of 8 above.
MAX_DIGITS = 8


def _digits(value) -> int:
    """Significant digits ``value`` is written with to :data:`SHORT_TOLERANCE` (0 for +-1, a factor
    the text omits; ``MAX_DIGITS + 1`` when none short enough)."""
    value = float(value)
    if abs(abs(value) - 1.0) <= SHORT_TOLERANCE or value == 0.0:
        return 0
    for d in range(1, MAX_DIGITS + 1):
        if abs(float(f"{value:.{d}g}") - value) <= SHORT_TOLERANCE * abs(value):
            return d
    return MAX_DIGITS + 1


def _coefficients(expr) -> list:
    """The numeric coefficients of ``expr``'s terms (of ``expr`` itself when it is no sum)."""
    terms = expr.args if isinstance(expr, sympy.Add) else (expr,)
    return [t.as_coeff_Mul()[0] for t in terms]


def _scaled(expr, k):
    """``expr * k`` with ``k`` carried into a sum's terms (a coefficient that becomes +-1.0 dropped)."""
    def term(t):
        c, rest = t.as_coeff_Mul()
        c = c * k
        return (sympy.Integer(int(c)) if float(c) in (1.0, -1.0) else c) * rest

    return sympy.Add(*[term(t) for t in expr.args]) if isinstance(expr, sympy.Add) else term(expr)


def _ratio(product, den):
    """The ``product`` (a Mul holding ``den**-1``, ``den`` a sum) rewritten ``(rest / k) / (den / k)``
    for the ``k`` among ``den``'s float coefficients that writes the constants touched (those of
    ``den`` and of the numerator: its number, or the sum it multiplies) with the fewest digits;
    the product itself when no ``k`` writes them with fewer. Exact: numerator and denominator
    scale by the same number."""
    rest = [f for f in product.args if f != den**-1]
    if len(rest) != len(product.args) - 1:
        return product
    number = [f for f in rest if f.is_Number]
    sums = [f for f in rest if isinstance(f, sympy.Add)]
    others = [f for f in rest if not f.is_Number and f not in sums]
    top = sums[0] if not number and len(sums) == 1 else None
    if top is not None:
        sums = []
    coefficient = sympy.Mul(*number) if number else sympy.Integer(1)

    def written(k):
        new_den = _scaled(den, 1 / k)
        if top is not None:
            new_top = _scaled(top, 1 / k)
            return new_den, new_top, _coefficients(new_top)
        return new_den, _scaled(coefficient, 1 / k), [coefficient / k]

    def cost(k):
        new_den, _, touched = written(k)
        return sum(_digits(c) for c in _coefficients(new_den) + touched)

    best, best_cost = None, cost(sympy.Integer(1))
    for k in _coefficients(den):
        if isinstance(k, sympy.Float) and k != 0:
            k_cost = cost(k)
            if k_cost < best_cost:
                best, best_cost = k, k_cost
    if best is None:
        return product
    new_den, new_top, _ = written(best)
    return sympy.Mul(new_top, *sums, *others, new_den**-1)


def _unshifted(function, argument):
    """``cos(u + c)`` / ``sin(u + c)`` with ``c`` a multiple of pi/2 (to :data:`SHORT_TOLERANCE`)
    written without the shift (``cos(u + pi) = -cos(u)``); None when there is no such ``c``."""
    if not isinstance(argument, sympy.Add):
        return None
    shift, u = argument.as_coeff_Add()
    if not isinstance(shift, sympy.Float):
        return None
    quarter = round(float(shift) / (math.pi / 2))
    if quarter == 0 or abs(float(shift) - quarter * math.pi / 2) > SHORT_TOLERANCE * abs(float(shift)):
        return None
    # cos(u + q pi/2) and sin(u + q pi/2) cycle through cos, -sin, -cos, sin (and sin, cos, -sin, -cos)
    start = 0 if function is sympy.cos else 3
    kind = (start + quarter) % 4
    return [sympy.cos(u), -sympy.sin(u), -sympy.cos(u), sympy.sin(u)][kind]


def canonical(expr):
    """``expr`` written with shorter constants, exactly the same function: a ratio whose denominator
    is a sum with float coefficients is scaled (numerator and denominator by one of them) to the
    form whose constants have the shortest decimal text (``0.3/(0.1 - 0.0333...*x)`` is
    ``-9/(x - 3)``), and a cosine or sine shifted by a multiple of pi/2 is written without the
    shift (``cos(u + 3.14159...)`` is ``-cos(u)``). So a formula rounded for reading (or by
    SRBench's 3 decimals) keeps its law. Idempotent."""
    if expr.is_Atom:
        return expr
    args = tuple(canonical(a) for a in expr.args)
    if args != expr.args:
        expr = expr.func(*args)
    if isinstance(expr, (sympy.cos, sympy.sin)):
        unshifted = _unshifted(expr.func, expr.args[0])
        return expr if unshifted is None else unshifted
    if isinstance(expr, sympy.Mul):
        for f in expr.args:
            if isinstance(f, sympy.Pow) and f.exp == -1 and isinstance(f.base, sympy.Add):
                expr = _ratio(expr, f.base)
                if not isinstance(expr, sympy.Mul):
                    break
    return expr
