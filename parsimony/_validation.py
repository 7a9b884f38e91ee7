"""Shared input checks: every public entry point validates through these helpers.

Each check raises a ``ValueError`` (or ``TypeError`` for wrong types) whose message names
the offending argument, so users never see a numba traceback or a silent wrong answer.
"""

from __future__ import annotations

import numbers

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


def check_time_limit(value, name: str = "time_limit") -> float | None:
    """Return ``None`` (no limit) or a positive number of seconds."""
    if value is None:
        return None
    v = check_nonnegative(value, name)
    if v == 0:
        raise ValueError(f"{name} must be positive (seconds) or None, got {value!r}")
    return v


def check_option(value, name: str, options) -> str:
    """Check that ``value`` is one of ``options``."""
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)!r}, got {value!r}")
    return value


def check_array_1d(values, name: str, allow_empty: bool = False) -> np.ndarray:
    """Return a finite float64 1-D array (a column vector is flattened)."""
    arr = np.asarray(values)
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


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """Return ``None`` or a finite, non-negative weight vector of length ``n`` with positive sum."""
    if sample_weight is None:
        return None
    w = check_array_1d(sample_weight, "sample_weight")
    if len(w) != n:
        raise ValueError(f"sample_weight has {len(w)} entries for {n} samples")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative")
    if w.sum() <= 0:
        raise ValueError("sample_weight: all weights are zero; at least one must be positive")
    return w


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
