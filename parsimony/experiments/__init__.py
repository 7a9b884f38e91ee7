"""SRBench-style experiments: runner, baselines, results store and report.

``run_benchmark`` runs every (dataset, method, quantile, fold, seed) task into a resumable SQLite
store (joblib locally, Dask on a cluster); ``report`` turns a store into the SQR paper's tables,
tests and plots. Nothing heavy is imported until used.
"""

from __future__ import annotations

from parsimony._lazy import lazy_exports

_LAZY = {
    "run_benchmark": "parsimony.experiments.runner",
    "run_task": "parsimony.experiments.runner",
    "Task": "parsimony.experiments.runner",
    "report": "parsimony.experiments.reporting",
    "BenchmarkReport": "parsimony.experiments.reporting",
    "ResultStore": "parsimony.experiments.store",
    "load_results": "parsimony.experiments.store",
    "QuantileDecisionTreeRegressor": "parsimony.experiments.baselines",
    "TunedQuantileRegressor": "parsimony.experiments.baselines",
    "make_lqr": "parsimony.experiments.baselines",
    "make_qdt": "parsimony.experiments.baselines",
    "make_lgbm": "parsimony.experiments.baselines",
    "METHODS": "parsimony.experiments.suites",
    "MethodSpec": "parsimony.experiments.suites",
    "Budget": "parsimony.experiments.suites",
    "BUDGETS": "parsimony.experiments.suites",
    "quick_suite": "parsimony.experiments.suites",
    "pmlb_suite": "parsimony.experiments.suites",
    "sqr_paper_suite": "parsimony.experiments.suites",
    "prepare_datasets": "parsimony.experiments.suites",
    "estimate_task_seconds": "parsimony.experiments.suites",
    "compare_with_paper": "parsimony.experiments.paper",
    "PaperComparison": "parsimony.experiments.paper",
    "paper_table11": "parsimony.experiments.paper",
    "paper_table2": "parsimony.experiments.paper",
    "paper_tests": "parsimony.experiments.paper",
    "plot_comparison": "parsimony.experiments.paper",
}
__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
