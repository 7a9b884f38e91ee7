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


def weighted_quantile(values, weights, level) -> float:
    """The lower weighted ``level``-quantile: the smallest value whose cumulative weight share reaches ``level``."""
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    order = np.argsort(values)
    share = np.cumsum(weights[order]) / weights.sum()
    return float(values[order][np.searchsorted(share, level)])


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

    def optimal_constant(self, y, sample_weight=None) -> float:
        """The constant prediction of least weighted loss (the lower weighted quantile for L1 losses)."""
        y = np.asarray(y, dtype=float)
        return weighted_quantile(y, self._weights(y, sample_weight), self.tau)

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
    """Pinball (quantile) loss at level ``tau``: ``tau * r`` if ``r >= 0`` else ``(tau - 1) * r``,
    with ``r = y - prediction`` (SQR paper Eq. 2); under-prediction weighs ``tau``."""

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
        return float(np.average(y, weights=self._weights(y, sample_weight)))

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


#: Loss names accepted by the estimators' ``loss`` parameter.
LOSSES = {"pinball": Pinball, "squared": Squared, "absolute": Absolute}


def loss_from_code(code: int, tau: float = 0.5) -> Loss:
    """The loss object of a kernel's loss code (``tau`` for the pinball loss)."""
    if code == LOSS_PINBALL:
        return Pinball(tau)
    return {LOSS_SQUARED: Squared, LOSS_ABSOLUTE: Absolute}[code]()
