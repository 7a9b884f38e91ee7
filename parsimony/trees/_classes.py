"""The OSRT search's view of the data: repeated rows merged, equivalence classes (rows with one
binary feature row) with their weighted statistics, bitsets, and the kernel's ``Problem``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..losses import LOSS_SQUARED
from ._records import UNLIMITED, Problem, make_problem


def _row_codes(Xb):
    """Each binary row of at most 64 columns as one integer, first column highest: the codes sort
    like the rows (and like their packed bytes)."""
    m = Xb.shape[1]
    return Xb.astype(np.uint64) @ (np.uint64(1) << np.arange(63, 63 - m, -1, dtype=np.uint64))


def _packed_rows(Xb):
    """``np.packbits(Xb, axis=1)`` (rows as big-endian bytes), from :func:`_row_codes` up to 64 columns."""
    n, m = Xb.shape
    if m == 0 or m > 64:
        return np.packbits(Xb, axis=1)
    return _row_codes(Xb).astype(">u8").view(np.uint8).reshape(n, 8)[:, :(m + 7) // 8]


def _merge_repeated_rows(Xb, y, w):
    """Merge identical (row, target) pairs, adding their weights, in a canonical order.

    Repeated rows and integer weights then give the same arithmetic, whatever the row order,
    so ties between equally good trees break the same way. Returns the merged ``Xb, y, w``
    and, for every input row, the index of its merged row.
    """
    n, m = Xb.shape
    y_bytes = np.ascontiguousarray(y)[:, None].view(np.uint8)
    if 0 < m <= 64 and n > 0:
        # the order of np.unique over the bytes of (packed row, target), by a stable sort of two integer keys
        codes = _row_codes(Xb)
        y_key = y_bytes.view(">u8").ravel().astype(np.uint64)  # orders like the target's bytes
        order = np.lexsort((y_key, codes))
        codes, y_key = codes[order], y_key[order]
        new = np.ones(n, dtype=bool)
        new[1:] = (codes[1:] != codes[:-1]) | (y_key[1:] != y_key[:-1])
        first = order[new]
        inverse = np.empty(n, dtype=np.intp)
        inverse[order] = np.cumsum(new) - 1
    else:
        key = np.ascontiguousarray(np.concatenate([_packed_rows(Xb), y_bytes], axis=1))
        _, first, inverse = np.unique(key.view(np.dtype((np.void, key.shape[1]))).ravel(), return_index=True,
                                      return_inverse=True)
        inverse = inverse.ravel()
    return Xb[first], y[first], np.bincount(inverse, weights=w, minlength=first.size), inverse


def _equivalence_classes(Xb, y_scaled, w, loss):
    """Unique feature rows, sorted by their mean target, with per-class weighted statistics."""
    n, m = Xb.shape
    as_integers = 0 < m <= 64 and n > 0
    if as_integers:
        codes = _row_codes(Xb)  # sort like the rows (lexicographically)
    else:
        packed = _packed_rows(Xb)
        width = packed.shape[1]
        if width <= 8:
            padded = np.zeros((packed.shape[0], 8), dtype=np.uint8)
            padded[:, :width] = packed
            codes = padded.view(">u8").ravel()  # big-endian: codes sort like the rows (lexicographically)
        else:
            codes = np.ascontiguousarray(packed).view(np.dtype((np.void, width))).ravel()
    if as_integers and np.all(codes[1:] >= codes[:-1]):
        # rows sorted already (as _merge_repeated_rows leaves them): np.unique's classes are the runs
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(codes[1:], codes[:-1], out=new[1:])
        first = np.flatnonzero(new)
        inverse = np.cumsum(new) - 1
    else:
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    uniq = Xb[first]
    n_classes = uniq.shape[0]
    cw = np.bincount(inverse, weights=w, minlength=n_classes)
    cs = np.bincount(inverse, weights=w * y_scaled, minlength=n_classes)
    cq = np.bincount(inverse, weights=w * y_scaled * y_scaled, minlength=n_classes)
    cmean = cs / cw
    if loss.code == LOSS_SQUARED:
        cwithin = np.bincount(inverse, weights=w * loss.pointwise(y_scaled - cmean[inverse]), minlength=n_classes)
    else:
        cwithin = np.zeros(n_classes)
        order = np.lexsort((y_scaled, inverse))
        starts = np.searchsorted(inverse[order], np.arange(n_classes))
        ends = np.append(starts[1:], len(order))
        for c in range(n_classes):
            rows = order[starts[c]:ends[c]]
            cwithin[c] = loss.constant_total(y_scaled[rows], w[rows])[1]
    # sort classes by mean (ties by their feature rows, for determinism: np.unique sorted the rows)
    perm = np.argsort(cmean, kind="stable")
    rank = np.empty(n_classes, dtype=np.int64)
    rank[perm] = np.arange(n_classes)
    return (np.ascontiguousarray(uniq[perm]), rank[inverse], cw[perm], cs[perm], cq[perm], cmean[perm],
            cwithin[perm])


def _bitsets(mask_rows, n_words):
    """Bitsets (one row of uint64 words per column of the boolean matrix ``mask_rows``): bit ``i`` of
    word ``w`` is row ``64 w + i``."""
    n_classes, n_cols = mask_rows.shape
    bits = np.zeros((n_cols, 64 * n_words), dtype=bool)
    bits[:, :n_classes] = mask_rows.T
    words = np.packbits(bits, axis=1, bitorder="little").view("<u8")
    return words.astype(np.uint64)


def _is_constant(norm, y, w, loss):
    """True when the loss of the best constant is rounding noise relative to the targets' size.

    ``y`` is scaled to ``max |y|`` in [0.5, 1), so the tolerance is relative in both directions: a
    target of spread 1e-7 (or 1e-100) times its size is not constant, a spread of a few thousand
    ulps is.
    """
    per_row = norm / float(np.sum(w))
    tol = 1e-12 * float(np.max(np.abs(y)))
    return per_row <= (tol * tol if loss.code == LOSS_SQUARED else tol)


@dataclass
class _Prepared:
    """The search's view of the data: merged rows, scaled targets, classes and the kernel's Problem."""

    problem: Problem
    class_features: np.ndarray  # (classes, features) the binary row of every class
    y_scaled: np.ndarray
    w: np.ndarray
    row_class: np.ndarray     # class of every merged row
    class_of_row: np.ndarray  # class of every input row
    root_words: np.ndarray
    root_depth: int


def _prepare(Xb, y, w, merged_row, loss, bound_kind, lam, depth_limit, centre, scale):
    """Scale the targets, group rows into equivalence classes and build the kernel's Problem."""
    y_scaled = (y - centre) / scale
    uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, y_scaled, w, loss)
    n_classes = uniq.shape[0]
    n_words = (n_classes + 63) // 64
    fbits = _bitsets(uniq.astype(bool), n_words)
    rows = (None, None, None)
    if loss.code != LOSS_SQUARED:
        order = np.argsort(y_scaled, kind="stable")
        rows = (row_class[order].astype(np.int64), y_scaled[order], w[order])
    unlimited = depth_limit is None
    problem = make_problem(loss.code, bound_kind, lam, unlimited, uniq.astype(np.uint8), fbits, cw, cs, cq, cmean,
                           cwithin, *rows, tau=loss.tau)
    root_words = _bitsets(np.ones((n_classes, 1), dtype=bool), n_words)[0]
    root_depth = UNLIMITED if unlimited else int(depth_limit)
    return _Prepared(problem, uniq, y_scaled, w, row_class, row_class[merged_row], root_words, root_depth)
