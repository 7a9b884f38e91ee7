"""Where the law goes under noise: every row of SQR's front on the recovery protocol's problems,
each judged by SRBench's criterion (issue 40, "Noise").

Fits each problem as ``benchmarks/sqr_recovery.py`` does (``--rows`` uniform rows, Gaussian noise
of ``level x RMS(y)``, SQR's defaults at tau .5, ``random_state=seed``) and writes one CSV line
per front row (``--fronts``): complexity, unit-free complexity, fitted constants (in the search's units, as the
estimator counts them), training loss, coverage, the constant's loss, whether
it is the selected row and whether it is a solution (rows whose noise-free test R^2 is below
``--min-r2`` are not sent to sympy and count as no solution). Per-row training pinball losses
go to ``--losses`` (an ``.npz``), so selection rules can be tried offline. Then, per problem and
level: ``solved`` (the selected row is a solution), ``not selected`` (a solution is on the
front, another row selected), ``not built`` (no solution on the front). With ``--units`` the fits
take each problem's units (``sqr_recovery.py --units``) and each row says whether it is ``consistent``.

    python benchmarks/sqr_noise_fronts.py [--problem-set feynman|other] [--problems ...] [--noise 0 0.01 0.1]
        [--fronts /tmp/fronts.csv] [--losses /tmp/losses.npz]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_recovery import load_set  # noqa: E402

from parsimony.experiments.srbench import generate_data, symbolic_solution  # noqa: E402


def front_of(job) -> tuple:
    """``(rows, losses)`` of one (problem, noise level): the front's rows judged, their per-row losses."""
    import sympy

    from parsimony.losses import Pinball
    from parsimony.symbolic import SymbolicQuantileRegressor
    from parsimony.symbolic._search import constant_baseline
    from parsimony.symbolic._units import unit_free_complexity

    problem, noise, args = job
    X, y, X_test, y_test = generate_data(problem, args["rows"], noise, args["seed"], args["rows"] // 3)
    units = {}
    if args.get("units"):
        units = {"feature_units": list(problem.units[1]), "target_units": problem.units[0]}
    model = SymbolicQuantileRegressor(quantile=args["tau"], random_state=args["seed"], progress=False,
                                      **args["settings"], **units)
    start = time.process_time()
    model.fit(X, y)
    cpu = time.process_time() - start
    w = np.ones(len(y))
    baseline = constant_baseline(y, w, Pinball(args["tau"]))
    names = {sympy.Symbol(f"x{j}"): sympy.Symbol(n) for j, n in enumerate(problem.features)}
    truth = problem.truth()
    rows, losses = [], []
    for i, (eq, tree) in enumerate(zip(model.equations_.itertuples(), model._fronts[0])):
        residual = y - model.predict(X, index=i)
        losses.append(np.maximum(args["tau"] * residual, (args["tau"] - 1) * residual))
        test = model.predict(X_test, index=i)
        r2 = 1 - np.mean((y_test - test) ** 2) / np.var(y_test)
        solution = "no"
        if r2 >= args["min_r2"]:
            expr = model.sympy(index=i, precision=None).xreplace(names)
            solution = symbolic_solution(expr, truth, args["sympy_timeout"])
        rows.append({"problem": problem.name, "noise": noise, "row": i, "selected": int(i == model.best_index_),
                     "complexity": int(eq.complexity),
                     "unit_free": unit_free_complexity(tree["ops"], tree["feats"], tree["vals"],
                                                       model.complexity_weights_),
                     "fitted": tree["fitted"], "loss": float(eq.loss), "coverage": float(eq.coverage),
                     "baseline": baseline, "n_samples": len(y), "r2": r2, "solution": int(solution == "yes"),
                     "cpu": cpu, "equation": eq.equation,
                     "consistent": int(getattr(eq, "consistent", True))})
    return rows, np.array(losses)


def verdict(front) -> str:
    """``solved``, ``not selected`` or ``not built`` of one front (rows of one problem and level)."""
    if (front.selected * front.solution).any():
        return "solved"
    return "not selected" if front.solution.any() else "not built"


def main(argv=None):
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem-set", default="feynman", choices=["feynman", "other"])
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--noise", nargs="*", type=float, default=[0.0, 0.01, 0.1])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--min-r2", type=float, default=0.99)
    parser.add_argument("--sympy-timeout", type=float, default=10.0)
    parser.add_argument("--units", action="store_true",
                        help="fit with each problem's units (sqr_recovery.py --units): the rows' consistent column")
    parser.add_argument("--fronts", default="/tmp/sqr_noise_fronts.csv")
    parser.add_argument("--losses", default="/tmp/sqr_noise_losses.npz")
    args = parser.parse_args(argv)
    problems = load_set(args.problem_set)
    if args.problems:
        problems = {n: p for n, p in problems.items() if n in args.problems}
    shared = {"rows": args.rows, "tau": args.tau, "seed": args.seed, "settings": {}, "min_r2": args.min_r2,
              "sympy_timeout": args.sympy_timeout, "units": args.units}
    jobs = [(p, noise, shared) for p in problems.values() for noise in args.noise]
    table, losses = [], {}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for (problem, noise, _), (rows, loss) in zip(jobs, pool.map(front_of, jobs)):
            table.extend(rows)
            losses[f"{problem.name}|{noise:g}"] = loss
            front = pd.DataFrame(rows)
            chosen = front[front.selected == 1].iloc[0]
            print(f"{problem.name:20s} noise={noise:<5g} {verdict(front):12s} cpu {rows[0]['cpu']:5.2f}s "
                  f"c={chosen.complexity:3d} solutions at c={list(front.complexity[front.solution == 1])} "
                  f"{chosen.equation}", flush=True)
    pd.DataFrame(table).to_csv(args.fronts, index=False)
    np.savez_compressed(args.losses, **losses)
    frame = pd.DataFrame(table)
    counts = frame.groupby(["noise", "problem"]).apply(verdict).groupby(level=0).value_counts().unstack(fill_value=0)
    print("\n" + counts.to_string())


if __name__ == "__main__":
    main()
