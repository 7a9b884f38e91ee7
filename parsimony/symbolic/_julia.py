"""Hook for the Julia engine (SymbolicRegression.jl through PySR with a pinball loss).

The native engine is complete without Julia. The Julia integration (a later issue) replaces
:func:`fit_julia`; until then it raises ``NotImplementedError`` and ``backend="auto"`` falls
back to the native engine, while ``backend="julia"`` reports the missing integration.
"""

from __future__ import annotations


def fit_julia(estimator, X, y, sample_weight, quantiles, feature_names):
    """Fit one Pareto front per quantile with PySR; return one list of front rows per quantile.

    Contract for the implementation: each row is a dict with keys ``complexity`` (int, token
    weights of ``estimator``), ``loss`` (mean pinball loss on the training data) and either the
    flat arrays ``ops``, ``feats``, ``vals`` (see ``_expressions.py``) or a ``sympy`` expression.
    """
    raise NotImplementedError(
        "the Julia (PySR) engine for SymbolicQuantileRegressor is not wired in yet; use backend='native'"
    )
