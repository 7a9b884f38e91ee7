"""Julia twin of the OSRT clustering kernel :func:`parsimony.trees._kmeans.cluster_costs`
(ParsimonyKernels' kmeans.jl), which ``OptimalSparseRegressionTree(backend="julia")`` calls for
every k-Means bound of its search (:mod:`parsimony.trees._host_bounds`). It takes and returns
exactly what its numba twin takes and returns; the Julia session comes from
:func:`parsimony._julia.kernels`.
"""

from __future__ import annotations

import numpy as np

from .. import _julia


def cluster_costs(kind, weights, values, max_clusters, lam, floor, tau=0.5):
    """Julia twin of :func:`parsimony.trees._kmeans.cluster_costs`: ``(best, costs)``."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if values.shape[0] == 0 or weights.shape != values.shape:
        raise ValueError("cluster_costs needs one weight per point and at least one point")
    best, costs = _julia.kernels().cluster_costs(int(kind), weights, values, int(max_clusters), float(lam),
                                                 float(floor), float(tau))
    return float(best), np.array(costs, dtype=np.float64)
