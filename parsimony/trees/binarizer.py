"""Threshold binarisation of numeric features for optimal trees."""

from __future__ import annotations


import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_int, check_sample_weight
from ..losses import weighted_quantiles


def _is_binary_column(col: np.ndarray) -> bool:
    return bool(np.all((col == 0) | (col == 1)))


def _format_threshold(t: float) -> str:
    return f"{t:.6g}"


class Binarizer(TransformerMixin, BaseEstimator):
    """Turn numeric features into binary threshold features ``x_j <= t``.

    Thresholds are deterministic: equal-frequency cut points (the OSRT paper's choice) at the
    levels ``1/(k+1), ..., k/(k+1)`` (the smallest value whose cumulative share, weighted by
    ``sample_weight`` if given, reaches the level), each placed midway between two consecutive
    distinct observed values so that it reads well (``age <= 31.5``). Columns that already hold
    only 0 and 1 pass through unchanged.

    Parameters
    ----------
    n_thresholds : int, default=4
        Largest number of thresholds per numeric feature (fewer when the feature has few
        distinct values).
    thresholds : dict or sequence, optional
        User thresholds: a mapping from column index (or feature name) to a list of
        thresholds, or a sequence with one list per column. Columns not named use the
        equal-frequency rule; binary columns always pass through.

    Attributes
    ----------
    thresholds_ : list of ndarray
        Thresholds per input column (empty for a binary column passed through).
    binary_columns_ : ndarray of bool
        Whether each input column passed through unchanged.
    feature_names_out_ : ndarray of str
        One readable name per output column.
    n_features_in_, feature_names_in_
        Set by ``fit`` as usual.
    """

    def __init__(self, n_thresholds=4, thresholds=None):
        self.n_thresholds = n_thresholds
        self.thresholds = thresholds

    def _user_thresholds(self, j, name):
        spec = self.thresholds
        if spec is None:
            return None
        if isinstance(spec, dict):
            for key in (j, name):
                if key is not None and key in spec:
                    return spec[key]
            return None
        if len(spec) != self.n_features_in_:
            raise ValueError(f"thresholds has {len(spec)} entries for {self.n_features_in_} features")
        return spec[j]

    def fit(self, X, y=None, sample_weight=None):
        """Choose the thresholds of every column of ``X`` (rows weighted by ``sample_weight``)."""
        check_int(self.n_thresholds, "n_thresholds", minimum=1)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=True)
        w = check_sample_weight(sample_weight, X.shape[0])
        if w is None:
            w = np.ones(X.shape[0])
        else:  # a row of weight 0 counts as absent
            X, w = X[w > 0], w[w > 0]
        names = getattr(self, "feature_names_in_", None)
        self.thresholds_ = []
        binary = []
        out_names = []
        for j in range(X.shape[1]):
            col = X[:, j]
            name = str(names[j]) if names is not None else f"x{j}"
            if _is_binary_column(col):
                self.thresholds_.append(np.empty(0))
                binary.append(True)
                out_names.append(name)
                continue
            user = self._user_thresholds(j, None if names is None else names[j])
            if user is not None:
                thr = np.unique(np.asarray(user, dtype=np.float64).ravel())
                if not np.all(np.isfinite(thr)):
                    raise ValueError(f"thresholds for feature {name} must be finite")
            else:
                thr = self._equal_frequency(col, w)
            self.thresholds_.append(thr)
            binary.append(False)
            out_names.extend(f"{name} <= {_format_threshold(t)}" for t in thr)
        self.binary_columns_ = np.asarray(binary, dtype=bool)
        self.feature_names_out_ = np.asarray(out_names, dtype=object)
        return self

    def _equal_frequency(self, col, w):
        values = np.unique(col)
        if values.size < 2:
            return np.empty(0)
        qs = weighted_quantiles(col, w, np.arange(1, self.n_thresholds + 1) / (self.n_thresholds + 1))
        thr = []
        for q in qs:
            i = np.searchsorted(values, q, side="right") - 1  # largest value <= q
            if i < values.size - 1:
                thr.append(0.5 * (values[i] + values[i + 1]))
        return np.unique(np.asarray(thr, dtype=np.float64))

    def transform(self, X):
        """Return the binary matrix (uint8), one column per threshold or binary column."""
        check_is_fitted(self, "thresholds_")
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=True, reset=False)
        cols = []
        for j, thr in enumerate(self.thresholds_):
            col = X[:, j]
            if self.binary_columns_[j]:
                if not _is_binary_column(col):
                    raise ValueError(f"column {j} held only 0 and 1 in fit but holds other values in transform")
                cols.append(col[:, None])
            elif thr.size:
                cols.append(col[:, None] <= thr[None, :])
        if not cols:
            return np.zeros((X.shape[0], 0), dtype=np.uint8)
        return np.hstack(cols).astype(np.uint8)

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns (``age <= 31.5``, or the name of a binary column)."""
        check_is_fitted(self, "thresholds_")
        return self.feature_names_out_.copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = []  # the output is always uint8
        return tags

