"""Engine choice: the native numba engine (always there) or Julia through juliacall (optional).

``resolve_backend("auto")`` picks Julia only when juliacall imports *and* a Julia session
starts; otherwise it silently stays native. ``"julia"`` without a working Julia raises an
error that says how to get one. The environment variable ``PARSIMONY_BACKEND`` overrides
``"auto"``. Nothing here imports juliacall until a backend is actually resolved.
"""

from __future__ import annotations

import functools
import os

BACKENDS = ("auto", "native", "julia")
ENV_VAR = "PARSIMONY_BACKEND"

JULIA_INSTALL_HINT = (
    "The Julia backend needs a Julia runtime reachable by juliacall. Install the extra with "
    "`pip install 'parsimony-ml[julia]'`; juliacall then installs Julia on first use (or set "
    "PYTHON_JULIACALL_EXE / JULIA_BINDIR to an existing Julia >= 1.10, from https://julialang.org). "
    "Use backend='native' (the default engine, no Julia needed) otherwise."
)


class JuliaUnavailableError(RuntimeError):
    """Raised when ``backend="julia"`` is requested but no Julia session can start."""


@functools.lru_cache(maxsize=1)
def julia_status() -> tuple[bool, str]:
    """Return ``(available, reason)``; tries to start Julia once per process."""
    try:
        import juliacall  # noqa: F401  (lazy: only here)
    except Exception as exc:  # ImportError or a failed Julia download/start
        return False, f"juliacall could not be imported ({type(exc).__name__}: {exc})"
    try:
        from juliacall import Main as jl

        jl.seval("1 + 1")
    except Exception as exc:
        return False, f"a Julia session did not start ({type(exc).__name__}: {exc})"
    return True, "Julia is available"


def resolve_backend(backend: str | None = "auto") -> str:
    """Return the concrete engine, ``"native"`` or ``"julia"``, for a requested backend.

    Parameters
    ----------
    backend : {"auto", "native", "julia"} or None
        ``None`` means ``"auto"``. For ``"auto"`` the environment variable
        ``PARSIMONY_BACKEND`` (if set) decides first.
    """
    requested = "auto" if backend is None else backend
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if requested == "auto":
        env = os.environ.get(ENV_VAR, "").strip().lower()
        if env:
            if env not in BACKENDS:
                raise ValueError(f"environment variable {ENV_VAR} must be one of {BACKENDS}, got {env!r}")
            requested = env
    if requested == "native":
        return "native"
    available, reason = julia_status()
    if requested == "julia":
        if not available:
            raise JuliaUnavailableError(f"backend='julia' was requested but {reason}. {JULIA_INSTALL_HINT}")
        return "julia"
    return "julia" if available else "native"
