"""Greedy ordering of a regression ensemble (Hernández-Lobato, Martínez-Muñoz & Suárez, Eq. 6).

With member errors ``E = P - y`` (``N x M``) the training error of the average of a subset ``S``
of size ``u`` is ``u^-2 sum_{i, j in S} C_ij`` with ``C = E^T E / N`` (paper Eqs. 4-5). Adding
member ``k`` to the first ``u - 1`` chosen ones gives (Eq. 6)

    u^-2 (T_{u-1} + 2 s_k + C_kk),   s_k = sum_{i chosen} C_ik,   T_{u-1} = sum_{i, j chosen} C_ij.

``u^-2`` and ``T_{u-1}`` do not depend on ``k``, so the greedy step is ``argmin_k 2 s_k + C_kk``
over the members not chosen yet (ties: lowest index). Keeping the running sums ``s`` makes each
step ``O(M)``: after choosing ``k``, ``s += C[k]`` and ``T_u = T_{u-1} + 2 s_k + C_kk``. The whole
ordering is one matrix product (``O(M^2 N)``, BLAS) plus ``O(M^2)`` greedy work.
"""

from __future__ import annotations

import numpy as np

from parsimony._numba import njit

#: Rows per block when forming ``C``: bounds the temporary error block to ~64 MB for M = 1000.
CHUNK_ROWS = 8192


def error_covariance(predictions, y, sample_weight=None, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """Return ``C = E^T E / N`` with ``E = predictions - y[:, None]`` (paper Eq. 5); with
    ``sample_weight``, ``C = E^T W E / sum(w)`` (a weight counts as that many rows).

    Parameters
    ----------
    predictions : ndarray of shape (n_samples, n_members)
        Member predictions (finite floats).
    y : ndarray of shape (n_samples,)
        Targets.
    sample_weight : ndarray of shape (n_samples,) or None
        Non-negative row weights (validated by the caller).
    chunk_rows : int, default=8192
        Rows of ``E`` formed at a time; bounds the memory of the temporary error block.

    Returns
    -------
    ndarray of shape (n_members, n_members)
    """
    predictions, y = _check_predictions(predictions, y)
    n, m = predictions.shape
    root_w = None if sample_weight is None else np.sqrt(np.asarray(sample_weight, dtype=np.float64))
    if n <= chunk_rows:
        errors = predictions - y[:, None]
        if root_w is not None:
            errors *= root_w[:, None]
        c = errors.T @ errors
    else:
        c = np.zeros((m, m))
        errors = np.empty((chunk_rows, m))
        for start in range(0, n, chunk_rows):
            stop = min(start + chunk_rows, n)
            block = errors[: stop - start]
            np.subtract(predictions[start:stop], y[start:stop, None], out=block)
            if root_w is not None:
                block *= root_w[start:stop, None]
            c += block.T @ block
    c /= n if sample_weight is None else float(np.sum(sample_weight))
    # a NaN or infinite prediction makes its member's diagonal entry non-finite: checking C (M^2)
    # instead of the predictions (N M) keeps the check out of the hot path
    if not np.all(np.isfinite(c)):
        bad = np.flatnonzero(~np.isfinite(np.diag(c)))
        raise ValueError(
            f"member predictions contain NaN or infinite values or overflow (members {bad[:10].tolist()})"
        )
    return c


def greedy_order(c) -> tuple[np.ndarray, np.ndarray]:
    """Order members greedily by the paper's Eq. 6 from the error covariance ``c``.

    Parameters
    ----------
    c : ndarray of shape (n_members, n_members)
        Symmetric error covariance, e.g. from :func:`error_covariance`.

    Returns
    -------
    order : ndarray of int64, shape (n_members,)
        Member indices in the order they are added (ties broken by the lowest index).
    errors : ndarray of shape (n_members,)
        ``errors[u - 1]`` is the Eq. 6 minimum at step ``u``: the error of the average of the
        first ``u`` members in ``order`` on the data that formed ``c``.
    """
    c = np.ascontiguousarray(c, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] == 0:
        raise ValueError(f"the error covariance must be a non-empty square matrix, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("the error covariance contains NaN or infinite values")
    return _greedy_order_kernel(c)


def order_members(predictions, y, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """Order ensemble members from their predictions on ``(X, y)``; see :func:`greedy_order`."""
    return greedy_order(error_covariance(predictions, y, sample_weight))


def subset_sums(c, order) -> tuple[np.ndarray, np.ndarray]:
    """Return ``T_u = sum_{i, j < u} C[o_i, o_j]`` and ``D_u = sum_{i < u} C[o_i, o_i]`` for u = 1..M."""
    c = np.asarray(c, dtype=np.float64)
    order = np.asarray(order, dtype=np.int64)
    return _subset_sums_kernel(c, order)


def _check_predictions(predictions, y) -> tuple[np.ndarray, np.ndarray]:
    predictions = np.asarray(predictions, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if predictions.ndim != 2 or predictions.shape[0] == 0 or predictions.shape[1] == 0:
        raise ValueError(f"predictions must be a non-empty (n_samples, n_members) array, got shape {predictions.shape}")
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if len(y) != predictions.shape[0]:
        raise ValueError(f"predictions have {predictions.shape[0]} rows for {len(y)} targets")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    return predictions, y


@njit
def _greedy_order_kernel(c):
    m = c.shape[0]
    order = np.empty(m, dtype=np.int64)
    errors = np.empty(m, dtype=np.float64)
    running = np.zeros(m, dtype=np.float64)  # s_k = sum over chosen i of C[i, k]
    chosen = np.zeros(m, dtype=np.bool_)
    total = 0.0  # T_u = sum over chosen pairs of C[i, j]
    for u in range(1, m + 1):
        best = -1
        best_score = np.inf
        for k in range(m):
            if not chosen[k]:
                score = 2.0 * running[k] + c[k, k]
                if best < 0 or score < best_score:
                    best = k
                    best_score = score
        chosen[best] = True
        order[u - 1] = best
        total += best_score
        errors[u - 1] = total / (u * u)
        row = c[best]
        for k in range(m):
            running[k] += row[k]
    return order, errors


@njit
def _subset_sums_kernel(c, order):
    m = order.shape[0]
    totals = np.empty(m, dtype=np.float64)
    diagonal = np.empty(m, dtype=np.float64)
    total = 0.0
    diag = 0.0
    for u in range(m):
        k = order[u]
        cross = 0.0
        for i in range(u):
            cross += c[order[i], k]
        total += 2.0 * cross + c[k, k]
        diag += c[k, k]
        totals[u] = total
        diagonal[u] = diag
    return totals, diagonal
