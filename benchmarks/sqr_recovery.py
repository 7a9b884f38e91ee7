"""Exact recovery of the AI Feynman formulas of SRBench's ground-truth track by SQR (issue 27, criterion 2).

The 60 problems of ../shared/datasets/feynman/problems.json (each formula with its variables'
sampling ranges, from PMLB's metadata). For each problem and noise level: ``--rows`` rows (1,000)
drawn uniformly in the ranges with ``numpy.random.default_rng(seed)``, the target the formula
plus, at noise level ``s``, Gaussian noise of standard deviation ``s * RMS(y)`` (SRBench's
noise); SQR fits them at ``tau`` (.5) with its default settings (``--set name=value`` changes
one, e.g. ``--set maxsize=30``) and ``random_state=seed``. The selected model is a **solution**
by SRBench's criterion: after its constants are rounded to 3 decimals and sympy simplification,
``model - truth`` is a constant or ``model / truth`` a nonzero constant. Each sympy step runs
under a time limit (``--sympy-timeout`` seconds; a timeout is no solution).

Prints one line per problem (solved at each level, the selected model, fit CPU seconds, the
formula's token complexity with the SQR paper's weights), then the solution rates at each noise
level beside the rates SRBench published on these problems (noise 0 / 0.01; 10,000 rows and hours
a run): AI Feynman 55.8 / 13.1, AFP_FE 27.0 / 20.8, GP-GOMEA 26.8 / 5.1, DSR 19.7 / 18.4, Operon
16.6 / 2.1, gplearn 16.3 / 17.5, and the median fit CPU.

    python benchmarks/sqr_recovery.py [--problems feynman_I_12_5 ... | --first 10 | --max-complexity 20]
        [--noise 0 0.01] [--jobs 2] [--set maxsize=30] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PARSIMONY_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
PROBLEMS = SHARED / "feynman" / "problems.json"
#: SRBench's published solution rates (%) on these problems at noise 0 and 0.01.
PUBLISHED = {"AI Feynman": (55.8, 13.1), "AFP_FE": (27.0, 20.8), "GP-GOMEA": (26.8, 5.1), "DSR": (19.7, 18.4),
             "Operon": (16.6, 2.1), "gplearn": (16.3, 17.5)}


class SympyTimeout(Exception):
    """A sympy step ran past its time limit."""


def _alarm(signum, frame):
    raise SympyTimeout


def load_problems(path: Path = PROBLEMS) -> list[dict]:
    return json.loads(Path(path).read_text())["problems"]


def symbols_of(problem):
    import sympy

    return [sympy.Symbol(name) for name, _, _ in problem["variables"]]


def truth_expression(problem):
    """The formula as sympy, every variable a plain symbol (``gamma``, ``I`` or ``E_n`` included)."""
    import sympy

    names = {s.name: s for s in symbols_of(problem)}
    return sympy.sympify(problem["formula"], locals=names)


def make_data(problem, rows: int, noise: float, seed: int):
    """``(X, y)``: ``rows`` rows uniform in the variables' ranges, the formula plus Gaussian noise of
    standard deviation ``noise * RMS(formula)``."""
    import sympy

    rng = np.random.default_rng(seed)
    low = np.array([v[1] for v in problem["variables"]], dtype=float)
    high = np.array([v[2] for v in problem["variables"]], dtype=float)
    X = rng.uniform(low, high, size=(rows, len(low)))
    f = sympy.lambdify(symbols_of(problem), truth_expression(problem), "numpy")
    y = np.asarray(f(*X.T), dtype=float) * np.ones(rows)
    if noise > 0:
        y = y + rng.normal(0.0, noise * np.sqrt(np.mean(y ** 2)), size=rows)
    return X, y


def round_decimals(expr, decimals: int = 3):
    """``expr`` with every Float rounded to ``decimals`` decimal places (SRBench's rounding)."""
    import sympy

    return expr.xreplace({n: sympy.Float(round(float(n), decimals)) for n in expr.atoms(sympy.Float)})


def is_solution(model, truth, timeout: float = 20.0) -> bool:
    """SRBench's criterion: the model, constants rounded to 3 decimals, differs from the truth by a
    constant or is a nonzero constant times it (after ``sympy.simplify``; False on a timeout)."""
    import sympy

    model = round_decimals(model)
    if model.free_symbols == set() and truth.free_symbols != set():
        return False
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for ratio in (False, True):
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                value = sympy.simplify(model / truth if ratio else model - truth)
            except SympyTimeout:
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if value.free_symbols or value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
                continue
            if not ratio or value.is_zero is False:
                return True
    finally:
        signal.signal(signal.SIGALRM, previous)
    return False


def token_complexity(expr) -> int:
    from parsimony.metrics import expression_complexity

    return int(expression_complexity(expr))


def _warm_up(settings):
    from parsimony.symbolic import SymbolicQuantileRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(50, 2))
    SymbolicQuantileRegressor(niterations=1, progress=False, random_state=0, **settings).fit(X, X[:, 0])


def run_problem(job):
    """Fit one (problem, noise level); returns the result row."""
    import sympy

    from parsimony.symbolic import SymbolicQuantileRegressor

    problem, noise, args = job
    X, y = make_data(problem, args["rows"], noise, args["seed"])
    model = SymbolicQuantileRegressor(quantile=args["tau"], random_state=args["seed"], progress=False,
                                      **args["settings"])
    start = time.process_time()
    model.fit(X, y)
    cpu = time.process_time() - start
    names = [f"x{j}" for j in range(X.shape[1])]
    expr = model.sympy(precision=None)
    expr = expr.xreplace({sympy.Symbol(n): s for n, s in zip(names, symbols_of(problem))})
    truth = truth_expression(problem)
    solved = is_solution(expr, truth, args["sympy_timeout"])
    return {"problem": problem["name"], "noise": noise, "solved": int(solved), "cpu": cpu,
            "complexity": int(model.complexity_), "truth_complexity": token_complexity(truth),
            "model": str(round_decimals(expr)), "truth": problem["formula"]}


def _parse_settings(pairs):
    out = {}
    for pair in pairs or []:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _init_worker(settings):
    _warm_up(settings)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="*", default=None, help="problem names (default: all 60)")
    parser.add_argument("--first", type=int, default=None, help="only the first N problems")
    parser.add_argument("--max-complexity", type=int, default=None,
                        help="only formulas of at most this token complexity (the paper's weights)")
    parser.add_argument("--noise", nargs="*", type=float, default=[0.0, 0.01])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="processes (each fit is single-threaded)")
    parser.add_argument("--sympy-timeout", type=float, default=20.0)
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="SQR parameters (JSON values), e.g. maxsize=30")
    parser.add_argument("--csv", default=None, help="write the rows to this CSV")
    args = parser.parse_args(argv)
    problems = load_problems()
    if args.problems:
        unknown = set(args.problems) - {p["name"] for p in problems}
        if unknown:
            raise SystemExit(f"unknown problems: {sorted(unknown)}")
        problems = [p for p in problems if p["name"] in args.problems]
    if args.max_complexity is not None:
        problems = [p for p in problems if token_complexity(truth_expression(p)) <= args.max_complexity]
    if args.first is not None:
        problems = problems[:args.first]
    settings = _parse_settings(args.set)
    shared = {"rows": args.rows, "tau": args.tau, "seed": args.seed, "sympy_timeout": args.sympy_timeout,
              "settings": settings}
    jobs = [(p, noise, shared) for p in problems for noise in args.noise]
    print(f"{len(problems)} problems x noise {args.noise}, tau={args.tau}, {args.rows} rows, seed {args.seed}, "
          f"SQR settings {settings or 'default'}", flush=True)
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs, initializer=_init_worker, initargs=(settings,)) as pool:
        for row in pool.map(run_problem, jobs):
            rows.append(row)
            print(f"{row['problem']:20s} noise={row['noise']:<5g} {'SOLVED' if row['solved'] else '-':6s} "
                  f"cpu {row['cpu']:5.2f}s  c={row['complexity']:2d} (truth {row['truth_complexity']:2d})  "
                  f"{row['model']}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    print("\nsolution rate (%)   " + "  ".join(f"noise {s:g}".rjust(11) for s in args.noise))
    rates = []
    for noise in args.noise:
        solved = [r["solved"] for r in rows if r["noise"] == noise]
        rates.append(f"{100 * np.mean(solved):5.1f} ({sum(solved)}/{len(solved)})")
    print(f"{'SQR (this run)':20s}" + "  ".join(r.rjust(11) for r in rates))
    for name, published in PUBLISHED.items():
        cells = [f"{published[0 if s == 0 else 1]:5.1f}" if s in (0.0, 0.01) else "-" for s in args.noise]
        print(f"{name:20s}" + "  ".join(c.rjust(11) for c in cells))
    cpu = [r["cpu"] for r in rows]
    print(f"\nfit CPU: median {statistics.median(cpu):.2f} s, mean {np.mean(cpu):.2f} s, max {max(cpu):.2f} s "
          f"over {len(cpu)} fits")


if __name__ == "__main__":
    main()
