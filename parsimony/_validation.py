"""Shared input checks: every public entry point validates through these helpers.

Each check raises a ``ValueError`` (or ``TypeError`` for wrong types) whose message names
the offending argument, so users never see a numba traceback or a silent wrong answer.
"""

from __future__ import annotations

import numbers
import os

import numpy as np


def check_quantile(quantile, name: str = "quantile") -> float:
    """Return ``quantile`` as a float strictly inside (0, 1)."""
    if isinstance(quantile, bool) or not isinstance(quantile, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {quantile!r}")
    q = float(quantile)
    if not (0.0 < q < 1.0):
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {quantile!r}")
    return q


def check_quantiles(quantiles, name: str = "quantile") -> tuple[float, ...]:
    """Return one or several quantile levels as a tuple of floats in (0, 1)."""
    if isinstance(quantiles, numbers.Real) and not isinstance(quantiles, bool):
        return (check_quantile(quantiles, name),)
    if isinstance(quantiles, (str, bytes)):
        raise TypeError(f"{name} must be a number in (0, 1) or a sequence of them, got the string {quantiles!r}")
    try:
        values = list(quantiles)
    except TypeError:
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {quantiles!r}") from None
    if not values:
        raise ValueError(f"{name} must name at least one quantile level")
    out = tuple(check_quantile(q, name) for q in values)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} contains repeated levels: {out}")
    return out


def check_nonnegative(value, name: str) -> float:
    """Return ``value`` as a finite float >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a non-negative number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an int within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return v


def check_array_1d(values, name: str, allow_empty: bool = False) -> np.ndarray:
    """Return a finite float64 1-D array (a column vector is flattened); complex values are refused."""
    arr = np.asarray(values)
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real numbers, got complex values (dtype {arr.dtype})")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}") from None
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "infinite values"
        raise ValueError(f"{name} contains {bad}")
    return arr


def check_same_length(*named_arrays: tuple[str, np.ndarray]) -> None:
    """Raise if the arrays do not share their first dimension."""
    lengths = {name: len(a) for name, a in named_arrays}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k}: {v}" for k, v in lengths.items())
        raise ValueError(f"inconsistent numbers of samples ({desc})")


def check_sample_weight(sample_weight, n: int, counts: bool = False) -> np.ndarray | None:
    """Return ``None`` or a finite, non-negative, real weight vector of length ``n`` with a positive weight.

    Weights are relative: they are returned multiplied by the power of two that brings the largest
    into [0.5, 1). That is exact (integer weights still act as repeated rows, ties stay ties), and
    ``w`` and ``c * w`` come back equal up to a factor in [0.5, 2) (equal for a power of two ``c``),
    however small or large ``c``, so no estimator meets sums or squares that underflow or overflow.
    Weights whose largest is subnormal (below ``numpy.finfo(float).tiny``) have lost their precision
    and are refused. With ``counts=True`` (a weight counts as that many rows, as in a conformal
    guarantee) they are returned as given.
    """
    if sample_weight is None:
        return None
    w = check_array_1d(sample_weight, "sample_weight")
    if len(w) != n:
        raise ValueError(f"sample_weight has {len(w)} entries for {n} samples")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative")
    top = float(w.max())
    if top <= 0:
        raise ValueError("sample_weight: all weights are zero; at least one must be positive")
    if counts:
        return w
    if top < np.finfo(np.float64).tiny:
        raise ValueError(f"sample_weight: every weight is subnormal (the largest is {top:.3g}), so they have lost "
                         "precision; weights are relative, so multiply them all by a large number")
    return np.ldexp(w, -int(np.frexp(top)[1]))  # exact


def input_feature_names(model, feature_names=None) -> list[str]:
    """Names of ``model``'s input features: ``feature_names`` (one per feature, as strings), else the
    names seen in ``fit`` (``feature_names_in_``), else ``x0, x1, ...``."""
    n = model.n_features_in_
    if feature_names is None:
        seen = getattr(model, "feature_names_in_", None)
        return [str(name) for name in seen] if seen is not None else [f"x{j}" for j in range(n)]
    if isinstance(feature_names, str) or not hasattr(feature_names, "__len__"):
        raise TypeError(f"feature_names must be a list of {n} strings, got {feature_names!r}")
    names = [str(name) for name in feature_names]
    if len(names) != n:
        raise ValueError(f"feature_names must name the {n} input features, got {len(names)}")
    return names


def check_fitted_feature_names(model, X, what: str) -> None:
    """Check the columns of ``X`` against those the prefitted ``model`` saw, as scikit-learn's
    ``predict`` does: when both have names they must be the same in the same order (a ValueError
    says which differ or that only the order does); a warning when only one of them has names."""
    import warnings

    fitted = getattr(model, "feature_names_in_", None)
    columns = getattr(X, "columns", None)
    given = list(columns) if columns is not None and all(isinstance(c, str) for c in columns) else None
    if fitted is not None and given is not None:
        fitted = [str(c) for c in fitted]
        if given == fitted:
            return
        if sorted(given) == sorted(fitted):
            raise ValueError(f"X has the columns of {what} in another order: X {given}, {what} {fitted}; reorder "
                             f"them as in fit (X[{fitted}])")
        missing = [c for c in fitted if c not in given]
        unexpected = [c for c in given if c not in fitted]
        raise ValueError(f"X's columns differ from those {what} was fitted with {fitted}: missing {missing}, "
                         f"unexpected {unexpected}")
    if fitted is not None and columns is None:
        warnings.warn(f"X has no column names, but {what} was fitted with the names {list(fitted)}: its columns "
                      "are taken in that order", UserWarning, stacklevel=3)
    elif fitted is None and given is not None and hasattr(model, "n_features_in_"):
        warnings.warn(f"X has column names, but {what} was fitted without names: its columns are taken in order",
                      UserWarning, stacklevel=3)


def magnitude_scale(values, axis=None, extreme_only=False):
    """The power of two just above ``max|values|`` (one per column with ``axis=0``); 1 where that
    maximum is 0 or not finite, and with ``extreme_only`` also where it lies in [1e-100, 1e100].

    Dividing by a power of two is exact, so a fit on the divided values gives the same solution
    while squares of extreme values neither overflow nor underflow.
    """
    values = np.asarray(values, dtype=np.float64)
    top = np.asarray(np.max(np.abs(values), axis=axis) if values.size else 0.0, dtype=np.float64)
    scaled = np.isfinite(top) & (top > 0)
    if extreme_only:
        scaled &= (top < 1e-100) | (top > 1e100)
    scale = np.where(scaled, np.ldexp(1.0, np.frexp(np.where(scaled, top, 1.0))[1]), 1.0)
    return float(scale) if scale.ndim == 0 else scale


def extreme_scale(values, axis=None):
    """:func:`magnitude_scale` of extreme values only: typical data (``max|values|`` in [1e-100, 1e100])
    is left alone (scale 1)."""
    return magnitude_scale(values, axis, extreme_only=True)


def seed_from(random_state, name: str = "random_state") -> int:
    """An integer seed: fresh entropy for None, the int itself, or a draw from a RandomState/Generator."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        return int(random_state) % (2**63)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**62))
    raise ValueError(f"{name} must be None, an int or a numpy RandomState/Generator, got {random_state!r}")


# ------------------------------------------------------------------------- parameter tables
# An estimator's module declares its table ``{name: [constraint, ...]}`` (scikit-learn's
# ``_parameter_constraints`` pattern) and ``fit`` calls :func:`validate_params` on it once, first.
# A value is valid when one constraint of its list accepts it; ``None`` in a list accepts None.


class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``) between ``left`` and ``right``
    (``None``: unbounded); ``closed`` is "both", "left", "right" or "neither"."""

    def __init__(self, kind, left=None, right=None, closed="both"):
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def type_ok(self, value) -> bool:
        return isinstance(value, self.kind) and not isinstance(value, (bool, np.bool_))

    def accepts(self, value) -> bool:
        if not self.type_ok(value) or not np.isfinite(float(value)):
            return False
        low_ok = self.left is None or (value >= self.left if self.closed in ("both", "left") else value > self.left)
        high_ok = self.right is None or (value <= self.right if self.closed in ("both", "right") else value < self.right)
        return bool(low_ok and high_ok)

    def convert(self, value):
        return int(value) if self.kind is numbers.Integral else float(value)

    def describe(self) -> str:
        what = "an integer" if self.kind is numbers.Integral else "a number"
        if self.left is not None and self.right is not None:
            brackets = {"both": "[]", "left": "[)", "right": "(]", "neither": "()"}[self.closed]
            return f"{what} in {brackets[0]}{self.left}, {self.right}{brackets[1]}"
        if self.left is not None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {self.left}"
        if self.right is not None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {self.right}"
        return what


class Options:
    """One of a fixed set of values (strings, usually)."""

    def __init__(self, *values):
        self.values = values

    def type_ok(self, value) -> bool:
        return any(type(value) is type(v) for v in self.values)

    def accepts(self, value) -> bool:
        try:
            return any(value == v and type(value) is type(v) for v in self.values)
        except (TypeError, ValueError):
            return False

    def convert(self, value):
        return value

    def describe(self) -> str:
        if len(self.values) == 1:
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)


class InstanceOf:
    """An instance of ``types``, described as ``description``."""

    def __init__(self, types, description: str):
        self.types, self.description = types, description

    def type_ok(self, value) -> bool:
        return isinstance(value, self.types)

    accepts = type_ok

    def convert(self, value):
        return value

    def describe(self) -> str:
        return self.description


class Check:
    """A validating function ``check(value, name) -> normalised value`` that raises its own
    error naming the parameter (tried after the other constraints of the list)."""

    def __init__(self, check, description: str):
        self.check, self.description = check, description

    def describe(self) -> str:
        return self.description


def n_threads(n_jobs, name: str = "n_jobs") -> int:
    """Threads for ``n_jobs``: None is 1, -1 all cores, -2 all but one, ..."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"{name} must be a positive integer, -1 (all cores) or None, got {n_jobs!r}")
    return int(n_jobs) if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


BOOLEAN = InstanceOf((bool, np.bool_), "True or False")
#: What :func:`seed_from` takes.
RANDOM_STATE = InstanceOf((type(None), numbers.Integral, np.random.RandomState, np.random.Generator),
                          "None, an int or a numpy RandomState/Generator")
#: What scikit-learn's ``check_random_state`` takes.
SKLEARN_RANDOM_STATE = InstanceOf((type(None), numbers.Integral, np.random.RandomState),
                                  "None, an int or a numpy RandomState")
QUANTILE = Check(check_quantile, "a number in (0, 1)")
POSITIVE = Interval(numbers.Real, 0, None, closed="neither")  # time and memory limits
N_JOBS = Check(n_threads, "a positive integer, -1 (all cores)")


def validate_param(name: str, value, allowed: list):
    """The normalised ``value`` of parameter ``name`` if one constraint of ``allowed`` accepts it.

    Raises
    ------
    TypeError
        When no constraint accepts a value of this type.
    ValueError
        When the type fits but the value does not; both messages say what is valid.
    """
    checks = [c for c in allowed if isinstance(c, Check)]
    plain = [c for c in allowed if c is not None and not isinstance(c, Check)]
    if value is None and None in allowed:
        return None
    for constraint in plain:
        if constraint.accepts(value):
            return constraint.convert(value)
    if checks and not any(c.type_ok(value) for c in plain):
        return checks[0].check(value, name)  # raises its own message when the value is bad
    descriptions = ["None"] * (None in allowed) + [c.describe() for c in plain + checks]
    message = f"{name} must be {' or '.join(descriptions)}, got {value!r}"
    if any(c.type_ok(value) for c in plain):
        raise ValueError(message)
    raise TypeError(message)


def validate_params(values: dict, constraints: dict) -> dict:
    """Every parameter of ``constraints`` checked (see :func:`validate_param`); returns the normalised values."""
    return {name: validate_param(name, values[name], allowed) for name, allowed in constraints.items()}


def categorical_columns(X) -> list[int]:
    """Indices of the columns of ``X`` that hold categories rather than numbers.

    A column counts when its dtype is category, or when it holds objects or strings among which
    is a string that is not a number ("male").
    """
    if hasattr(X, "dtypes") and hasattr(X, "iloc") and getattr(X, "ndim", 2) == 1:
        return categorical_columns(X.to_frame())  # a Series: one column
    if hasattr(X, "dtypes") and hasattr(X, "iloc"):
        import pandas as pd

        def categorical(j, dtype):
            if isinstance(dtype, pd.CategoricalDtype):
                return True
            if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
                return False
            return any(_is_category(v) for v in X.iloc[:, j])  # numbers stored as objects are numbers

        return [j for j, dtype in enumerate(X.dtypes) if categorical(j, dtype)]
    arr = np.asarray(X) if not hasattr(X, "shape") else X
    if getattr(arr, "dtype", None) is None or arr.dtype.kind not in "OUS" or arr.ndim != 2:
        return []
    return [j for j in range(arr.shape[1]) if any(_is_category(v) for v in arr[:, j])]


def _is_category(value) -> bool:
    """A string that does not read as a number."""
    if not isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def non_numeric_column(X):
    """``(label, kind, example)`` of the first column of ``X`` that does not read as numbers (strings,
    dates, time spans, periods), or None. ``label`` is the column's repr for a DataFrame, else
    ``"j (xj)"``."""
    if getattr(X, "dtype", None) is not None and X.dtype.kind in "biuf":
        return None
    columns = list(X.columns) if hasattr(X, "columns") and hasattr(X, "iloc") else None
    if columns is not None and all(getattr(dtype, "kind", "O") in "biuf" for dtype in X.dtypes):
        return None
    table = X if columns is not None else np.asarray(X, dtype=object)
    if getattr(table, "ndim", 0) != 2:
        return None
    for j in range(table.shape[1]):
        column = table.iloc[:, j] if columns is not None else table[:, j]
        kind = getattr(column, "dtype", None)
        example = (column.iloc[0] if columns is not None else column[0]) if len(column) else None
        label = repr(columns[j]) if columns is not None else f"{j} (x{j})"
        if columns is None:
            kind = type(example).__name__
        elif getattr(kind, "kind", "") in "mM" or str(kind).startswith(("datetime", "timedelta", "period")):
            return label, kind, example
        try:
            np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError):
            return label, kind, example
    return None


def date_columns(X) -> list[str]:
    """Names of the columns of a DataFrame (or Series) that hold dates, time spans or periods."""
    if not (hasattr(X, "dtypes") and hasattr(X, "iloc")):
        return []
    frame = X.to_frame() if getattr(X, "ndim", 2) == 1 else X
    return [str(name) for name, dtype in zip(frame.columns, frame.dtypes)
            if getattr(dtype, "kind", "") in "mM" or str(dtype).startswith(("datetime", "timedelta", "period"))]


def check_no_dates(X, estimator: str) -> None:
    """Raise a ValueError naming the columns of ``X`` that hold dates or time spans."""
    dates = date_columns(X)
    if dates:
        raise ValueError(f"{estimator} needs numeric features, but column(s) {dates} hold dates or time spans: "
                         "convert them to numbers first (e.g. days since a reference date)")


def check_numeric_columns(X, estimator: str) -> None:
    """Raise a ValueError naming the categorical (string) or date columns of ``X`` and how to encode them."""
    check_no_dates(X, estimator)
    cats = categorical_columns(X)
    if not cats:
        return
    frame = X.to_frame() if getattr(X, "ndim", 2) == 1 and hasattr(X, "to_frame") else X
    names = [str(frame.columns[j]) for j in cats] if hasattr(frame, "columns") else [f"x{j}" for j in cats]
    raise ValueError(
        f"{estimator} needs numeric features, but column(s) {names} hold categories or strings: one-hot encode "
        "them first (pandas.get_dummies or sklearn.preprocessing.OneHotEncoder); OSRT's Binarizer encodes "
        "categorical columns itself (one indicator per level)")
