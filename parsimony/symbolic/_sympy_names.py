"""sympy helpers for printing equations: one symbol per feature name, constants at a display precision.

Imported only when an equation is turned into sympy (sympy is slow to import).
"""

from __future__ import annotations

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
