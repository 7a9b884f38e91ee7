"""Pluggable losses for the symbolic search, in the skglm style (``value`` and ``gradient``).

The numba engine evaluates a loss through its ``code`` (and ``tau``) inside the row loop;
``value`` and ``gradient`` are the NumPy reference of the same function (mean over rows,
optionally weighted), used by tests and by users who want to check a fitted model.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_quantile
from ._evaluator import LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED


class _Loss:
    code: int = -1
    tau: float = 0.5

    def _weights(self, y, sample_weight):
        return np.ones_like(y, dtype=float) if sample_weight is None else np.asarray(sample_weight, dtype=float)

    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other) and self.tau == other.tau

    def __hash__(self):
        return hash((type(self).__name__, self.tau))


class Pinball(_Loss):
    """Pinball (quantile) loss at level ``tau``: ``tau * r`` if ``r >= 0`` else ``(tau - 1) * r``,
    with ``r = y - prediction`` (SQR paper Eq. 2)."""

    code = LOSS_PINBALL

    def __init__(self, tau=0.5):
        self.tau = check_quantile(tau, "tau")

    def __repr__(self):
        return f"Pinball(tau={self.tau!r})"

    def value(self, y, pred, sample_weight=None):
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        return float(np.average(np.where(r >= 0, self.tau * r, (self.tau - 1.0) * r),
                                weights=self._weights(r, sample_weight)))

    def gradient(self, y, pred, sample_weight=None):
        """A subgradient with respect to the predictions (mean loss; 0-weight tie at r = 0 uses tau)."""
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        w = self._weights(r, sample_weight)
        return np.where(r >= 0, -self.tau, 1.0 - self.tau) * w / w.sum()


class Squared(_Loss):
    """Squared error ``r ** 2`` (mean over rows)."""

    code = LOSS_SQUARED

    def value(self, y, pred, sample_weight=None):
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        return float(np.average(r * r, weights=self._weights(r, sample_weight)))

    def gradient(self, y, pred, sample_weight=None):
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        w = self._weights(r, sample_weight)
        return -2.0 * r * w / w.sum()


class Absolute(_Loss):
    """Absolute error ``|r|`` (mean over rows); twice the pinball loss at ``tau = 0.5``."""

    code = LOSS_ABSOLUTE

    def value(self, y, pred, sample_weight=None):
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        return float(np.average(np.abs(r), weights=self._weights(r, sample_weight)))

    def gradient(self, y, pred, sample_weight=None):
        r = np.asarray(y, dtype=float) - np.asarray(pred, dtype=float)
        w = self._weights(r, sample_weight)
        return -np.sign(r) * w / w.sum()


LOSSES = {"pinball": Pinball, "squared": Squared, "absolute": Absolute}
