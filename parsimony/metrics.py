"""Quantile-regression metrics and model complexity (SQR paper, Section 4 and Appendix B).

All metrics take ``(y_true, y_pred, ...)`` in that order, validate their input and accept
``sample_weight`` where a weighted mean is natural. Two names are re-exported from their homes:
``TOKEN_COMPLEXITY`` (the SQR paper's token weights, :data:`parsimony.tokens.TOKEN_COMPLEXITY`)
and ``QuantileScoreMixin`` (:class:`parsimony.base.QuantileScoreMixin`).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._validation import check_array_1d, check_quantile, check_same_length, check_sample_weight
from .base import QuantileScoreMixin
from .losses import Pinball
from .tokens import TOKEN_COMPLEXITY, token_weights

__all__ = ["pinball_loss", "normalized_quantile_loss", "coverage", "absolute_coverage_error", "interval_coverage",
           "expression_complexity", "complexity", "TOKEN_COMPLEXITY", "QuantileScoreMixin"]


def _prepare(y_true, y_pred, sample_weight=None):
    y_true = check_array_1d(y_true, "y_true")
    y_pred = check_array_1d(y_pred, "y_pred")
    check_same_length(("y_true", y_true), ("y_pred", y_pred))
    return y_true, y_pred, check_sample_weight(sample_weight, len(y_true))


def pinball_loss(y_true, y_pred, quantile=0.5, sample_weight=None) -> float:
    """Mean pinball (quantile) loss (equation 2 of the SQR paper).

    Under-prediction (``y_true > y_pred``) weighs ``quantile``; over-prediction weighs
    ``1 - quantile``. At ``quantile=0.5`` it is half the mean absolute error.
    """
    tau = check_quantile(quantile)
    y_true, y_pred, w = _prepare(y_true, y_pred, sample_weight)
    return Pinball(tau).value(y_true, y_pred, w)


def normalized_quantile_loss(y_true, y_pred, quantile=0.5, sample_weight=None, y_range=None) -> float:
    """Mean pinball loss divided by a range of the target (equation 7 of the SQR paper).

    ``y_range`` is the divisor: the SQR paper's tables divide by ``max(y) - min(y)`` of the
    **whole dataset's** target, so pass that range when ``y_true`` is a test fold (the
    experiment runner and ``benchmarks/sqr_srbench.py`` do). By default it is the range of
    ``y_true`` itself. Raises ``ValueError`` when the range is zero or ``y_range`` is not positive.
    """
    loss = pinball_loss(y_true, y_pred, quantile, sample_weight)
    if y_range is None:
        y = np.asarray(y_true, dtype=np.float64).ravel()
        span = float(y.max() - y.min())
        if span == 0.0:
            raise ValueError("normalized_quantile_loss is undefined for a constant y_true (zero range)")
        return loss / span
    span = float(y_range)
    if not np.isfinite(span) or span <= 0.0:
        raise ValueError(f"y_range must be a positive finite number (the target's max - min), got {y_range!r}")
    return loss / span


def coverage(y_true, y_pred, sample_weight=None) -> float:
    """Empirical coverage: the share of ``y_true <= y_pred`` (equation 9 of the SQR paper)."""
    y_true, y_pred, w = _prepare(y_true, y_pred, sample_weight)
    return float(np.average(y_true <= y_pred, weights=w))


def absolute_coverage_error(y_true, y_pred, quantile=0.5, sample_weight=None) -> float:
    """Absolute coverage error ``|coverage - quantile|`` (equation 8 of the SQR paper)."""
    tau = check_quantile(quantile)
    return abs(coverage(y_true, y_pred, sample_weight) - tau)


def interval_coverage(y_true, lower, upper) -> float:
    """Share of ``y_true`` inside the closed interval ``[lower, upper]``."""
    y_true = check_array_1d(y_true, "y_true")
    lower = check_array_1d(lower, "lower")
    upper = check_array_1d(upper, "upper")
    check_same_length(("y_true", y_true), ("lower", lower), ("upper", upper))
    crossed = np.flatnonzero(lower > upper)
    if crossed.size:
        raise ValueError(f"lower > upper in {crossed.size} rows (first: row {crossed[0]}); pass the bounds in order")
    return float(np.mean((y_true >= lower) & (y_true <= upper)))


# ----------------------------------------------------------------------------------- complexity
def expression_complexity(expr, weights=None) -> int:
    """Token-weighted complexity of a symbolic expression (sympy expression or string).

    Binary sums and products of ``k`` terms count ``k - 1`` operator tokens; a factor
    ``a**-1`` counts as a division, ``a**2`` as square, ``a**3`` as cube, ``a**0.5`` as sqrt,
    a factor ``-1`` as a negation; every feature occurrence and constant counts one.
    ``weights`` (a dict, default None) overrides :data:`~parsimony.symbolic.TOKEN_COMPLEXITY`
    with the names SymbolicQuantileRegressor's ``complexity_of_operators`` takes (operator
    names or aliases such as ``"+"``, ``"feature"`` or ``"variable"``, ``"constant"``), here
    any weights >= 0; the total is truncated to an integer.
    """
    import sympy

    w = token_weights(weights, "weights", integer=False)
    if isinstance(expr, str):
        expr = sympy.sympify(expr)

    def walk(e) -> int:
        if e.is_Symbol:
            return w["feature"]
        if e.is_Number or e.is_NumberSymbol:
            return w["constant"]
        if e.is_Add:
            first, *rest = e.as_ordered_terms()
            total = walk(first)
            for t in rest:  # a term with a minus sign is a subtraction, not add + neg
                total += walk(-t) + w["sub"] if t.could_extract_minus_sign() else walk(t) + w["add"]
            return total
        if e.is_Mul:
            coeff, factors = e.as_coeff_mul()
            total = 0
            numer = [f for f in factors if not (f.is_Pow and f.exp.is_Number and f.exp < 0)]
            denom = [f for f in factors if f not in numer]
            if coeff == -1:
                total += w["neg"]
            elif coeff != 1:
                numer = [coeff, *numer]
            for f in numer:
                total += walk(f)
            for f in denom:
                total += walk(sympy.Pow(f.base, -f.exp))
            n_num = max(len(numer), 1) if denom else len(numer)
            if not numer and denom:
                total += w["constant"]  # 1 / a
            total += w["mul"] * max(n_num - 1, 0) + w["div"] * len(denom)
            return total
        if e.is_Pow:
            base, ex = e.args
            if ex == 2:
                return walk(base) + w["square"]
            if ex == 3:
                return walk(base) + w["cube"]
            if ex == sympy.Rational(1, 2):
                return walk(base) + w["sqrt"]
            if ex == -1:
                return w["constant"] + walk(base) + w["div"]
            return walk(base) + walk(ex) + w["pow"]
        name = type(e).__name__.lower()
        if name in w and e.args:
            return w[name] + sum(walk(a) for a in e.args)
        if isinstance(e, sympy.Abs):
            return w["abs"] + walk(e.args[0])
        raise ValueError(f"no complexity weight for the sympy node {type(e).__name__!r}")

    return int(walk(sympy.sympify(expr)))


def complexity(model) -> int:
    """Model complexity with the SQR paper's conventions (Appendix B).

    - the package's fitted estimators report their ``complexity_`` (set by ``fit``);
    - symbolic expressions (sympy or string): token weights of :data:`~parsimony.symbolic.TOKEN_COMPLEXITY`;
    - other fitted models: linear (``coef_``) nonzero coefficients plus one for a nonzero
      intercept; neural networks (``coefs_``) nonzero weights and biases; decision trees
      (``tree_``) nodes; tree ensembles (``estimators_``) the sum over members; LightGBM
      every split and leaf; a pipeline, search or target transformer its final model.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        For an estimator that is not fitted yet.
    TypeError
        For an object none of these conventions measures.
    """
    if isinstance(model, str) or type(model).__module__.startswith("sympy"):
        return expression_complexity(model)
    if hasattr(model, "complexity_"):
        if model.complexity_ is None:
            raise TypeError(f"complexity() cannot measure this {type(model).__name__}: its complexity_ is None")
        return int(model.complexity_)
    if isinstance(model, numbers.Number):
        if isinstance(model, numbers.Real) and not np.isfinite(float(model)):
            raise ValueError(f"complexity() of a non-finite number ({model!r}) is undefined: the model is not a constant")
        return 1
    if callable(getattr(model, "fit", None)):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(model, msg=f"complexity() needs a fitted model: this {type(model).__name__} is not fitted "
                                   "yet; call fit first")
    if hasattr(model, "best_estimator_"):
        return complexity(model.best_estimator_)
    if hasattr(model, "steps"):
        return complexity(model.steps[-1][1])
    if hasattr(model, "regressor_"):  # TransformedTargetRegressor
        return complexity(model.regressor_)
    if hasattr(model, "coefs_"):  # neural network: nonzero weights and biases
        return int(sum(np.count_nonzero(a) for a in (*model.coefs_, *model.intercepts_)))
    if hasattr(model, "coef_"):
        coef = np.asarray(model.coef_)
        intercept = np.asarray(getattr(model, "intercept_", 0.0))
        return int(np.count_nonzero(coef) + np.count_nonzero(intercept))
    if hasattr(model, "tree_") and hasattr(model.tree_, "node_count"):
        return int(model.tree_.node_count)
    if hasattr(model, "estimators_"):
        members = np.ravel(np.asarray(model.estimators_, dtype=object))
        return int(sum(complexity(m) for m in members))
    if hasattr(model, "booster_"):  # LightGBM: every split and leaf node of every tree
        dump = model.booster_.dump_model()
        return int(sum(2 * t["num_leaves"] - 1 for t in dump["tree_info"]))
    raise TypeError(f"complexity() does not know how to measure a {type(model).__name__}")
