"""Pruned tree and bagging ensembles: ForestPrune and ordered bagging."""

from __future__ import annotations

import importlib

_LAZY = {
    "ForestPrune": "parsimony.ensembles.forestprune",
    "OrderedBaggingRegressor": "parsimony.ensembles.ordered_bagging",
    "BaggedNetworks": "parsimony.ensembles.ordered_bagging",
    "make_network": "parsimony.ensembles.ordered_bagging",
}
__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'parsimony.ensembles' has no attribute {name!r}")
