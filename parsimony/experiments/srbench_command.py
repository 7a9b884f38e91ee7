"""``parsimony bench run --suite srbench-groundtruth | srbench-blackbox``: options and the run."""

from __future__ import annotations

import argparse
import os
import sys

from . import srbench
from .reporting import duration


def _levels(text: str):
    try:
        levels = tuple(float(v) for v in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"noise levels must be numbers like '0,0.001,0.01,0.1', got {text!r}") from None
    if not levels or any(not (0 <= v < 10) for v in levels):
        raise argparse.ArgumentTypeError(f"give at least one noise level, each >= 0 (a multiple of RMS(y)), got {text!r}")
    return levels


def _positive(kind):
    """An argparse type: a number of ``kind`` (int or float) > 0."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be a{' positive integer' if kind is int else ' number > 0'}, "
                                             f"got {text!r}")
        return value

    return parse


def add_arguments(run) -> None:
    """The options of the SRBench suites on ``bench run``'s parser."""
    group = run.add_argument_group("srbench-groundtruth / srbench-blackbox")
    group.add_argument("--noise", type=_levels, default=None,
                       help="ground truth: target noise levels, multiples of RMS(y) (default 0,0.001,0.01,0.1)")
    group.add_argument("--rows", type=_positive(int), default=None,
                       help=f"training rows (default {srbench.TRAIN_ROWS:,}, SRBench's cap); generated problems also get "
                            "--test-rows noise-free test rows")
    group.add_argument("--test-rows", type=_positive(int), default=None,
                       help="ground truth, generated data: test rows (default a third of --rows: a 75/25 split)")
    group.add_argument("--pmlb-data", action="store_true",
                       help="ground truth: read PMLB's data files (split 75/25) instead of generating data from the "
                            "metadata's ranges (the Strogatz problems always read theirs)")
    group.add_argument("--units", action="store_true",
                       help="ground truth: give the methods that take them (SQR) each problem's units from its "
                            "metadata (feature_units, target_units: a dimensional prior on model selection)")
    group.add_argument("--sympy-timeout", type=_positive(float), default=srbench.SYMPY_TIMEOUT,
                       help=f"seconds each sympy simplification may take (default {srbench.SYMPY_TIMEOUT:g}); one that "
                            "runs out is reported as 'timeout' (not solved)")
    group.add_argument("--time-limit", type=_positive(float), default=None,
                       help=f"seconds per fit of the peers Operon, eggp, PySR (default {srbench.BUDGET.sr_time_limit:g})")


def _say(line: str) -> None:
    print(f"parsimony bench: {line}", file=sys.stderr)


def _methods(args, track: str) -> list:
    names = list(args.methods) if args.methods is not None else list(srbench.DEFAULT_METHODS[track])
    unknown = [m for m in names if m not in srbench.METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown} for --suite srbench-{track}; choose among "
                         f"{', '.join(srbench.METHODS)}")
    runnable = []
    for name in names:
        why = srbench.method_unavailable(name)
        if why is None:
            runnable.append(name)
        else:
            _say(f"skipped: {why}")
    if not runnable:
        raise ValueError("none of the chosen methods can run here (see the messages above)")
    return runnable


def _groundtruth_items(args, rows, test_rows):
    names = srbench.expand_names(args.datasets, "groundtruth")
    problems, missing = srbench.load_problems(names, data_dir=args.data_dir, fetch=not args.no_fetch, log=_say)
    tables = {}
    wanted = [n for n, p in problems.items() if args.pmlb_data or not p.has_ranges]
    if wanted:
        found, lost = _tables(wanted, args)
        for name, (X, y, _) in found.items():
            order = problems[name].features
            tables[name] = (X, y)
            if list(found[name][2]) != list(order):
                missing[name] = f"its data file's columns {found[name][2]} differ from the metadata's features {order}"
        missing.update(lost)
    problems = {n: p for n, p in problems.items() if n not in missing}
    _report_missing(missing, len(names), "problems")
    if not problems:
        raise ValueError(f"none of the {len(names)} problems is available: {_listing(missing)}. {srbench.how_to_get()}")
    noise = args.noise if args.noise is not None else srbench.NOISE_LEVELS
    return srbench.groundtruth_payloads(problems, noise, rows, test_rows, pmlb_data=args.pmlb_data,
                                        sympy_timeout=args.sympy_timeout, tables=tables, units=args.units)


def _tables(names, args):
    """``name -> (X, y, feature names)`` of PMLB data files found locally or fetched; and the missing."""
    import numpy as np

    from ..datasets import fetch_pmlb, find_dataset, read_table

    shapes = {r.name: (int(r.n), int(r.d)) for r in srbench.blackbox_datasets().itertuples()}
    found, missing = {}, {}
    absent = [n for n in names if find_dataset(n, args.data_dir) is None]
    fetched = {}
    if absent and not args.no_fetch:
        result = fetch_pmlb(absent, shapes={n: shapes[n] for n in absent if n in shapes}, log=_say)
        fetched = dict(result.paths)
        missing.update(result.failed)
    elif absent:
        missing.update({n: "no data file found locally and fetching is off (--no-fetch)" for n in absent})
    for name in names:
        path = fetched.get(name) or find_dataset(name, args.data_dir)
        if path is None or name in missing:
            continue
        try:
            X, y = read_table(path)
            values = np.asarray(X, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            missing[name] = f"unreadable: {exc}"
            continue
        found[name] = (values, y.to_numpy(dtype=np.float64), [str(c) for c in X.columns])
    return found, missing


def _listing(missing: dict) -> str:
    return "; ".join(f"{n}: {why}" for n, why in missing.items())


def _report_missing(missing: dict, total: int, what: str) -> None:
    if missing:
        _say(f"{len(missing)} of the {total} {what} are missing and left out: {', '.join(missing)}")
        reasons = sorted(set(missing.values()))
        _say("why: " + "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} other reasons)" if len(reasons) > 3 else ""))
        _say(srbench.how_to_get())


def _blackbox_items(args, rows):
    names = srbench.expand_names(args.datasets, "blackbox")
    shapes = {r.name: int(r.n) for r in srbench.blackbox_datasets().itertuples()}
    if args.max_rows is not None:
        names = [n for n in names if shapes.get(n, 0) <= args.max_rows]
    found, missing = _tables(names, args)
    if args.max_rows is not None:
        found = {n: v for n, v in found.items() if len(v[1]) <= args.max_rows}
    _report_missing(missing, len(names), "datasets")
    if not found:
        raise ValueError(f"none of the {len(names)} datasets is available: {_listing(missing)}. {srbench.how_to_get()}")
    return srbench.blackbox_payloads(found, rows, sympy_timeout=args.sympy_timeout)


def _announce(tasks, items, store, workers, budget) -> None:
    from .store import load_results, quantile_key

    stored = None
    if os.path.exists(store):
        try:
            stored = load_results(store)
        except (ValueError, OSError):
            stored = None
    n_all = len(tasks)
    if stored is not None and len(stored):
        done = {(str(d), str(m), quantile_key(q), int(f), int(s)) for d, m, q, f, s in
                stored[["dataset", "method", "quantile", "fold", "seed"]].itertuples(index=False)}
        tasks = [t for t in tasks if t.key[:5] not in done]
    sizes = {}
    for key, (payload, names, _) in items.items():
        rows = payload["rows"] if payload["table"] is None else min(payload["rows"] or 10**9,
                                                                    int(len(payload["table"][1]) * 0.75))
        sizes[key] = (rows, len(names))
    total, per_method = srbench.estimate_seconds(tasks, sizes, budget, measured=stored)
    parts = ", ".join(f"{m} {duration(v)}" for m, v in per_method.items())
    _say(f"{len(tasks)} tasks to run" + (f" ({n_all - len(tasks)} of {n_all} already in the store)"
                                         if n_all != len(tasks) else "")
         + (f"; estimated {duration(total, 'CPU-')} ({parts}), about {duration(total / max(workers, 1))} on "
            f"{workers} worker(s) if the cores are free (a rough model: the progress bar refines it)" if tasks else ""))


def run_suite(args) -> int:
    """``bench run`` for the SRBench suites: prepare the problems or datasets, run, print the report."""
    from .srbench_report import srbench_report

    track = "groundtruth" if args.suite == "srbench-groundtruth" else "blackbox"
    if track == "blackbox" and (args.noise is not None or args.pmlb_data or args.test_rows is not None
                                or getattr(args, "units", False)):
        raise ValueError("--noise, --pmlb-data, --test-rows and --units belong to --suite srbench-groundtruth")
    methods = _methods(args, track)
    rows = args.rows or srbench.TRAIN_ROWS
    test_rows = args.test_rows or max(1, rows // 3)
    items = _groundtruth_items(args, rows, test_rows) if track == "groundtruth" else _blackbox_items(args, rows)
    seeds = args.seeds if args.seeds is not None else srbench.SEEDS
    budget = srbench.BUDGET if args.time_limit is None else srbench.BUDGET.replace(sr_time_limit=args.time_limit)
    tasks = srbench.make_tasks(items, methods, seeds, budget)
    workers = 1 if args.n_jobs == 1 else (os.cpu_count() or 1) if args.n_jobs < 0 else args.n_jobs
    _say(f"suite srbench-{track}, {len(items)} " + ("(problem, noise level) pairs" if track == "groundtruth"
                                                    else "datasets")
         + f", methods {', '.join(methods)}, seeds {list(seeds)}, {rows} training rows, store {args.store}")
    _announce(tasks, items, args.store, workers, budget)
    try:
        srbench.run_srbench(items, methods, seeds, args.store, n_jobs=args.n_jobs, scheduler=args.scheduler,
                            budget=budget, retry_failed=args.retry_failed, progress=not args.no_progress)
    except KeyboardInterrupt:
        _say("interrupted; rerun the same command to resume (finished tasks are in the store)")
        return 130
    rep = srbench_report(args.store, out=args.out)
    print(rep.to_markdown())
    if args.out:
        print(f"\nreport written to {args.out}")
    return 0
