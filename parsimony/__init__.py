"""parsimony: interpretable regression that is provably good.

Symbolic quantile regression, optimal sparse regression trees, ForestPrune and ordered
bagging on a native numba engine (Julia optional). Heavy modules load lazily on first use,
so ``import parsimony`` stays fast and never starts numba compilation or Julia.
"""

from __future__ import annotations

import importlib

from ._version import __version__

_LAZY = {
    # metrics
    "pinball_loss": "parsimony.metrics",
    "normalized_quantile_loss": "parsimony.metrics",
    "coverage": "parsimony.metrics",
    "absolute_coverage_error": "parsimony.metrics",
    "complexity": "parsimony.metrics",
    # data
    "load_dataset": "parsimony.datasets",
    "list_datasets": "parsimony.datasets",
    # estimators
    "SymbolicQuantileRegressor": "parsimony.symbolic",
    "Binarizer": "parsimony.trees",
    "OptimalSparseRegressionTree": "parsimony.trees",
    "ForestPrune": "parsimony.ensembles",
    "OrderedBaggingRegressor": "parsimony.ensembles",
    "BaggedNetworks": "parsimony.ensembles",
    "resolve_backend": "parsimony.backend",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'parsimony' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
