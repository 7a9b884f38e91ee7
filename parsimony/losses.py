"""The losses of every method, in one place: squared, absolute and pinball(tau).

A loss object (skglm's datafit shape) carries its integer ``code`` (one set for every kernel:
:data:`LOSS_SQUARED`, :data:`LOSS_ABSOLUTE`, :data:`LOSS_PINBALL`), its level ``tau``, and the
NumPy reference of the function: ``value`` (weighted mean), ``gradient``, ``optimal_constant``
(the best constant prediction) and ``baseline`` (the loss of that constant). ``julia_source``
writes the same function as Julia source for PySR's ``elementwise_loss``. The numba kernels
evaluate a loss by its code through :mod:`parsimony._loss_kernels`.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_quantile

#: Loss codes shared by every numba kernel (symbolic search, trees, metrics).
LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL = 0, 1, 2

#: Relative rounding tolerance of the lower weighted quantile: a cumulative weight within this
#: share of the largest cumulative weight (at least 1) below ``level`` of the total reaches it, so
#: that integer weights give the quantile of repeated rows (``0.7 * 10`` rounds above 7). The numba
#: twin is :func:`parsimony._loss_kernels.lower_quantile_position`.
QUANTILE_TOLERANCE = 1e-12


def grouped_weighted_quantiles(groups, values, level, weights=None) -> np.ndarray:
    """Lower weighted ``level``-quantile of ``values`` within each group ``0..groups.max()``.

    Per group, the smallest value whose cumulative weight (values sorted) reaches ``level`` of
    the group's total, up to :data:`QUANTILE_TOLERANCE` (so that unweighted data gives
    ``numpy.quantile(..., method="inverted_cdf")``); it minimises the weighted pinball loss
    over constants. A group of zero total weight counts its rows equally; an empty group is NaN.
    """
    return _GroupedSorted(groups, values, weights).quantiles(level)


class _GroupedSorted:
    """``values`` sorted within their groups with cumulative weights: each level is then one search."""

    def __init__(self, groups, values, weights=None):
        groups = np.asarray(groups, dtype=np.intp)
        values = np.asarray(values, dtype=np.float64)
        w = np.ones(values.size) if weights is None else np.asarray(weights, dtype=np.float64)
        n_groups = int(groups.max()) + 1
        order = np.lexsort((values, groups))
        g, self.values, w = groups[order], values[order], w[order]
        totals = np.bincount(g, weights=w, minlength=n_groups)
        empty = totals <= 0
        if empty.any():
            w = np.where(empty[g], 1.0, w)
            totals = np.bincount(g, weights=w, minlength=n_groups)
        self.cum = np.cumsum(w)
        counts = np.bincount(g, minlength=n_groups)
        self.ends = np.cumsum(counts)
        self.starts = self.ends - counts
        self.base = np.where(self.starts > 0, self.cum[np.maximum(self.starts - 1, 0)], 0.0)
        self.totals = totals
        self.tol = QUANTILE_TOLERANCE * max(float(self.cum[-1]), 1.0)

    def quantiles(self, level) -> np.ndarray:
        """The lower weighted ``level``-quantile of every group (NaN for an empty one)."""
        idx = np.searchsorted(self.cum, self.base + level * self.totals - self.tol, side="left")
        idx = np.clip(idx, self.starts, np.maximum(self.ends - 1, self.starts))
        out = np.full(self.totals.size, np.nan)
        present = self.ends > self.starts
        out[present] = self.values[idx[present]]
        return out


def weighted_quantiles(values, weights, levels) -> np.ndarray:
    """Lower weighted quantiles of ``values`` at each of ``levels`` (see :func:`grouped_weighted_quantiles`),
    sorting ``values`` once."""
    values = np.asarray(values, dtype=np.float64).ravel()
    table = _GroupedSorted(np.zeros(values.size, dtype=np.intp), values, weights)
    return np.array([table.quantiles(float(level))[0] for level in levels])


def weighted_quantile(values, weights, level) -> float:
    """Lower weighted ``level``-quantile of ``values`` (``weights`` None: equal weights).

    The smallest value whose weighted share of values at or below it reaches ``level`` (up to
    :data:`QUANTILE_TOLERANCE`): it minimises the weighted pinball loss at ``level`` over
    constants, equals ``numpy.quantile(values, level, method="inverted_cdf")`` without weights,
    and integer weights act as repeated values. The one Python definition (kernels use
    :func:`parsimony._loss_kernels.lower_quantile_position`).

    Examples
    --------
    >>> from parsimony.losses import weighted_quantile
    >>> weighted_quantile([3.0, 1.0, 2.0], [1, 1, 2], 0.5)
    2.0
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("weighted_quantile needs at least one value")
    return float(weighted_quantiles(values, weights, [check_quantile(level, "level")])[0])


class Loss:
    """Base of the loss objects: ``code`` for the kernels, ``tau`` the quantile level it targets."""

    code: int = -1
    tau: float = 0.5
    name: str = ""

    @staticmethod
    def _weights(y, sample_weight):
        return np.ones_like(y, dtype=float) if sample_weight is None else np.asarray(sample_weight, dtype=float)

    @staticmethod
    def _residual(y, pred):
        return np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)

    def pointwise(self, residual) -> np.ndarray:
        """Loss of each residual ``y - prediction``."""
        raise NotImplementedError

    def value(self, y, pred, sample_weight=None) -> float:
        """Weighted mean loss of ``pred`` against ``y``."""
        r = self._residual(y, pred)
        return float(np.average(self.pointwise(r), weights=self._weights(r, sample_weight)))

    def total(self, y, pred, sample_weight=None) -> float:
        """Weighted sum of the losses of ``pred`` against ``y`` (a tree node's loss)."""
        r = self._residual(y, pred)
        return float(np.sum(self._weights(r, sample_weight) * self.pointwise(r)))

    def optimal_constant(self, y, sample_weight=None) -> float:
        """The constant prediction of least weighted loss (the lower weighted quantile for L1 losses)."""
        y = np.asarray(y, dtype=float)
        return weighted_quantile(y, self._weights(y, sample_weight), self.tau)

    def constant_total(self, y, sample_weight=None) -> tuple[float, float]:
        """:meth:`optimal_constant` and the weighted sum of its losses (a tree leaf's value and loss)."""
        y = np.asarray(y, dtype=float)
        w = self._weights(y, sample_weight)
        constant = self.optimal_constant(y, w)
        return constant, self.total(y, constant, w)

    def baseline(self, y, sample_weight=None) -> float:
        """Weighted mean loss of :meth:`optimal_constant` (what a model must beat)."""
        y = np.asarray(y, dtype=float)
        return self.value(y, np.full_like(y, self.optimal_constant(y, sample_weight)), sample_weight)

    def julia_source(self) -> str:
        """Julia source of the loss for PySR's ``elementwise_loss`` (``f(prediction, target[, weight])``)."""
        body = self._julia_body()
        return (
            "begin\n"
            "    function parsimony_loss(prediction, target)\n"
            "        r = float(target - prediction)\n"
            f"{body}"
            "    end\n"
            "    parsimony_loss(prediction, target, weight) = weight * parsimony_loss(prediction, target)\n"
            "    parsimony_loss\n"
            "end"
        )

    def _julia_body(self) -> str:
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other) and self.tau == other.tau

    def __hash__(self):
        return hash((type(self).__name__, self.tau))


class Pinball(Loss):
    """Pinball (quantile) loss at level ``tau`` (equation 2 of the SQR paper).

    ``tau * r`` if ``r >= 0`` else ``(tau - 1) * r``, with ``r = y - prediction``: under-prediction
    weighs ``tau``."""

    code = LOSS_PINBALL
    name = "pinball"

    def __init__(self, tau=0.5):
        self.tau = check_quantile(tau, "tau")

    def __repr__(self):
        return f"Pinball(tau={self.tau!r})"

    def pointwise(self, residual):
        return np.where(residual >= 0, self.tau * residual, (self.tau - 1.0) * residual)

    def gradient(self, y, pred, sample_weight=None):
        """A subgradient with respect to the predictions (mean loss; 0-weight tie at r = 0 uses tau)."""
        r = self._residual(y, pred)
        w = self._weights(r, sample_weight)
        return np.where(r >= 0, -self.tau, 1.0 - self.tau) * w / w.sum()

    def _julia_body(self):
        text = repr(self.tau)  # shortest round-trip decimal; Julia parses it to the same Float64
        return (f"        q = convert(typeof(r), {text})\n"
                "        return r >= zero(r) ? q * r : (q - one(q)) * r\n")


class Squared(Loss):
    """Squared error ``r ** 2`` (mean over rows); its optimal constant is the weighted mean."""

    code = LOSS_SQUARED
    name = "squared"

    def pointwise(self, residual):
        return residual * residual

    def gradient(self, y, pred, sample_weight=None):
        r = self._residual(y, pred)
        w = self._weights(r, sample_weight)
        return -2.0 * r * w / w.sum()

    def optimal_constant(self, y, sample_weight=None):
        y = np.asarray(y, dtype=float)
        w = self._weights(y, sample_weight)
        return float(np.multiply(y, w).sum() / w.sum())  # np.average's arithmetic, without its checks

    def _julia_body(self):
        return "        return r * r\n"


class Absolute(Loss):
    """Absolute error ``|r|`` (mean over rows); twice the pinball loss at ``tau = 0.5``."""

    code = LOSS_ABSOLUTE
    name = "absolute"

    def pointwise(self, residual):
        return np.abs(residual)

    def gradient(self, y, pred, sample_weight=None):
        r = self._residual(y, pred)
        w = self._weights(r, sample_weight)
        return -np.sign(r) * w / w.sum()

    def _julia_body(self):
        return "        return abs(r)\n"


#: Loss names accepted by every estimator's ``loss`` parameter ("quantile" is "pinball"): the
#: estimator's ``quantile`` gives the pinball loss its level (see :func:`as_loss`).
LOSSES = {"pinball": Pinball, "quantile": Pinball, "squared": Squared, "absolute": Absolute}


def as_loss(loss, quantile=0.5) -> Loss:
    """The loss object an estimator's ``loss`` parameter names.

    A loss object is returned as it is (it carries its own level); "squared" and "absolute" are
    :class:`Squared` and :class:`Absolute`; "pinball" and "quantile" are :class:`Pinball` at level
    ``quantile``. Raises ``ValueError`` for other names and ``TypeError`` for other objects.
    """
    if isinstance(loss, Loss):
        if loss.code not in (LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL):
            raise TypeError(f"loss must be a Squared, Absolute or Pinball object (the kernels' losses), got {loss!r}")
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)} or a parsimony.losses object, got {loss!r}")
    return Pinball(quantile) if LOSSES[loss] is Pinball else LOSSES[loss]()


def loss_from_code(code: int, tau: float = 0.5) -> Loss:
    """The loss object of a kernel's loss code (``tau`` for the pinball loss)."""
    if code == LOSS_PINBALL:
        return Pinball(tau)
    return {LOSS_SQUARED: Squared, LOSS_ABSOLUTE: Absolute}[code]()
