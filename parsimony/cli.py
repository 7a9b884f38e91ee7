"""The ``parsimony`` command line: ``datasets list``, ``bench run``, ``bench report``."""

from __future__ import annotations

import argparse
import sys

from ._version import __version__


def _datasets_list(args) -> int:
    import pandas as pd

    from .datasets import list_datasets
    from .experiments.suites import BUILTIN_DATASETS, load_benchmark_dataset

    rows = []
    for name in BUILTIN_DATASETS:
        X, _, _ = load_benchmark_dataset(name)
        rows.append({"name": name, "n": X.shape[0], "d": X.shape[1], "source": "built-in"})
    local = list_datasets(args.data_dir).rename(columns={"path": "source"})
    table = pd.concat([pd.DataFrame(rows), local], ignore_index=True)
    print(table[["name", "n", "d", "source"]].to_string(index=False))
    if local.empty:
        print("\nno local dataset files found (pass --data-dir or set PARSIMONY_DATA to a folder of "
              "NAME.tsv.gz / NAME.csv files)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parsimony", description="Interpretable regression that is provably good.")
    parser.add_argument("--version", action="version", version=f"parsimony {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    datasets = commands.add_parser("datasets", help="find and describe local datasets")
    datasets_cmd = datasets.add_subparsers(dest="datasets_command", metavar="ACTION", required=True)
    listing = datasets_cmd.add_parser("list", help="list datasets with their rows (n) and features (d)")
    listing.add_argument("--data-dir", default=None, help="folder with NAME.tsv.gz / NAME.csv files")
    listing.set_defaults(func=_datasets_list)

    try:
        from .experiments.bench_command import add_bench_parser
    except ImportError:  # the experiment runner is optional at this layer
        add_bench_parser = None
    if add_bench_parser is not None:
        add_bench_parser(commands)
    return parser


def _stop_workers() -> None:
    """Stop joblib's idle worker processes here, where Ctrl-C is handled, not in the interpreter's exit
    (there loky joins them for seconds, and a Ctrl-C meanwhile printed a traceback and exited 0)."""
    if "joblib.externals.loky.reusable_executor" not in sys.modules:
        return
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def main(argv=None) -> int:
    """Run the ``parsimony`` command on ``argv`` and return its exit code.

    Run as the program (``argv`` None), it then ends the process itself (atexit handlers run; the
    interpreter's teardown of its modules, seconds after numba and joblib, does not), so a Ctrl-C
    once the work is done cannot print a traceback or kill it over a finished run.
    """
    code = _run(argv)
    if argv is None:
        _end_process(code)
    return code


def _end_process(code: int) -> None:
    import atexit
    import os
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))  # a Ctrl-C from here on ends it at once
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head) or stream
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def _run(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 2
    import sqlite3

    try:
        try:
            return int(args.func(args) or 0)
        finally:
            _stop_workers()
    except (ValueError, TypeError, OSError, sqlite3.Error) as exc:
        print(f"parsimony: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nparsimony: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    main()
