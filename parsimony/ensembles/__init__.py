"""Pruned tree and bagging ensembles: ForestPrune and ordered bagging."""

from __future__ import annotations

from parsimony._lazy import lazy_exports

_LAZY = {
    "ForestPrune": "parsimony.ensembles.forestprune",
    "OrderedBaggingRegressor": "parsimony.ensembles.ordered_bagging",
    "BaggedNetworks": "parsimony.ensembles.bagged_networks",
    "make_network": "parsimony.ensembles.bagged_networks",
}
__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
