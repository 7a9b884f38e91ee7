"""The benchmark report in the SQR paper's layout (Section 4 and Appendices C, E).

- Table 2 (:attr:`BenchmarkReport.summary`): per method, mean +- sd over datasets of the
  per-dataset means (over folds and seeds) of NQL, ACE and parsimony at every quantile.
- Table 3 (:attr:`BenchmarkReport.runtime`): mean +- sd fit time in ms.
- Table 6 (:attr:`BenchmarkReport.friedman`): a Friedman test per (metric, quantile), alpha
  Bonferroni-corrected for the number of such tests.
- Tables 7-8 (:attr:`BenchmarkReport.wilcoxon`): pairwise Wilcoxon signed-rank tests, alpha
  Bonferroni-corrected for every pair of every (metric, quantile).
- Table 11 (:attr:`BenchmarkReport.per_dataset`): per quantile and dataset, every metric of every
  method.
- Critical-difference diagrams (Nemenyi, over all methods) and accuracy-parsimony Pareto plots.

Conventions: NQL divides the mean pinball loss by the range of the whole dataset's target, as
the paper's tables do (``nql``; ``nql_fold`` divides by the test fold's range, Eq. 7 literally);
a (dataset, method, quantile) enters the tables only when all its tasks succeeded
(failures are listed in :attr:`BenchmarkReport.failures`); the statistical tests use the datasets
on which every tested method is complete; standard deviations use ``ddof=1``. By default the
tests compare the transparent methods, as the paper does (``tested="all"`` for every method).
Quantile-agnostic methods (``target`` "mean"/"median") appear at tau = .5 only.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from .._validation import check_quantile
from ..stats import verdict
from .store import load_results


def duration(seconds: float, prefix: str = "") -> str:
    """``seconds`` in readable units: "0.4 CPU-s", "14 CPU-min", "2.3 CPU-hours" (with ``prefix="CPU-"``)."""
    if seconds < 90:
        return f"{seconds:.2g} {prefix}s" if seconds < 10 else f"{seconds:.0f} {prefix}s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} {prefix}min"
    return f"{seconds / 3600:.2g} {prefix}hours" if seconds < 36_000 else f"{seconds / 3600:.0f} {prefix}hours"


#: Reported metrics: column, full name, abbreviation, decimals.
METRICS = {
    "nql": ("Normalized quantile loss", "nql", 3),
    "ace": ("Absolute coverage error", "ace", 3),
    "complexity": ("Parsimony", "pars", 2),
}
_PER_DATASET = (("complexity", "Parsimony"), ("ace", "ACE"), ("nql", "NQL"), ("time_ms", "Time (ms)"))


def _tau(q) -> str:
    return f"tau={q:g}"


def dataset_means(results: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method, quantile): means over folds and seeds, when every task succeeded.

    Columns: the key, ``n_tasks``, ``n_failed``, ``complete``, the metric means, ``time_ms``
    (mean fit time in ms), ``n`` (rows), ``d`` (features), ``transparent`` and ``target``.
    """
    if results.empty:
        raise ValueError("the results store has no rows")
    _check_one_experiment(results)
    df = results.copy()
    if "nql_fold" not in df:  # rows from before the whole-range NQL
        df["nql_fold"] = np.nan
    df["time_ms"] = df["fit_time"].astype(float) * 1000.0
    df["ok"] = df["status"] == "ok"
    keys = ["dataset", "method", "quantile"]
    grouped = df.groupby(keys, sort=True)
    out = grouped.agg(n_tasks=("status", "size"), n_ok=("ok", "sum"), transparent=("transparent", "max"),
                      target=("target", "first")).reset_index()
    out["n_failed"] = out["n_tasks"] - out["n_ok"]
    ok = df[df["ok"]].copy()
    ok["n"] = ok["n_train"] + ok["n_test"]
    values = ok.groupby(keys, sort=True).agg(
        nql=("nql", "mean"), nql_fold=("nql_fold", "mean"), ace=("ace", "mean"), pinball=("pinball", "mean"), coverage=("coverage", "mean"),
        complexity=("complexity", "mean"), time_ms=("time_ms", "mean"), n=("n", "max"), d=("n_features", "max"),
        nql_missing=("nql", lambda s: s.isna().any()),
    ).reset_index()
    out = out.merge(values, on=keys, how="left")
    out["complete"] = (out["n_failed"] == 0) & ~out["nql_missing"].fillna(True).astype(bool)
    metric_cols = ["nql", "nql_fold", "ace", "pinball", "coverage", "complexity", "time_ms"]
    out.loc[~out["complete"], metric_cols] = np.nan
    out["transparent"] = out["transparent"].fillna(0).astype(bool)
    return out.drop(columns=["n_ok", "nql_missing"])


def _check_one_experiment(results: pd.DataFrame) -> None:
    """Raise when rows of one (dataset, method, quantile) come from different splits, settings or
    data, or one dataset's rows from different data: such rows must not be averaged together.
    (A store cannot hold them; frames joined from several stores can. Rows of stores written before
    the settings were recorded have none and are not checked.)"""
    parts = ["folds", "settings", "data"]
    if not set(parts) <= set(results.columns):
        return
    known = results.dropna(subset=parts).drop_duplicates(["dataset", "method", "quantile", *parts])
    mixed = known[known.duplicated(["dataset", "method", "quantile"], keep=False)]
    if mixed.empty:
        data = known.drop_duplicates(["dataset", "data"])
        mixed = data[data.duplicated("dataset", keep=False)]
    if not mixed.empty:
        first = mixed.iloc[0]
        mixed = mixed[mixed["dataset"] == first["dataset"]]
        raise ValueError(
            f"the results mix experiments: dataset {first['dataset']!r} has rows of different splits, settings or data "
            f"(folds {sorted(set(mixed['folds'].astype(int)))}, settings {sorted(set(mixed['settings']))}, data "
            f"{sorted(set(mixed['data']))}); report each experiment on its own (one store per experiment)")


def _mean_sd(values: pd.Series, decimals: int) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    mean = values.mean()
    sd = values.std(ddof=1) if len(values) > 1 else math.nan
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}" if np.isfinite(sd) else f"{mean:.{decimals}f} ± -"


def _methods_order(means: pd.DataFrame) -> list:
    return sorted(means["method"].unique())


def summary_table(means: pd.DataFrame, metrics=tuple(METRICS), bold=None) -> pd.DataFrame:
    """Table 2: rows methods; columns (metric, tau) with ``mean ± sd``; then Transparent, Target.

    ``bold`` is an optional set of ``(method, metric, quantile)`` cells to wrap in ``**``.
    """
    quantiles = sorted(means["quantile"].unique())
    methods = _methods_order(means)
    columns = pd.MultiIndex.from_tuples([(METRICS[m][0], _tau(q)) for m in metrics for q in quantiles])
    table = pd.DataFrame(index=pd.Index(methods, name="method"), columns=columns, dtype=object)
    for m in metrics:
        for q in quantiles:
            sub = means[means["quantile"] == q].set_index("method")
            for method in methods:
                text = _mean_sd(sub.loc[[method], m], METRICS[m][2]) if method in sub.index else ""
                if text and bold and (method, m, q) in bold:
                    text = f"**{text}**"
                table.loc[method, (METRICS[m][0], _tau(q))] = text
    info = means.groupby("method").agg(transparent=("transparent", "max"), target=("target", "first"))
    table[("Transparent", "")] = ["yes" if info.loc[m, "transparent"] else "no" for m in methods]
    table[("Target", "")] = [info.loc[m, "target"] for m in methods]
    return table


def summary_notes(means: pd.DataFrame) -> str:
    """How to read Table 2: the direction of every column, the datasets it averages over and what
    a blank cell means."""
    datasets = sorted(means["dataset"].unique())
    counts = means.dropna(subset=["nql"]).groupby(["method", "quantile"])["dataset"].nunique()
    fewer = [f"{m} at tau={q:g} over {n}" for (m, q), n in counts.items() if n < len(datasets)]
    return ("Lower is better in every metric column (NQL, ACE, parsimony = model complexity). "
            f"Mean ± sd over {len(datasets)} datasets: {', '.join(map(str, datasets))}"
            + (f" (fewer where a method has no complete result: {'; '.join(fewer)})" if fewer else "") + ". "
            "A blank cell: the method has no task at that quantile (it fits the mean or the median, "
            "so it runs at tau=0.5 only) or some of its tasks on a dataset did not succeed (see the list "
            "of failures); ± - : one dataset only.")


def runtime_table(means: pd.DataFrame) -> pd.DataFrame:
    """Table 3: mean ± sd of the per-dataset mean fit time (ms), per method and quantile."""
    quantiles = sorted(means["quantile"].unique())
    methods = _methods_order(means)
    table = pd.DataFrame(index=pd.Index(methods, name="method"), columns=[_tau(q) for q in quantiles], dtype=object)
    for q in quantiles:
        sub = means[means["quantile"] == q].set_index("method")
        for method in methods:
            table.loc[method, _tau(q)] = _mean_sd(sub.loc[[method], "time_ms"], 2) if method in sub.index else ""
    return table


def _tested_methods(means: pd.DataFrame, tested) -> list:
    if tested == "transparent":
        return sorted(means.loc[means["transparent"], "method"].unique())
    if tested == "all":
        return sorted(means["method"].unique())
    names = list(tested)
    unknown = sorted(set(names) - set(means["method"]))
    if unknown:
        raise ValueError(f"tested names methods not in the results: {unknown}")
    return sorted(names)


def _blocks(means, metric, quantile, methods) -> pd.DataFrame:
    """Long table (dataset, method, value) on the datasets where every method is complete."""
    sub = means[(means["quantile"] == quantile) & means["method"].isin(methods)]
    wide = sub.pivot(index="dataset", columns="method", values=metric)
    wide = wide.dropna(axis=1, how="all").dropna(axis=0, how="any")
    return wide.reset_index().melt(id_vars="dataset", var_name="method", value_name="value"), list(wide.columns)


def statistical_tests(means: pd.DataFrame, tested="transparent", metrics=tuple(METRICS), alpha=0.05):
    """Tables 6-8: Friedman per (metric, quantile), then pairwise Wilcoxon signed-rank tests.

    Returns ``(friedman, wilcoxon)`` DataFrames. Friedman's alpha is divided by the number of
    (metric, quantile) tests; Wilcoxon's by the number of pairs over all of them (the paper's 6 and
    18). A test that cannot run (fewer than 3 methods for Friedman, fewer than 2 complete
    datasets) is listed with NaN values. ``smallest_p`` is the smallest p-value the test can give
    with its number of datasets (:func:`smallest_p`): at or above ``alpha`` it cannot be significant.
    """
    methods = _tested_methods(means, tested)
    cases = [(m, q) for m in metrics for q in sorted(means["quantile"].unique())]
    blocks = {case: _blocks(means, case[0], case[1], methods) for case in cases}
    n_pairs = sum(len(list(itertools.combinations(cols, 2))) for _, cols in blocks.values())
    f_rows, w_rows = [], []
    for (metric, q), (long, cols) in blocks.items():
        name, abbr, _ = METRICS[metric]
        base = {"metric": name, "abbr": abbr, "quantile": q}
        n_blocks = long["dataset"].nunique()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if len(cols) >= 3 and n_blocks >= 2:
                res = stats.friedman(long, alpha=alpha, n_tests=len(cases)).iloc[0]
                f_rows.append({**base, "n_datasets": n_blocks, "n_methods": len(cols), "statistic": res["statistic"],
                               "p_value": res["p_value"], "alpha": res["alpha"], "significant": bool(res["significant"]),
                               "smallest_p": smallest_p("friedman", n_blocks, len(cols))})
            else:
                f_rows.append({**base, "n_datasets": n_blocks, "n_methods": len(cols), "statistic": np.nan,
                               "p_value": np.nan, "alpha": alpha / len(cases), "significant": False,
                               "smallest_p": np.nan})
            for a, b in itertools.combinations(cols, 2):
                row = {**base, "models": f"{a} vs {b}", "method_a": a, "method_b": b, "n_datasets": n_blocks}
                if n_blocks >= 2:
                    res = stats.wilcoxon_pairwise(long, alpha=alpha, n_comparisons=n_pairs, pairs=[(a, b)]).iloc[0]
                    row.update(mean_a=res["mean_a"], mean_b=res["mean_b"], statistic=res["statistic"],
                               p_value=res["p_value"], alpha=res["alpha"], significant=bool(res["significant"]),
                               smallest_p=smallest_p("wilcoxon", n_blocks))
                else:
                    row.update(mean_a=np.nan, mean_b=np.nan, statistic=np.nan, p_value=np.nan,
                               alpha=alpha / max(n_pairs, 1), significant=False, smallest_p=np.nan)
                w_rows.append(row)
    f_cols = ["metric", "abbr", "quantile", "n_datasets", "n_methods", "statistic", "p_value", "alpha", "significant",
              "smallest_p"]
    w_cols = ["metric", "abbr", "quantile", "models", "method_a", "method_b", "n_datasets", "mean_a", "mean_b",
              "statistic", "p_value", "alpha", "significant", "smallest_p"]
    return pd.DataFrame(f_rows, columns=f_cols), pd.DataFrame(w_rows, columns=w_cols)


def smallest_p(test: str, n_datasets: int, n_methods: int = 2) -> float:
    """The smallest p-value ``test`` can give on ``n_datasets`` (untied) datasets: Wilcoxon's
    two-sided ``2 / 2**n`` (scipy's exact test, to 50; its normal approximation beyond), Friedman's
    chi-square at its largest statistic ``n (k - 1)`` for ``k`` methods. NaN below two datasets."""
    from scipy.stats import chi2, norm

    n = int(n_datasets)
    if n < 2:
        return math.nan
    if test == "wilcoxon":
        if n <= 50:
            return min(1.0, 2.0 / 2.0**n)
        z = (n * (n + 1) / 4) / math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return float(2 * norm.sf(z))
    return float(chi2.sf(n * (n_methods - 1), n_methods - 1))


def protocol_differences(results: pd.DataFrame) -> str:
    """What of a run's protocol differs from the paper's (5 folds, the paper budget), in a sentence;
    "" when nothing does. The budget is recognised from the rows' settings fingerprints."""
    from .runner import method_settings
    from .suites import BUDGETS, resolve_method

    ran = results.dropna(subset=["folds", "settings"])
    notes = []
    folds = sorted(set(ran["folds"].astype(int)))
    if folds and folds != [5]:
        notes.append(f"{', '.join(map(str, folds))} folds (the paper: 5)")
    budgets = set()
    for method, settings in ran[["method", "settings"]].drop_duplicates().itertuples(index=False):
        try:
            spec = resolve_method(method)
        except ValueError:  # a method of another version or a custom one: its budget is unknown
            continue
        budgets.add(next((name for name, b in BUDGETS.items() if method_settings(spec, b) == settings), "custom"))
    others = sorted(budgets - {"paper"})
    if others:
        names = " and ".join("a custom" if b == "custom" else f"the {b!r}" for b in others)
        notes.append(f"{names} budget (the paper's: 'paper')")
    if not notes:
        return ""
    return ("This run's protocol differs from the paper's: " + "; ".join(notes)
            + ". Its figures are not expected to match the paper's.")


def significant_best(means: pd.DataFrame, wilcoxon: pd.DataFrame) -> set:
    """``(method, metric, quantile)`` cells whose method has the lowest mean among the tested ones
    and beats every other tested method significantly (Table 2's bold)."""
    cells = set()
    for (abbr, q), sub in wilcoxon.groupby(["abbr", "quantile"]):
        metric = next(m for m, v in METRICS.items() if v[1] == abbr)
        names = sorted(set(sub["method_a"]) | set(sub["method_b"]))
        avg = means[(means["quantile"] == q) & means["method"].isin(names)].groupby("method")[metric].mean()
        if avg.dropna().empty:
            continue
        best = avg.idxmin()
        mine = sub[(sub["method_a"] == best) | (sub["method_b"] == best)]
        if len(mine) == len(names) - 1 and len(mine) and mine["significant"].all():
            cells.add((best, metric, q))
    return cells


def per_dataset_table(means: pd.DataFrame) -> pd.DataFrame:
    """Table 11: rows (tau, dataset, n, d); columns (metric, method) of per-dataset means."""
    info = means.groupby("dataset").agg(n=("n", "max"), d=("d", "max"))
    methods = _methods_order(means)
    frames = []
    for metric, label in _PER_DATASET:
        wide = means.pivot_table(index=["quantile", "dataset"], columns="method", values=metric, dropna=False)
        wide = wide.reindex(columns=methods)
        wide.columns = pd.MultiIndex.from_product([[label], wide.columns])
        frames.append(wide)
    table = pd.concat(frames, axis=1).reset_index()
    table = table.rename(columns={"quantile": "tau"})
    table.insert(2, ("n", ""), table[("dataset", "")].map(info["n"]).astype("Int64"))
    table.insert(3, ("d", ""), table[("dataset", "")].map(info["d"]).astype("Int64"))
    return table


def failures_table(means: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """Failed tasks per (dataset, method, quantile) with the first line of one error."""
    failed = results[results["status"] == "failed"]
    if failed.empty:
        return pd.DataFrame(columns=["dataset", "method", "quantile", "n_failed", "error"])
    first = failed.groupby(["dataset", "method", "quantile"]).agg(
        n_failed=("status", "size"), error=("error", lambda s: str(s.iloc[0]).splitlines()[0] if len(s) else ""))
    return first.reset_index()


# ----------------------------------------------------------------------------- writers


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.2e}"
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    return str(value)


def _has_index(df: pd.DataFrame) -> bool:
    """Whether the index is part of the table (named, or a MultiIndex)."""
    return df.index.name is not None or isinstance(df.index, pd.MultiIndex)


def _flat(df: pd.DataFrame) -> tuple[list, list]:
    df = df.reset_index() if _has_index(df) else df
    headers = [" ".join(str(p) for p in c if str(p)) if isinstance(c, tuple) else str(c) for c in df.columns]
    rows = [[_cell(v) for v in row] for row in df.itertuples(index=False)]
    return headers, rows


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (MultiIndex columns joined with spaces)."""
    headers, rows = _flat(df)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


_LATEX_ESCAPES = {"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}",
                  "±": r"$\pm$", "~": r"\textasciitilde{}", "^": r"\^{}"}


def _latex_escape(text: str) -> str:
    text = "".join(_LATEX_ESCAPES.get(ch, ch) for ch in str(text))
    if text.startswith("**") and text.endswith("**") and len(text) > 4:
        text = r"\textbf{" + text[2:-2] + "}"
    return text


def to_latex(df: pd.DataFrame, caption=None) -> str:
    """A LaTeX ``tabular`` (booktabs); two-level columns become a ``\\multicolumn`` header."""
    frame = df.reset_index() if _has_index(df) else df
    cols = list(frame.columns)
    body = [[_latex_escape(_cell(v)) for v in row] for row in frame.itertuples(index=False)]
    lines = []
    if caption:
        lines += [r"\begin{table}", r"\centering", rf"\caption{{{_latex_escape(caption)}}}"]
    lines += [rf"\begin{{tabular}}{{{'l' * len(cols)}}}", r"\toprule"]
    if any(isinstance(c, tuple) for c in cols):
        top = [c[0] if isinstance(c, tuple) else c for c in cols]
        cells, i = [], 0
        while i < len(top):
            j = i
            while j + 1 < len(top) and top[j + 1] == top[i] and isinstance(cols[j + 1], tuple) and cols[j + 1][1]:
                j += 1
            span = j - i + 1
            label = _latex_escape(top[i])
            cells.append(label if span == 1 else rf"\multicolumn{{{span}}}{{c}}{{{label}}}")
            i = j + 1
        lines.append(" & ".join(cells) + r" \\")
        lines.append(" & ".join(_latex_escape(c[1]) if isinstance(c, tuple) else "" for c in cols) + r" \\")
    else:
        lines.append(" & ".join(_latex_escape(c) for c in cols) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the report


@dataclass
class BenchmarkReport:
    """Tables (DataFrames) and plot-ready data of a benchmark; :meth:`write` saves them all."""

    results: pd.DataFrame
    means: pd.DataFrame
    summary: pd.DataFrame
    runtime: pd.DataFrame
    friedman: pd.DataFrame
    wilcoxon: pd.DataFrame
    per_dataset: pd.DataFrame
    failures: pd.DataFrame
    tested: list = field(default_factory=list)
    comparison: object = None

    def _stats_view(self, table: pd.DataFrame, wilcoxon=False) -> pd.DataFrame:
        cols = ["metric", "abbr", "quantile", *(["models"] if wilcoxon else []), "statistic", "p_value", "significant"]
        view = table[cols].copy()
        view["p_value"] = [("<0.001" if p < 0.001 else f"{p:.4f}") if np.isfinite(p) else "" for p in view["p_value"]]
        view["significant"] = [verdict(row) for _, row in table.iterrows()]
        return view.rename(columns={"metric": "Metric", "abbr": "Abbr.", "quantile": "tau", "models": "Models",
                                    "statistic": "T-statistic" if wilcoxon else "Test statistic",
                                    "p_value": "p-value", "significant": "Significant"})

    def to_markdown(self) -> str:
        """The whole report as Markdown."""
        protocol = getattr(self.comparison, "protocol", "")
        parts = ["# Benchmark report", "", *([f"**{protocol}**", ""] if protocol else []),
                 f"{self.means['dataset'].nunique()} datasets, {self.means['method'].nunique()} methods, "
                 f"{len(self.results)} tasks ({int((self.results['status'] == 'failed').sum())} failed). "
                 f"Tests compare: {', '.join(self.tested) or 'none'}.", "",
                 "## Table 2: mean ± sd over datasets", "", summary_notes(self.means), "", to_markdown(self.summary), "",
                 "## Table 3: fit time (ms)", "", "Mean ± sd over datasets of the mean fit time, tuning included, "
                 "numba's compilation of kernels left out (a process compiles them on first use).", "",
                 to_markdown(self.runtime), "",
                 "## Table 6: Friedman tests (Bonferroni)", "", to_markdown(self._stats_view(self.friedman)), ""]
        for q in sorted(self.wilcoxon["quantile"].unique()):
            view = self._stats_view(self.wilcoxon[self.wilcoxon["quantile"] == q], wilcoxon=True)
            parts += [f"## Pairwise Wilcoxon signed-rank tests, tau={q:g} (Bonferroni)", "", to_markdown(view), ""]
        parts += ["## Table 11: per dataset", "", to_markdown(self.per_dataset), ""]
        if not self.failures.empty:
            parts += ["## Failed tasks", "", to_markdown(self.failures), ""]
        if self.comparison is not None:
            parts += self._comparison_markdown()
        return "\n".join(parts)

    def _comparison_markdown(self) -> list:
        from .paper import BAND

        cmp = self.comparison
        return ["# Beside the SQR paper", "", cmp.note, "",
                "## Reproduction of the paper's NQL and ACE per method", "", to_markdown(cmp.counts), "",
                f"## Rows more than {BAND:g} from the paper's", "",
                to_markdown(cmp.outside) if len(cmp.outside) else "none", "",
                "## Table 2 with the paper's lines", "", to_markdown(cmp.table2), "",
                "## Section 4's tests on our results, the paper's beside them", "", to_markdown(cmp.tests), "",
                "## Conclusions", "", to_markdown(cmp.conclusions), "",
                "## Table 11: ours, the paper's and the difference", "", to_markdown(cmp.table11), ""]

    def write(self, out, plots=True) -> list:
        """Write ``report.md`` and every table as CSV and LaTeX (and the PNG plots) into ``out``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "report.md"]
        (out / "report.md").write_text(self.to_markdown(), encoding="utf-8")
        tables = {"summary": self.summary, "runtime": self.runtime, "friedman": self._stats_view(self.friedman),
                  "wilcoxon": self._stats_view(self.wilcoxon, wilcoxon=True), "per_dataset": self.per_dataset}
        if self.comparison is not None:
            cmp = self.comparison
            tables.update(paper_counts=cmp.counts, paper_outside=cmp.outside, paper_table2=cmp.table2,
                          paper_table11=cmp.table11, paper_tests=cmp.tests, paper_conclusions=cmp.conclusions)
            cmp.rows.to_csv(out / "paper_rows.csv", index=False)
            written.append(out / "paper_rows.csv")
        for name, table in tables.items():
            flat = table.copy()
            if isinstance(flat.columns, pd.MultiIndex):
                flat.columns = [" ".join(str(p) for p in c if str(p)) for c in flat.columns]
            flat.to_csv(out / f"{name}.csv", index=_has_index(table))
            (out / f"{name}.tex").write_text(to_latex(table, caption=name.replace("_", " ")), encoding="utf-8")
            written += [out / f"{name}.csv", out / f"{name}.tex"]
        self.failures.to_csv(out / "failures.csv", index=False)
        written.append(out / "failures.csv")
        if plots:
            written += self.plot(out)
            if self.comparison is not None and not self.comparison.rows.empty:
                self.comparison.plot(out / "paper_nql.png")
                written.append(out / "paper_nql.png")
        return written

    def plot(self, out) -> list:
        """Save a critical-difference diagram per (metric, quantile) and a Pareto plot per quantile."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        from ..plotting import plot_accuracy_parsimony, plot_critical_difference

        out = Path(out)
        written = []
        for q in sorted(self.means["quantile"].unique()):
            for metric in METRICS:
                long, cols = _blocks(self.means, metric, q, sorted(self.means["method"].unique()))
                if len(cols) < 2 or long["dataset"].nunique() < 2:
                    continue
                ranks = stats.average_ranks(long)
                cd = stats.nemenyi_critical_difference(len(cols), long["dataset"].nunique())
                ax = plot_critical_difference(ranks, cd, title=f"{METRICS[metric][0]}, tau={q:g}")
                path = out / f"cd_{metric}_{q:g}.png"
                ax.figure.savefig(path, dpi=120, bbox_inches="tight")
                plt.close(ax.figure)
                written.append(path)
            sub = self.means[self.means["quantile"] == q].groupby("method")[["nql", "complexity"]].mean().dropna()
            if len(sub):
                ax = plot_accuracy_parsimony(sub, title=f"tau={q:g}")
                path = out / f"pareto_{q:g}.png"
                ax.figure.savefig(path, dpi=120, bbox_inches="tight")
                plt.close(ax.figure)
                written.append(path)
        return written


#: Published results a report can be compared with (``compare=``).
COMPARISONS = ("sqr-paper",)


def report(store, out=None, tested="transparent", alpha=0.05, plots=True, compare=None) -> BenchmarkReport:
    """Build the report of a results store (path, ResultStore or results DataFrame).

    Parameters
    ----------
    store : path, ResultStore or DataFrame
    out : path, optional
        Folder to write ``report.md``, CSV and LaTeX tables and PNG plots into.
    tested : {"transparent", "all"} or list of str, default="transparent"
        Methods compared by the statistical tests.
    alpha : float, default=0.05
        Family-wise level before the Bonferroni corrections.
    plots : bool, default=True
        Write the PNG plots too (only with ``out``).
    compare : {"sqr-paper"}, optional
        Put the SQR paper's published figures beside ours (:mod:`parsimony.experiments.paper`): Table 2
        with the paper's lines, Table 11 ours/paper/difference, reproduction counts, a scatter plot
        and Section 4's tests on ours beside the paper's (on SQR, QDT and one LQR: LQR-NC, else LQR-U,
        else LQR). A store of SRBench's tracks has its own report,
        :func:`~parsimony.experiments.srbench_report.srbench_report` (``bench report`` picks it).
    """
    alpha = check_quantile(alpha, "alpha")
    if compare is not None and compare not in COMPARISONS:
        raise ValueError(f"compare must be one of {COMPARISONS} or None, got {compare!r}")
    results = load_results(store)
    means = dataset_means(results)
    friedman, wilcoxon = statistical_tests(means, tested=tested, alpha=alpha)
    rep = BenchmarkReport(
        results=results, means=means,
        summary=summary_table(means, bold=significant_best(means, wilcoxon)),
        runtime=runtime_table(means), friedman=friedman, wilcoxon=wilcoxon, per_dataset=per_dataset_table(means),
        failures=failures_table(means, results), tested=_tested_methods(means, tested),
    )
    if compare == "sqr-paper":
        from .paper import compare_with_paper

        present = set(means["method"])
        # the paper tests SQR, QDT and one LQR: its model as run (LQR-NC) when it ran, else the closest
        lqr = next(([m] for m in ("LQR-NC", "LQR-U", "LQR") if m in present), [])
        paper_tested = sorted([m for m in ("SQR", "QDT") if m in present] + lqr)
        f_paper, w_paper = statistical_tests(means, tested=paper_tested, alpha=alpha) if paper_tested else (
            friedman.iloc[0:0], wilcoxon.iloc[0:0])
        rep.comparison = compare_with_paper(means, rep.summary, f_paper, w_paper, METRICS,
                                            protocol=protocol_differences(results) if results is not None else "")
    if out is not None:
        rep.write(out, plots=plots)
    return rep
