"""Julia twins of the CBCD kernels of :mod:`parsimony.ensembles._cbcd` (ParsimonyKernels' cbcd.jl).

Each function takes and returns exactly what its numba twin takes and returns; arrays go to
Julia as views, so ``cbcd`` updates the caller's NumPy buffers in place. ``get_kernel`` picks
the twin for a resolved engine. The Julia session comes from :func:`parsimony._julia.kernels`.
"""

from __future__ import annotations

import numpy as np

from .. import _julia
from . import _cbcd


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def gram_tables(leaves, T, leaf_offset, n_layers):
    """Julia twin of :func:`parsimony.ensembles._cbcd.gram_tables`.

    As for every CBCD twin, ``T`` is the transposed leaf table, (n_layers, n_leaves_total)
    (``EnsembleTables.leaf_table_t``); Julia reads it with the same (layer, leaf) indexing.
    """
    gram, prefix_norms = _julia.kernels().gram_tables(_i64(leaves), _f64(T), _i64(leaf_offset), _i64(n_layers))
    return np.array(gram, dtype=np.float64), np.array(prefix_norms, dtype=np.float64)


def residual(leaves, T, leaf_offset, target, layers, beta, gamma):
    """Julia twin of :func:`parsimony.ensembles._cbcd.residual`."""
    R = _julia.kernels().residual(_i64(leaves), _f64(T), _i64(leaf_offset), _f64(target), _i64(layers), _f64(beta),
                                  float(gamma))
    return np.array(R, dtype=np.float64)


def objective(R, layers, beta, wcum, pen_scale, alpha2, mode):
    """Julia twin of :func:`parsimony.ensembles._cbcd.objective`."""
    return float(_julia.kernels().objective(_f64(R), _i64(layers), _f64(beta), _f64(wcum), float(pen_scale),
                                            float(alpha2), int(mode)))


def stack_truncated(leaves, T, leaf_offset, layers, idx):
    """Julia twin of :func:`parsimony.ensembles._cbcd.stack_truncated` (``idx``: 0-based tree indices)."""
    Q = _julia.kernels().stack_truncated(_i64(leaves), _f64(T), _i64(leaf_offset), _i64(layers), _i64(idx))
    return np.array(Q, dtype=np.float64)


def alpha_max(leaves, T, leaf_offset, prefix_norms, wcum, n_layers, target, gamma, K):
    """Julia twin of :func:`parsimony.ensembles._cbcd.alpha_max`."""
    return float(_julia.kernels().alpha_max(_i64(leaves), _f64(T), _i64(leaf_offset), _f64(prefix_norms), _f64(wcum),
                                            _i64(n_layers), _f64(target), float(gamma), float(K)))


def _inplace(a, dtype, name):
    if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.writeable):
        raise TypeError(f"{name} must be a writeable {np.dtype(dtype).name} NumPy array (it is updated in place)")
    return a


def cbcd(leaves, T, leaf_offset, gram, prefix_norms, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2, mode,
         max_trees, max_sweeps, history):
    """Julia twin of :func:`parsimony.ensembles._cbcd.cbcd`.

    ``R``, ``layers``, ``beta`` and ``history`` are updated in place (juliacall hands Julia a
    view of the NumPy buffers); returns the number of sweeps (the last one stopped once ``n``
    consecutive block updates changed nothing), negative if ``max_sweeps`` was hit.
    """
    R = _inplace(R, np.float64, "R")
    layers = _inplace(layers, np.int64, "layers")
    beta = _inplace(beta, np.float64, "beta")
    history = _inplace(history, np.float64, "history")
    sweeps = _julia.kernels().cbcd_b(_i64(leaves), _f64(T), _i64(leaf_offset), _f64(gram), _f64(prefix_norms),
                                     _f64(wcum), _i64(n_layers), R, layers, beta, float(gamma), float(pen_scale),
                                     float(alpha2), int(mode), int(max_trees), int(max_sweeps), history)
    return int(sweeps)


#: The CBCD kernels with a Julia twin (names of :mod:`parsimony.ensembles._cbcd`).
TWINS = ("gram_tables", "residual", "objective", "stack_truncated", "alpha_max", "cbcd")


def get_kernel(name: str, engine: str):
    """Kernel ``name`` of the resolved ``engine`` (``"native"`` or ``"julia"``); both twins share one contract."""
    if name not in TWINS:
        raise ValueError(f"unknown kernel {name!r}; kernels with a Julia twin: {sorted(TWINS)}")
    if engine not in ("native", "julia"):
        raise ValueError(f"engine must be 'native' or 'julia' (resolve the backend first), got {engine!r}")
    return globals()[name] if engine == "julia" else getattr(_cbcd, name)
