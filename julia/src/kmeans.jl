# Optimal 1-D clustering by dynamic programming: the k-Means / k-median equivalent-points lower
# bound of OSRT (Algorithm 1 and Theorem 3.7 of the paper). Twin of
# `parsimony.trees._kmeans.cluster_costs`: same arithmetic in the same order, same
# divide-and-conquer midpoints and the same first-minimum tie-breaking, so both return the
# same numbers.
#
# Points are sorted by value; position `i` is 1-based. The prefix arrays have length n + 1 with
# `p[i + 1]` = sum over the first `i` points, so the cost of the run `a..b` (inclusive) reads
# `p[b + 1] - p[a]`.

const KIND_SQUARED = 0
const KIND_ABSOLUTE = 1

# Weighted squared error of points a..b about their weighted mean.
@inline function _sq_cost(pw, pm, pq, a::Int, b::Int)
    w = pw[b + 1] - pw[a]
    w <= 0.0 && return 0.0
    s = pm[b + 1] - pm[a]
    c = (pq[b + 1] - pq[a]) - s * s / w
    return c > 0.0 ? c : 0.0
end

# Weighted absolute error of sorted points a..b about their weighted (lower) median: the first
# point whose cumulative weight reaches half the run's total, found by bisection.
@inline function _abs_cost(pw, pm, a::Int, b::Int, values)
    total = pw[b + 1] - pw[a]
    total <= 0.0 && return 0.0
    lo = a
    hi = b
    while lo < hi
        mid = (lo + hi) ÷ 2
        if 2.0 * (pw[mid + 1] - pw[a]) >= total
            hi = mid
        else
            lo = mid + 1
        end
    end
    med = values[lo]
    left = med * (pw[lo + 1] - pw[a]) - (pm[lo + 1] - pm[a])
    right = (pm[b + 1] - pm[lo + 1]) - med * (pw[b + 1] - pw[lo + 1])
    c = left + right
    return c > 0.0 ? c : 0.0
end

@inline function _cost(kind::Int, pw, pm, pq, values, a::Int, b::Int)
    kind == KIND_SQUARED && return _sq_cost(pw, pm, pq, a, b)
    return _abs_cost(pw, pm, a, b, values)
end

# Fill `cur[b]` = cheapest cost of points 1..b in `k` clusters from row `prev` (k - 1 clusters),
# for b in k..n. The optimal start `a` of the last cluster is monotone in `b`, so rows are
# filled by divide and conquer with an explicit stack (LIFO, as the numba twin).
function _fill_row!(cur, prev, kind::Int, pw, pm, pq, values, k::Int, n::Int,
                    stack::Vector{NTuple{4,Int}})
    empty!(stack)
    push!(stack, (k, n, k, n))
    while !isempty(stack)
        lo, hi, olo, ohi = pop!(stack)
        lo > hi && continue
        mid = (lo + hi) ÷ 2
        best = Inf
        arg = olo
        stop = ohi < mid ? ohi : mid
        for a in olo:stop
            c = prev[a - 1] + _cost(kind, pw, pm, pq, values, a, mid)
            if c < best
                best = c
                arg = a
            end
        end
        cur[mid] = best
        push!(stack, (lo, mid - 1, olo, arg))
        push!(stack, (mid + 1, hi, arg, ohi))
    end
    return cur
end

"""
    cluster_costs(kind, weights, values, max_clusters, lam, loss_floor) -> (best, costs)

Optimal 1-D clustering costs for 1, 2, ... clusters, grown one cluster at a time and stopped
by convexity: once one more cluster no longer lowers `max(cost_k, loss_floor) + lam * k`,
more clusters never do (Theorem 3.7 of the OSRT paper).

`kind` is `KIND_SQUARED` (0: weighted squared error, k-Means) or `KIND_ABSOLUTE`
(1: weighted absolute error about weighted medians, k-median). `values` must be sorted
ascending, `weights` aligned with them. Returns `best = min_k max(cost_k, loss_floor) +
lam * k` over the rows computed and `costs[k] = cost_k` for those rows.
"""
function cluster_costs(kind::Integer, weights::AbstractVector{<:Real}, values::AbstractVector{<:Real},
                       max_clusters::Integer, lam::Real, loss_floor::Real)
    kind == KIND_SQUARED || kind == KIND_ABSOLUTE ||
        throw(ArgumentError("kind must be $KIND_SQUARED (squared) or $KIND_ABSOLUTE (absolute), got $kind"))
    kindi = Int(kind)
    n = length(values)
    n > 0 || throw(ArgumentError("values is empty"))
    length(weights) == n ||
        throw(DimensionMismatch("weights has $(length(weights)) entries but values has $n"))
    vals = Vector{Float64}(undef, n)
    pw = zeros(n + 1)
    pm = zeros(n + 1)
    pq = zeros(n + 1)
    for i in 1:n
        v = Float64(values[i])
        vals[i] = v
        w = Float64(weights[i])
        pw[i + 1] = pw[i] + w
        pm[i + 1] = pm[i] + w * v
        pq[i + 1] = pq[i] + w * v * v
    end
    kmax = max_clusters < n ? Int(max_clusters) : n
    costs = Vector{Float64}(undef, max(kmax, 1))
    prev = Vector{Float64}(undef, n)
    cur = Vector{Float64}(undef, n)
    for b in 1:n
        prev[b] = _cost(kindi, pw, pm, pq, vals, 1, b)
    end
    lamf = Float64(lam)
    floorf = Float64(loss_floor)
    c1 = prev[n]
    costs[1] = c1
    best = (c1 > floorf ? c1 : floorf) + lamf
    rows = 1
    previous_obj = best
    stack = NTuple{4,Int}[]
    for k in 2:kmax
        for b in 1:(k - 1)
            cur[b] = Inf
        end
        _fill_row!(cur, prev, kindi, pw, pm, pq, vals, k, n, stack)
        ck = cur[n]
        costs[k] = ck
        rows = k
        obj = (ck > floorf ? ck : floorf) + lamf * k
        if obj < best
            best = obj
        end
        obj >= previous_obj && break
        previous_obj = obj
        prev, cur = cur, prev
    end
    return best, costs[1:rows]
end
