"""Mixins shared by the package's estimators (beside scikit-learn's ``RegressorMixin``)."""

from __future__ import annotations

import numpy as np

from ._validation import check_quantiles

__all__ = ["QuantileScoreMixin"]


class QuantileScoreMixin:
    """Mixin, listed before ``RegressorMixin``, whose ``score`` judges quantile predictions by the
    pinball loss instead of R^2.

    The estimator names its levels in ``quantile`` (one level or several, one prediction column
    each); ``_score_quantiles`` may return None to keep R^2 (a model fitted for squared loss).
    """

    def _score_quantiles(self):
        return check_quantiles(self.quantile)

    def score(self, X, y, sample_weight=None):
        """D^2 pinball score of ``predict(X)``: ``1 - loss / loss of the best constant quantile``,
        averaged over the quantile levels (1 is perfect, 0 no better than a constant; the
        quantile analogue of R^2, so cross-validation and grid searches rank by the pinball loss).
        """
        from sklearn.metrics import d2_pinball_score

        levels = self._score_quantiles()
        if levels is None:
            return super().score(X, y, sample_weight)
        pred = np.asarray(self.predict(X), dtype=np.float64)
        pred = pred.reshape(pred.shape[0], -1)
        if pred.shape[1] != len(levels):
            raise ValueError(f"predict returned {pred.shape[1]} columns for {len(levels)} quantile levels")
        return float(np.mean([d2_pinball_score(y, pred[:, j], alpha=tau, sample_weight=sample_weight)
                              for j, tau in enumerate(levels)]))
