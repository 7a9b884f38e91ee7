"""A round of bad and unusual inputs over every estimator and the results store, classified.

Each case runs one call and its oracle says what the outcome is:

- ``correct``: a result that passes the case's check (finite predictions; the same model as the
  reference where the input should not change it, e.g. weights scaled by any c > 0);
- ``clear``: a ValueError/TypeError (or the CLI's exit 2) whose message names what is wrong (one of
  the case's keywords: the argument, the column, the setting);
- ``unclear``: any other exception, or an error whose message names none of the keywords;
- ``silent_wrong``: a result that fails the check (another model, NaN, a store that mixed or lost rows);
- ``hang``: no answer within the case's time limit (the worker process is killed and restarted).

Cases run in one worker process, in order; the parent watches each with a deadline. Usage::

    nice -n 10 python benchmarks/fuzz_round.py            # counts per class, then every non-correct case
    python benchmarks/fuzz_round.py --only store --list   # one group; print every case's outcome
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

CLASSES = ("correct", "clear", "unclear", "silent_wrong", "hang")
TIME_LIMIT = 120.0  # seconds per case (SQR compiles on first use)
SCALES = (1e-12, 1e-15, 1e-300, 2.0**-1000, 3e-308, 1e12, 1e300)


class Wrong(AssertionError):
    """A result that fails the case's check."""


# ------------------------------------------------------------------------------- estimators


def _estimators():
    from sklearn.tree import DecisionTreeRegressor

    from parsimony.ensembles import ForestPrune, OrderedBaggingRegressor
    from parsimony.ensembles.bagged_networks import BaggedNetworks
    from parsimony.experiments.baselines import QuantileDecisionTreeRegressor
    from parsimony.symbolic import ConformalQuantileInterval, SymbolicQuantileRegressor
    from parsimony.trees import OptimalSparseRegressionTree

    sqr = dict(niterations=1, populations=1, population_size=8, ncycles_per_iteration=3, progress=False,
               random_state=0)
    return {
        "SQR": lambda: SymbolicQuantileRegressor(**sqr),
        "Conformal": lambda: ConformalQuantileInterval(SymbolicQuantileRegressor(**sqr), alpha=0.5,
                                                       calibration_size=0.5, random_state=0),
        "OSRT": lambda: OptimalSparseRegressionTree(regularization=0.02, depth_limit=2, time_limit=10),
        "OSRT-L1": lambda: OptimalSparseRegressionTree(regularization=0.02, depth_limit=2, loss="absolute",
                                                       time_limit=10),
        "OSRT-Q": lambda: OptimalSparseRegressionTree(regularization=0.02, depth_limit=2, loss="quantile",
                                                      quantile=0.7, time_limit=10),
        "ForestPrune": lambda: ForestPrune(n_estimators=4, max_depth=2, alpha=0.1, random_state=0),
        "OrderedBagging": lambda: OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=2), n_estimators=4,
                                                          random_state=0),
        "BaggedNetworks": lambda: BaggedNetworks(n_estimators=2, hidden_units=2, max_iter=5, random_state=0),
        "QDT": lambda: QuantileDecisionTreeRegressor(quantile=0.7, max_depth=2, random_state=0),
    }


_WEIGHTED = {"SQR", "Conformal", "OSRT", "OSRT-L1", "OSRT-Q", "OrderedBagging", "BaggedNetworks"}
_SEEDED = {"SQR", "Conformal", "ForestPrune", "OrderedBagging", "BaggedNetworks", "QDT"}


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + X[:, 1] + 0.3 * rng.standard_normal(n)
    return X, y, rng.uniform(0.2, 3.0, size=n)


def _finite(model, X):
    pred = np.asarray(model.predict(X), dtype=float)
    if not np.all(np.isfinite(pred)):
        raise Wrong("non-finite predictions")
    return pred


def _same(a, b, what):
    if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
        raise Wrong(f"{what}: predictions differ by up to {np.max(np.abs(np.asarray(a) - np.asarray(b))):.3g}")


def _frame(X, names=("a", "b", "c")):
    import pandas as pd

    return pd.DataFrame(X, columns=list(names))


def estimator_cases():
    """``(group, name, call, keywords)``: ``call()`` returns normally when the outcome is correct."""
    import pandas as pd
    import scipy.sparse as sp

    cases = []
    X, y, w = _data()
    for est, make in _estimators().items():
        def add(name, call, keywords=(), est=est):
            cases.append(("estimators", f"{est}: {name}", call, tuple(keywords)))

        add("plain", lambda make=make: _finite(make().fit(X, y), X))
        for dtype in (np.float32, np.longdouble, np.int64):
            add(f"X as {np.dtype(dtype).name}", lambda make=make, dtype=dtype:
                _finite(make().fit((X * 10).astype(dtype), y), (X * 10).astype(dtype)))
        add("bool column", lambda make=make: _finite(make().fit(np.column_stack([X, X[:, 0] > .5]), y),
                                                     np.column_stack([X, X[:, 0] > .5])))
        add("constant y", lambda make=make: _finite(make().fit(X, np.full(len(y), 3.0)), X))
        add("y times 1e300", lambda make=make: _finite(make().fit(X, y * 1e300), X), ("y", "overflow", "range"))
        add("y times 1e-300", lambda make=make: _finite(make().fit(X, y * 1e-300), X))
        add("NaN in X", lambda make=make: make().fit(np.where(X > .9, np.nan, X), y), ("NaN",))
        add("inf in y", lambda make=make: make().fit(X, np.where(y > 2.5, np.inf, y)), ("infinit", "inf"))
        add("empty X", lambda make=make: make().fit(X[:0], y[:0]), ("0 sample", "empty", "minimum"))
        add("one row", lambda make=make: _finite(make().fit(X[:1], y[:1]), X), ("sample", "row", "calibration"))
        add("y of another length", lambda make=make: make().fit(X, y[:-1]), ("inconsistent", "samples"))
        add("complex y", lambda make=make: make().fit(X, y + 1j), ("complex",))
        add("sparse X", lambda make=make: _finite(make().fit(sp.csr_matrix(X), y), sp.csr_matrix(X)),
            ("sparse", "dense"))
        add("pandas Series X", lambda make=make: _finite(make().fit(pd.Series(X[:, 0], name="x"), y),
                                                         pd.Series(X[:, 0], name="x")),
            ("2-dimensional", "2D", "single feature"))
        add("string column", lambda make=make: make().fit(_frame(X).assign(city=["P", "L"] * 20), y),
            ("city",))
        add("datetime column", lambda make=make: make().fit(
            _frame(X).assign(when=pd.date_range("2024-01-01", periods=len(y))), y), ("when",))
        add("reordered columns at predict", lambda make=make: make().fit(_frame(X), y).predict(_frame(X)[["c", "b", "a"]]),
            ("order",))
        if est in _SEEDED:
            def generator(make=make):
                first = make().set_params(random_state=np.random.default_rng(1)).fit(X, y).predict(X)
                second = make().set_params(random_state=np.random.default_rng(1)).fit(X, y).predict(X)
                _same(first, second, "the same Generator seed")
            add("random_state Generator", generator, ("random_state",))
        if est in _WEIGHTED:
            def reference(make=make):
                return make().fit(X, y, sample_weight=w).predict(X)
            for c in SCALES:
                if est == "Conformal":  # its weights count calibration points (documented): no invariance
                    add(f"sample_weight * {c:g}", lambda make=make, c=c:
                        _finite(make().fit(X, y, sample_weight=w * c), X), ("sample_weight counts points",))
                    continue
                add(f"sample_weight * {c:g}", lambda make=make, c=c, ref=reference:
                    _same(make().fit(X, y, sample_weight=w * c).predict(X), ref(), f"weights * {c:g}"),
                    ("subnormal",))
            add("sample_weight * 1e-320", lambda make=make: make().fit(X, y, sample_weight=w * 1e-320),
                ("sample_weight",))
            add("complex sample_weight", lambda make=make: make().fit(X, y, sample_weight=w + .5j),
                ("sample_weight", "complex"))
            add("negative sample_weight", lambda make=make: make().fit(X, y, sample_weight=w - 1), ("sample_weight",))
            add("zero sample_weight", lambda make=make: make().fit(X, y, sample_weight=0 * w), ("sample_weight",))
            add("sample_weight too short", lambda make=make: make().fit(X, y, sample_weight=w[:-1]),
                ("sample_weight",))
    return cases + _prefitted_cases() + _binarizer_cases()


def _prefitted_cases():
    from sklearn.ensemble import BaggingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    from parsimony.ensembles import ForestPrune, OrderedBaggingRegressor

    X, y, _ = _data(60)
    df = _frame(X)
    forest = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(df, y)
    bagged = BaggingRegressor(DecisionTreeRegressor(max_depth=3), n_estimators=4, random_state=0).fit(df, y)
    cases = []
    for name, make in (("ForestPrune", lambda: ForestPrune(forest, alpha=0.1)),
                       ("OrderedBagging", lambda: OrderedBaggingRegressor(bagged))):
        cases += [
            ("estimators", f"{name}: prefitted, same columns", lambda make=make: _finite(make().fit(df, y), df), ()),
            ("estimators", f"{name}: prefitted, reordered columns", lambda make=make: make().fit(df[["c", "b", "a"]], y),
             ("order",)),
            ("estimators", f"{name}: prefitted, renamed column", lambda make=make: make().fit(df.rename(columns={"c": "d"}), y),
             ("missing",)),
            ("estimators", f"{name}: prefitted, one column fewer", lambda make=make: make().fit(df[["a", "b"]], y),
             ("features", "missing")),
        ]
    return cases


def _binarizer_cases():
    import pandas as pd

    from parsimony.trees import Binarizer

    X, _, w = _data()
    df = _frame(X)
    base = Binarizer(n_thresholds=4).fit(X, sample_weight=w).thresholds_

    def scaled(c):
        got = Binarizer(n_thresholds=4).fit(X, sample_weight=w * c).thresholds_
        if any(len(a) != len(b) or not np.array_equal(a, b) for a, b in zip(base, got)):
            raise Wrong(f"weights * {c:g}: other thresholds")

    cases = [("estimators", f"Binarizer: sample_weight * {c:g}", lambda c=c: scaled(c), ("subnormal",)) for c in SCALES]
    cases += [
        ("estimators", "Binarizer: complex sample_weight", lambda: Binarizer().fit(X, sample_weight=w + 1j),
         ("sample_weight", "complex")),
        ("estimators", "Binarizer: reordered columns", lambda: Binarizer().fit(df).transform(df[["b", "a", "c"]]),
         ("order",)),
        ("estimators", "Binarizer: datetime column", lambda: Binarizer().fit(
            df.assign(when=pd.date_range("2024-01-01", periods=len(df)))), ("when",)),
        ("estimators", "Binarizer: categorical column", lambda: Binarizer().fit(df.assign(city=["P", "L"] * 20))
         .transform(df.assign(city=["P", "L"] * 20)), ()),
    ]
    return cases


# ------------------------------------------------------------------------------- the store


def _cli(*args):
    """``parsimony`` CLI exit code and stderr; argparse errors are exit 2 as well."""
    import contextlib
    import io

    from parsimony.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(args))
        except SystemExit as stop:
            code = stop.code
    return code, err.getvalue()


class ClearExit(ValueError):
    """The CLI stopped with exit 2 and a message."""


def _expect_exit(code, err):
    if code == 0:
        raise Wrong("the command succeeded")
    if code == 2 and err.strip():
        raise ClearExit(err.strip().splitlines()[-1])
    raise RuntimeError(f"exit {code}: {err[-300:]}")


def _rows(path):
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM results").fetchall()
    conn.close()
    return rows


def store_cases(workdir: Path):
    from parsimony.experiments import run_benchmark
    from parsimony.experiments.reporting import report
    from parsimony.experiments.store import load_results

    X, y, _ = _data()
    base = ["bench", "run", "--datasets", "heteroskedastic", "--methods", "LQR", "--quantiles", "0.5", "--n-jobs", "1",
            "--no-progress", "--budget", "tiny"]
    cases = []

    def rerun(changes, keywords, name):
        def call():
            store = workdir / f"rerun-{name}.sqlite"
            code, err = _cli(*base, "--folds", "3", "--store", str(store))
            assert code == 0, err
            before = _rows(store)
            code, err = _cli(*base, "--folds", "3", *changes, "--store", str(store))  # the later option wins
            if _rows(store) != before:
                raise Wrong("the store now holds rows of two settings")
            _expect_exit(code, err)
        cases.append(("store", f"rerun with other {name}", call, keywords))

    rerun(["--folds", "5"], ("folds",), "folds")
    rerun(["--budget", "quick"], ("budget",), "budget")
    rerun(["--folds", "2", "--budget", "paper"], ("folds", "budget"), "folds and budget")

    def other_data(transform, name):
        def call():
            store = workdir / f"data-{name}.sqlite"
            run_benchmark([("toy", X, y)], ["LQR"], quantiles=(0.5,), folds=2, store=store, budget="tiny")
            Xo, yo = transform(X, y)
            table = run_benchmark([("toy", Xo, yo)], ["LQR"], quantiles=(0.5,), folds=2, store=store, budget="tiny")
            if len(load_results(store)) == 2:
                raise Wrong(f"the old rows were returned for other data ({len(table)} rows)")
        cases.append(("store", f"other data under a name: {name}", call, ("data of dataset",)))

    other_data(lambda X, y: (X, 100 * y + 7), "100*y+7")
    other_data(lambda X, y: (_frame(X), y), "column names")
    other_data(lambda X, y: (X[::-1].copy(), y[::-1].copy()), "rows reversed")

    def tiny_file(content):
        def call():
            path = workdir / f"file-{len(content)}"
            path.write_bytes(content)
            code, err = _cli(*base, "--folds", "2", "--store", str(path))
            if path.read_bytes() != content:
                raise Wrong("the file was overwritten")
            _expect_exit(code, err)
        cases.append(("store", f"store file of {len(content)} bytes of garbage", call, ("not a", "SQLite")))

    for content in (b"x", b"xy", b"garbage " * 100):
        tiny_file(content)
    for option, value in (("--methods", ""), ("--datasets", ""), ("--datasets", ","), ("--quantiles", ""),
                          ("--seeds", "")):
        cases.append(("store", f"CLI {option} {value!r}", lambda option=option, value=value: _expect_exit(
            *_cli("bench", "run", option, value, "--store", str(workdir / "empty.sqlite"))), ("names nothing",)))

    def string_column():
        run_benchmark([("toy", _frame(X).assign(city=["P", "L"] * 20), y)], ["OSRT"], quantiles=(0.5,), folds=2,
                      store=workdir / "s.sqlite", budget="tiny")
    cases.append(("store", "run_benchmark with a string column", string_column, ("city",)))

    def old_store():
        path = workdir / "old.sqlite"
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE results (dataset TEXT, method TEXT, quantile REAL, fold INTEGER, seed INTEGER, "
                         "status TEXT, nql REAL, UNIQUE (dataset, method, quantile, fold, seed))")
            conn.execute("INSERT INTO results VALUES ('heteroskedastic', 'LQR', 0.5, 0, 0, 'ok', 0.1)")
        conn.close()
        before = path.read_bytes()
        code, err = _cli(*base, "--folds", "2", "--store", str(path))
        if path.read_bytes() != before:
            raise Wrong("the old store was written")
        _expect_exit(code, err)
    cases.append(("store", "run into a store of the old schema", old_store, ("older parsimony",)))

    def mixed_frames():
        a = run_benchmark([("toy", X, y)], ["LQR"], quantiles=(0.5,), folds=2, store=workdir / "m2.sqlite", budget="tiny")
        b = run_benchmark([("toy", X, y)], ["LQR"], quantiles=(0.5,), folds=3, store=workdir / "m3.sqlite", budget="tiny")
        import pandas as pd

        report(pd.concat([a, b]), plots=False)
        raise Wrong("the report averaged two splits")
    cases.append(("store", "report of frames from two splits", mixed_frames, ("mix",)))

    def read_only_without_shm():
        import shutil
        import subprocess

        src = workdir / "wal"
        src.mkdir(exist_ok=True)
        script = ("import os, signal, sys\nfrom parsimony.experiments.store import ResultStore\n"
                  "s = ResultStore(sys.argv[1])\n"
                  "for f in range(200):\n"
                  "    s.add({'dataset': 'd', 'method': 'm', 'quantile': 0.5, 'fold': f, 'seed': 0, 'folds': 200, "
                  "'settings': 's', 'data': 'x', 'status': 'ok'})\n"
                  "    if f == 80: s._conn.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchall()\n"
                  "os.kill(os.getpid(), signal.SIGKILL)\n")
        subprocess.run([sys.executable, "-c", script, str(src / "r.sqlite")], timeout=120)
        dst = workdir / "shipped"
        dst.mkdir(exist_ok=True)
        for name in ("r.sqlite", "r.sqlite-wal"):
            shutil.copy(src / name, dst / name)
        from parsimony.experiments import store as module

        real = module.sqlite3.connect

        class NoShm:
            def execute(self, *a):
                raise sqlite3.OperationalError("unable to open database file")

            def close(self):
                pass

        module.sqlite3.connect = lambda t, *a, **k: NoShm() if str(t).endswith("?mode=ro") else real(t, *a, **k)
        try:
            n = len(load_results(dst / "r.sqlite"))
        finally:
            module.sqlite3.connect = real
        if n != 200:
            raise Wrong(f"{n} of 200 committed rows read")
    cases.append(("store", "read-only store without its -shm after kill -9", read_only_without_shm, ("-wal",)))
    return cases


# ------------------------------------------------------------------------------- running


def _classify(exc, keywords) -> str:
    if isinstance(exc, Wrong):
        return "silent_wrong"
    if isinstance(exc, (ValueError, TypeError)):
        text = str(exc).lower()
        return "clear" if keywords and any(k.lower() in text for k in keywords) else "unclear"
    return "unclear"


def _all_cases(workdir, only):
    cases = []
    if only in (None, "estimators"):
        cases += estimator_cases()
    if only in (None, "store"):
        cases += store_cases(workdir)
    return cases


def _worker(start, only, workdir, queue):
    warnings.simplefilter("ignore")
    os.environ.setdefault("PARSIMONY_PROGRESS", "0")
    cases = _all_cases(Path(workdir), only)
    queue.put(("count", len(cases)))
    for i in range(start, len(cases)):
        group, name, call, keywords = cases[i]
        queue.put(("start", i, name))
        t = time.perf_counter()
        try:
            call()
            outcome, detail = "correct", ""
        except BaseException as exc:  # noqa: BLE001 - every outcome is classified
            outcome = _classify(exc, keywords)
            detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            if outcome == "unclear" and not isinstance(exc, (ValueError, TypeError)):
                detail += " | " + traceback.format_exc().strip().splitlines()[-3][:160]
        queue.put(("done", i, group, name, outcome, detail, time.perf_counter() - t))


def run(only=None, time_limit=TIME_LIMIT):
    """Run every case; returns a list of ``{"group", "case", "outcome", "detail", "seconds"}``."""
    ctx = mp.get_context("spawn")
    results, start, total = [], 0, None
    with tempfile.TemporaryDirectory(prefix="parsimony-fuzz-") as workdir:
        while total is None or start < total:
            queue = ctx.Queue()
            proc = ctx.Process(target=_worker, args=(start, only, workdir, queue), daemon=True)
            proc.start()
            current, began = None, time.time()
            while True:
                try:
                    msg = queue.get(timeout=1.0)
                except Exception:  # queue.Empty
                    if current is not None and time.time() - began > time_limit:
                        proc.kill()
                        results.append({"group": "?", "case": current[1], "outcome": "hang",
                                        "detail": f"no answer in {time_limit:.0f} s", "seconds": time_limit})
                        start = current[0] + 1
                        break
                    if not proc.is_alive() and queue.empty():
                        if current is not None:  # the worker died in a case (a crash is not a clear error)
                            results.append({"group": "?", "case": current[1], "outcome": "unclear",
                                            "detail": f"the process died (exit {proc.exitcode})", "seconds": 0.0})
                            start = current[0] + 1
                        else:
                            start = total if total is not None else 0
                        break
                    continue
                if msg[0] == "count":
                    total = msg[1]
                elif msg[0] == "start":
                    current, began = (msg[1], msg[2]), time.time()
                else:
                    _, i, group, name, outcome, detail, seconds = msg
                    results.append({"group": group, "case": name, "outcome": outcome, "detail": detail,
                                    "seconds": round(seconds, 3)})
                    current, start = None, i + 1
                    if start >= total:
                        break
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("estimators", "store"), default=None)
    parser.add_argument("--list", action="store_true", help="print every case's outcome")
    parser.add_argument("--json", default=None, help="write the outcomes to this file")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT)
    args = parser.parse_args(argv)
    start = time.time()
    results = run(args.only, args.time_limit)
    counts = {c: sum(r["outcome"] == c for r in results) for c in CLASSES}
    for r in results:
        if args.list or r["outcome"] not in ("correct", "clear"):
            print(f"{r['outcome']:<13} {r['case']}: {r['detail']}")
    by_group = {}
    for r in results:
        by_group.setdefault(r["group"], {c: 0 for c in CLASSES})[r["outcome"]] += 1
    for group, c in sorted(by_group.items()):
        print(f"{group:<11} " + ", ".join(f"{k} {v}" for k, v in c.items()))
    print(f"{len(results)} cases in {time.time() - start:.0f} s: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0 if counts["silent_wrong"] == 0 and counts["hang"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
