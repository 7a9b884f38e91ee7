"""What a benchmark runs: the method registry, built-in datasets, budgets and named suites.

Methods are registered by name (:data:`METHODS`); each builds an unfitted estimator for a
quantile level, a seed and a :class:`Budget`. Their modules are imported only when a task builds
them, so a method whose module (or optional dependency) is missing becomes a failed task with its
error message, never a crash of the run.

Quantile-agnostic methods. OSRT with the squared loss, ForestPrune and ordered bagging fit the
conditional *mean*; OSRT with the absolute loss fits the conditional *median*. They have no
quantile parameter, so the runner gives them tasks at ``quantile=0.5`` only (skipping any other
level) and the report flags them by their ``target`` ("mean" or "median"): at tau = .5 a mean model
is scored as a median estimate, which is what the pinball loss at .5 measures.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._optional import available


@dataclass(frozen=True)
class Budget:
    """Compute budget of every method in one task.

    Attributes
    ----------
    n_trials, tune_time, inner_cv :
        Tuning of the baselines: Optuna trials, seconds, inner folds.
    lgbm_estimators :
        Boosting rounds of LightGBM.
    sr_iterations, sr_populations, sr_population_size, sr_time_limit, sr_maxsize :
        Search of SQR (the paper's Table 9: 40 iterations, 15 populations of 33, maxsize 20; the
        quick and tiny budgets take the estimator's default maxsize, "auto").
    osrt_regularization, osrt_depth_limit, osrt_thresholds, osrt_time_limit :
        OSRT's lambda, depth limit, binarizer thresholds per feature and time limit.
    ensemble_trees, ensemble_depth :
        Size of the random forest pruned by ForestPrune and of the bagged trees of ordered bagging.
    """

    n_trials: int = 50
    tune_time: float | None = 300.0
    inner_cv: int = 5
    lgbm_estimators: int = 100
    sr_iterations: int = 40
    sr_populations: int = 15
    sr_population_size: int = 33
    sr_time_limit: float | None = None
    sr_maxsize: int | str = 20
    osrt_regularization: float = 0.01
    osrt_depth_limit: int | None = 5
    osrt_thresholds: int = 4
    osrt_time_limit: float | None = 300.0
    ensemble_trees: int = 100
    ensemble_depth: int = 6

    def replace(self, **changes) -> "Budget":
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


#: Named budgets: the paper's settings, the quick suite's and a tiny one for tests. The quick budget
#: runs SQR's default search (40 iterations, 6 populations of 33) to completion; its time limit only
#: guards against a stalled search.
BUDGETS = {
    "paper": Budget(),
    "quick": Budget(n_trials=6, tune_time=10.0, inner_cv=3, lgbm_estimators=50, sr_iterations=40, sr_populations=6,
                    sr_population_size=33, sr_time_limit=10.0, sr_maxsize="auto", osrt_regularization=0.02,
                    osrt_depth_limit=3, osrt_thresholds=3, osrt_time_limit=5.0, ensemble_trees=30, ensemble_depth=4),
    "tiny": Budget(n_trials=2, tune_time=5.0, inner_cv=2, lgbm_estimators=10, sr_iterations=2, sr_populations=2,
                   sr_population_size=12, sr_time_limit=1.0, sr_maxsize="auto", osrt_regularization=0.05,
                   osrt_depth_limit=2, osrt_thresholds=2, osrt_time_limit=2.0, ensemble_trees=8, ensemble_depth=3),
}


def resolve_budget(budget) -> Budget:
    """A :class:`Budget` from itself or a name of :data:`BUDGETS`."""
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, str) and budget in BUDGETS:
        return BUDGETS[budget]
    raise ValueError(f"budget must be a Budget or one of {sorted(BUDGETS)}, got {budget!r}")


@dataclass(frozen=True)
class MethodSpec:
    """A benchmark method.

    Attributes
    ----------
    name : str
        Name in the results store.
    build : callable ``(quantile, random_state, budget) -> estimator``
        Builds the unfitted estimator (imports its module lazily). Must be picklable (a module-level
        function) to run on joblib or Dask workers.
    transparent : bool
        Whether its models are readable (Table 2's last column).
    target : {"quantile", "median", "mean"}
        What it estimates; only "quantile" methods run at levels other than 0.5.
    requires : tuple of str
        Modules it needs (for :func:`method_available`).
    """

    name: str
    build: Callable
    transparent: bool = True
    target: str = "quantile"
    requires: tuple = ()

    def runs_at(self, quantile: float) -> bool:
        """Whether the method has a task at ``quantile``."""
        return self.target == "quantile" or quantile == 0.5


def _lqr(quantile, random_state, budget):
    from .baselines import make_lqr

    return make_lqr(quantile, random_state, budget.n_trials, budget.tune_time, budget.inner_cv)


def _lqr_unpenalised(quantile, random_state, budget):
    from .baselines import make_lqr

    return make_lqr(quantile, random_state, tune=False)


def _lqr_no_constant(quantile, random_state, budget):
    from .baselines import make_lqr

    return make_lqr(quantile, random_state, tune=False, intercept=False)


def _qdt(quantile, random_state, budget):
    from .baselines import make_qdt

    return make_qdt(quantile, random_state, budget.n_trials, budget.tune_time, budget.inner_cv)


def _lgbm(quantile, random_state, budget):
    from .baselines import make_lgbm

    return make_lgbm(quantile, random_state, budget.n_trials, budget.tune_time, budget.inner_cv,
                     n_estimators=budget.lgbm_estimators)


def _sqr(quantile, random_state, budget, max_samples=None):
    from ..symbolic import SymbolicQuantileRegressor

    return SymbolicQuantileRegressor(
        quantile=quantile, niterations=budget.sr_iterations, populations=budget.sr_populations,
        population_size=budget.sr_population_size, maxsize=budget.sr_maxsize, max_samples=max_samples,
        time_limit=budget.sr_time_limit,
        random_state=random_state, progress=False,
    )


def _sqr10k(quantile, random_state, budget):
    return _sqr(quantile, random_state, budget, max_samples=10_000)


def _osrt(quantile, random_state, budget, loss="squared"):
    from ..trees import Binarizer, OptimalSparseRegressionTree

    return OptimalSparseRegressionTree(
        regularization=budget.osrt_regularization, depth_limit=budget.osrt_depth_limit, loss=loss,
        binarizer=Binarizer(n_thresholds=budget.osrt_thresholds), time_limit=budget.osrt_time_limit,
    )


def _osrt_absolute(quantile, random_state, budget):
    return _osrt(quantile, random_state, budget, loss="absolute")


def _osrt_quantile(quantile, random_state, budget):
    from .baselines import make_osrt_q

    return make_osrt_q(quantile, random_state, budget.n_trials, budget.tune_time, budget.inner_cv,
                       depth_limit=budget.osrt_depth_limit, n_thresholds=budget.osrt_thresholds,
                       tree_time_limit=budget.osrt_time_limit)


def _forestprune(quantile, random_state, budget):
    from ..ensembles import ForestPrune

    return ForestPrune(alpha=1.0, n_estimators=budget.ensemble_trees, max_depth=budget.ensemble_depth,
                       random_state=random_state)


def _ordered_bagging(quantile, random_state, budget):
    from sklearn.tree import DecisionTreeRegressor

    from ..ensembles import OrderedBaggingRegressor

    return OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=budget.ensemble_depth),
                                   n_estimators=budget.ensemble_trees, keep=0.2, random_state=random_state)


#: The registry: every method the benchmark knows by name.
METHODS = {
    spec.name: spec
    for spec in (
        MethodSpec("LQR", _lqr, requires=("sklearn",)),
        MethodSpec("LQR-U", _lqr_unpenalised, requires=("sklearn",)),
        MethodSpec("LQR-NC", _lqr_no_constant, requires=("sklearn",)),
        MethodSpec("QDT", _qdt, requires=("sklearn",)),
        MethodSpec("LGBM", _lgbm, transparent=False, requires=("lightgbm",)),
        MethodSpec("SQR", _sqr, requires=("parsimony.symbolic",)),
        MethodSpec("SQR10K", _sqr10k, requires=("parsimony.symbolic",)),
        MethodSpec("OSRT", _osrt, target="mean", requires=("parsimony.trees.osrt",)),
        MethodSpec("OSRT-L1", _osrt_absolute, target="median", requires=("parsimony.trees.osrt",)),
        MethodSpec("OSRT-Q", _osrt_quantile, requires=("parsimony.trees.osrt",)),
        MethodSpec("ForestPrune", _forestprune, target="mean", requires=("parsimony.ensembles.forestprune",)),
        MethodSpec("OrderedBagging", _ordered_bagging, transparent=False, target="mean",
                   requires=("parsimony.ensembles.ordered_bagging",)),
    )
}


def resolve_method(method) -> MethodSpec:
    """A :class:`MethodSpec` from itself or a registered name."""
    if isinstance(method, MethodSpec):
        return method
    if isinstance(method, str) and method in METHODS:
        return METHODS[method]
    raise ValueError(f"unknown method {method!r}; registered: {sorted(METHODS)} (or pass a MethodSpec)")


def method_available(method) -> bool:
    """Whether every module the method needs imports here."""
    return all(available(m) for m in resolve_method(method).requires)


# ------------------------------------------------------------------------------------- datasets


def _synthetic(name: str):
    from .. import datasets as ds

    makers = {
        "friedman1": lambda: ds.make_friedman1(300, noise=1.0, random_state=0),
        "friedman2": lambda: ds.make_friedman2(300, random_state=0),
        "friedman3": lambda: ds.make_friedman3(300, random_state=0),
        "peak": lambda: ds.make_peak(300, random_state=0),
        "heteroskedastic": lambda: ds.make_heteroskedastic(300, random_state=0),
    }
    return makers.get(name)


def _sklearn_bundled(name: str):
    from sklearn import datasets as skd

    loaders = {"diabetes": skd.load_diabetes}
    if name not in loaders:
        return None
    return lambda: loaders[name](return_X_y=True, as_frame=True)


#: Datasets available offline without any file: synthetic (300 rows, seed 0) and scikit-learn's.
BUILTIN_DATASETS = ("friedman1", "friedman2", "friedman3", "peak", "heteroskedastic", "diabetes")


def load_benchmark_dataset(name: str, data_dir=None) -> tuple[np.ndarray, np.ndarray, list]:
    """``(X, y, feature_names)`` as float arrays: a built-in name or a file / PMLB name."""
    maker = _synthetic(name) or _sklearn_bundled(name)
    if maker is not None:
        X, y = maker()
    else:
        from ..datasets import load_dataset

        X, y = load_dataset(name, data_dir=data_dir, download=data_dir is None)
    names = [str(c) for c in X.columns]
    return X.to_numpy(dtype=np.float64), y.to_numpy(dtype=np.float64), names


# ------------------------------------------------------------------------------------- suites


@dataclass(frozen=True)
class Suite:
    """A named experiment: datasets, methods, quantiles, folds, seeds and a budget."""

    name: str
    datasets: tuple
    methods: tuple
    quantiles: tuple = (0.5, 0.9)
    folds: int = 5
    seeds: tuple = (0,)
    budget: str = "paper"


def quick_suite() -> Suite:
    """Offline in a few minutes on 2 cores: three small built-in datasets, every method whose
    dependencies are installed (LightGBM only when it imports), the quick budget."""
    methods = ["LQR", "QDT", "LGBM", "SQR", "OSRT", "OSRT-L1", "ForestPrune", "OrderedBagging"]
    methods = tuple(m for m in methods if m != "LGBM" or available("lightgbm"))
    return Suite("quick", ("friedman1", "heteroskedastic", "diabetes"), methods, budget="quick")


def pmlb_suite(data_dir, datasets=None, max_rows=None) -> Suite:
    """The paper's experiment on the PMLB files of ``data_dir`` (all of them, or ``datasets``;
    files with more than ``max_rows`` rows are left out)."""
    from ..datasets import list_datasets

    table = list_datasets(data_dir)
    if table.empty:
        raise ValueError(f"no datasets found in {data_dir!r}")
    if max_rows is not None:
        table = table[table["n"] <= int(max_rows)]
    names = tuple(table["name"]) if datasets is None else tuple(datasets)
    missing = sorted(set(names) - set(table["name"]))
    if missing:
        raise ValueError(f"datasets not found in {data_dir!r}: {missing}")
    return Suite("pmlb", names, ("LQR", "QDT", "LGBM", "SQR", "SQR10K", "OSRT-Q"), budget="paper")


#: Methods of the SQR paper (Section 4.2). Its LQR is statsmodels' unpenalised ``QuantReg`` (tuning its
#: ``max_iter`` does not change a converged fit) fitted without a constant column: LQR-NC reproduces that
#: column (52 of 66 rows of the 34 shared sets within the printed precision), LQR-U is the same model
#: with an intercept, the sound baseline. ``LQR`` (tuned L1 penalty) can be added with ``methods``.
PAPER_SUITE_METHODS = ("LQR-NC", "LQR-U", "QDT", "LGBM", "SQR", "SQR10K")


def sqr_paper_suite(datasets=None, max_rows=None) -> Suite:
    """The SQR paper's experiment: every dataset of its Table 11 by PMLB name (115), its methods
    (:data:`PAPER_SUITE_METHODS`) at tau = .5 and .9, 5 folds, the paper budget.

    ``datasets`` restricts it to some of the paper's datasets; ``max_rows`` leaves out those with
    more rows. The files are looked up locally and fetched by :func:`prepare_datasets`.
    """
    from .paper import paper_datasets

    table = paper_datasets()
    if datasets is not None:
        unknown = sorted(set(datasets) - set(table["dataset"]))
        if unknown:
            raise ValueError(f"datasets not in the SQR paper's Table 11: {unknown}; its datasets are the PMLB names "
                             f"{', '.join(table['dataset'])}")
        table = table[table["dataset"].isin(list(datasets))]
    if max_rows is not None:
        table = table[table["n"] <= int(max_rows)]
    if table.empty:
        raise ValueError(f"no dataset of the SQR paper has at most max_rows={max_rows} rows")
    return Suite("sqr-paper", tuple(table["dataset"]), PAPER_SUITE_METHODS, budget="paper")


def prepare_datasets(names, data_dir=None, fetch=True, progress=False, log=None):
    """Find every PMLB dataset of ``names`` locally (``data_dir``, ``$PARSIMONY_DATA``, the cache)
    and fetch the missing ones into the cache (:func:`parsimony.datasets.fetch_pmlb`; files without a
    shipped checksum must have the rows and features of the paper's Table 11).

    Returns
    -------
    available : list of str
        The names found or fetched, in the order given.
    missing : dict
        ``name -> reason`` of those that could not be had.
    advice : str
        How to get the missing ones ("" when none is missing).
    """
    from ..datasets import cache_dir, check_dataset_file, fetch_pmlb, find_dataset
    from .paper import paper_datasets

    names = list(names)
    shapes = {r.dataset: (int(r.n), int(r.d)) for r in paper_datasets().itertuples()}
    absent, wrong = [], {}
    for name in names:  # a local copy must be PMLB's file (its checksum) of the paper's shape
        found = find_dataset(name, data_dir)
        try:
            if found is not None:
                check_dataset_file(found, name, shapes.get(name))
                continue
        except ValueError as exc:
            if found.parent != cache_dir() or not fetch:  # a cached file failing is fetched again
                wrong[name] = f"{exc}; left out (replace or delete the file)"
                (log or _warn)(f"{name}: {wrong[name]}")
                continue
        absent.append(name)
    missing, advice = {}, ""
    if absent and fetch:
        result = fetch_pmlb(absent, shapes=shapes, progress=progress, log=log)
        missing = dict(result.failed)
        if missing:
            advice = result.advice()
    elif absent:
        from ..datasets import FetchResult

        missing = {name: "not found locally and fetching is off" for name in absent}
        advice = FetchResult().advice()
    missing.update(wrong)
    return [name for name in names if name not in missing], missing, advice


def _warn(line: str) -> None:
    import warnings

    warnings.warn(line, stacklevel=3)


# CPU seconds of one fit on this project's 2-core reference machine (LQR-U with the interior-point
# solver: 95 s CPU for the 340 tasks of the 34 shared PMLB sets; the default HiGHS solver, which the
# tuned LQR uses, is about 3x slower;
# QDT 5 ms a fit on 400 x 4, 0.2 s on 14,000 x 9; LGBM 24 ms a fit (100 trees) and SQR 1.1 s on
# 400 x 7), as ``overhead + a * n**b * d**c`` for n training rows and d features; tuning multiplies
# by the trials run.
_FIT_OVERHEAD = 1e-2  # validation, pipeline and prediction around a tiny fit
_FIT_COST = {
    "LQR": (3.0e-8, 1.8, 0.3),
    "LQR-U": (1.0e-8, 1.8, 0.3),
    "LQR-NC": (1.0e-8, 1.8, 0.3),
    "QDT": (3.0e-6, 1.0, 0.8),
    "LGBM": (7.0e-4, 0.5, 0.3),
    "SQR": (3.4e-2, 0.55, 0.1),
    "SQR10K": (3.4e-2, 0.55, 0.1),
}
_TUNED = {"LQR", "QDT", "LGBM", "OSRT-Q"}


def estimate_task_seconds(method: str, n: int, d: int, budget, folds: int = 5) -> float:
    """A rough CPU-seconds estimate of one task (tuning and the final fit) of ``method`` on ``n`` rows
    and ``d`` features; NaN for a method without a cost model. Good to a factor of about 2."""
    budget = resolve_budget(budget)
    name = resolve_method(method).name
    if name not in _FIT_COST:
        return math.nan
    a, b, c = _FIT_COST[name]
    rows = max(1.0, n * (folds - 1) / folds)
    if name == "SQR10K":
        rows = min(rows, 10_000)
    fit = _FIT_OVERHEAD + a * rows**b * max(d, 1) ** c
    if name in ("SQR", "SQR10K"):
        default = BUDGETS["paper"]
        fit *= (budget.sr_iterations * budget.sr_populations * budget.sr_population_size
                / (default.sr_iterations * default.sr_populations * default.sr_population_size))
        if budget.sr_time_limit is not None:
            fit = min(fit, budget.sr_time_limit)
    if name in _TUNED:
        inner = fit * (budget.inner_cv - 1) / budget.inner_cv
        search = budget.n_trials * budget.inner_cv * inner
        if budget.tune_time is not None:
            search = min(search, budget.tune_time + inner * budget.inner_cv)
        return search + fit
    return fit


def estimate_seconds(tasks, sizes: dict, budget, folds: int = 5, measured=None) -> tuple[float, dict]:
    """CPU seconds of ``tasks`` (``runner.Task`` s) for ``sizes`` ``name -> (n, d)``: the sum of
    :func:`estimate_task_seconds`, rescaled per method by what ``measured`` (stored result rows with
    ``fit_time``) shows of this machine. Returns the total and ``method -> seconds`` (NaN: unknown)."""
    scale = {}
    if measured is not None and len(measured):
        ok = measured[measured["status"] == "ok"]
        for method, sub in ok.groupby("method"):
            predicted = [estimate_task_seconds(method, *sizes[d], budget, folds) for d in sub["dataset"] if d in sizes]
            actual = [t for t, d in zip(sub["fit_time"], sub["dataset"]) if d in sizes]  # fit_time includes tuning
            if predicted and np.nansum(predicted) > 0:
                scale[method] = float(np.nansum(actual) / np.nansum(predicted))
    per_method = {}
    for task in tasks:
        n, d = sizes[task.dataset]
        seconds = estimate_task_seconds(task.method, n, d, budget, folds) * scale.get(task.method, 1.0)
        per_method[task.method] = per_method.get(task.method, 0.0) + seconds
    return float(sum(v for v in per_method.values() if np.isfinite(v))), per_method
