# Optimal 1-D clustering by dynamic programming: the k-Means / k-median / pinball lower bounds of
# OSRT's search (the equivalent-points bound, Theorem 3.7 of the paper). Twin of
# `parsimony.trees._kmeans.cluster_costs`: the same arithmetic in the same order, the same
# divide-and-conquer midpoints, the same first-minimum tie-breaking and the same stopping test,
# so both return the same numbers.
#
# Points are sorted by value; positions are 1-based. The prefix arrays have length n + 1 with
# `p[i + 1]` the sum over the first `i` points, so the run `a..b` (inclusive) sums to
# `p[b + 1] - p[a]` (the twin's formula, its 0-based positions shifted by one).

# the loss codes of `parsimony.losses` (LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL)
const LOSS_SQUARED = 0
const LOSS_ABSOLUTE = 1
const LOSS_PINBALL = 2
# `parsimony.losses.QUANTILE_TOLERANCE`: the relative slack of the lower weighted quantile
const QUANTILE_TOLERANCE = 1e-12

# Position of the lower weighted `level`-quantile of the sorted points a..b (inclusive), from the
# cumulative weights `cum`: the first position whose weight from `a` reaches `level` of the run's
# total within the tolerance, by bisection. Twin of
# `parsimony._loss_kernels.lower_quantile_position(cum, a - 1, b, level)`.
@inline function lower_quantile_position(cum, a::Int, b::Int, level::Float64)
    base = cum[a]
    top = cum[b + 1]
    target = level * (top - base) - QUANTILE_TOLERANCE * (top > 1.0 ? top : 1.0)
    lo = a
    hi = b
    while lo < hi
        mid = (lo + hi) ÷ 2
        if cum[mid + 1] - base >= target
            hi = mid
        else
            lo = mid + 1
        end
    end
    return lo
end

# Weighted squared error of points a..b about their weighted mean.
@inline function _sq_cost(pw, pm, pq, a::Int, b::Int)
    w = pw[b + 1] - pw[a]
    w <= 0.0 && return 0.0
    s = pm[b + 1] - pm[a]
    c = (pq[b + 1] - pq[a]) - s * s / w
    return c > 0.0 ? c : 0.0
end

# Weighted cost of sorted points a..b about their lower weighted `tau`-quantile q:
# `below_weight` times the sum of w (q - y) at or below q plus `above_weight` times the sum of
# w (y - q) above it (absolute error: 1, 1 at tau = 0.5; pinball: 1 - tau, tau).
@inline function _quantile_cost(pw, pm, a::Int, b::Int, values, tau::Float64, below_weight::Float64,
                                above_weight::Float64)
    total = pw[b + 1] - pw[a]
    total <= 0.0 && return 0.0
    lo = lower_quantile_position(pw, a, b, tau)
    q = values[lo]
    below = q * (pw[lo + 1] - pw[a]) - (pm[lo + 1] - pm[a])
    above = (pm[b + 1] - pm[lo + 1]) - q * (pw[b + 1] - pw[lo + 1])
    c = below_weight * below + above_weight * above
    return c > 0.0 ? c : 0.0
end

@inline function _cost(kind::Int, pw, pm, pq, values, a::Int, b::Int, tau::Float64)
    kind == LOSS_SQUARED && return _sq_cost(pw, pm, pq, a, b)
    kind == LOSS_PINBALL && return _quantile_cost(pw, pm, a, b, values, tau, 1.0 - tau, tau)
    return _quantile_cost(pw, pm, a, b, values, 0.5, 1.0, 1.0)
end

# Fill `cur[b]` = cheapest cost of points 1..b in `k` clusters from row `prev` (k - 1 clusters),
# for b in k..n. The optimal start of the last cluster is monotone in b, and at least its start
# with one cluster fewer (`prev_start`); `cur_start` gets this row's (leftmost) optimal starts.
# Divide and conquer with an explicit stack, last in first out, as the twin.
function _fill_row!(cur, cur_start, prev, prev_start, kind::Int, pw, pm, pq, values, k::Int, n::Int,
                    stack::Vector{NTuple{4,Int}}, tau::Float64)
    empty!(stack)
    push!(stack, (k, n, k, n))
    while !isempty(stack)
        lo, hi, olo, ohi = pop!(stack)
        lo > hi && continue
        mid = (lo + hi) ÷ 2
        best = Inf
        a_first = olo > prev_start[mid] ? olo : prev_start[mid]
        a_last = ohi < mid ? ohi : mid
        arg = a_first
        for a in a_first:a_last
            c = prev[a - 1] + _cost(kind, pw, pm, pq, values, a, mid, tau)
            if c < best
                best = c
                arg = a
            end
        end
        cur[mid] = best
        cur_start[mid] = arg
        push!(stack, (lo, mid - 1, olo, arg))
        push!(stack, (mid + 1, hi, arg, ohi))
    end
    return cur
end

"""
    cluster_costs(kind, weights, values, max_clusters, lam, lowest, tau=0.5) -> (best, costs)

Optimal 1-D clustering costs of the points `values` (sorted ascending, with `weights`) for
1, 2, ... clusters, stopped by convexity: once one more cluster saves less than the penalty `lam`,
more never pay (the cost of all points in one more cluster is scanned first, so the row that
ends the search is not filled). `kind` is `LOSS_SQUARED` (weighted k-Means), `LOSS_ABSOLUTE`
(weighted k-median) or `LOSS_PINBALL` (the best k-level step function under the pinball loss at
level `tau`). `lowest` is a constant lower bound on the loss for every number of clusters.

Returns `best = min_k max(cost_k, lowest) + lam * k` over the rows computed and `costs`, the
`cost_k` for k = 1 .. that number of rows. Twin of `parsimony.trees._kmeans.cluster_costs`.
"""
function cluster_costs(kind::Integer, weights::AbstractVector, values::AbstractVector, max_clusters::Integer,
                       lam::Real, lowest::Real, tau::Real=0.5)
    n = length(values)
    n >= 1 || throw(ArgumentError("cluster_costs needs at least one point"))
    length(weights) == n || throw(ArgumentError("weights and values must have one length"))
    kind_ = Int(kind)
    lam_ = Float64(lam)
    floor_ = Float64(lowest)
    tau_ = Float64(tau)
    pw = zeros(n + 1)
    pm = zeros(n + 1)
    pq = zeros(n + 1)
    for i in 1:n
        wi = Float64(weights[i])
        vi = Float64(values[i])
        pw[i + 1] = pw[i] + wi
        pm[i + 1] = pm[i] + wi * vi
        pq[i + 1] = pq[i] + wi * vi * vi
    end
    vals = Float64[Float64(v) for v in values]
    kmax = max_clusters < n ? Int(max_clusters) : n
    costs = zeros(max(kmax, 1))
    prev = zeros(n)
    cur = zeros(n)
    prev_start = ones(Int, n)  # one cluster starts at the first point
    cur_start = ones(Int, n)
    for b in 1:n
        prev[b] = _cost(kind_, pw, pm, pq, vals, 1, b, tau_)
    end
    c1 = prev[n]
    costs[1] = c1
    best = (c1 > floor_ ? c1 : floor_) + lam_
    rows = 1
    stack = NTuple{4,Int}[]
    previous = best
    for k in 2:kmax
        # first the cost of all points in k clusters alone (one scan over the start of the last
        # one): when it does not pay, the search stops without the rest of the row
        ck = Inf
        for a in (prev_start[n] > k ? prev_start[n] : k):n
            c = prev[a - 1] + _cost(kind_, pw, pm, pq, vals, a, n, tau_)
            if c < ck
                ck = c
            end
        end
        if (ck > floor_ ? ck : floor_) + lam_ * k >= previous
            costs[k] = ck
            rows = k
            break
        end
        for b in 1:(k - 1)
            cur[b] = Inf
        end
        _fill_row!(cur, cur_start, prev, prev_start, kind_, pw, pm, pq, vals, k, n, stack, tau_)
        ck = cur[n]
        costs[k] = ck
        rows = k
        obj = (ck > floor_ ? ck : floor_) + lam_ * k
        if obj < best
            best = obj
        end
        obj >= previous && break
        previous = obj
        prev, cur = cur, prev
        prev_start, cur_start = cur_start, prev_start
    end
    return best, costs[1:rows]
end
