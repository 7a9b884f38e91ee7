"""Symbolic quantile regression (SQR) on the native symbolic-regression engine.

:class:`SymbolicQuantileRegressor` searches readable formulas for conditional quantiles
(pinball loss, Pareto front of accuracy against token complexity);
:class:`ConformalQuantileInterval` turns two quantile models into prediction intervals with a
finite-sample coverage guarantee (split-conformal calibration).
"""

from .._lazy import lazy_exports

# loaded on first use: a helper process that compiles kernels imports the kernel modules only
_LAZY = {
    "SymbolicQuantileRegressor": "parsimony.symbolic.regressor",
    "select_equation": "parsimony.symbolic.regressor",
    "ConformalQuantileInterval": "parsimony.symbolic.conformal",
    "Pinball": "parsimony.losses",
    "Squared": "parsimony.losses",
    "Absolute": "parsimony.losses",
    "TOKEN_COMPLEXITY": "parsimony.tokens",
}

__all__ = ["SymbolicQuantileRegressor", "ConformalQuantileInterval", "Pinball", "Squared", "Absolute",
           "select_equation", "TOKEN_COMPLEXITY"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
