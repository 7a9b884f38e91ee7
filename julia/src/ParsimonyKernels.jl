"""
    ParsimonyKernels

Julia twins of the hot kernels of the Python package `parsimony` that a code path reaches
(optional backend, loaded through juliacall). Each function has exactly the contract of its
numba twin, so one test suite checks both:

- `gram_tables`, `residual`, `objective`, `block_update!`, `cbcd!`, `alpha_max`: ForestPrune's
  cyclic block coordinate descent; twins of `parsimony.ensembles._cbcd`.
- `cluster_costs`: optimal 1-D clustering (weighted k-Means, k-median or pinball levels) grown
  one cluster at a time and stopped by convexity, OSRT's equivalent-points lower bound; twin of
  `parsimony.trees._kmeans.cluster_costs`, which `OptimalSparseRegressionTree(backend="julia")`
  calls for every bound its search computes.

Arrays are indexed in the same logical order as the NumPy arrays of the twins (a NumPy array
passed through juliacall arrives as a `PyArray` with the same shape), so in-place updates of
`cbcd!` land directly in the caller's NumPy buffers.
"""
module ParsimonyKernels

export PLAIN, RIDGE, SUBSET, gram_tables, residual, beta_penalty, objective
export tree_column!, set_block!, block_update!, cbcd!, stack_truncated, alpha_max
export LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL, cluster_costs

include("cbcd.jl")
include("kmeans.jl")

end # module
