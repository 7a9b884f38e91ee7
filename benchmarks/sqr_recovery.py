"""Exact recovery of the AI Feynman formulas of SRBench's ground-truth track by SQR: a thin caller of
``parsimony bench run --suite srbench-groundtruth`` (issue 27, criterion 2; issue 37).

The 60 problems whose PMLB ``metadata.yaml`` are in ../shared/datasets/feynman/pmlb-metadata, read,
generated and judged by :mod:`parsimony.experiments.srbench` (one home for the data and the
criterion): ``--rows`` training rows (1,000) uniform in the ranges from
``numpy.random.default_rng(seed)``, Gaussian noise of standard deviation ``level x RMS(y)``, SQR at
``tau`` (.5) with its default settings (``--set name=value`` changes one, e.g. ``--set maxsize=30``)
and ``random_state=seed``; a model is a solution by SRBench's criterion (constants rounded to 3
decimals, sympy simplification: ``model - truth`` a constant or ``model / truth`` a nonzero
constant; each sympy step limited to ``--sympy-timeout`` seconds, a timeout is no solution).
``--problem-set other`` runs the 59 other AI Feynman problems of SRBench's set instead (their
formulas and ranges in ``benchmarks/feynman_other.txt``, written from the published AI Feynman
tables; never tuned on), with the same protocol.

Prints one line per problem (solved at each level, the model, fit CPU seconds, the model's and the
formula's token complexity), then the solution rates beside SRBench's published rates and the
median fit CPU. The suite's store is kept with ``--store`` (resumable), else a temporary one.

    python benchmarks/sqr_recovery.py [--problem-set feynman|other] [--problems feynman_I_12_5 ... | --first 10 | --max-complexity 20]
        [--noise 0 0.01] [--jobs 2] [--set maxsize=30] [--csv out.csv] [--store recovery.sqlite]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from parsimony.experiments import srbench
from parsimony.experiments.srbench_report import rates_beside_published, solution_rates
from parsimony.metrics import expression_complexity

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PARSIMONY_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
METADATA = SHARED / "feynman" / "pmlb-metadata"
#: The 59 AI Feynman problems of SRBench's set that are not in ../shared, written from the
#: published tables (``--problem-set other``): never tuned on.
OTHER = Path(__file__).resolve().parent / "feynman_other.txt"
#: Their units (``--units``), from their PMLB ``metadata.yaml`` (data, one line a problem).
OTHER_UNITS = Path(__file__).resolve().parent / "feynman_other_units.txt"


def load_set(problem_set: str) -> dict:
    """``name -> Problem`` of ``"feynman"`` (the 60 of ../shared, from their metadata) or ``"other"``
    (the 59 others, from :data:`OTHER`)."""
    if problem_set == "other":
        from sqr_out_of_family import _table

        units = other_units()
        return {name: srbench.Problem(name, "y", formula, tuple(variables), units.get(name))
                for name, formula, variables in _table(OTHER.read_text(encoding="utf-8"))}
    if problem_set != "feynman":
        raise SystemExit(f"unknown problem set {problem_set!r}: feynman or other")
    names = sorted(p.name for p in METADATA.iterdir() if (p / "metadata.yaml").is_file())
    problems, missing = srbench.load_problems(names, data_dir=METADATA, fetch=False)
    if missing:
        raise SystemExit(f"unreadable problems: {missing}")
    return problems


def other_units() -> dict:
    """``name -> (target unit, feature units)`` of the 59 others, from :data:`OTHER_UNITS` (lines
    ``name | target unit | var unit; var unit; ...``, copied from their PMLB ``metadata.yaml``,
    ``""`` dimensionless), in the variables' order of :data:`OTHER`."""
    out = {}
    for line in OTHER_UNITS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, target, variables = (part.strip() for part in line.split("|"))
        pairs = [v.strip().split(" ", 1) for v in variables.split(";")]
        out[name] = (target, {v: (u[0] if u else "").strip() for v, *u in pairs})
    table = {name: [v[0] for v in variables] for name, _, variables in _table_of_other()}
    return {name: (target, tuple(units[v] for v in table[name])) for name, (target, units) in out.items()
            if name in table}


def _table_of_other():
    from sqr_out_of_family import _table

    return _table(OTHER.read_text(encoding="utf-8"))


def _parse_settings(pairs):
    out = {}
    for pair in pairs or []:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _complexity(expr):
    """The token complexity of a formula, ``"?"`` where an operator has no weight (``tanh`` in
    the other 59's II.35.21)."""
    try:
        return expression_complexity(expr)
    except ValueError:
        return "?"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem-set", default="feynman", choices=["feynman", "other"],
                        help="the 60 of ../shared (feynman) or the 59 others of SRBench's set (other)")
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
    parser.add_argument("--units", action="store_true",
                        help="give SQR each problem's units (feature_units, target_units): the 60's from their "
                             "metadata, the 59's from feynman_other_units.txt")
    parser.add_argument("--csv", default=None, help="write the rows to this CSV")
    parser.add_argument("--store", default=None, help="keep the suite's results store here (resumable)")
    args = parser.parse_args(argv)
    problems = load_set(args.problem_set)
    if args.problems:
        unknown = set(args.problems) - set(problems)
        if unknown:
            raise SystemExit(f"unknown problems: {sorted(unknown)}")
        problems = {n: p for n, p in problems.items() if n in args.problems}
    if args.max_complexity is not None:
        problems = {n: p for n, p in problems.items() if expression_complexity(p.truth()) <= args.max_complexity}
    if args.first is not None:
        problems = dict(list(problems.items())[:args.first])
    settings = _parse_settings(args.set)
    method = srbench.sqr_method("SQR-units" if args.units else "SQR", tau=args.tau, **settings)
    items = srbench.groundtruth_payloads(problems, args.noise, args.rows, max(1, args.rows // 3),
                                         sympy_timeout=args.sympy_timeout, units=args.units)
    print(f"{len(problems)} problems x noise {args.noise}, tau={args.tau}, {args.rows} rows, seed {args.seed}, "
          f"SQR settings {settings or 'default'}", flush=True)
    if args.jobs == 1:  # compile the kernels before timing the first fit (the workers of --jobs N compile their own)
        import numpy as np

        X = np.random.default_rng(0).uniform(size=(50, 2))
        method.build(0.5, 0, None).set_params(niterations=1).fit(X, X[:, 0])
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or os.path.join(tmp, "recovery.sqlite")
        rows = srbench.run_srbench(items, [method], [args.seed], store, n_jobs=args.jobs, progress=True)
    rows["problem"], rows["noise"] = zip(*rows["dataset"].map(srbench.split_key))
    rows = rows.sort_values(["problem", "noise"])
    for r in rows.itertuples():
        truth = _complexity(problems[r.problem].truth())
        state = "SOLVED" if r.solution == "yes" else "TIMEOUT" if r.solution == "timeout" else "-"
        text = r.model if r.status == "ok" else f"failed: {str(r.error).splitlines()[0]}"
        print(f"{r.problem:20s} noise={r.noise:<5g} {state:7s} cpu {r.fit_cpu:5.2f}s  c={r.complexity:4.0f} "
              f"(truth {truth:>2})  R2 {r.r2:.6f}  {text}", flush=True)
    if args.csv:
        rows.to_csv(args.csv, index=False)
    rates = solution_rates(rows)
    print("\n" + rates_beside_published(rates, ["feynman"]).to_string(index=False))
    cpu = [c for c in rows["fit_cpu"] if c == c]
    if cpu:
        print(f"\nfit CPU: median {statistics.median(cpu):.2f} s, mean {statistics.fmean(cpu):.2f} s, "
              f"max {max(cpu):.2f} s over {len(cpu)} fits")


if __name__ == "__main__":
    main()
