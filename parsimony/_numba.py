"""One place that decides how numba kernels are compiled.

Kernels use ``@njit`` from here instead of ``numba.njit`` so that compiled code is cached on
disk when a cache location is writable, and caching is switched off (instead of crashing)
on read-only installs. Nothing is compiled at import time: numba compiles lazily on first call.
"""

from __future__ import annotations

import os

import numba


def _cache_is_writable() -> bool:
    if os.environ.get("PARSIMONY_NUMBA_CACHE", "1") == "0":
        return False
    candidates = [os.environ.get("NUMBA_CACHE_DIR"), os.path.dirname(__file__)]
    for path in candidates:
        if path and os.path.isdir(path) and os.access(path, os.W_OK):
            return True
    # numba falls back to a user-wide cache directory (e.g. ~/.cache/numba)
    home = os.path.expanduser("~")
    return bool(home) and os.access(home, os.W_OK)


CACHE = _cache_is_writable()


def njit(*args, **kwargs):
    """``numba.njit`` with on-disk caching when possible (``cache=False`` otherwise)."""
    kwargs.setdefault("cache", CACHE)
    kwargs.setdefault("nogil", True)
    return numba.njit(*args, **kwargs)
