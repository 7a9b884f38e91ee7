"""Constant fitting alone (:func:`optimize_constants`) on random expressions fitted to their own values.

The instrument behind ``_optimize``'s constants (IRLS_STEPS, FIRST_STEP, RESTART_STEP, MIN_SCALE,
TOLERANCE): random expressions of the default operators (up to 15 tokens, 3 features) give the
targets on 300 rows of [1, 5]^3; each fit starts from the expression's constants perturbed by 30%,
at tau .5, with 2 restarts, at the evolution's 40 and the polish's 120 evaluations. A fit recovers
the constants when its loss is at most 1e-6 of the targets' mean absolute deviation. ``--set``
patches a module constant of ``_optimize`` before the first compile, so it needs an empty numba
cache (``NUMBA_CACHE_DIR=$(mktemp -d)``); the printed CPU times are per call, without the first.

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/sqr_constant_fitting.py [--set RESTART_STEP=0.25]
        [--irls 4] [--count 3000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from parsimony.symbolic import Pinball
from parsimony.symbolic import _expressions as E
from parsimony.symbolic import _optimize
from parsimony.symbolic._engine import random_expressions
from parsimony.symbolic._evaluator import evaluate, make_data, make_workspace, tree_loss
from parsimony.symbolic._random import new_state

BINARY = np.array([E.ADD, E.SUB, E.MUL, E.DIV], dtype=np.int64)
UNARY = np.array([E.SQUARE, E.SQRT, E.EXP, E.LOG, E.SIN, E.COS], dtype=np.int64)
BUDGETS = (40, 120)  # SearchSettings.optimizer_evaluations and _polish.POLISH_EVALUATIONS
ROWS, PERTURBATION, RECOVERED = 300, 0.3, 1e-6


def run(count: int, irls: int) -> tuple[int, list[int], list[float]]:
    """Fits used, fits recovered per budget, CPU seconds per budget (the first fit left out)."""
    rng = np.random.default_rng(0)
    Xt = np.ascontiguousarray(rng.uniform(1, 5, size=(ROWS, 3)).T)
    state = new_state(7)
    used, recovered, cpu = 0, [0] * len(BUDGETS), [0.0] * len(BUDGETS)
    for ops, feats, vals in random_expressions(count, 3, max_complexity=15, seed=1, binops=BINARY, unops=UNARY):
        constant = ops == E.CONST
        if not constant.any():
            continue
        ws = make_workspace(len(ops), ROWS)
        y = np.empty(ROWS)
        evaluate(ops, feats, vals, len(ops), Xt, ws, y)
        if not np.isfinite(y).all() or np.ptp(y) < 1e-9 or np.abs(y).max() > 1e8:
            continue
        start = vals.copy()
        start[constant] *= 1 + PERTURBATION * rng.choice([-1.0, 1.0], constant.sum())
        data = make_data(Xt, y, np.ones(ROWS), Pinball(0.5))
        loss0 = tree_loss(ops, feats, start, len(ops), data, ws)
        for b, evaluations in enumerate(BUDGETS):
            t = time.process_time()
            loss = _optimize.optimize_constants(ops, feats, start.copy(), len(ops), data, ws, state, loss0,
                                                evaluations, 2, irls)
            cpu[b] += (time.process_time() - t) if used else 0.0
            recovered[b] += loss <= RECOVERED * np.mean(np.abs(y - np.median(y)))
        used += 1
    return used, recovered, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--irls", type=int, default=_optimize.IRLS_STEPS)
    parser.add_argument("--count", type=int, default=3000, help="random expressions drawn")
    args = parser.parse_args()
    for item in args.set:
        name, value = item.split("=")
        if not hasattr(_optimize, name):
            parser.error(f"_optimize has no constant {name}")
        setattr(_optimize, name, float(value))
    used, recovered, cpu = run(args.count, args.irls)
    print(" ".join(args.set) or "defaults", f"irls {args.irls}, {used} fits:")
    for evaluations, k, seconds in zip(BUDGETS, recovered, cpu):
        print(f"  {evaluations} evaluations: {k} recovered, {1e6 * seconds / max(used - 1, 1):.0f} us CPU a call")


if __name__ == "__main__":
    main()
