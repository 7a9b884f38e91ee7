# Tests of ParsimonyKernels, mirroring the Python tests of the numba twins
# (tests/test_julia_backend.py runs the same inputs through both engines when Julia exists).
using Test
using Random
using ParsimonyKernels

# ---------------------------------------------------------------------------- brute-force oracles

# Cheapest cost of partitioning `values` into exactly k (non-empty) clusters, over all labelings.
function brute_cluster_cost(kind, weights, values, k)
    n = length(values)
    best = Inf
    labels = zeros(Int, n)
    for code in 0:(k^n - 1)
        x = code
        for t in 1:n
            labels[t] = x % k
            x ÷= k
        end
        length(unique(labels)) == k || continue
        total = 0.0
        for c in 0:(k - 1)
            idx = findall(==(c), labels)
            v = values[idx]
            w = weights[idx]
            if kind == KIND_SQUARED
                mu = sum(w .* v) / sum(w)
                total += sum(w .* (v .- mu) .^ 2)
            else
                total += minimum(sum(w .* abs.(v .- cand)) for cand in v)
            end
        end
        best = min(best, total)
    end
    return best
end

# A random factored ensemble: leaves (n x m, 0-based leaf ids), T (L x total leaves, the
# transposed leaf table), loff (n + 1).
function cbcd_problem(rng; n=4, L=3, m=25)
    n_layers = [rand(rng, 1:L) for _ in 1:n]
    nleaves = [rand(rng, 1:5) for _ in 1:n]
    loff = vcat(0, cumsum(nleaves))
    T = randn(rng, L, loff[end])
    for i in 1:n, a in 1:nleaves[i], l in (n_layers[i] + 1):L
        T[l, loff[i] + a] = 0.0
    end
    leaves = zeros(Int, n, m)
    for i in 1:n, j in 1:m
        leaves[i, j] = rand(rng, 0:(nleaves[i] - 1))
    end
    D = dense_layers(leaves, T, loff)
    target = vec(sum(D; dims=(1, 2))) .+ 0.3 .* randn(rng, m)
    w = rand(rng, n, L) .+ 0.1
    for i in 1:n, l in (n_layers[i] + 1):L
        w[i, l] = 0.0
    end
    wcum = hcat(zeros(n), cumsum(w; dims=2))
    return leaves, T, loff, n_layers, target, wcum, sum(w)
end

# D[i, l, j]: layer l of tree i at row j, expanded from the factors.
function dense_layers(leaves, T, loff)
    n, m = size(leaves)
    D = zeros(n, size(T, 1), m)
    for i in 1:n, j in 1:m
        D[i, :, j] .= T[:, loff[i] + leaves[i, j] + 1]
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

@testset "ParsimonyKernels" begin
    @testset "pinball loss (SQR paper Eq. 2, Appendix A)" begin
        @test pinball_loss(1.0, 3.0, 0.9) ≈ 0.9 * 2.0           # under-prediction weighs tau
        @test pinball_loss(3.0, 1.0, 0.9) ≈ 0.1 * 2.0           # over-prediction weighs 1 - tau
        @test pinball_loss(2.0, 2.0, 0.3) == 0.0
        @test pinball_loss(1.0f0, 3.0f0, 0.9) isa Float32      # SymbolicRegression's Float32 path
        # Appendix A: 100 unit errors, half under at tau = .5 -> 0.5; 10 under at tau = .9 -> 0.18
        y = zeros(100)
        half = vcat(ones(50), -ones(50))
        @test mean_pinball_loss(y, y .- half, 0.5) ≈ 0.5
        tenth = vcat(ones(10), -ones(90))
        @test mean_pinball_loss(y, y .- tenth, 0.9) ≈ 0.18
        p = Pinball(0.25)
        @test p(0.0, 1.0) ≈ 0.25
        @test p(0.0, 1.0, 2.0) ≈ 0.5
        @test p isa Function
        @test_throws ArgumentError Pinball(1.0)
        @test_throws ArgumentError Pinball(0)
        @test_throws ArgumentError mean_pinball_loss([1.0], [1.0], 1.5)
        @test_throws DimensionMismatch mean_pinball_loss([1.0, 2.0], [1.0], 0.5)
        # weighted mean equals the mean over rows repeated by their weight
        yt = [1.0, 4.0, 2.0]
        yp = [2.0, 1.0, 2.5]
        @test mean_pinball_loss(yt, yp, 0.7; weights=[1.0, 2.0, 3.0]) ≈
              mean_pinball_loss(vcat(yt[1], yt[2], yt[2], fill(yt[3], 3)),
                                vcat(yp[1], yp[2], yp[2], fill(yp[3], 3)), 0.7)
        # the mean pinball loss of a constant is minimised at the empirical quantile
        rng = MersenneTwister(3)
        v = sort(randn(rng, 41))
        for tau in (0.1, 0.5, 0.9)
            losses = [mean_pinball_loss(v, fill(c, 41), tau) for c in v]
            @test v[argmin(losses)] == v[ceil(Int, tau * 41)]
        end
    end

    @testset "k-Means / k-median DP equals brute-force partitioning" begin
        rng = MersenneTwister(7)
        for trial in 1:30
            n = rand(rng, 1:6)
            values = sort(round.(randn(rng, n); digits=1))
            weights = trial % 2 == 0 ? rand(rng, 1:4, n) .* 1.0 : 0.05 .+ 3.0 .* rand(rng, n)
            for kind in (KIND_SQUARED, KIND_ABSOLUTE)
                w = weights
                brute = [brute_cluster_cost(kind, w, values, k) for k in 1:n]
                # lam = 0: the convexity stop never triggers before costs stop falling
                best, costs = cluster_costs(kind, w, values, n, 0.0, 0.0)
                for k in 1:length(costs)
                    @test costs[k] ≈ brute[k] atol = 1e-9
                end
                @test issorted(costs; rev=true)
                for lam in (0.05, 0.5, 2.0), loss_floor in (0.0, 0.3)
                    best, costs = cluster_costs(kind, w, values, n, lam, loss_floor)
                    oracle = minimum(max(brute[k], loss_floor) + lam * k for k in 1:n)
                    @test best ≈ oracle atol = 1e-9
                    @test length(costs) <= n
                end
            end
        end
        # max_clusters caps the rows; one point costs nothing
        best, costs = cluster_costs(KIND_SQUARED, ones(5), collect(1.0:5.0), 2, 0.0, 0.0)
        @test length(costs) == 2
        @test costs[1] ≈ 10.0
        @test cluster_costs(KIND_SQUARED, [2.0], [3.0], 4, 0.5, 0.0) == (0.5, [0.0])
        @test_throws ArgumentError cluster_costs(2, ones(2), [1.0, 2.0], 2, 0.0, 0.0)
        @test_throws ArgumentError cluster_costs(KIND_SQUARED, Float64[], Float64[], 2, 0.0, 0.0)
        @test_throws DimensionMismatch cluster_costs(KIND_SQUARED, ones(1), [1.0, 2.0], 2, 0.0, 0.0)
    end

    @testset "ForestPrune CBCD" begin
        rng = MersenneTwister(11)
        for trial in 1:20
            leaves, T, loff, n_layers, target, wcum, K = cbcd_problem(rng)
            D = dense_layers(leaves, T, loff)
            n, L, m = size(D)
            G, PP = gram_tables(leaves, T, loff, n_layers)
            for i in 1:n
                for a in 1:L, b in 1:L
                    @test G[i, a, b] ≈ sum(D[i, a, :] .* D[i, b, :]) atol = 1e-10
                end
                for k in 0:L
                    kk = min(k, n_layers[i])
                    P = kk == 0 ? zeros(m) : vec(sum(D[i, 1:kk, :]; dims=1))
                    @test PP[i, k + 1] ≈ sum(P .^ 2) atol = 1e-9
                end
            end
            gamma = 0.8
            for mode in (PLAIN, RIDGE, SUBSET)
                alpha = rand(rng) * 0.5
                pen_scale = alpha / K
                alpha2 = mode == PLAIN ? 0.0 : 0.01
                layers = [rand(rng, 0:n_layers[i]) for i in 1:n]
                beta = mode == PLAIN ? ones(n) : [l > 0 ? 1.0 : 0.0 for l in layers]
                R = residual(leaves, T, loff, target, layers, beta, gamma)
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
                sums = zeros(maximum(diff(loff)))
                n_active = count(>(0), layers)
                _, RR, _ = block_update!(i, leaves, T, loff, G, PP, wcum, n_layers, R, sum(R .^ 2), layers, beta,
                                         gamma, pen_scale, alpha2, mode, 0, n_active, c, cross, sums)
                after = direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
                @test after <= min(before, minimum(cand)) + 1e-9
                @test R ≈ residual(leaves, T, loff, target, layers, beta, gamma) atol = 1e-9
                @test RR ≈ sum(R .^ 2) rtol = 1e-9
                # full CBCD: objective never increases, result block-wise optimal
                layers = zeros(Int, n)
                beta = mode == PLAIN ? ones(n) : zeros(n)
                R = residual(leaves, T, loff, target, layers, beta, gamma)
                history = fill(NaN, 50)
                sweeps = cbcd!(leaves, T, loff, G, PP, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2,
                               mode, 0, 50, history)
                @test sweeps > 0
                h = history[1:sweeps]
                @test all(diff(h) .<= 1e-12 * abs(h[1]))
                @test all(isnan, history[(sweeps + 1):end])
                final = direct_objective(D, target, layers, beta, wcum, gamma, pen_scale, alpha2, mode)
                @test h[end] ≈ final rtol = 1e-9
                # restarted at its own fixed point: one sweep, no block moves, residual untouched
                layers2, beta2, R2, h2 = copy(layers), copy(beta), copy(R), fill(NaN, 3)
                @test cbcd!(leaves, T, loff, G, PP, wcum, n_layers, R2, layers2, beta2, gamma, pen_scale, alpha2,
                            mode, 0, 50, h2) == 1
                @test layers2 == layers && beta2 == beta && R2 == R
                @test h2[1] ≈ final rtol = 1e-9
                @test cbcd!(leaves, T, loff, G, PP, wcum, n_layers, copy(R), copy(layers), copy(beta), gamma,
                            pen_scale, alpha2, mode, 0, 0, Float64[]) == 0
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
            Q = stack_truncated(leaves, T, loff, layers, [n - 1, 0])
            for (col, i) in enumerate((n, 1))
                expect = layers[i] == 0 ? zeros(m) : vec(sum(D[i, 1:layers[i], :]; dims=1))
                @test Q[:, col] ≈ expect atol = 1e-12
            end
            layers = zeros(Int, n)
            beta = ones(n)
            R = residual(leaves, T, loff, target, layers, beta, 1.0)
            cbcd!(leaves, T, loff, G, PP, wcum, n_layers, R, layers, beta, 1.0, 0.0, 0.0, PLAIN, 1, 50, Float64[])
            @test count(>(0), layers) <= 1
            # alpha_max: above it nothing is kept from the empty model, below it something is
            amax = alpha_max(leaves, T, loff, PP, wcum, n_layers, target, 1.0, K)
            if amax > 0
                for (factor, expect_empty) in ((1.01, true), (0.99, false))
                    layers = zeros(Int, n)
                    R = residual(leaves, T, loff, target, layers, ones(n), 1.0)
                    cbcd!(leaves, T, loff, G, PP, wcum, n_layers, R, layers, ones(n), 1.0, factor * amax / K, 0.0,
                          PLAIN, 0, 50, Float64[])
                    @test all(==(0), layers) == expect_empty
                end
            end
        end
        @test_throws ArgumentError cbcd!(zeros(Int, 1, 2), zeros(1, 1), [0, 1], zeros(1, 1, 1), zeros(1, 2),
                                         zeros(1, 2), [1], zeros(2), [0], [1.0], 1.0, 0.0, 0.0, 7, 0, 5, Float64[])
    end
end
