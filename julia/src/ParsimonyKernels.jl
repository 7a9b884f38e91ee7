"""
    ParsimonyKernels

Julia twins of the hot kernels of the Python package `parsimony` (optional backend, loaded
through juliacall). Each function has exactly the contract of its numba twin, so one test
suite checks both:

- `pinball_loss` / `Pinball`: the SQR pinball loss in the elementwise form
  SymbolicRegression.jl accepts (`loss(prediction, target[, weight])`);
  twin of `parsimony.metrics.pinball_loss`.
- `cluster_costs`: optimal 1-D clustering (weighted k-Means or k-median) grown one cluster
  at a time and stopped by convexity, the OSRT equivalent-points lower bound;
  twin of `parsimony.trees._kmeans.cluster_costs`.
- `gram_tables`, `residual`, `objective`, `block_update!`, `cbcd!`, `alpha_max`: ForestPrune's
  cyclic block coordinate descent; twins of `parsimony.ensembles._cbcd`.

Arrays are indexed in the same logical order as the NumPy arrays of the twins (a NumPy array
passed through juliacall arrives as a `PyArray` with the same shape), so in-place updates of
`cbcd!` land directly in the caller's NumPy buffers.
"""
module ParsimonyKernels

export pinball_loss, mean_pinball_loss, Pinball
export cluster_costs, KIND_SQUARED, KIND_ABSOLUTE
export PLAIN, RIDGE, SUBSET, gram_tables, residual, beta_penalty, objective
export tree_column!, set_block!, block_update!, cbcd!, stack_truncated, alpha_max

include("pinball.jl")
include("kmeans.jl")
include("cbcd.jl")

end # module
