# The pinball (quantile) loss of the SQR paper, Eq. 2, in the elementwise form that
# SymbolicRegression.jl (and PySR's `elementwise_loss`) calls: `loss(prediction, target)` or,
# with sample weights, `loss(prediction, target, weight)`.

"""
    pinball_loss(prediction, target, tau)

Pinball loss of one prediction at quantile level `tau`: under-prediction
(`target > prediction`) weighs `tau`, over-prediction weighs `1 - tau`. The result has the
floating-point type of the residual, so `Float32` data stay `Float32`.
"""
function pinball_loss(prediction::Real, target::Real, tau::Real)
    r = float(target - prediction)
    q = convert(typeof(r), tau)
    return r >= zero(r) ? q * r : (q - one(q)) * r
end

"""
    Pinball(tau)

Callable pinball loss at level `tau` in (0, 1), usable as SymbolicRegression.jl's
`elementwise_loss`: `Pinball(0.9)(prediction, target)` and
`Pinball(0.9)(prediction, target, weight)`.
"""
struct Pinball{T<:AbstractFloat} <: Function
    tau::T
    function Pinball(tau::Real)
        0 < tau < 1 || throw(ArgumentError("quantile tau must lie strictly between 0 and 1, got $tau"))
        t = float(tau)
        return new{typeof(t)}(t)
    end
end

(p::Pinball)(prediction::Real, target::Real) = pinball_loss(prediction, target, p.tau)
(p::Pinball)(prediction::Real, target::Real, weight::Real) = weight * pinball_loss(prediction, target, p.tau)

"""
    mean_pinball_loss(y_true, y_pred, tau; weights=nothing)

(Weighted) mean pinball loss, argument order of `parsimony.metrics.pinball_loss`
(`y_true` first). Weights give a weighted average.
"""
function mean_pinball_loss(y_true::AbstractVector{<:Real}, y_pred::AbstractVector{<:Real}, tau::Real;
                           weights::Union{Nothing,AbstractVector{<:Real}}=nothing)
    n = length(y_true)
    n == length(y_pred) || throw(DimensionMismatch("y_true has $n values but y_pred has $(length(y_pred))"))
    n > 0 || throw(ArgumentError("y_true is empty"))
    0 < tau < 1 || throw(ArgumentError("quantile tau must lie strictly between 0 and 1, got $tau"))
    if weights === nothing
        total = 0.0
        for i in 1:n
            total += pinball_loss(Float64(y_pred[i]), Float64(y_true[i]), tau)
        end
        return total / n
    end
    length(weights) == n || throw(DimensionMismatch("weights has $(length(weights)) values, expected $n"))
    total = 0.0
    wsum = 0.0
    for i in 1:n
        w = Float64(weights[i])
        total += w * pinball_loss(Float64(y_pred[i]), Float64(y_true[i]), tau)
        wsum += w
    end
    return total / wsum
end
