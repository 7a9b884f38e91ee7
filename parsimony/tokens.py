"""The SQR paper's token weights and operator names, read by :mod:`parsimony.metrics` and
:mod:`parsimony.symbolic` alike (a neutral module: neither imports the other for them)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from ._validation import check_nonnegative

BINARY_OPERATORS = ("add", "sub", "mul", "div", "pow")
UNARY_OPERATORS = ("square", "cube", "sqrt", "exp", "log", "sin", "cos", "abs", "neg")
ALIASES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "**": "pow",
           "plus": "add", "minus": "sub", "mult": "mul", "times": "mul", "inv": None}

#: Token weights of the SQR paper (Table 1 / Table 5). Operators the paper does not list get the
#: weight of the closest listed one (cube like square + 1, abs and neg like a sign change, pow
#: like exp/log). SQR uses this table as its default ``complexity_of_operators``.
TOKEN_COMPLEXITY = {
    "add": 1, "sub": 1, "mul": 1, "div": 2,
    "square": 2, "cube": 3, "sqrt": 4, "exp": 4, "log": 4,
    "sin": 3, "cos": 3, "abs": 1, "neg": 1, "pow": 4,
    "feature": 1, "constant": 1,
}


def canonical_operator(name) -> str:
    """Return the canonical name of an operator (``"+"`` -> ``"add"``); raise on unknown names."""
    if not isinstance(name, str):
        raise TypeError(f"operators must be strings, got {name!r}")
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in BINARY_OPERATORS and key not in UNARY_OPERATORS:
        known = ", ".join(BINARY_OPERATORS + UNARY_OPERATORS)
        raise ValueError(f"unknown operator {name!r}; known operators: {known} (and + - * / ^)")
    return key


def token_weights(weights, name="weights", *, integer=True) -> dict:
    """The complete token-weight table: :data:`TOKEN_COMPLEXITY` updated by ``weights`` (None: unchanged).

    Keys are operator names or their aliases (``"+"`` for ``"add"``), ``"feature"`` (or
    ``"variable"``) and ``"constant"``; values are integers >= 1, or with ``integer=False``
    finite numbers >= 0. Bad input raises a TypeError or ValueError naming ``name``.
    """
    table = dict(TOKEN_COMPLEXITY)
    if weights is None:
        return table
    if not isinstance(weights, Mapping):
        rule = "integer weight >= 1" if integer else "weight >= 0"
        raise TypeError(f"{name} must be a dict {{token: {rule}}}, got {weights!r}")
    for key, value in weights.items():
        if key in ("feature", "variable", "constant"):
            token = "feature" if key == "variable" else key
        else:
            try:
                token = canonical_operator(key)
            except (TypeError, ValueError):
                raise ValueError(f"{name} names an unknown token {key!r} (an unknown operator); known tokens: "
                                 f"'feature' (or 'variable'), 'constant' and the operators "
                                 f"{', '.join(BINARY_OPERATORS + UNARY_OPERATORS)} (and + - * / ^)") from None
        if integer:
            if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value).is_integer()
                    or value < 1):
                raise ValueError(f"{name}[{key!r}] must be an integer >= 1, got {value!r}")
            value = int(value)
        else:
            check_nonnegative(value, f"{name}[{key!r}]")
        table[token] = value
    return table
