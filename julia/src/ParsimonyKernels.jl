"""
    ParsimonyKernels

Julia twins of the hot kernels of the Python package `parsimony` that a code path reaches
(optional backend, loaded through juliacall). Each function has exactly the contract of its
numba twin, so one test suite checks both:

- `gram_tables`, `residual`, `objective`, `block_update!`, `cbcd!`, `alpha_max`: ForestPrune's
  cyclic block coordinate descent; twins of `parsimony.ensembles._cbcd`.

Arrays are indexed in the same logical order as the NumPy arrays of the twins (a NumPy array
passed through juliacall arrives as a `PyArray` with the same shape), so in-place updates of
`cbcd!` land directly in the caller's NumPy buffers.
"""
module ParsimonyKernels

export PLAIN, RIDGE, SUBSET, gram_tables, residual, beta_penalty, objective
export tree_column!, set_block!, block_update!, cbcd!, stack_truncated, alpha_max

include("cbcd.jl")

end # module
