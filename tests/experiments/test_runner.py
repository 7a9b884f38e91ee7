"""The runner: tasks, metrics, failures, resumption after kill -9, joblib and Dask agree."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from parsimony.experiments.runner import Task, fold_indices, make_tasks, run_benchmark
from parsimony.experiments.suites import BUDGETS, METHODS, MethodSpec
from parsimony.metrics import absolute_coverage_error, coverage, normalized_quantile_loss, pinball_loss

METRIC_COLUMNS = ["nql", "ace", "pinball", "coverage", "complexity"]
KEY = ["dataset", "method", "quantile", "fold", "seed"]


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    return X, X[:, 0] * 3 + rng.standard_normal(n)


class _Boom:
    def fit(self, X, y):
        raise RuntimeError("this method always fails")


def _build_boom(quantile, random_state, budget):
    return _Boom()


def _build_missing(quantile, random_state, budget):
    from parsimony import _no_such_module  # noqa: F401


class _CompilesInFit(BaseEstimator):
    """A median model whose every fit compiles a fresh numba kernel (a first fit's cold start)."""

    def fit(self, X, y):
        from numba import njit

        @njit(cache=False)
        def median(values):
            return np.median(values)

        self.value_ = median(np.asarray(y, dtype=np.float64))
        self.complexity_ = 1
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)


def _build_compiling(quantile, random_state, budget):
    return _CompilesInFit()


def test_fit_time_leaves_numba_compilation_out():
    from parsimony.experiments.runner import run_task

    X, y = _data()
    task = Task("toy", "compiling", 0.5, 0, 0, 3, "s", "d")
    began = time.perf_counter()
    row = run_task(task, np.column_stack([X, y]), MethodSpec("compiling", _build_compiling), BUDGETS["tiny"])
    wall = time.perf_counter() - began
    assert row["status"] == "ok", row.get("error")
    assert 0 <= row["fit_time"] < 0.5 * wall  # compiling np.median dominates the task; it is not fit time


def test_make_tasks_gives_quantile_agnostic_methods_tau_half_only():
    tasks = make_tasks({"a": "fa", "b": "fb"}, ["QDT", "OSRT"], (0.5, 0.9), 3, (0, 1), "tiny")
    assert len(tasks) == 2 * (2 * 3 * 2 + 1 * 3 * 2)
    assert {t.quantile for t in tasks if t.method == "OSRT"} == {0.5}
    assert len({t.key for t in tasks}) == len(tasks)
    assert {(t.dataset, t.data) for t in tasks} == {("a", "fa"), ("b", "fb")} and {t.folds for t in tasks} == {3}
    settings = {t.method: t.settings for t in tasks}
    assert settings["QDT"] != settings["OSRT"]  # each method's build is part of its settings ...
    again = make_tasks({"a": "fa"}, ["QDT"], (0.5,), 3, (0,), "quick")
    assert again[0].settings != settings["QDT"]  # ... and so is the budget
    task = Task("a", "QDT", 0.9, 1, 0, 3, "s", "fa")
    assert task.random_state == Task("a", "QDT", 0.9, 1, 0, 3, "s", "fa").random_state
    assert task.random_state != Task("a", "QDT", 0.9, 2, 0, 3, "s", "fa").random_state


def test_folds_partition_the_rows():
    tests = [fold_indices(23, 5, f, 3)[1] for f in range(5)]
    assert np.array_equal(np.sort(np.concatenate(tests)), np.arange(23))
    train, test = fold_indices(23, 5, 2, 3)
    assert not set(train) & set(test) and len(train) + len(test) == 23


def test_stored_metrics_are_the_task_metrics(tmp_path):
    X, y = _data()
    table = run_benchmark([("toy", X, y)], ["QDT"], quantiles=(0.9,), folds=3, store=tmp_path / "r.sqlite",
                          budget="tiny")
    assert len(table) == 3 and (table["status"] == "ok").all()
    row = table.iloc[1]
    task = Task("toy", "QDT", 0.9, 1, 0, 3, row["settings"], row["data"])
    train, test = fold_indices(len(y), 3, 1, 0)
    model = METHODS["QDT"].build(0.9, task.random_state, BUDGETS["tiny"]).fit(X[train], y[train])
    pred = model.predict(X[test])
    assert row["pinball"] == pinball_loss(y[test], pred, 0.9)
    assert row["nql"] == pytest.approx(pinball_loss(y[test], pred, 0.9) / (y.max() - y.min()))  # whole range
    assert row["nql_fold"] == normalized_quantile_loss(y[test], pred, 0.9)
    assert row["y_range"] == y.max() - y.min() and np.ptp(y[test]) < row["y_range"]
    assert row["coverage"] == coverage(y[test], pred)
    assert row["ace"] == absolute_coverage_error(y[test], pred, 0.9)
    assert row["complexity"] == model.best_estimator_.tree_.node_count
    assert row["n_train"] == len(train) and row["n_test"] == len(test) and row["n_features"] == 3
    assert row["model"].startswith("tuned {") and "value:" in row["model"]
    assert row["fit_time"] > 0 and row["transparent"] == 1 and row["target"] == "quantile"


def test_failures_are_stored_and_the_run_continues(tmp_path):
    X, y = _data()
    store = tmp_path / "r.sqlite"
    methods = [MethodSpec("boom", _build_boom), MethodSpec("missing", _build_missing), "QDT"]
    table = run_benchmark([("toy", X, y)], methods, quantiles=(0.5,), folds=2, store=store, budget="tiny")
    assert len(table) == 6
    by_method = table.groupby("method")["status"].agg(set)
    assert by_method["boom"] == {"failed"} and by_method["missing"] == {"failed"} and by_method["QDT"] == {"ok"}
    boom = table[table["method"] == "boom"]
    assert boom["error"].str.startswith("RuntimeError: this method always fails").all()
    assert table.loc[table["method"] == "missing", "error"].str.contains("ImportError|ModuleNotFoundError").all()
    assert boom["nql"].isna().all()
    # a rerun skips finished tasks, failed ones included ...
    again = run_benchmark([("toy", X, y)], methods, quantiles=(0.5,), folds=2, store=store, budget="tiny")
    pd.testing.assert_frame_equal(table, again)
    # ... unless asked to retry them
    retried = run_benchmark([("toy", X, y)], methods, quantiles=(0.5,), folds=2, store=store, budget="tiny",
                            retry_failed=True)
    assert len(retried) == 6
    assert (retried.set_index(KEY)["finished_at"] >= table.set_index(KEY)["finished_at"]).all()


def test_bad_arguments(tmp_path):
    X, y = _data(10)
    store = tmp_path / "r.sqlite"
    with pytest.raises(ValueError, match="unknown method"):
        run_benchmark([("toy", X, y)], ["NOPE"], store=store)
    with pytest.raises(ValueError, match="quantile"):
        run_benchmark([("toy", X, y)], ["QDT"], quantiles=(1.2,), store=store)
    with pytest.raises(ValueError, match="fewer than folds"):
        run_benchmark([("toy", X[:3], y[:3])], ["QDT"], folds=5, store=store)
    with pytest.raises(ValueError, match="inconsistent"):
        run_benchmark([("toy", X, y[:5])], ["QDT"], store=store)
    with pytest.raises(ValueError, match="budget"):
        run_benchmark([("toy", X, y)], ["QDT"], budget="huge", store=store)


def _metrics(table):
    return table.sort_values(KEY).reset_index(drop=True)[KEY + METRIC_COLUMNS + ["model", "status"]]


def test_joblib_and_dask_give_identical_metrics(tmp_path):
    distributed = pytest.importorskip("distributed")
    X, y = _data(80)
    args = dict(datasets=[("toy", X, y), "heteroskedastic"], methods=["QDT", "LQR"], quantiles=(0.9,), folds=2,
                budget="tiny")
    serial = run_benchmark(store=tmp_path / "serial.sqlite", n_jobs=1, **args)
    local = run_benchmark(store=tmp_path / "joblib.sqlite", n_jobs=2, **args)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        on_dask = run_benchmark(store=tmp_path / "dask.sqlite", scheduler=client, **args)
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        by_address = run_benchmark(store=tmp_path / "dask2.sqlite", scheduler=cluster.scheduler_address, **args)
    assert len(serial) == 8 and (serial["status"] == "ok").all()
    for other in (local, on_dask, by_address):
        pd.testing.assert_frame_equal(_metrics(serial), _metrics(other))


_SCRIPT = """
import sys, time
from parsimony.experiments.runner import run_benchmark
from parsimony.experiments.suites import MethodSpec
from parsimony.experiments.baselines import QuantileDecisionTreeRegressor

class Slow(QuantileDecisionTreeRegressor):
    def fit(self, X, y):
        time.sleep(0.1)
        return super().fit(X, y)

def build(quantile, random_state, budget):
    return Slow(quantile=quantile, max_depth=2, random_state=random_state)

run_benchmark(["friedman1"], [MethodSpec("slow", build)], quantiles=(0.5, 0.9), folds=5,
              seeds=(0, 1), store=sys.argv[1], n_jobs=int(sys.argv[2]))
"""


def _count(path):
    try:
        with sqlite3.connect(path, timeout=30) as conn:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:  # the table does not exist yet
        return 0


def test_kill_minus_nine_then_resume(tmp_path, n_jobs=1):
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    store = tmp_path / "r.sqlite"
    n_tasks = 2 * 5 * 2
    counts = []
    for kill_after in (2, 7):
        proc = subprocess.Popen([sys.executable, str(script), str(store), str(n_jobs)], start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while _count(store) < kill_after and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and any worker it started
        proc.wait()
        proc.stderr.close()
        counts.append(_count(store))
    assert 2 <= counts[0] <= counts[1] < n_tasks
    done = subprocess.run([sys.executable, str(script), str(store), str(n_jobs)], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT dataset, method, quantile, fold, seed, status FROM results").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert len(rows) == n_tasks
    assert len({r[:5] for r in rows}) == n_tasks
    assert {r[5] for r in rows} == {"ok"}


def test_optional_dependencies_missing(monkeypatch, tmp_path):
    from parsimony.experiments.suites import quick_suite

    monkeypatch.setitem(sys.modules, "lightgbm", None)
    assert "LGBM" not in quick_suite().methods and "QDT" in quick_suite().methods
    monkeypatch.setitem(sys.modules, "distributed", None)
    X, y = _data(10)
    with pytest.raises(ImportError, match="bench"):
        run_benchmark([("toy", X, y)], ["QDT"], folds=2, store=tmp_path / "r.sqlite", scheduler="tcp://127.0.0.1:1")


def test_methods_without_a_task_at_the_quantiles_are_named(tmp_path):
    X, y = _data(20)
    with pytest.raises(ValueError, match=r"\['OSRT'\].*no task at quantiles \(0.9\)"):
        run_benchmark([("toy", X, y)], ["OSRT"], quantiles=(0.9,), folds=2, store=tmp_path / "r.sqlite")
    with pytest.warns(UserWarning, match=r"\['OSRT'\]"):
        table = run_benchmark([("toy", X, y)], ["OSRT", "QDT"], quantiles=(0.9,), folds=2,
                              store=tmp_path / "r.sqlite", budget="tiny")
    assert set(table["method"]) == {"QDT"}


_TWO_RUNNERS = """
import os, sys, time
from parsimony.experiments.runner import run_benchmark
from parsimony.experiments.suites import MethodSpec
from parsimony.experiments.baselines import QuantileDecisionTreeRegressor

class Logged(QuantileDecisionTreeRegressor):
    def fit(self, X, y):
        with open(sys.argv[2], "a") as log:
            log.write(f"{os.getpid()} {self.random_state}\\n")
        time.sleep(0.3)
        return super().fit(X, y)

def build(quantile, random_state, budget):
    return Logged(quantile=quantile, max_depth=2, random_state=random_state)

table = run_benchmark(["friedman1"], [MethodSpec("logged", build)], quantiles=(0.5, 0.9), folds=5,
                      store=sys.argv[1], n_jobs=1)
print(len(table), (table["status"] == "ok").sum())
"""


def test_two_runners_on_one_store_share_the_tasks(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(_TWO_RUNNERS))
    store, log = tmp_path / "r.sqlite", tmp_path / "fits.log"
    procs = [subprocess.Popen([sys.executable, str(script), str(store), str(log)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
        assert out.decode().split() == ["10", "10"]  # each runner returns every task of the run
    fits = log.read_text().split("\n")[:-1]
    assert len(fits) == 10  # every task computed once, not once per runner
    assert len({line.split()[1] for line in fits}) == 10
    assert len({line.split()[0] for line in fits}) == 2  # both runners worked
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_killed_runner_leaves_no_workers(tmp_path):
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(_SCRIPT).replace("time.sleep(0.1)", "time.sleep(1.0)"))  # still running
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "r.sqlite"), "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runner = psutil.Process(proc.pid)
    deadline = time.time() + 120
    while _count(tmp_path / "r.sqlite") < 1 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    children = runner.children(recursive=True)
    assert proc.poll() is None and len(children) >= 2, "the runner should be running joblib workers"
    proc.send_signal(signal.SIGKILL)  # the runner alone, not its process group
    proc.wait()
    deadline = time.time() + 60  # workers poll their parent every second; the machine may be busy
    while time.time() < deadline:
        alive = [p for p in children if _running(psutil, p)]
        if not alive:
            break
        time.sleep(0.2)
    names = [" ".join(p.cmdline()[-3:]) for p in alive if _running(psutil, p)]
    for p in alive:  # do not leak them into the rest of the test session
        p.kill()
    assert not alive, f"{len(alive)} of {len(children)} workers outlived the killed runner: {names}"


def _running(psutil, process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_column_that_is_not_numeric_is_named_with_its_dataset(tmp_path):
    X, y = _data(20)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["city"] = ["Paris", "Lyon"] * 10
    with pytest.raises(ValueError, match=r"X of dataset 'toy': column 'city' is not numeric \((object|str).*'Paris'"):
        run_benchmark([("toy", frame, y)], ["OSRT"], quantiles=(0.5,), folds=2, store=tmp_path / "r.sqlite")
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["when"] = pd.date_range("2020-01-01", periods=20)
    with pytest.raises(ValueError, match=r"X of dataset 'toy': column 'when' is not numeric \(datetime64"):
        run_benchmark([("toy", frame, y)], ["OSRT"], quantiles=(0.5,), folds=2, store=tmp_path / "r.sqlite")
    array = np.column_stack([X, ["u", "v"] * 10]).astype(object)
    with pytest.raises(ValueError, match=r"X of dataset 'toy': column 3 \(x3\) is not numeric \(str"):
        run_benchmark([("toy", array, y)], ["OSRT"], quantiles=(0.5,), folds=2, store=tmp_path / "r.sqlite")
    assert not (tmp_path / "r.sqlite").exists()


def test_the_bench_bar_is_refreshed_while_a_task_runs():
    """The ticker redraws the bar (elapsed time and ETA move) during a long task, and stops."""
    import io
    import threading
    import time

    from tqdm import tqdm

    from parsimony.experiments.runner import _tick

    out = io.StringIO()
    bars = [tqdm(total=10, desc="bench", file=out, smoothing=0, mininterval=0)]
    ticker = threading.Thread(target=_tick, args=(bars, 0.02), daemon=True)
    ticker.start()
    time.sleep(0.3)
    bars.append(None)
    ticker.join(timeout=5)
    assert not ticker.is_alive()
    assert out.getvalue().count("bench") >= 4  # the bar drawn at start, then redrawn by the ticker
    bars[0].close()
