# Cyclic block coordinate descent for ForestPrune (paper Section 3). Twin of
# `parsimony.ensembles._cbcd`: same candidates, same arithmetic order, same strict-improvement
# tie-breaking (`val < best_val - 1e-12 * abs(cur)`), same in-place updates.
#
# Problem (1): minimise (1/m)||t - gamma sum_i beta_i D_i z_i||^2 + s sum_i wcum[i, k_i + 1]
# (+ alpha2 pen(beta)) over k_i, the number of layers kept by tree i. Index conventions
# (Julia, 1-based): `D[i, l, j]` is layer l of tree i at row j (n_trees x n_layers x m, the
# NumPy array's logical order); layer counts `k` stay counts (0..n_layers[i]), so tables indexed
# by a count are read at `k + 1`: `PP[i, k + 1] = ||sum_{l <= k} D[i, l, :]||^2` and
# `wcum[i, k + 1]` the summed weight of the first k layers. Tree indices `i` are 1-based.

const PLAIN = 0
const RIDGE = 1
const SUBSET = 2

# D[i, a, :] ⋅ D[i, b, :] and D[i, l, :] ⋅ v; reassociation allowed, like the numba twin's fastmath.
@inline function _layer_dot(D, i::Int, a::Int, b::Int)
    s = 0.0
    @inbounds @simd for j in axes(D, 3)
        s += D[i, a, j] * D[i, b, j]
    end
    return s
end

@inline function _layer_dot(D, i::Int, l::Int, v::AbstractVector)
    s = 0.0
    @inbounds @simd for j in axes(D, 3)
        s += D[i, l, j] * v[j]
    end
    return s
end

@inline function _sumsq(v::AbstractVector)
    s = 0.0
    @inbounds @simd for j in eachindex(v)
        s += v[j] * v[j]
    end
    return s
end

"""
    gram_tables(D, n_layers) -> (G, PP)

Per-tree Gram matrices `G[i, a, b] = D[i, a, :] ⋅ D[i, b, :]` (n x L x L) and prefix norms
`PP[i, k + 1] = ||sum_{l <= k} D[i, l, :]||^2` (n x (L + 1)), constant beyond `n_layers[i]`.
"""
function gram_tables(D::AbstractArray{<:Real,3}, n_layers::AbstractVector{<:Integer})
    n, L, _ = size(D)
    length(n_layers) == n || throw(DimensionMismatch("n_layers has $(length(n_layers)) entries, D has $n trees"))
    G = zeros(n, L, L)
    PP = zeros(n, L + 1)
    for i in 1:n
        Li = Int(n_layers[i])
        0 <= Li <= L || throw(ArgumentError("n_layers[$i] = $Li is outside 0:$L"))
        for a in 1:Li
            for b in 1:a
                g = _layer_dot(D, i, a, b)
                G[i, a, b] = g
                G[i, b, a] = g
            end
        end
        acc = 0.0
        for k in 1:Li
            # ||P_k||^2 = ||P_{k-1}||^2 + 2 P_{k-1} ⋅ D_k + ||D_k||^2
            cross = 0.0
            for b in 1:(k - 1)
                cross += G[i, k, b]
            end
            acc += 2.0 * cross + G[i, k, k]
            PP[i, k + 1] = acc
        end
        for k in (Li + 1):L
            PP[i, k + 1] = acc
        end
    end
    return G, PP
end

"""
    residual(D, target, layers, beta, gamma)

`target - gamma sum_i beta_i sum_{l <= layers[i]} D[i, l, :]` as a new vector.
"""
function residual(D::AbstractArray{<:Real,3}, target::AbstractVector{<:Real}, layers::AbstractVector{<:Integer},
                  beta::AbstractVector{<:Real}, gamma::Real)
    n, _, m = size(D)
    length(target) == m || throw(DimensionMismatch("target has $(length(target)) rows, D has $m"))
    R = Vector{Float64}(undef, m)
    for j in 1:m
        R[j] = Float64(target[j])
    end
    for i in 1:n
        for l in 1:Int(layers[i])
            coef = gamma * beta[i]
            @inbounds for j in 1:m
                R[j] -= coef * D[i, l, j]
            end
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
    return _sumsq(R) / length(R) + pen_scale * pen + beta_penalty(beta, layers, alpha2, mode)
end

"""
    set_block!(D, R, i, k_old, b_old, k_new, b_new, gamma)

Move tree `i` (1-based) from `(k_old, b_old)` to `(k_new, b_new)`, updating the residual `R` in place.
"""
function set_block!(D::AbstractArray{<:Real,3}, R::AbstractVector{<:Real}, i::Integer, k_old::Integer,
                    b_old::Real, k_new::Integer, b_new::Real, gamma::Real)
    top = max(k_old, k_new)
    m = length(R)
    for l in 1:top
        coef = gamma * ((l <= k_old ? b_old : 0.0) - (l <= k_new ? b_new : 0.0))
        if coef != 0.0
            @inbounds for j in 1:m
                R[j] += coef * D[i, l, j]
            end
        end
    end
    return R
end

"""
    block_update!(i, D, G, PP, wcum, n_layers, R, RR, layers, beta, gamma, pen_scale, alpha2, mode,
                  max_trees, n_active, c, cross) -> (changed, RR, n_active)

Exact update of block `i` (1-based): enumerate its `n_layers[i] + 1` monotone candidates (and
the tree weight in the joint modes), move only on a strict improvement. `RR` is `||R||^2`;
`c` and `cross` are work vectors of length L and L + 1.
"""
function block_update!(i::Int, D, G, PP, wcum, n_layers, R, RR::Float64, layers, beta,
                       gamma::Float64, pen_scale::Float64, alpha2::Float64, mode::Int,
                       max_trees::Int, n_active::Int, c::Vector{Float64}, cross::Vector{Float64})
    m = length(R)
    Li = Int(n_layers[i])
    ki = Int(layers[i])
    bi = ki > 0 ? Float64(beta[i]) : 0.0
    for l in 1:Li
        c[l] = _layer_dot(D, i, l, R)
    end
    # r = R + gamma*bi*P_ki is the residual without tree i; a_l = D[i, l, :] ⋅ r
    rr = RR
    if ki > 0
        sc = 0.0
        for l in 1:ki
            sc += c[l]
        end
        rr = RR + 2.0 * gamma * bi * sc + gamma * gamma * bi * bi * PP[i, ki + 1]
    end
    cross[1] = 0.0
    for l in 1:Li
        a = c[l]
        if ki > 0
            g = 0.0
            for lp in 1:ki
                g += G[i, l, lp]
            end
            a += gamma * bi * g
        end
        cross[l + 1] = cross[l] + a
    end
    inv_m = 1.0 / m
    # value of the current point
    if ki == 0
        cur = rr * inv_m + pen_scale * wcum[i, 1]
    else
        cur = (rr - 2.0 * gamma * bi * cross[ki + 1] + gamma * gamma * bi * bi * PP[i, ki + 1]) * inv_m
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
            pk = Float64(PP[i, k + 1])
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
    if ki == 0 && best_k == 0
        return false, RR, n_active
    end
    set_block!(D, R, i, ki, bi, best_k, best_k > 0 ? best_b : 0.0, gamma)
    if best_k == 0
        new_rr = rr
    else
        new_rr = rr - 2.0 * best_b * gamma * cross[best_k + 1] + best_b * best_b * gamma * gamma * PP[i, best_k + 1]
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

"""
    cbcd!(D, G, PP, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2, mode, max_trees,
          max_sweeps, history) -> sweeps

Cyclic sweeps over all blocks until a full sweep changes nothing. Updates `R`, `layers` and
`beta` in place; `history[s]` receives the objective after sweep `s` (while it fits). Returns
the number of sweeps run, negative if `max_sweeps` was hit. `max_trees = 0` means no limit.
"""
function cbcd!(D::AbstractArray{<:Real,3}, G::AbstractArray{<:Real,3}, PP::AbstractMatrix{<:Real},
               wcum::AbstractMatrix{<:Real}, n_layers::AbstractVector{<:Integer}, R::AbstractVector{<:Real},
               layers::AbstractVector{<:Integer}, beta::AbstractVector{<:Real}, gamma::Real, pen_scale::Real,
               alpha2::Real, mode::Integer, max_trees::Integer, max_sweeps::Integer, history::AbstractVector{<:Real})
    n, L, m = size(D)
    length(R) == m || throw(DimensionMismatch("R has $(length(R)) rows, D has $m"))
    length(layers) == n == length(beta) == length(n_layers) ||
        throw(DimensionMismatch("layers, beta and n_layers must have one entry per tree ($n)"))
    mode in (PLAIN, RIDGE, SUBSET) || throw(ArgumentError("mode must be PLAIN (0), RIDGE (1) or SUBSET (2), got $mode"))
    g = Float64(gamma)
    s = Float64(pen_scale)
    a2 = Float64(alpha2)
    md = Int(mode)
    mt = Int(max_trees)
    c = Vector{Float64}(undef, L)
    cross = Vector{Float64}(undef, L + 1)
    n_active = 0
    for i in 1:n
        if layers[i] > 0
            n_active += 1
        end
    end
    for sweep in 1:max_sweeps
        RR = _sumsq(R)
        n_changed = 0
        for i in 1:n
            changed, RR, n_active = block_update!(i, D, G, PP, wcum, n_layers, R, RR, layers, beta, g, s, a2,
                                                  md, mt, n_active, c, cross)
            if changed
                n_changed += 1
            end
        end
        if sweep <= length(history)
            history[sweep] = objective(R, layers, beta, wcum, s, a2, md)
        end
        n_changed == 0 && return sweep
    end
    return -Int(max_sweeps)
end

"""
    alpha_max(D, PP, wcum, n_layers, target, gamma, K)

Smallest alpha at which no single tree improves on the empty model (problem 1).
"""
function alpha_max(D::AbstractArray{<:Real,3}, PP::AbstractMatrix{<:Real}, wcum::AbstractMatrix{<:Real},
                   n_layers::AbstractVector{<:Integer}, target::AbstractVector{<:Real}, gamma::Real, K::Real)
    n = size(D, 1)
    m = length(target)
    best = 0.0
    for i in 1:n
        acc = 0.0
        for k in 1:Int(n_layers[i])
            acc += _layer_dot(D, i, k, target)
            gain = (2.0 * gamma * acc - gamma * gamma * PP[i, k + 1]) / m
            if gain > 0.0 && wcum[i, k + 1] > 0.0
                a = gain * K / wcum[i, k + 1]
                if a > best
                    best = a
                end
            end
        end
    end
    return best
end
