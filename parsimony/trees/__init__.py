"""Optimal sparse regression trees (OSRT) on binarised features.

``OptimalSparseRegressionTree`` finds the tree minimising normalised loss plus a penalty per
leaf, exactly, by dynamic programming with bounds (k-Means equivalent-points lower bound);
``Binarizer`` turns numeric features into readable threshold features.
"""

from .binarizer import Binarizer
from .osrt import OptimalSparseRegressionTree, TreeTable

__all__ = ["Binarizer", "OptimalSparseRegressionTree", "TreeTable"]
