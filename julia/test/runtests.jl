# Tests of ParsimonyKernels, mirroring the Python tests of the numba twins
# (tests/test_julia_backend.py runs the same inputs through both engines when Julia exists).
using Test
using Random
using ParsimonyKernels

# ---------------------------------------------------------------------------- brute-force oracles

# A random factored ensemble: leaves (n x m, 0-based leaf ids), T (L x total leaves, the
# transposed leaf table), leaf_offset (n + 1).
function cbcd_problem(rng; n=4, L=3, m=25)
    n_layers = [rand(rng, 1:L) for _ in 1:n]
    nleaves = [rand(rng, 1:5) for _ in 1:n]
    leaf_offset = vcat(0, cumsum(nleaves))
    T = randn(rng, L, leaf_offset[end])
    for i in 1:n, a in 1:nleaves[i], l in (n_layers[i] + 1):L
        T[l, leaf_offset[i] + a] = 0.0
    end
    leaves = zeros(Int, n, m)
    for i in 1:n, j in 1:m
        leaves[i, j] = rand(rng, 0:(nleaves[i] - 1))
    end
    D = dense_layers(leaves, T, leaf_offset)
    target = vec(sum(D; dims=(1, 2))) .+ 0.3 .* randn(rng, m)
    w = rand(rng, n, L) .+ 0.1
    for i in 1:n, l in (n_layers[i] + 1):L
        w[i, l] = 0.0
    end
    wcum = hcat(zeros(n), cumsum(w; dims=2))
    return leaves, T, leaf_offset, n_layers, target, wcum, sum(w)
end

# D[i, l, j]: layer l of tree i at row j, expanded from the factors.
function dense_layers(leaves, T, leaf_offset)
    n, m = size(leaves)
    D = zeros(n, size(T, 1), m)
    for i in 1:n, j in 1:m
        D[i, :, j] .= T[:, leaf_offset[i] + leaves[i, j] + 1]
    end
    return D
end

# Objective of the point (layers, beta), computed densely from scratch (independent of the kernels).
function direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
    n, _, m = size(D)
    R = copy(target)
    for i in 1:n, l in 1:layers[i]
        R .-= gamma * beta[i] .* D[i, l, :]
    end
    pen = sum(wcum[i, layers[i] + 1] for i in 1:n)
    extra = 0.0
    if mode == RIDGE
        extra = alpha2 * sum(layers[i] > 0 ? beta[i]^2 : 0.0 for i in 1:n)
    elseif mode == SUBSET
        extra = alpha2 * count(i -> layers[i] > 0 && beta[i] != 0.0, 1:n)
    end
    return sum(R .^ 2) / m + pen_scale * pen + extra
end

# Cost of one run of sorted points about its best constant: the weighted mean (squared loss), or
# the best of the points under the absolute or pinball loss (a weighted quantile is one of them).
function run_cost(kind, w, v, tau)
    if kind == LOSS_SQUARED
        mu = sum(w .* v) / sum(w)
        return sum(w .* (v .- mu) .^ 2)
    end
    level = kind == LOSS_PINBALL ? tau : 0.5
    pinball(r) = r >= 0 ? level * r : (level - 1) * r
    return minimum(sum(w .* pinball.(v .- c)) for c in v) * (kind == LOSS_PINBALL ? 1.0 : 2.0)
end

# Cheapest cut of the sorted points into k contiguous non-empty runs, by enumerating the cuts.
function brute_costs(kind, w, v, kmax, tau)
    n = length(v)
    out = Float64[]
    for k in 1:kmax
        best = Inf
        for cuts in Iterators.product(ntuple(_ -> 1:(n - 1), k - 1)...)
            bounds = (0, cuts..., n)
            all(bounds[i] < bounds[i + 1] for i in 1:k) || continue
            total = sum(run_cost(kind, w[(bounds[i] + 1):bounds[i + 1]], v[(bounds[i] + 1):bounds[i + 1]], tau)
                        for i in 1:k)
            best = min(best, total)
        end
        push!(out, best)
    end
    return out
end

@testset "ParsimonyKernels" begin
    @testset "OSRT cluster costs" begin
        rng = MersenneTwister(5)
        for kind in (LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL), trial in 1:60
            n = rand(rng, 1:7)
            v = sort(isodd(trial) ? Float64.(rand(rng, 0:4, n)) : randn(rng, n))
            w = (ones(n), Float64.(rand(rng, 1:4, n)), 0.05 .+ 3 .* rand(rng, n))[trial % 3 + 1]
            tau = 0.7
            # without a penalty every row is filled: each equals the brute-force cut
            _, costs = cluster_costs(kind, w, v, n, 0.0, 0.0, tau)
            @test costs ≈ brute_costs(kind, w, v, length(costs), tau) atol = 1e-9
            # with one, the convexity stop still finds the penalised minimum
            lam = 0.05 + rand(rng)
            flo = rand(rng) < 0.5 ? 0.0 : 0.3 * costs[1]
            best, _ = cluster_costs(kind, w, v, n, lam, flo, tau)
            expect = minimum(max(c, flo) + lam * k for (k, c) in enumerate(brute_costs(kind, w, v, n, tau)))
            @test best ≈ expect atol = 1e-9
            # at most max_clusters rows
            @test length(cluster_costs(kind, w, v, 1, 0.0, 0.0, tau)[2]) == 1
        end
        @test_throws ArgumentError cluster_costs(LOSS_SQUARED, Float64[], Float64[], 3, 0.1, 0.0)
    end
    @testset "ForestPrune CBCD" begin
        rng = MersenneTwister(11)
        for trial in 1:20
            leaves, T, leaf_offset, n_layers, target, wcum, K = cbcd_problem(rng)
            D = dense_layers(leaves, T, leaf_offset)
            n, L, m = size(D)
            gram, prefix_norms = gram_tables(leaves, T, leaf_offset, n_layers)
            for i in 1:n
                for a in 1:L, b in 1:L
                    @test gram[i, a, b] ≈ sum(D[i, a, :] .* D[i, b, :]) atol = 1e-10
                end
                for k in 0:L
                    kk = min(k, n_layers[i])
                    P = kk == 0 ? zeros(m) : vec(sum(D[i, 1:kk, :]; dims=1))
                    @test prefix_norms[i, k + 1] ≈ sum(P .^ 2) atol = 1e-9
                end
            end
            gamma = 0.8
            for mode in (PLAIN, RIDGE, SUBSET)
                alpha = rand(rng) * 0.5
                pen_scale = alpha / K
                alpha2 = mode == PLAIN ? 0.0 : 0.01
                layers = [rand(rng, 0:n_layers[i]) for i in 1:n]
                beta = mode == PLAIN ? ones(n) : [l > 0 ? 1.0 : 0.0 for l in layers]
                R = residual(leaves, T, leaf_offset, target, layers, beta, gamma)
                @test objective(R, layers, beta, wcum, pen_scale, alpha2, mode) ≈
                      direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode) rtol = 1e-10
                # one block update equals brute-force enumeration of the block's candidates
                i = rand(rng, 1:n)
                before = direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
                cand = Float64[]
                for k in 0:n_layers[i]
                    lk = copy(layers)
                    lk[i] = k
                    bk = copy(beta)
                    if k == 0 || mode == PLAIN
                        bk[i] = mode == PLAIN ? 1.0 : 0.0
                        push!(cand, direct_objective(D, target, lk, bk, wcum, gamma, pen_scale, alpha2, mode))
                    else  # best tree weight on a fine grid (the kernel's closed form can only beat it)
                        best_b = Inf
                        for b in range(-3.0, 3.0; length=601)
                            bk[i] = b
                            best_b = min(best_b, direct_objective(D, target, lk, bk, wcum, gamma, pen_scale, alpha2, mode))
                        end
                        push!(cand, best_b)
                    end
                end
                c = zeros(L)
                cross = zeros(L + 1)
                sums = zeros(maximum(diff(leaf_offset)))
                n_active = count(>(0), layers)
                _, RR, _ = block_update!(i, leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R,
                                         sum(R .^ 2), layers, beta, gamma, pen_scale, alpha2, mode, 0, n_active, c,
                                         cross, sums)
                after = direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
                @test after <= min(before, minimum(cand)) + 1e-9
                @test R ≈ residual(leaves, T, leaf_offset, target, layers, beta, gamma) atol = 1e-9
                @test RR ≈ sum(R .^ 2) rtol = 1e-9
                # full CBCD: objective never increases, result block-wise optimal
                layers = zeros(Int, n)
                beta = mode == PLAIN ? ones(n) : zeros(n)
                R = residual(leaves, T, leaf_offset, target, layers, beta, gamma)
                history = fill(NaN, 50)
                sweeps = cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, layers, beta, gamma,
                               pen_scale, alpha2, mode, 0, 50, history)
                @test sweeps > 0
                h = history[1:sweeps]
                @test all(diff(h) .<= 1e-12 * abs(h[1]))
                @test all(isnan, history[(sweeps + 1):end])
                final = direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
                @test h[end] ≈ final rtol = 1e-9
                # restarted at its own fixed point: one sweep, no block moves, residual untouched
                layers2, beta2, R2, h2 = copy(layers), copy(beta), copy(R), fill(NaN, 3)
                @test cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R2, layers2, beta2, gamma,
                            pen_scale, alpha2, mode, 0, 50, h2) == 1
                @test layers2 == layers && beta2 == beta && R2 == R
                @test h2[1] ≈ final rtol = 1e-9
                @test cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, copy(R), copy(layers),
                            copy(beta), gamma, pen_scale, alpha2, mode, 0, 0, Float64[]) == 0
                if mode == PLAIN
                    for i in 1:n, k in 0:n_layers[i]
                        lk = copy(layers)
                        lk[i] = k
                        @test direct_objective(D, target, lk, beta, wcum, gamma, pen_scale, 0.0, PLAIN) >=
                              final - 1e-9
                    end
                end
            end
            # truncated columns and max_trees
            layers = [rand(rng, 0:n_layers[i]) for i in 1:n]
            Q = stack_truncated(leaves, T, leaf_offset, layers, [n - 1, 0])
            for (col, i) in enumerate((n, 1))
                expect = layers[i] == 0 ? zeros(m) : vec(sum(D[i, 1:layers[i], :]; dims=1))
                @test Q[:, col] ≈ expect atol = 1e-12
            end
            layers = zeros(Int, n)
            beta = ones(n)
            R = residual(leaves, T, leaf_offset, target, layers, beta, 1.0)
            cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, layers, beta, 1.0, 0.0, 0.0, PLAIN, 1,
                  50, Float64[])
            @test count(>(0), layers) <= 1
            # alpha_max: above it nothing is kept from the empty model, below it something is
            amax = alpha_max(leaves, T, leaf_offset, prefix_norms, wcum, n_layers, target, 1.0, K)
            if amax > 0
                for (factor, expect_empty) in ((1.01, true), (0.99, false))
                    layers = zeros(Int, n)
                    R = residual(leaves, T, leaf_offset, target, layers, ones(n), 1.0)
                    cbcd!(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, layers, ones(n), 1.0,
                          factor * amax / K, 0.0, PLAIN, 0, 50, Float64[])
                    @test all(==(0), layers) == expect_empty
                end
            end
        end
        @test_throws ArgumentError cbcd!(zeros(Int, 1, 2), zeros(1, 1), [0, 1], zeros(1, 1, 1), zeros(1, 2),
                                         zeros(1, 2), [1], zeros(2), [0], [1.0], 1.0, 0.0, 0.0, 7, 0, 5, Float64[])
    end
end
