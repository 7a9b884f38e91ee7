"""Lazy imports of the ``bench`` extra (LightGBM, Optuna, Dask) with an error naming the extra."""

from __future__ import annotations

import importlib

BENCH_EXTRA = "pip install 'parsimony-ml[bench]'"


def require(module: str, purpose: str):
    """Import ``module`` or raise an ``ImportError`` saying which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{purpose} needs the optional package {module.split('.')[0]!r} from the 'bench' extra: {BENCH_EXTRA}"
        ) from exc


def available(module: str) -> bool:
    """Whether ``module`` imports."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
