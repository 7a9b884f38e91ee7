# Cyclic block coordinate descent for ForestPrune (paper Section 3). Twin of
# `parsimony.ensembles._cbcd`: same candidates, same arithmetic order, same strict-improvement
# tie-breaking (`val < best_val - 1e-12 * abs(cur)`), same in-place updates.
#
# Problem (1): minimise (1/m)||t - gamma sum_i beta_i D_i z_i||^2 + s sum_i wcum[i, k_i + 1]
# (+ alpha2 pen(beta)) over k_i, the number of layers kept by tree i.
#
# The depth-difference matrices come factored, D_i = E_i T_i, exactly as the NumPy twin takes
# them: `leaves[i, j]` is the leaf (0-based, local to tree i) of row j, and `T` is the transposed
# leaf table, (n_layers x n_leaves_total): the depth-difference row of leaf a (1-based) of tree i
# is the column `T[:, leaf_offset[i] + a]`, `leaf_offset` holding the NumPy 0-based offsets
# (length n + 1), so one layer of one tree, `T[l, leaf_offset[i] + 1 : leaf_offset[i + 1]]`, is
# contiguous in the NumPy buffer. Tree and layer indices are 1-based in Julia; layer counts k stay
# counts (0..n_layers[i]), so tables indexed by a count are read at `k + 1`:
# `prefix_norms[i, k + 1] = ||D_i z_k||^2` (the paper's PP), `gram[i, a, b]` the Gram matrix of
# D_i's columns (the paper's G), `wcum[i, k + 1]` the summed weight of the first k layers.
#
# Stopping rule (as the twin): sweeps run until n consecutive block updates, counted across
# sweep boundaries from the last change, change nothing; the last sweep may stop part-way.

const PLAIN = 0
const RIDGE = 1
const SUBSET = 2

# a ⋅ b over the length of `a` (`b` may be longer, like the twin's work vector `sums`).
@inline function _dot(a::AbstractVector, b::AbstractVector)
    s = 0.0
    @inbounds @simd for j in eachindex(a)  # reassociation allowed, like the numba twin's fastmath
        s += a[j] * b[j]
    end
    return s
end

# sums[a] = sum of v over the rows falling in leaf a (1-based) of tree i.
function _leaf_sums!(sums, leaves, i::Int, v, nl::Int)
    for a in 1:nl
        sums[a] = 0.0
    end
    @inbounds for j in eachindex(v)
        sums[leaves[i, j] + 1] += v[j]
    end
    return sums
end

_n_leaves(leaf_offset, i::Int) = Int(leaf_offset[i + 1] - leaf_offset[i])

"""
    gram_tables(leaves, T, leaf_offset, n_layers) -> (gram, prefix_norms)

Per-tree Gram matrices `gram[i, a, b] = D_i[:, a] ⋅ D_i[:, b]` (n x L x L) and prefix norms
`prefix_norms[i, k + 1] = ||D_i z_k||^2` (n x (L + 1)), constant beyond `n_layers[i]`.
"""
function gram_tables(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real},
                     leaf_offset::AbstractVector{<:Integer}, n_layers::AbstractVector{<:Integer})
    n, m = size(leaves)
    L = size(T, 1)
    length(n_layers) == n || throw(DimensionMismatch("n_layers has $(length(n_layers)) entries, leaves has $n trees"))
    length(leaf_offset) == n + 1 || throw(DimensionMismatch("leaf_offset must have n_trees + 1 = $(n + 1) entries"))
    gram = zeros(n, L, L)
    prefix_norms = zeros(n, L + 1)
    for i in 1:n
        Li = Int(n_layers[i])
        0 <= Li <= L || throw(ArgumentError("n_layers[$i] = $Li is outside 0:$L"))
        base = Int(leaf_offset[i])
        nl = _n_leaves(leaf_offset, i)
        cnt = zeros(nl)
        for j in 1:m
            cnt[leaves[i, j] + 1] += 1.0
        end
        for a in 1:nl
            cnt[a] == 0.0 && continue
            col = base + a
            for l in 1:Li
                for lp in 1:l
                    gram[i, l, lp] += cnt[a] * T[l, col] * T[lp, col]
                end
            end
            pref = 0.0
            for k in 1:Li
                pref += T[k, col]
                prefix_norms[i, k + 1] += cnt[a] * pref * pref
            end
        end
        for l in 1:Li
            for lp in 1:(l - 1)
                gram[i, lp, l] = gram[i, l, lp]
            end
        end
        for k in (Li + 1):L
            prefix_norms[i, k + 1] = prefix_norms[i, Li + 1]
        end
    end
    return gram, prefix_norms
end

"""
    tree_column!(out, leaves, T, leaf_offset, i, k, scale)

`out .+= scale * D_i z_k`: tree `i` (1-based) truncated to its first `k` layers.
"""
function tree_column!(out::AbstractVector, leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real},
                      leaf_offset::AbstractVector{<:Integer}, i::Integer, k::Integer, scale::Real)
    base = Int(leaf_offset[i])
    nl = _n_leaves(leaf_offset, Int(i))
    vals = zeros(nl)
    for a in 1:nl
        acc = 0.0
        for l in 1:k
            acc += T[l, base + a]
        end
        vals[a] = scale * acc
    end
    @inbounds for j in eachindex(out)
        out[j] += vals[leaves[i, j] + 1]
    end
    return out
end

"""
    residual(leaves, T, leaf_offset, target, layers, beta, gamma)

`target - gamma sum_i beta_i D_i z_i` as a new vector.
"""
function residual(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real}, leaf_offset::AbstractVector{<:Integer},
                  target::AbstractVector{<:Real}, layers::AbstractVector{<:Integer}, beta::AbstractVector{<:Real},
                  gamma::Real)
    n, m = size(leaves)
    length(target) == m || throw(DimensionMismatch("target has $(length(target)) rows, leaves has $m"))
    R = Vector{Float64}(undef, m)
    for j in 1:m
        R[j] = Float64(target[j])
    end
    for i in 1:n
        if layers[i] > 0 && beta[i] != 0.0
            tree_column!(R, leaves, T, leaf_offset, i, layers[i], -gamma * beta[i])
        end
    end
    return R
end

"""
    beta_penalty(beta, layers, alpha2, mode)

`alpha2 * ||beta||_2^2` (RIDGE) or `alpha2 * ||beta||_0` (SUBSET) over the kept trees; 0 in PLAIN.
"""
function beta_penalty(beta::AbstractVector{<:Real}, layers::AbstractVector{<:Integer}, alpha2::Real, mode::Integer)
    mode == PLAIN && return 0.0
    total = 0.0
    for i in eachindex(beta)
        if layers[i] > 0 && beta[i] != 0.0
            total += mode == RIDGE ? beta[i] * beta[i] : 1.0
        end
    end
    return alpha2 * total
end

"""
    objective(R, layers, beta, wcum, pen_scale, alpha2, mode)

Objective of problem (1) (PLAIN) or of the joint problem (5) at the point whose residual is `R`.
"""
function objective(R::AbstractVector{<:Real}, layers::AbstractVector{<:Integer}, beta::AbstractVector{<:Real},
                   wcum::AbstractMatrix{<:Real}, pen_scale::Real, alpha2::Real, mode::Integer)
    pen = 0.0
    for i in eachindex(layers)
        pen += wcum[i, Int(layers[i]) + 1]
    end
    return _dot(R, R) / length(R) + pen_scale * pen + beta_penalty(beta, layers, alpha2, mode)
end

"""
    set_block!(leaves, T, leaf_offset, R, i, k_old, b_old, k_new, b_new, gamma)

Move tree `i` (1-based) from `(k_old, b_old)` to `(k_new, b_new)`, updating the residual `R` in place.
"""
function set_block!(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real},
                    leaf_offset::AbstractVector{<:Integer}, R::AbstractVector{<:Real}, i::Integer, k_old::Integer,
                    b_old::Real, k_new::Integer, b_new::Real, gamma::Real)
    base = Int(leaf_offset[i])
    nl = _n_leaves(leaf_offset, Int(i))
    delta = zeros(nl)
    top = max(k_old, k_new)
    nonzero = false
    for l in 1:top
        coef = gamma * ((l <= k_old ? b_old : 0.0) - (l <= k_new ? b_new : 0.0))
        if coef != 0.0
            nonzero = true
            for a in 1:nl
                delta[a] += coef * T[l, base + a]
            end
        end
    end
    if nonzero
        @inbounds for j in eachindex(R)
            R[j] += delta[leaves[i, j] + 1]
        end
    end
    return R
end

"""
    block_update!(i, leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, RR, layers, beta, gamma, pen_scale,
                  alpha2, mode, max_trees, n_active, c, cross, sums) -> (changed, RR, n_active)

Exact update of block `i` (1-based): enumerate its `n_layers[i] + 1` monotone candidates (and
the tree weight in the joint modes), move only on a strict improvement. `RR` is `||R||^2`;
`c`, `cross` and `sums` are work vectors of length L, L + 1 and the largest leaf count.
"""
function block_update!(i::Int, leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, RR::Float64, layers, beta,
                       gamma::Float64, pen_scale::Float64, alpha2::Float64, mode::Int, max_trees::Int,
                       n_active::Int, c::Vector{Float64}, cross::Vector{Float64}, sums::Vector{Float64})
    m = length(R)
    Li = Int(n_layers[i])
    ki = Int(layers[i])
    bi = ki > 0 ? Float64(beta[i]) : 0.0
    base = Int(leaf_offset[i])
    nl = _n_leaves(leaf_offset, i)
    _leaf_sums!(sums, leaves, i, R, nl)
    for l in 1:Li
        c[l] = _dot(view(T, l, (base + 1):(base + nl)), sums)
    end
    # r = R + gamma*bi*P_ki is the residual without tree i; a_l = D_i[:, l] ⋅ r
    rr = RR
    if ki > 0
        sc = 0.0
        for l in 1:ki
            sc += c[l]
        end
        rr = RR + 2.0 * gamma * bi * sc + gamma * gamma * bi * bi * prefix_norms[i, ki + 1]
    end
    cross[1] = 0.0
    for l in 1:Li
        a = c[l]
        if ki > 0
            g = 0.0
            for lp in 1:ki
                g += gram[i, l, lp]
            end
            a += gamma * bi * g
        end
        cross[l + 1] = cross[l] + a
    end
    inv_m = 1.0 / m
    if ki == 0
        cur = rr * inv_m + pen_scale * wcum[i, 1]
    else
        cur = (rr - 2.0 * gamma * bi * cross[ki + 1] + gamma * gamma * bi * bi * prefix_norms[i, ki + 1]) * inv_m
        cur += pen_scale * wcum[i, ki + 1]
        if mode == RIDGE
            cur += alpha2 * bi * bi
        elseif mode == SUBSET && bi != 0.0
            cur += alpha2
        end
    end
    best_val = cur
    best_k = ki
    best_b = Float64(beta[i])
    tol = 1e-12 * abs(cur)
    kmax = Li
    if ki == 0 && max_trees > 0 && n_active >= max_trees
        kmax = 0
    end
    for k in 0:kmax
        if k == 0
            val = rr * inv_m + pen_scale * wcum[i, 1]
            b = mode == PLAIN ? 1.0 : 0.0
        else
            pk = Float64(prefix_norms[i, k + 1])
            ck = cross[k + 1]
            if mode == PLAIN
                b = 1.0
                val = (rr - 2.0 * gamma * ck + gamma * gamma * pk) * inv_m
            elseif mode == RIDGE
                b = pk > 0.0 ? gamma * ck / (gamma * gamma * pk + m * alpha2) : 0.0
                val = (rr - 2.0 * b * gamma * ck + b * b * gamma * gamma * pk) * inv_m + alpha2 * b * b
            else
                if pk > 0.0
                    b = ck / (gamma * pk)
                    val = (rr - ck * ck / pk) * inv_m + alpha2
                else
                    b = 1.0
                    val = rr * inv_m + alpha2
                end
            end
            val += pen_scale * wcum[i, k + 1]
        end
        if val < best_val - tol
            best_val = val
            best_k = k
            best_b = b
        end
    end
    if best_k == ki && (best_b == beta[i] || ki == 0)
        return false, RR, n_active
    end
    set_block!(leaves, T, leaf_offset, R, i, ki, bi, best_k, best_k > 0 ? best_b : 0.0, gamma)
    if best_k == 0
        new_rr = rr
    else
        new_rr = rr - 2.0 * best_b * gamma * cross[best_k + 1] +
                 best_b * best_b * gamma * gamma * prefix_norms[i, best_k + 1]
    end
    if ki == 0 && best_k > 0
        n_active += 1
    elseif ki > 0 && best_k == 0
        n_active -= 1
    end
    layers[i] = best_k
    beta[i] = (best_k > 0 || mode == PLAIN) ? best_b : 0.0
    return true, new_rr, n_active
end

_max_leaves(leaf_offset, n::Int) = max(1, maximum((_n_leaves(leaf_offset, i) for i in 1:n); init=1))

"""
    cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2, mode,
          max_trees, max_sweeps, history) -> sweeps

Cyclic sweeps over all blocks until a full cycle of block updates changes nothing. The cycle
is counted from the last change: once the `n - 1` blocks after it have been checked against the
unchanged residual, every block is optimal for it and the final sweep stops early. Updates `R`,
`layers` and `beta` in place; `history[s]` receives the objective after sweep `s` (while it
fits). Returns the number of sweeps run (the last one possibly partial), negative if
`max_sweeps` was hit. `max_trees = 0` means no limit.
"""
function cbcd!(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real}, leaf_offset::AbstractVector{<:Integer},
               gram::AbstractArray{<:Real,3}, prefix_norms::AbstractMatrix{<:Real}, wcum::AbstractMatrix{<:Real},
               n_layers::AbstractVector{<:Integer}, R::AbstractVector{<:Real}, layers::AbstractVector{<:Integer},
               beta::AbstractVector{<:Real}, gamma::Real, pen_scale::Real, alpha2::Real, mode::Integer,
               max_trees::Integer, max_sweeps::Integer, history::AbstractVector{<:Real})
    n, m = size(leaves)
    L = size(T, 1)
    size(T, 2) >= leaf_offset[end] ||
        throw(DimensionMismatch("T has $(size(T, 2)) leaf columns, leaf_offset needs $(leaf_offset[end])"))
    length(R) == m || throw(DimensionMismatch("R has $(length(R)) rows, leaves has $m"))
    length(layers) == n == length(beta) == length(n_layers) == length(leaf_offset) - 1 ||
        throw(DimensionMismatch("layers, beta, n_layers (and leaf_offset minus one) must have one entry per tree ($n)"))
    mode in (PLAIN, RIDGE, SUBSET) || throw(ArgumentError("mode must be PLAIN (0), RIDGE (1) or SUBSET (2), got $mode"))
    g = Float64(gamma)
    s = Float64(pen_scale)
    a2 = Float64(alpha2)
    md = Int(mode)
    mt = Int(max_trees)
    c = Vector{Float64}(undef, L)
    cross = Vector{Float64}(undef, L + 1)
    sums = Vector{Float64}(undef, _max_leaves(leaf_offset, n))
    n_active = 0
    for i in 1:n
        if layers[i] > 0
            n_active += 1
        end
    end
    unchanged = 0  # consecutive block updates without a change
    for sweep in 1:max_sweeps
        RR = _dot(R, R)
        done = false
        for i in 1:n
            changed, RR, n_active = block_update!(i, leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, RR,
                                                  layers, beta, g, s, a2, md, mt, n_active, c, cross, sums)
            unchanged = changed ? 0 : unchanged + 1
            if unchanged >= n
                done = true
                break
            end
        end
        if sweep <= length(history)
            history[sweep] = objective(R, layers, beta, wcum, s, a2, md)
        end
        done && return sweep
    end
    return -Int(max_sweeps)
end

"""
    stack_truncated(leaves, T, leaf_offset, layers, idx) -> Q

Columns `D_i z_i` (tree `i` truncated to its kept layers) for the trees `idx`, given as NumPy
0-based tree indices like the twin's: an m x length(idx) matrix.
"""
function stack_truncated(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real},
                         leaf_offset::AbstractVector{<:Integer}, layers::AbstractVector{<:Integer},
                         idx::AbstractVector{<:Integer})
    m = size(leaves, 2)
    Q = zeros(m, length(idx))
    for col in eachindex(idx)
        i = Int(idx[col]) + 1
        tree_column!(view(Q, :, col), leaves, T, leaf_offset, i, layers[i], 1.0)
    end
    return Q
end

"""
    alpha_max(leaves, T, leaf_offset, prefix_norms, wcum, n_layers, target, gamma, K)

Smallest alpha at which no single tree improves on the empty model (problem 1).
"""
function alpha_max(leaves::AbstractMatrix{<:Integer}, T::AbstractMatrix{<:Real}, leaf_offset::AbstractVector{<:Integer},
                   prefix_norms::AbstractMatrix{<:Real}, wcum::AbstractMatrix{<:Real},
                   n_layers::AbstractVector{<:Integer}, target::AbstractVector{<:Real}, gamma::Real, K::Real)
    n = size(leaves, 1)
    m = length(target)
    best = 0.0
    sums = Vector{Float64}(undef, _max_leaves(leaf_offset, n))
    for i in 1:n
        base = Int(leaf_offset[i])
        nl = _n_leaves(leaf_offset, i)
        _leaf_sums!(sums, leaves, i, target, nl)
        acc = 0.0
        for k in 1:Int(n_layers[i])
            for a in 1:nl
                acc += T[k, base + a] * sums[a]
            end
            gain = (2.0 * gamma * acc - gamma * gamma * prefix_norms[i, k + 1]) / m
            if gain > 0.0 && wcum[i, k + 1] > 0.0
                a_k = gain * K / wcum[i, k + 1]
                if a_k > best
                    best = a_k
                end
            end
        end
    end
    return best
end
