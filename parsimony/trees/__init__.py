"""Optimal sparse regression trees (OSRT) on binarised features.

``OptimalSparseRegressionTree`` finds the tree minimising normalised loss plus a penalty per
leaf, exactly, by dynamic programming with bounds (k-Means equivalent-points lower bound);
``Binarizer`` turns numeric features into readable threshold features.
"""

from .._lazy import lazy_exports

# loaded on first use: a helper process that compiles kernels imports the kernel modules only
_LAZY = {
    "Binarizer": "parsimony.trees.binarizer",
    "OptimalSparseRegressionTree": "parsimony.trees.osrt",
    "TreeTable": "parsimony.trees._tree_table",
}

__all__ = ["Binarizer", "OptimalSparseRegressionTree", "TreeTable"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
