"""parsimony: interpretable regression that is provably good.

Symbolic quantile regression, optimal sparse regression trees, ForestPrune and ordered
bagging on a native numba engine (Julia optional). Heavy modules load lazily on first use,
so ``import parsimony`` stays fast and never starts numba compilation or Julia.
"""

from __future__ import annotations

from ._lazy import lazy_exports

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
    "ConformalQuantileInterval": "parsimony.symbolic",
    "Binarizer": "parsimony.trees",
    "OptimalSparseRegressionTree": "parsimony.trees",
    "ForestPrune": "parsimony.ensembles",
    "OrderedBaggingRegressor": "parsimony.ensembles",
    "BaggedNetworks": "parsimony.ensembles",
    "resolve_backend": "parsimony.backend",
}

__all__ = ["__version__", *_LAZY]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
