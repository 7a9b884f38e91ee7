"""Throughput of the native symbolic-regression engine (SQR).

Prints, beside the references of ../shared/anchors.md ("Symbolic regression throughput"):
1. microseconds to evaluate ``x1*x2 + cos(x3)`` on 200 rows (PySR: about 1.8; target <= 2);
2. expression evaluations per second per core inside a real search (one thread; PySR's
   author: about 500,000 per second on 4 cores, i.e. 125,000 per core);
3. wall time of a default ``SymbolicQuantileRegressor`` fit on a 1000-row dataset.

Compilation is excluded (every kernel runs once before timing). The machine is shared, so the
best of several repeats is reported.

    python benchmarks/sr_throughput.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from parsimony.losses import Squared
from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._evaluator import eval_tree, make_data, make_workspace, tree_loss
from parsimony.symbolic._expressions import from_tokens


@njit
def _repeat_eval(ops, feats, vals, length, Xt, ws, reps):
    acc = 0
    for _ in range(reps):
        acc += eval_tree(ops, feats, vals, length, Xt, ws)
    return acc


@njit
def _repeat_loss(ops, feats, vals, length, data, ws, reps):
    acc = 0.0
    for _ in range(reps):
        acc += tree_loss(ops, feats, vals, length, data, ws)
    return acc


def single_expression(repeats: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 1] * X[:, 2] + np.cos(X[:, 3]) + rng.normal(size=200)
    ops, feats, vals = from_tokens(["x1", "x2", "mul", "x3", "cos", "add"])
    Xt = np.ascontiguousarray(X.T)
    ws = make_workspace(len(ops), 200)
    data = make_data(Xt, y, np.ones(200), Squared())
    _repeat_eval(ops, feats, vals, len(ops), Xt, ws, 10)
    _repeat_loss(ops, feats, vals, len(ops), data, ws, 10)
    reps = 100_000
    best_eval = best_loss = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        _repeat_eval(ops, feats, vals, len(ops), Xt, ws, reps)
        best_eval = min(best_eval, (time.perf_counter() - t) / reps * 1e6)
        t = time.perf_counter()
        _repeat_loss(ops, feats, vals, len(ops), data, ws, reps)
        best_loss = min(best_loss, (time.perf_counter() - t) / reps * 1e6)
    return best_eval, best_loss


def search_rate(repeats: int) -> tuple[float, int, float]:
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(200, 3))
    y = X[:, 0] * X[:, 1] + np.cos(X[:, 2]) + 0.1 * rng.normal(size=200)
    kw = dict(niterations=10, populations=4, ncycles_per_iteration=100, progress=False, n_jobs=1)
    SymbolicQuantileRegressor(random_state=0, **{**kw, "niterations": 1}).fit(X, y)  # compile
    best = 0.0
    for r in range(repeats):
        t = time.perf_counter()
        model = SymbolicQuantileRegressor(random_state=r, **kw).fit(X, y)
        seconds = time.perf_counter() - t
        best = max(best, model.n_evaluations_ / seconds)
    return best, model.n_evaluations_, seconds


def default_fit(repeats: int) -> tuple[float, str]:
    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, size=(1000, 5))
    y = 1.5 * X[:, 0] ** 2 - np.sin(X[:, 1]) * X[:, 2] + 0.3 * rng.normal(size=1000)
    SymbolicQuantileRegressor(niterations=1, progress=False).fit(X[:50], y[:50])  # compile
    best = np.inf
    for r in range(repeats):
        t = time.perf_counter()
        model = SymbolicQuantileRegressor(quantile=0.9, random_state=r, progress=False).fit(X, y)
        best = min(best, time.perf_counter() - t)
    return best, model.equations_["equation"].iloc[model.best_index_]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    ev, loss = single_expression(args.repeats)
    print(f"x1*x2 + cos(x3) on 200 rows: {ev:.2f} us per evaluation ({loss:.2f} us with the pinball loss); "
          f"target <= 2.0, PySR 1.8")
    rate, n, sec = search_rate(max(2, args.repeats // 2))
    print(f"search on 200 rows, one thread: {rate:,.0f} evaluations per second per core "
          f"({n:,} evaluations in {sec:.2f} s); PySR about 125,000 per core (500,000 on 4 cores)")
    fit_seconds, equation = default_fit(max(1, args.repeats // 2))
    print(f"default fit, 1000 rows x 5 features, tau=0.9: {fit_seconds:.2f} s (target: well under 60 s); "
          f"selected: {equation}")


if __name__ == "__main__":
    main()
