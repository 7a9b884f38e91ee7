"""The benchmark runner: (dataset, method, quantile, fold, seed) tasks, locally or on Dask.

A task's key also holds the split's number of folds, the fingerprint of its settings (budget and
method) and that of its data (:data:`~parsimony.experiments.store.KEY`); a run first binds its
store to these (:meth:`~parsimony.experiments.store.ResultStore.bind`), so a rerun with other
settings or other data under a dataset's name stops with an error instead of mixing results.

Every task fits one method on the training part of one cross-validation fold and scores it on the
test part: normalized quantile loss (Eq. 7), absolute coverage error (Eq. 8), pinball loss,
coverage, complexity (Appendix B), fit time and the model's text. Only the driver writes to the
store, one transaction per finished task, so killing the run loses at most the running tasks.

The same seed gives the same folds and the same estimator seeds wherever a task runs, so joblib and
Dask produce identical metric values (fit times differ).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import os
import socket
import threading
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_array_1d, check_int, check_quantiles, check_same_length, non_numeric_column
from ..metrics import absolute_coverage_error, complexity, coverage, normalized_quantile_loss, pinball_loss
from .store import KEY, ResultStore, claim_owner, fingerprint, task_key
from .suites import BUDGETS, MethodSpec, load_benchmark_dataset, resolve_budget, resolve_method

MAX_MODEL_TEXT = 20_000
#: Seconds a runner's claim on a task lasts unless renewed (its heartbeat renews it every third).
CLAIM_LEASE = 60.0


@dataclass(frozen=True)
class Task:
    """One unit of work."""

    dataset: str
    method: str
    quantile: float
    fold: int
    seed: int
    folds: int
    settings: str
    data: str

    @property
    def key(self) -> tuple:
        """The task's key in the store (the columns :data:`~parsimony.experiments.store.KEY`)."""
        return task_key(self.dataset, self.method, self.quantile, self.fold, self.seed, self.folds, self.settings,
                        self.data)

    @property
    def random_state(self) -> int:
        """The estimator seed: a stable function of the task (not of where or when it runs)."""
        text = f"{self.dataset}|{self.method}|{self.key[2]!r}|{self.fold}|{self.seed}"
        return int(zlib.crc32(text.encode()) & 0x7FFFFFFF)


def fold_indices(n_samples: int, folds: int, fold: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test rows of fold ``fold`` of a shuffled ``folds``-fold split seeded by ``seed``."""
    from sklearn.model_selection import KFold

    train, test = list(KFold(folds, shuffle=True, random_state=seed).split(np.zeros(n_samples)))[fold]
    return train, test


# ----------------------------------------------------------------------------- model description


def model_text(model, feature_names) -> str:
    """A readable description of a fitted model: its ``export_text`` (expression, formula, tree or
    summary), else its ``repr``; long texts are truncated."""
    names = list(feature_names)
    text = model.export_text(feature_names=names) if callable(getattr(model, "export_text", None)) else repr(model)
    text = str(text)
    return text if len(text) <= MAX_MODEL_TEXT else text[:MAX_MODEL_TEXT] + "\n[truncated]"


# ----------------------------------------------------------------------------- one task


class _CompileTimer:
    """Seconds this process spends compiling numba kernels while in the ``with`` block (nested
    compiles counted once)."""

    def __enter__(self):
        from numba.core import event

        timer = self

        class Listener(event.Listener):
            def on_start(self, ev):
                timer.depth += 1
                if timer.depth == 1:
                    timer.began = time.perf_counter()

            def on_end(self, ev):
                timer.depth -= 1
                if timer.depth == 0:
                    timer.seconds += time.perf_counter() - timer.began

        self.seconds, self.depth, self.began = 0.0, 0, 0.0
        self._listener = Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc):
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        return False


def run_task(task: Task, data: np.ndarray, spec: MethodSpec, budget, feature_names=None) -> dict:
    """Run one task and return its result row; never raises (a failure is a row with ``error``).

    ``data`` is the dataset as one array: features, then the target as the last column.
    """
    row = {**dict(zip(KEY, task.key)), "transparent": int(spec.transparent), "target": spec.target,
           "host": socket.gethostname()}
    try:
        X, y = data[:, :-1], data[:, -1]
        names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(X.shape[1])]
        train, test = fold_indices(len(y), task.folds, task.fold, task.seed)
        row.update(n_train=len(train), n_test=len(test), n_features=X.shape[1])
        model = spec.build(task.quantile, task.random_state, budget)
        start = time.perf_counter()
        with _CompileTimer() as compiling:  # a first fit's numba compilation is no part of its fit time
            model.fit(X[train], y[train])
        row["fit_time"] = time.perf_counter() - start - compiling.seconds
        row["tune_time"] = float(getattr(model, "tune_time_", 0.0))
        start = time.perf_counter()
        pred = np.asarray(model.predict(X[test]), dtype=np.float64).ravel()
        row["predict_time"] = time.perf_counter() - start
        if not np.all(np.isfinite(pred)):
            raise ValueError("the model predicted NaN or infinite values on the test fold")
        y_test, tau, y_range = y[test], task.quantile, float(np.ptp(y))
        row.update(
            pinball=pinball_loss(y_test, pred, tau),
            # the SQR paper's NQL divides by the whole dataset's range; the test fold's is kept too
            nql=normalized_quantile_loss(y_test, pred, tau, y_range=y_range) if y_range > 0 else math.nan,
            nql_fold=normalized_quantile_loss(y_test, pred, tau) if np.ptp(y_test) > 0 else math.nan,
            y_range=y_range,
            coverage=coverage(y_test, pred),
            ace=absolute_coverage_error(y_test, pred, tau),
        )
        row["complexity"] = float(complexity(model))
        row["model"] = model_text(model, names)
        params = getattr(model, "best_params_", None)
        row["params"] = json.dumps(params if params is not None else {}, default=str)
        row["status"] = "ok"
    except Exception as exc:  # a failed task is a result, not a crash of the run
        record_failure(row, exc)
    return finished(row)


def record_failure(row: dict, exc: BaseException) -> None:
    """Mark a task's row as failed with the error and the end of its traceback."""
    row["status"] = "failed"
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    row["error"] = f"{type(exc).__name__}: {exc}\n" + "".join(tb[-3:])[-4000:]


def finished(row: dict) -> dict:
    """The row with its finishing time (UTC)."""
    row["finished_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return row


# ----------------------------------------------------------------------------- the benchmark


def _numeric_features(X, dataset: str) -> np.ndarray:
    """``X`` as a float64 array; a column that is not numeric raises, naming the dataset and the column."""
    bad = non_numeric_column(X)
    if bad is None:
        try:
            return np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"X of dataset {dataset!r} must be numeric: {exc}") from None
    label, kind, example = bad
    raise ValueError(f"X of dataset {dataset!r}: column {label} is not numeric ({kind}, e.g. {example!r}); encode it "
                     "as numbers first (pandas.get_dummies for categories, a number of days for dates)")


def data_fingerprint(array: np.ndarray, names) -> str:
    """Fingerprint of a dataset: its float64 values (features, then the target), shape and column names."""
    values = np.ascontiguousarray(array, dtype=np.float64)
    head = json.dumps({"shape": list(values.shape), "dtype": "float64", "columns": names}).encode()
    return fingerprint(head + values.tobytes())


def _build_name(build) -> str:
    """The qualified name of a method's build function (with the arguments of a ``functools.partial``)."""
    if isinstance(build, functools.partial):
        return f"{_build_name(build.func)}(*{build.args!r}, **{build.keywords!r})"
    return f"{getattr(build, '__module__', None) or '?'}.{getattr(build, '__qualname__', type(build).__qualname__)}"


def experiment_entries(data: dict, specs: dict, folds: int, budget) -> dict:
    """The experiment a run binds its store to (:meth:`ResultStore.bind`): the folds, the budget
    (its name when it is a named one, and every field), each method's build function and each
    dataset's fingerprint with its shape."""
    name = next((n for n, b in BUDGETS.items() if b == budget), None)
    entries = {"folds": folds, "budget": {"name": name, "fields": dataclasses.asdict(budget)}}
    entries.update({f"method:{m}": _build_name(spec.build) for m, spec in specs.items()})
    entries.update({f"data:{d}": {"fingerprint": print_, "rows": int(array.shape[0]), "features": int(array.shape[1] - 1)}
                    for d, (array, _, print_) in data.items()})
    return entries


def method_settings(spec: MethodSpec, budget) -> str:
    """Fingerprint of what defines a method's models besides the data and the split: the budget's
    fields and the method's build function."""
    return fingerprint({"budget": dataclasses.asdict(budget), "build": _build_name(spec.build)})


def _dataset_items(datasets, data_dir):
    """``name -> (data array, feature names, fingerprint)`` from names or ``(name, X, y)`` triples."""
    if isinstance(datasets, str):
        datasets = [datasets]
    items = {}
    for item in datasets:
        if isinstance(item, str):
            X, y, names = load_benchmark_dataset(item, data_dir)
            name = item
        elif isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], str):
            name, X, y = item
            names = [str(c) for c in X.columns] if hasattr(X, "columns") else None
            X = _numeric_features(X, name)
            y = check_array_1d(y, f"y of dataset {name!r}")
            if X.ndim != 2:
                raise ValueError(f"X of dataset {name!r} must be 2-D, got shape {X.shape}")
            check_same_length((f"X of {name!r}", X), (f"y of {name!r}", y))
        else:
            raise ValueError(f"a dataset must be a name or a (name, X, y) tuple, got {item!r}")
        if name in items:
            raise ValueError(f"dataset {name!r} is listed twice")
        array = np.column_stack([X, y])
        items[name] = (array, names, data_fingerprint(array, names))
    if not items:
        raise ValueError("datasets is empty")
    return items


def make_tasks(datasets: dict, methods, quantiles, folds, seeds, budget) -> list[Task]:
    """Every (dataset, method, quantile, fold, seed) task; quantile-agnostic methods only at 0.5.

    ``datasets`` maps each dataset's name to its fingerprint (:func:`data_fingerprint`).
    """
    specs = [resolve_method(m) for m in methods]
    budget = resolve_budget(budget)
    settings = {spec.name: method_settings(spec, budget) for spec in specs}
    return [
        Task(d, spec.name, q, f, s, folds, settings[spec.name], print_)
        for d, print_ in datasets.items() for spec in specs for q in quantiles if spec.runs_at(q)
        for s in seeds for f in range(folds)
    ]


def run_benchmark(datasets, methods, quantiles=(0.5, 0.9), folds=5, seeds=(0,), store="results.sqlite", n_jobs=1,
                  scheduler=None, budget="paper", data_dir=None, retry_failed=False, progress=False) -> pd.DataFrame:
    """Run every (dataset, method, quantile, fold, seed) task not yet in ``store``.

    Several runners may share one store file: each task is claimed in the store before it runs
    (a lease of ``CLAIM_LEASE`` seconds, renewed while the runner lives), other runners skip
    it and wait for its row, and the claims of a killed runner lapse (at once on the same host).

    Parameters
    ----------
    datasets : list of str or (name, X, y)
        Built-in names (:data:`~parsimony.experiments.suites.BUILTIN_DATASETS`), dataset files or
        PMLB names (looked up in ``data_dir``), or in-memory ``(name, X, y)`` triples.
    methods : list of str or MethodSpec
        Registered names (:data:`~parsimony.experiments.suites.METHODS`) or specs.
    quantiles : sequence of float, default=(0.5, 0.9)
    folds : int, default=5
        Shuffled k-fold cross-validation; the shuffle is seeded by each seed.
    seeds : sequence of int, default=(0,)
    store : str, path or ResultStore, default="results.sqlite"
        Created when missing, resumed when it exists. A store holds one experiment: the first run
        records its folds, budget, each method's build function and each dataset's fingerprint
        (values and column names); a later run may add datasets, methods, quantiles and seeds, but
        one that differs in any recorded setting raises before computing anything.
    n_jobs : int, default=1
        Local processes (joblib); 1 runs in this process.
    scheduler : str or distributed.Client, optional
        A Dask scheduler address (``"tcp://host:8786"``) or a client: run the tasks on that cluster.
    budget : Budget or {"paper", "quick", "tiny"}, default="paper"
    data_dir : path, optional
        Where dataset names are looked up.
    retry_failed : bool, default=False
        Rerun tasks stored as failed (otherwise a stored failure counts as finished).
    progress : bool, default=False
        Show a tqdm progress bar.

    Returns
    -------
    pandas.DataFrame
        The stored rows of this run's tasks (including those finished by earlier runs).

    Raises
    ------
    ExperimentMismatch
        A ``ValueError`` when ``store`` holds another experiment: it names every setting that
        differs (folds, budget fields, a method's build, a dataset's data) and how to start a
        fresh store.
    """
    quantiles = check_quantiles(quantiles, "quantiles")
    folds = check_int(folds, "folds", minimum=2)
    seeds = tuple(check_int(s, "seed", minimum=0) for s in ([seeds] if isinstance(seeds, int) else seeds))
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    n_jobs = check_int(n_jobs, "n_jobs")
    budget = resolve_budget(budget)
    specs = {}
    for m in ([methods] if isinstance(methods, (str, MethodSpec)) else methods):
        spec = resolve_method(m)
        if spec.name in specs:
            raise ValueError(f"method {spec.name!r} is listed twice")
        specs[spec.name] = spec
    if not specs:
        raise ValueError("methods is empty")
    data = _dataset_items(datasets, data_dir)
    for name, (array, _, _) in data.items():
        if array.shape[0] < folds:
            raise ValueError(f"dataset {name!r} has {array.shape[0]} rows, fewer than folds={folds}")
    tasks = make_tasks({name: item[2] for name, item in data.items()}, list(specs.values()), quantiles, folds, seeds,
                       budget)
    idle = [name for name, spec in specs.items() if not any(spec.runs_at(q) for q in quantiles)]
    if idle:
        levels = ", ".join(f"{q:g}" for q in quantiles)
        message = (f"method(s) {idle} fit the mean or median and run only at quantile 0.5, so they have no task "
                   f"at quantiles ({levels}); add 0.5 to quantiles or choose quantile methods")
        if not tasks:
            raise ValueError(message)
        import warnings

        warnings.warn(message, stacklevel=2)

    own_store = not isinstance(store, ResultStore)
    results = ResultStore(store) if own_store else store
    try:
        results.bind(experiment_entries(data, specs, folds, budget))
        if retry_failed:
            failed = results.failed()
            results.delete([t.key for t in tasks if t.key in failed])
        _run_claimed(tasks, data, specs, budget, results, n_jobs, scheduler, progress)
        keys = {t.key for t in tasks}
        table = results.load()
    finally:
        if own_store:
            results.close()
    mask = [task_key(*k) in keys for k in table[list(KEY)].itertuples(index=False)]
    return table[mask].reset_index(drop=True)


class _Heartbeat:
    """Renews a runner's claims every third of the lease from its own connection, until stopped."""

    def __init__(self, path: str, owner: str, lease: float):
        self.path, self.owner, self.lease = path, owner, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="parsimony-claims", daemon=True)

    def _beat(self):
        store = ResultStore(self.path)
        try:
            while not self._stop.wait(self.lease / 3):
                store.renew(self.owner, self.lease)
        finally:
            store.close()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _run_claimed(tasks, data, specs, budget, results, n_jobs, scheduler, progress, lease=None, poll=2.0, run=None):
    """Run every task not yet stored, claiming each before it starts so that other runners on the
    same store skip it; tasks other runners hold are waited for (or taken over when their lease lapses).

    ``run`` computes one task's row (default :func:`run_task`); it is called as ``run(task,
    data[task.dataset][0], spec, budget, data[task.dataset][1])`` and must be picklable."""
    run = run_task if run is None else run
    lease = CLAIM_LEASE if lease is None else lease
    owner = claim_owner()
    shared = results.path != ":memory:"
    beat = _Heartbeat(results.path, owner, lease) if shared else None
    # claims are made at dispatch time, from whichever thread joblib dispatches from: one
    # connection any thread may use (a generator never runs in two threads at once)
    claims = ResultStore(results.path, any_thread=True) if shared else None
    if beat is not None:
        beat.__enter__()
    try:
        while True:
            done = results.finished()
            pending = [t for t in tasks if t.key not in done]
            if not pending:
                return
            if shared:
                held = results.claimed_by_others(owner)
                mine = [t for t in pending if t.key not in held]

                def claimed(candidates=mine):
                    for t in candidates:
                        if claims.claim(t.key, owner, lease):
                            yield t
            else:
                mine = pending
            if mine:
                _execute(claimed() if shared else mine, len(mine), data, specs, budget, results, n_jobs, scheduler, progress,
                         run)
            else:
                time.sleep(poll)  # every pending task is another runner's: wait for it or its lease to lapse
    finally:
        if beat is not None:
            beat.__exit__()
            claims.close()
            results.release(owner)


_WATCHED_PARENT: list = []


def die_with_parent(parent: int | None = None, interval: float = 1.0) -> None:
    """Exit this worker process soon after its parent (the runner, pid ``parent``; by default the
    current parent) dies, even by ``kill -9``.

    A daemon thread polls the parent's pid every ``interval`` seconds; started once per process.
    Joblib workers start it as their initializer, with the runner's pid: a worker still starting
    when the runner is killed exits too.
    """
    if _WATCHED_PARENT:
        return
    parent = os.getppid() if parent is None else parent
    _WATCHED_PARENT.append(parent)

    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)  # the runner is gone: nobody will read our result

    threading.Thread(target=watch, name="parsimony-parent-watch", daemon=True).start()


def _execute(pending, total, data, specs, budget, results, n_jobs, scheduler, progress, run=None):
    from tqdm.auto import tqdm

    # smoothing=0: the ETA is from the mean rate since the last restart_eta, so the ticker's refreshes
    # move it while a long task (a compile) runs
    bar = [tqdm(total=total, desc="bench", unit="task", disable=not progress, smoothing=0)]
    ticker = threading.Thread(target=_tick, args=(bar,), name="parsimony-bar-ticker", daemon=True)
    ticker.start()
    with warnings.catch_warnings():
        # compiling numba kernels grows a joblib worker's memory past loky's leak threshold (300 MB),
        # so loky replaces the worker between two tasks and warns; no task is lost, so say nothing
        warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given", category=UserWarning)
        try:
            _collect_rows(pending, data, specs, budget, results, n_jobs, scheduler, bar, run)
        finally:
            bar.append(None)  # stops the ticker
            ticker.join()


def _tick(bar, interval=1.0):
    """Refresh the progress bar ``bar[0]`` every ``interval`` seconds until ``bar`` ends with None, so
    its elapsed time and ETA move while a task runs (a cold task compiles for a minute)."""
    while bar[-1] is not None:
        time.sleep(interval)
        current = bar[0]
        if bar[-1] is not None and not current.disable:
            current.refresh()


def _collect_rows(pending, data, specs, budget, results, n_jobs, scheduler, bars, run=None):
    """Run the pending tasks on joblib, Dask or in this process, storing each row as it comes
    (``bars[0]``: the progress bar, replaced by :func:`~parsimony._numba.restart_eta`)."""
    from .._numba import compiled_kernels, restart_eta

    run = run_task if run is None else run
    try:
        if scheduler is not None:
            rows = _dask_rows(list(pending), data, specs, budget, scheduler, run)
        elif n_jobs == 1:
            rows = (run(t, data[t.dataset][0], specs[t.method], budget, data[t.dataset][1]) for t in pending)
        else:
            from joblib import Parallel, delayed

            # workers die with the runner (a killed runner leaves no workers), idle ones included
            rows = Parallel(n_jobs=n_jobs, return_as="generator_unordered", initializer=die_with_parent,
                            initargs=(os.getpid(),))(
                delayed(run)(t, data[t.dataset][0], specs[t.method], budget, data[t.dataset][1])
                for t in pending
            )
        compiled = compiled_kernels()
        for row in rows:
            results.add(row)
            bars[0].update(1)
            if compiled_kernels() > compiled:  # a task that compiled kernels tells nothing of the ETA
                compiled = compiled_kernels()
                bars[0] = restart_eta(bars[0])
            if row["status"] == "failed":
                bars[0].set_postfix_str(f"failed: {row['method']} on {row['dataset']}", refresh=False)
    finally:
        bars[0].close()


def _dask_rows(pending, data, specs, budget, scheduler, run=None):
    """Yield result rows as the cluster finishes them (a lost task becomes a failed row)."""
    from ._optional import require

    run = run_task if run is None else run
    distributed = require("distributed", "running on a Dask cluster")
    client = scheduler if isinstance(scheduler, distributed.Client) else None
    own = client is None
    if own:
        if not isinstance(scheduler, str):
            raise ValueError(f"scheduler must be an address like 'tcp://host:8786' or a distributed.Client, got {scheduler!r}")
        client = distributed.Client(scheduler)
    try:
        scattered = {name: client.scatter(item[0], broadcast=False) for name, item in data.items()}
        futures = {}
        for t in pending:
            fut = client.submit(run, t, scattered[t.dataset], specs[t.method], budget, data[t.dataset][1],
                                pure=False)
            futures[fut] = t
        for fut in distributed.as_completed(list(futures)):
            t = futures[fut]
            try:
                row = fut.result()
            except Exception as exc:  # the worker died or the task was lost
                spec = specs[t.method]
                row = {**dict(zip(KEY, t.key)), "transparent": int(spec.transparent), "target": spec.target,
                       "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            fut.release()
            yield row
    finally:
        if own:
            client.close()
