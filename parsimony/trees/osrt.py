"""Optimal sparse regression trees: the scikit-learn estimator and the search driver."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_int, check_nonnegative, check_option, check_time_limit
from . import _search
from .binarizer import Binarizer

LOSSES = {"squared": 0, "absolute": 1}
BOUNDS = {"none": _search.BOUND_NONE, "equivalent": _search.BOUND_EQUIVALENT, "kmeans": _search.BOUND_KMEANS}


# ----------------------------------------------------------------------------------------------
# search driver
# ----------------------------------------------------------------------------------------------
@dataclass
class SearchResult:
    """Outcome of one search: the tree as nested splits, its objective and the proven bound."""

    objective: float
    lower_bound: float
    status: str
    root: dict
    stats: dict = field(default_factory=dict)


def _equivalence_classes(Xb, y_scaled, loss_kind):
    """Unique feature rows, sorted by their mean target, with per-class statistics."""
    uniq, inverse = np.unique(Xb, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    n_classes = uniq.shape[0]
    cw = np.bincount(inverse, minlength=n_classes).astype(np.float64)
    cs = np.bincount(inverse, weights=y_scaled, minlength=n_classes)
    cq = np.bincount(inverse, weights=y_scaled * y_scaled, minlength=n_classes)
    cmean = cs / cw
    if loss_kind == 0:
        cwithin = np.bincount(inverse, weights=(y_scaled - cmean[inverse]) ** 2, minlength=n_classes)
    else:
        cwithin = np.zeros(n_classes)
        order = np.lexsort((y_scaled, inverse))
        starts = np.searchsorted(inverse[order], np.arange(n_classes))
        ends = np.append(starts[1:], len(order))
        for c in range(n_classes):
            vals = y_scaled[order[starts[c]:ends[c]]]
            med = vals[(len(vals) - 1) // 2]
            cwithin[c] = np.abs(vals - med).sum()
    # sort classes by mean (ties by their feature rows, for determinism)
    perm = np.lexsort((*uniq.T[::-1], cmean))
    rank = np.empty(n_classes, dtype=np.int64)
    rank[perm] = np.arange(n_classes)
    return (np.ascontiguousarray(uniq[perm]), rank[inverse], cw[perm], cs[perm], cq[perm], cmean[perm],
            cwithin[perm])


def _bitsets(mask_rows, n_words):
    """Bitsets (one row of uint64 words per column of the boolean matrix ``mask_rows``)."""
    n_classes, n_cols = mask_rows.shape
    out = np.zeros((n_cols, n_words), dtype=np.uint64)
    for c in range(n_classes):
        w, b = divmod(c, 64)
        out[mask_rows[c], w] |= np.uint64(1) << np.uint64(b)
    return out


def _entry_bytes(n_words):
    return 8 * n_words + 4 + 8 + 8 + 4


def solve(Xb, y, regularization, depth_limit=None, loss="squared", bound="kmeans", time_limit=None,
          memory_limit=None):
    """Find the tree minimising ``loss / loss(one leaf) + regularization * leaves`` on binary ``Xb``.

    Parameters
    ----------
    Xb : ndarray of shape (n_samples, n_features)
        Binary (0/1) features.
    y : ndarray of shape (n_samples,)
        Targets.
    regularization : float
        Penalty per leaf.
    depth_limit : int or None
        Largest number of splits on a root-to-leaf path (None: no limit).
    loss : {"squared", "absolute"}
    bound : {"kmeans", "equivalent", "none"}
        Lower bound used to prune (all give the same optimum).
    time_limit : float or None
        Seconds; when reached the best tree so far is returned with status "time_limit".
    memory_limit : float or None
        Megabytes for the subproblem table; when reached the search stops with status
        "memory_limit".

    Returns
    -------
    SearchResult
    """
    t0 = time.perf_counter()
    loss_kind = LOSSES[loss]
    bound_kind = BOUNDS[bound]
    lam = float(regularization)
    Xb = np.ascontiguousarray(Xb, dtype=np.uint8)
    y = np.asarray(y, dtype=np.float64)
    n, m = Xb.shape
    if loss_kind == 0:
        centre = y.mean()
        norm = float(((y - centre) ** 2).sum())
        scale = np.sqrt(norm)
    else:
        centre = float(np.median(y))
        norm = float(np.abs(y - centre).sum())
        scale = norm
    if norm <= 1e-12 * max(1.0, float(np.abs(y).max()) ** (2 if loss_kind == 0 else 1)) * n:
        root = {"rows": np.arange(n)}
        return SearchResult(lam, lam, "optimal", root, {"subproblems": 0, "expansions": 0, "bounds": 0,
                                                         "seconds": time.perf_counter() - t0})
    y_scaled = (y - centre) / scale
    uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, y_scaled, loss_kind)
    n_classes = uniq.shape[0]
    n_words = (n_classes + 63) // 64
    fbits = _bitsets(uniq.astype(bool), n_words)
    if loss_kind == 1:
        order = np.argsort(y_scaled, kind="stable")
        rows_class = row_class[order].astype(np.int64)
        rows_y = y_scaled[order]
    else:
        rows_class = np.zeros(0, dtype=np.int64)
        rows_y = np.zeros(0)
    xc = uniq.astype(np.uint8)

    unlimited = depth_limit is None
    root_depth = _search.UNLIMITED if unlimited else int(depth_limit)
    max_frames = (m + 2) if unlimited else min(int(depth_limit), m) + 2
    root_words = np.zeros(n_words, dtype=np.uint64)
    for c in range(n_classes):
        root_words[c // 64] |= np.uint64(1) << np.uint64(c % 64)

    cap = 1 << 12
    keys, depth, lbs, vals, feat = _new_table(cap, n_words)
    counters = np.zeros(4, dtype=np.int64)
    counters[3] = int(cap * 0.6)
    st_words = np.zeros((max_frames, n_words), dtype=np.uint64)
    st_d = np.zeros(max_frames, dtype=np.int64)
    st_ub = np.zeros(max_frames)
    st_best = np.zeros(max_frames)
    st_bestf = np.full(max_frames, -1, dtype=np.int64)
    st_nf = np.full(max_frames, -1, dtype=np.int64)
    st_pos = np.zeros(max_frames, dtype=np.int64)
    st_phase = np.zeros(max_frames, dtype=np.int64)
    st_v0 = np.zeros(max_frames)
    st_order = np.zeros((max_frames, max(m, 1)), dtype=np.int64)
    st_lb0 = np.zeros((max_frames, max(m, 1)))
    st_lb1 = np.zeros((max_frames, max(m, 1)))
    st_top = np.zeros(2, dtype=np.int64)
    st_words[0] = root_words
    st_d[0] = root_depth
    st_ub[0] = np.inf
    st_top[0] = 1

    deadline = None if time_limit is None else t0 + float(time_limit)
    mem_bytes = None if memory_limit is None else float(memory_limit) * 1e6
    steps = 256
    status = "optimal"
    while True:
        tc = time.perf_counter()
        code = _search.search(
            loss_kind, bound_kind, lam, unlimited, xc, fbits, cw, cs, cq, cmean, cwithin, rows_class, rows_y,
            keys, depth, lbs, vals, feat, counters,
            st_words, st_d, st_ub, st_best, st_bestf, st_nf, st_pos, st_phase, st_v0, st_order, st_lb0, st_lb1,
            st_top, steps,
        )
        if code == _search.DONE:
            break
        if code == _search.NEED_SPACE:
            new_cap = cap * 2 if cap >= 1 << 20 else cap * 4
            if mem_bytes is not None and new_cap * _entry_bytes(n_words) > mem_bytes:
                status = "memory_limit"
                break
            table = _new_table(new_cap, n_words)
            _search.rehash(keys, depth, lbs, vals, feat, *table)
            keys, depth, lbs, vals, feat = table
            cap = new_cap
            counters[3] = int(cap * 0.6)
        else:
            elapsed = time.perf_counter() - tc
            if elapsed < 0.05:
                steps = min(steps * 2, 1 << 22)
            elif elapsed > 0.2 and steps > 16:
                steps //= 2
        if deadline is not None and time.perf_counter() >= deadline:
            status = "time_limit"
            break

    root_slot = _search.lookup(keys, depth, root_words, root_depth)
    if status == "optimal":
        objective = float(vals[root_slot])
        lower = objective
        root_feature = int(feat[root_slot])
    else:
        top = int(st_top[0])
        top_slot = _search.lookup(keys, depth, st_words[top - 1], st_d[top - 1])
        top_lb = float(lbs[top_slot]) if top_slot >= 0 else 0.0
        lower = float(_search.stack_lower_bound(st_best, st_ub, st_nf, st_pos, st_phase, st_v0, st_lb0, st_lb1,
                                                top, top_lb))
        if root_slot >= 0:
            lower = max(lower, float(lbs[root_slot]))
        if top > 1 or st_nf[0] >= 0:
            objective = float(st_best[0])
            root_feature = int(st_bestf[0])
        else:
            objective = 1.0 + lam  # the one-leaf tree
            root_feature = -1

    def build(words, d, rows, is_root):
        f = root_feature if is_root else -1
        if not is_root and d != 0:
            slot = _search.lookup(keys, depth, words, d)
            f = int(feat[slot]) if slot >= 0 and vals[slot] < np.inf else -1
        if f < 0 or d == 0:
            return {"rows": rows}
        dc = d if unlimited else d - 1
        right = words & fbits[f]
        left = words & ~fbits[f]
        hit = Xb[rows, f] == 1
        return {"feature": f, "false": build(left, dc, rows[~hit], False), "true": build(right, dc, rows[hit], False)}

    root = build(root_words, root_depth, np.arange(n), True)
    stats = {"subproblems": int(counters[0]), "expansions": int(counters[1]), "bounds": int(counters[2]),
             "table_capacity": cap, "table_megabytes": cap * _entry_bytes(n_words) / 1e6,
             "classes": n_classes, "seconds": time.perf_counter() - t0}
    return SearchResult(objective, lower, status, root, stats)


def _new_table(cap, n_words):
    return (np.zeros((cap, n_words), dtype=np.uint64), np.full(cap, -1, dtype=np.int32), np.zeros(cap),
            np.full(cap, np.inf), np.full(cap, -2, dtype=np.int32))
