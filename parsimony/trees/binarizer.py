"""Threshold binarisation of numeric features for optimal trees."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    InstanceOf, Interval, categorical_columns, check_fitted_feature_names, check_no_dates, check_sample_weight,
    input_feature_names, validate_params,
)
from ..losses import weighted_quantiles


def _is_binary_column(col: np.ndarray) -> bool:
    return bool(np.all((col == 0) | (col == 1)))


def _format_threshold(t: float) -> str:
    return f"{t:.6g}"


def _column(X, j):
    return X.iloc[:, j].to_numpy() if hasattr(X, "iloc") else np.asarray(X)[:, j]


def _numeric_view(X, cats):
    """``X`` with its categorical columns replaced by zeros (names kept), for numeric validation."""
    if not cats:
        return X
    if hasattr(X, "iloc"):
        X = X.copy()
        for j in cats:
            X[X.columns[j]] = 0.0
        return X
    X = np.array(X, dtype=object)
    X[:, cats] = 0.0
    return X


#: Binarizer's parameter table (see :func:`parsimony._validation.validate_params`); the entries of
#: ``thresholds`` are checked against the columns once ``fit`` has seen them.
BINARIZER_PARAMETERS = {
    "n_thresholds": [Interval(numbers.Integral, 1)],
    "thresholds": [None, InstanceOf((dict, list, tuple, np.ndarray), "a dict {column index or name: list of "
                                    "thresholds} or a list with one list per column")],
}


class Binarizer(TransformerMixin, BaseEstimator):
    """Turn numeric features into binary threshold features ``x_j <= t`` and categorical ones into
    one indicator per level ``x_j == level``.

    Thresholds are deterministic: equal-frequency cut points (the OSRT paper's choice) at the
    levels ``1/(k+1), ..., k/(k+1)`` (the smallest value whose cumulative share, weighted by
    ``sample_weight`` if given, reaches the level), each placed midway between two consecutive
    distinct observed values so that it reads well (``age <= 31.5``). Columns that already hold
    only 0 and 1 pass through unchanged. A categorical column (string, object or category dtype)
    becomes one indicator per level seen in ``fit`` (``sex == male``); a level first seen in
    ``transform`` sets none of them.

    Parameters
    ----------
    n_thresholds : int, default=4
        Largest number of thresholds per numeric feature (fewer when the feature has few
        distinct values).
    thresholds : dict or sequence, optional
        User thresholds: a mapping from column index (or feature name) to a list of
        thresholds, or a sequence with one list per column. Columns not named use the
        equal-frequency rule; binary columns always pass through. A key naming no column
        raises.

    Attributes
    ----------
    thresholds_ : list of ndarray
        Thresholds per input column (empty for a binary or categorical column).
    categories_ : dict
        Levels (sorted) of every categorical input column, by column index.
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

    def _check_thresholds(self, names) -> dict:
        """The user thresholds as ``{column index: array}``; keys naming no column raise."""
        spec = self.thresholds
        if spec is None:
            return {}
        n = self.n_features_in_
        if isinstance(spec, dict):
            out = {}
            for key, values in spec.items():
                if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < n:
                    j = int(key)
                elif names is not None and key in list(names):
                    j = list(names).index(key)
                else:
                    valid = f"feature names {list(names)} or " if names is not None else ""
                    raise ValueError(f"thresholds names no column: {key!r}; use {valid}indices 0..{n - 1}")
                out[j] = values
        else:  # a list, tuple or array (BINARIZER_PARAMETERS)
            if len(spec) != n:
                raise ValueError(f"thresholds has {len(spec)} entries for {n} features")
            out = dict(enumerate(spec))
        for j, values in out.items():
            try:
                thr = np.unique(np.asarray(values, dtype=np.float64).ravel())
            except (TypeError, ValueError):
                raise ValueError(f"thresholds for feature {j} must be numbers, got {values!r}") from None
            if not np.all(np.isfinite(thr)):
                raise ValueError(f"thresholds for feature {j} must be finite")
            out[j] = thr
        return out

    def fit(self, X, y=None, sample_weight=None):
        """Choose the thresholds of every column of ``X`` (rows weighted by ``sample_weight``)."""
        validate_params(self.get_params(deep=False), BINARIZER_PARAMETERS)  # checked once
        check_no_dates(X, type(self).__name__)
        cats = categorical_columns(X)
        raw = {j: _column(X, j) for j in cats}
        X = validate_data(self, _numeric_view(X, cats), dtype=np.float64, ensure_all_finite=True)
        names = getattr(self, "feature_names_in_", None)
        user = self._check_thresholds(names)
        input_names = input_feature_names(self)
        w = check_sample_weight(sample_weight, X.shape[0])
        if w is None:
            w = np.ones(X.shape[0])
        else:  # a row of weight 0 counts as absent
            keep = w > 0
            X, w = X[keep], w[keep]
            raw = {j: col[keep] for j, col in raw.items()}
        self.categories_ = {}
        self.thresholds_ = []
        binary = []
        out_names = []
        for j in range(X.shape[1]):
            col = X[:, j]
            name = input_names[j]
            if j in raw:
                if j in user:
                    raise ValueError(f"thresholds given for feature {name!r}, which is categorical")
                self.categories_[j] = self._levels(raw[j], name)
                self.thresholds_.append(np.empty(0))
                binary.append(False)
                out_names.extend(f"{name} == {level}" for level in self.categories_[j])
                continue
            if _is_binary_column(col):
                self.thresholds_.append(np.empty(0))
                binary.append(True)
                out_names.append(name)
                continue
            thr = user[j] if j in user else self._equal_frequency(col, w)
            self.thresholds_.append(thr)
            binary.append(False)
            out_names.extend(f"{name} <= {_format_threshold(t)}" for t in thr)
        self.binary_columns_ = np.asarray(binary, dtype=bool)
        self.feature_names_out_ = np.asarray(out_names, dtype=object)
        return self

    @staticmethod
    def _levels(values, name):
        import pandas as pd

        if pd.isna(values).any():
            raise ValueError(f"categorical feature {name!r} has missing values; fill them (e.g. with a 'missing' level)")
        return np.asarray(sorted(set(values.tolist()), key=str), dtype=object)

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
        check_no_dates(X, type(self).__name__)
        if getattr(self, "feature_names_in_", None) is not None and hasattr(X, "columns"):
            check_fitted_feature_names(self, X, "the Binarizer's fit")  # names the order, not a category mismatch
        cats = categorical_columns(X)
        if set(cats) - set(self.categories_):
            raise ValueError(f"columns {sorted(set(cats) - set(self.categories_))} were numeric in fit but hold "
                             "categories in transform")
        raw = {j: _column(X, j) for j in self.categories_}
        X = validate_data(self, _numeric_view(X, list(self.categories_)), dtype=np.float64, ensure_all_finite=True,
                          reset=False)
        cols = []
        for j, thr in enumerate(self.thresholds_):
            col = X[:, j]
            if j in self.categories_:
                cols.append(raw[j][:, None] == self.categories_[j][None, :])
            elif self.binary_columns_[j]:
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

