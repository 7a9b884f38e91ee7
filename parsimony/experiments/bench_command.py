"""``parsimony bench run`` and ``parsimony bench report`` (hooked into :mod:`parsimony.cli`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys


def _parse_list(text: str):
    return tuple(item for item in text.replace(",", " ").split() if item)


def _nonempty_list(text: str):
    """A comma-separated option's items; an empty list is an error (not the suite's default)."""
    items = _parse_list(text)
    if not items:
        raise argparse.ArgumentTypeError(f"got {text!r}, which names nothing: give at least one item, comma-separated "
                                         "(or leave the option out for the suite's default)")
    return items


def _parse_quantiles(text: str):
    try:
        return tuple(float(q) for q in _nonempty_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"quantiles must be numbers like '0.5,0.9', got {text!r}") from None


def _parse_seeds(text: str):
    try:
        return tuple(int(s) for s in _nonempty_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be integers like '0,1,2', got {text!r}") from None


def _stored_count(store) -> str:
    """How many task results ``store`` holds, in words, for the message of an interrupted run."""
    from .store import ResultStore

    try:
        with ResultStore(store, readonly=True) as opened:
            return f"{len(opened)} finished tasks are stored in {store}"
    except (OSError, ValueError):
        return f"no task result is stored in {store} yet"


def _say(line: str) -> None:
    print(f"parsimony bench: {line}", file=sys.stderr)


def _suite(args):
    """The suite of ``--suite`` with ``--datasets`` / ``--max-rows`` applied, and for sqr-paper its
    datasets located or fetched (a dataset that cannot be had is reported and left out)."""
    from .suites import prepare_datasets, pmlb_suite, quick_suite, sqr_paper_suite

    if args.suite == "quick":
        suite = quick_suite()
        return dataclasses.replace(suite, datasets=args.datasets) if args.datasets else suite
    if args.suite == "pmlb":
        if args.data_dir is None:
            raise ValueError("the pmlb suite needs --data-dir (a folder of PMLB .tsv.gz files)")
        return pmlb_suite(args.data_dir, datasets=args.datasets, max_rows=args.max_rows)
    suite = sqr_paper_suite(datasets=args.datasets, max_rows=args.max_rows)
    available, missing, advice = prepare_datasets(suite.datasets, data_dir=args.data_dir, fetch=not args.no_fetch,
                                                  progress=not args.no_progress, log=_say)
    if missing:
        _say(f"{len(missing)} of the suite's {len(suite.datasets)} datasets are missing and left out: "
             f"{', '.join(missing)}")
        if advice:
            _say(advice)
    if not available:
        raise ValueError("none of the sqr-paper suite's datasets is available (see the messages above)")
    return dataclasses.replace(suite, datasets=tuple(available))


def _announce(suite, methods, quantiles, folds, seeds, budget, args) -> None:
    """Print the number of tasks still to run and an estimate of their time."""
    import os

    from types import SimpleNamespace

    from .paper import paper_datasets
    from .reporting import duration
    from .store import load_results, quantile_key
    from .suites import estimate_seconds, load_benchmark_dataset, resolve_method

    specs = [resolve_method(m) for m in methods]
    tasks = [SimpleNamespace(dataset=d, method=spec.name, key=(d, spec.name, quantile_key(q), f, s))
             for d in suite.datasets for spec in specs for q in quantiles if spec.runs_at(q)
             for s in seeds for f in range(folds)]
    n_all, stored = len(tasks), None
    if os.path.exists(args.store):
        try:
            stored = load_results(args.store)
        except (ValueError, OSError):
            stored = None
    if stored is not None and len(stored):  # a store holds one experiment: these five name a task in it
        done = {(str(d), str(m), quantile_key(q), int(f), int(s)) for d, m, q, f, s in
                stored[["dataset", "method", "quantile", "fold", "seed"]].itertuples(index=False)}
        tasks = [t for t in tasks if t.key not in done]
    paper = {r.dataset: (int(r.n), int(r.d)) for r in paper_datasets().itertuples()}
    sizes = {}
    for name in {t.dataset for t in tasks}:
        if name in paper:
            sizes[name] = paper[name]
        else:
            X, _, _ = load_benchmark_dataset(name, args.data_dir)
            sizes[name] = X.shape
    total, per_method = estimate_seconds(tasks, sizes, budget, folds, measured=stored)
    workers = 1 if args.n_jobs == 1 else (os.cpu_count() or 1) if args.n_jobs < 0 else args.n_jobs
    unknown = [m for m, v in per_method.items() if v != v]
    parts = ", ".join(f"{m} {duration(v)}" for m, v in per_method.items() if v == v)
    _say(f"{len(tasks)} tasks to run"
         + (f" ({n_all - len(tasks)} of {n_all} already in the store)" if stored is not None else "")
         + (f"; estimated {duration(total, 'CPU-')} ({parts}), about {duration(total / max(workers, 1))} on "
            f"{workers} worker(s) if the cores are free; a rough model (within a factor of ~2, rescaled by the "
            "store's measured times), the progress bar refines it" if tasks else "")
         + (f"; no estimate for {', '.join(unknown)}" if unknown else ""))


def _bench_run(args) -> int:
    if args.suite.startswith("srbench"):
        from .srbench_command import run_suite

        return run_suite(args)
    from .reporting import report
    from .runner import run_benchmark

    suite = _suite(args)
    methods = args.methods if args.methods is not None else suite.methods
    quantiles = args.quantiles if args.quantiles is not None else suite.quantiles
    folds = args.folds if args.folds is not None else suite.folds
    seeds = args.seeds if args.seeds is not None else suite.seeds
    budget = args.budget or suite.budget
    _say(f"suite {suite.name}, {len(suite.datasets)} datasets, methods {', '.join(methods)}, "
         f"quantiles {', '.join(f'{q:g}' for q in quantiles)}, {folds} folds, seeds {list(seeds)}, budget {budget}, "
         f"store {args.store}")
    _announce(suite, methods, quantiles, folds, seeds, budget, args)
    try:
        results = run_benchmark(
            suite.datasets, methods, quantiles=quantiles, folds=folds, seeds=seeds, store=args.store,
            n_jobs=args.n_jobs, scheduler=args.scheduler, budget=budget, data_dir=args.data_dir,
            retry_failed=args.retry_failed, progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        print(f"\nparsimony bench: interrupted; {_stored_count(args.store)} (tasks still running were not stored); "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    from .reporting import failures_table, summary_notes, to_markdown

    n_failed = int((results["status"] == "failed").sum())
    if n_failed == len(results):
        print(f"\nevery one of the {n_failed} tasks failed:", file=sys.stderr)
        print(to_markdown(failures_table(None, results)), file=sys.stderr)
        print(f"\nparsimony bench: no results to report (stored as failed in {args.store}; "
              "rerun with --retry-failed once fixed)", file=sys.stderr)
        return 1
    compare = "sqr-paper" if suite.name == "sqr-paper" else None
    rep = report(results, out=args.out, plots=args.out is not None, compare=compare)
    if rep.comparison is not None and rep.comparison.protocol:
        print(f"\n{rep.comparison.protocol}")
    print("\nTable 2 (mean ± sd over datasets):\n")
    print(summary_notes(rep.means) + "\n")
    print(to_markdown(rep.summary))
    if n_failed:
        print(f"\n{n_failed} of {len(results)} tasks failed:")
        print(to_markdown(rep.failures))
    if rep.comparison is not None:
        _print_comparison(rep.comparison)
    where = f"report written to {args.out}" if args.out else f"full report: parsimony bench report {args.store} --out DIR"
    print(f"\nresults in {args.store}; {where}" + (" --compare sqr-paper" if compare and not args.out else ""))
    return 0


def _print_comparison(comparison) -> None:
    from .reporting import to_markdown

    print("\n## Beside the SQR paper\n")
    from .paper import BAND

    print(comparison.note + "\n")
    print(to_markdown(comparison.counts) + "\n")
    print(f"Rows more than {BAND:g} from the paper's: "
          + (f"{len(comparison.outside)}\n\n{to_markdown(comparison.outside)}\n" if len(comparison.outside) else "none\n"))
    print(to_markdown(comparison.table2) + "\n")
    print(to_markdown(comparison.conclusions))


def _bench_report(args) -> int:
    from .reporting import report
    from .srbench_report import is_srbench_store, srbench_report

    if args.compare == "srbench" or (args.compare is None and is_srbench_store(args.store)):  # its own tables
        rep = srbench_report(args.store, out=args.out, plots=not args.no_plots)
    else:
        tested = args.tested if args.tested in ("transparent", "all") else _parse_list(args.tested)
        rep = report(args.store, out=args.out, tested=tested, plots=not args.no_plots, compare=args.compare)
    if args.out is None:
        print(rep.to_markdown())
    else:
        print(f"report written to {args.out}")
    return 0


def add_bench_parser(commands) -> None:
    """Add ``bench run`` and ``bench report`` to the ``parsimony`` command's subparsers."""
    bench = commands.add_parser("bench", help="SRBench-style experiments: run a suite, report results")
    bench_cmd = bench.add_subparsers(dest="bench_command", metavar="ACTION", required=True)

    from .suites import METHODS

    listing = "\n".join(f"  {name:<15} {'transparent' if spec.transparent else 'black box'}, fits the {spec.target}"
                        for name, spec in METHODS.items())
    run = bench_cmd.add_parser("run", help="run (or resume) a benchmark into a SQLite results store",
                               formatter_class=argparse.RawDescriptionHelpFormatter,
                               epilog=f"methods (--methods):\n{listing}\n"
                                      "methods fitting the mean or median run at quantile 0.5 only")
    run.add_argument("--suite", choices=("quick", "pmlb", "sqr-paper", "srbench-groundtruth", "srbench-blackbox"),
                     default="quick",
                     help="quick: built-in data, offline, minutes; pmlb: the PMLB files of --data-dir; sqr-paper: the "
                          "SQR paper's 115 PMLB datasets, methods and budget, fetched into the cache when missing "
                          "and compared with its published tables; srbench-groundtruth / srbench-blackbox: SRBench's "
                          "two tracks (docs: SRBench's tracks)")
    run.add_argument("--data-dir", default=None, help="folder with PMLB .tsv.gz files (pmlb suite; sqr-paper: a local "
                                                      "copy looked up before the cache and PMLB, checked against "
                                                      "PMLB's checksum and the paper's rows x features)")
    run.add_argument("--datasets", type=_nonempty_list, default=None, help="only these datasets (comma-separated)")
    run.add_argument("--max-rows", type=int, default=None, help="pmlb, sqr-paper: skip datasets with more rows")
    run.add_argument("--no-fetch", action="store_true", help="sqr-paper: never download; run the datasets found locally")
    run.add_argument("--out", default=None, help="also write the full report (tables, plots) into this folder")
    run.add_argument("--methods", type=_nonempty_list, default=None, help=f"comma-separated method names among {', '.join(METHODS)} (default: the suite's)")
    run.add_argument("--quantiles", type=_parse_quantiles, default=None, help="e.g. 0.5,0.9 (default: the suite's)")
    run.add_argument("--folds", type=int, default=None, help="cross-validation folds (default 5)")
    run.add_argument("--seeds", type=_parse_seeds, default=None,
                     help="comma-separated seeds (default 0)")
    run.add_argument("--budget", choices=("paper", "quick", "tiny"), default=None, help="compute budget (default: the suite's)")
    run.add_argument("--store", default="results.sqlite",
                     help="SQLite results file, resumed when it exists; it holds one experiment (a rerun with "
                          "other folds, budget or data stops and says what differs: give a new file)")
    run.add_argument("--n-jobs", type=int, default=-1, help="local worker processes (joblib; -1 = all cores, 1 = in this process)")
    run.add_argument("--scheduler", default=None, help="Dask scheduler address, e.g. tcp://host:8786")
    run.add_argument("--retry-failed", action="store_true", help="rerun tasks stored as failed")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    from .srbench_command import add_arguments

    add_arguments(run)
    run.set_defaults(func=_bench_run)

    rep = bench_cmd.add_parser("report", help="tables, tests and plots of a results store")
    rep.add_argument("store", help="the SQLite results file")
    rep.add_argument("--out", default=None, help="folder for report.md, CSV/LaTeX tables and PNG plots")
    rep.add_argument("--tested", default="transparent", help="methods the tests compare: transparent, all, or a comma-separated list")
    rep.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    rep.add_argument("--compare", choices=("sqr-paper", "srbench"), default=None,
                     help="put a paper's published figures beside ours (Table 2, Table 11, counts, plot, tests)")
    rep.set_defaults(func=_bench_report)
