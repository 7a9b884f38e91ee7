"""SRBench-style experiments: runner, baselines, results store and report.

``run_benchmark`` runs every (dataset, method, quantile, fold, seed) task into a resumable SQLite
store (joblib locally, Dask on a cluster); ``report`` turns a store into the SQR paper's tables,
tests and plots; ``run_srbench`` and ``srbench_report`` run SRBench's two tracks and put them beside
its published figures. Nothing heavy is imported until used.
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
    "symbolic_solution": "parsimony.experiments.srbench",
    "parse_metadata": "parsimony.experiments.srbench",
    "fetch_metadata": "parsimony.experiments.srbench",
    "load_problems": "parsimony.experiments.srbench",
    "generate_data": "parsimony.experiments.srbench",
    "model_size": "parsimony.experiments.srbench",
    "run_srbench": "parsimony.experiments.srbench",
    "srbench_report": "parsimony.experiments.srbench_report",
    "SRBenchReport": "parsimony.experiments.srbench_report",
}
__all__ = list(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
