"""Symbolic quantile regression (SQR) on the native symbolic-regression engine.

:class:`SymbolicQuantileRegressor` searches readable formulas for conditional quantiles
(pinball loss, Pareto front of accuracy against token complexity);
:class:`ConformalQuantileInterval` turns two quantile models into prediction intervals with a
finite-sample coverage guarantee (split-conformal calibration).
"""

from ..losses import Absolute, Pinball, Squared
from .conformal import ConformalQuantileInterval
from .regressor import SymbolicQuantileRegressor, select_equation

__all__ = ["SymbolicQuantileRegressor", "ConformalQuantileInterval", "Pinball", "Squared", "Absolute",
           "select_equation"]
