"""Hook for the Julia engine (SymbolicRegression.jl through PySR with a pinball loss).

The native engine is complete without Julia. The implementation lives in
:func:`parsimony._julia.fit_sqr_fronts`; without pysr this hook raises ``NotImplementedError``, so
``backend="auto"`` falls back to the native engine while ``backend="julia"`` reports it.
"""

from __future__ import annotations

import importlib.util


def fit_julia(estimator, X, y, sample_weight, quantiles, feature_names):
    """Fit one Pareto front per quantile with PySR; return one list of front rows per quantile.

    Contract for the implementation: each row is a dict with keys ``complexity`` (int, token
    weights of ``estimator``), ``loss`` (mean pinball loss on the training data) and either the
    flat arrays ``ops``, ``feats``, ``vals`` (see ``_expressions.py``) or a ``sympy`` expression.
    """
    from ..backend import JULIA_INSTALL_HINT

    if importlib.util.find_spec("pysr") is None:
        raise NotImplementedError(f"the Julia engine for SymbolicQuantileRegressor needs pysr. {JULIA_INSTALL_HINT}")
    from .._julia import fit_sqr_fronts

    return fit_sqr_fronts(estimator, X, y, sample_weight, quantiles, feature_names)
