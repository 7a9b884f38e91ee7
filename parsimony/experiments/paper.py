"""The SQR paper's published figures and the comparison of a benchmark with them.

The figures ship as package data (``experiments/data/sqr_paper_*.csv``), numbers only, from
*Symbolic Quantile Regression for the Interpretable Prediction of Conditional Quantiles* (arXiv
2025): Table 11 (per dataset and quantile: parsimony, ACE, NQL and fit time of QDT, LGBM, LQR and
SQR; parsed from the paper), Tables 2 and 3 (means and standard deviations over its 114
datasets) and the significance tests of Section 4.4 / Appendix C (typed in).

Conventions of the comparison: the paper prints two decimals, so a row *reproduces within the
printed precision* when our value is within half a unit of the last printed digit (0.005) of the
paper's; the issue's looser criterion is ``|ours - paper| <= 0.01``. NQL divides by the whole
dataset's target range, as the paper's tables do. Our methods map to the paper's columns by
:data:`PAPER_METHODS` (``LQR-U``, the unpenalised model, and ``LQR``, the tuned one, both to its
LQR). Only the rows that ran are compared; the comparison says how many of the paper's rows that is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

#: Where the figures come from.
SOURCE = ("Symbolic Quantile Regression for the Interpretable Prediction of Conditional Quantiles (arXiv 2025), "
          "Tables 2, 3, 6-8 and 11")
#: Our method name -> the paper's column.
PAPER_METHODS = {"LQR": "LQR", "LQR-U": "LQR", "LQR-NC": "LQR", "QDT": "QDT", "LGBM": "LGBM", "SQR": "SQR", "SQR10K": "SQR10K"}
#: Half a unit of the paper's last printed decimal (two decimals).
PRINTED_PRECISION = 0.005
#: The issue's reproduction band.
BAND = 0.01
_METRICS = ("nql", "ace", "complexity", "time_ms")
_REPRODUCED = ("nql", "ace")  # the metrics whose reproduction is counted, row by row
_NAMES = {"nql": "NQL", "ace": "ACE", "complexity": "Parsimony", "time_ms": "Time (ms)"}


def _read(name: str) -> pd.DataFrame:
    text = resources.files("parsimony.experiments").joinpath("data", name).open(encoding="utf-8")
    with text:
        return pd.read_csv(text, comment="#")


def paper_table11() -> pd.DataFrame:
    """Table 11 in long form: ``quantile, dataset, n, d, method`` and ``nql, ace, complexity, time_ms``
    (NaN where the paper prints none: LGBM's parsimony, 537_houses' times)."""
    wide = _read("sqr_paper_table11.csv")
    frames = []
    for method in ("QDT", "LGBM", "LQR", "SQR"):
        part = wide[["quantile", "dataset", "n", "d"]].copy()
        part["method"] = method
        for metric in _METRICS:
            column = f"{metric}_{method}"
            part[metric] = wide[column].astype(float) if column in wide else np.nan
        frames.append(part)
    return pd.concat(frames, ignore_index=True)


def paper_datasets() -> pd.DataFrame:
    """The paper's datasets (PMLB names) with ``n``, ``d`` and the quantiles Table 11 reports them at."""
    t11 = _read("sqr_paper_table11.csv")
    return (t11.groupby("dataset", sort=False)
            .agg(n=("n", "first"), d=("d", "first"), quantiles=("quantile", lambda s: tuple(sorted(s))))
            .reset_index())


def paper_table2() -> pd.DataFrame:
    """Tables 2 and 3: ``method, metric, quantile, mean, sd, bold`` over the paper's 114 datasets."""
    return _read("sqr_paper_table2.csv")


def paper_tests() -> pd.DataFrame:
    """Section 4.4's tests (Tables 6-8): ``test, metric, quantile, models, statistic, p_value, p_below,
    significant, conclusion``."""
    return _read("sqr_paper_tests.csv")


# ----------------------------------------------------------------------------- the comparison


@dataclass
class PaperComparison:
    """A benchmark beside the SQR paper (see the module docstring for the conventions).

    Attributes
    ----------
    rows : DataFrame
        One row per (quantile, dataset, method) that ran and that the paper reports: ``ours_*``,
        ``paper_*`` and ``diff_*`` of NQL, ACE, parsimony and fit time, ``nql_within_print``,
        ``nql_within_band`` and the same of ACE.
    counts : DataFrame
        Per method and quantile (and ``all``): rows compared, and for NQL and ACE the rows within the
        printed precision and within 0.01 (count and share), mean, median and mean absolute difference.
    table2 : DataFrame
        Table 2 with, under each method, the paper's line on the same datasets (from Table 11) and
        its published line over 114 datasets.
    table11 : DataFrame
        Per (tau, dataset): ours, paper and difference of NQL, ACE and parsimony for every method.
    tests : DataFrame
        Our Friedman and Wilcoxon tests beside the paper's.
    conclusions : DataFrame
        Per (metric, tau): the best tested method by our tests and the paper's conclusion.
    note : str
        What was compared (the subset, if any); it starts with :attr:`protocol` when there is one.
    outside : DataFrame
        The rows whose NQL or ACE is more than 0.01 from the paper's, by method, metric, tau and dataset.
    protocol : str
        Where the run's folds or budget differ from the paper's ("" when they do not).
    """

    rows: pd.DataFrame
    counts: pd.DataFrame
    table2: pd.DataFrame
    table11: pd.DataFrame
    tests: pd.DataFrame
    conclusions: pd.DataFrame
    note: str
    outside: pd.DataFrame = None
    protocol: str = ""

    def plot(self, path=None, metric="nql"):
        """Scatter of ours against the paper's values, one panel per method (rows) and quantile
        (columns), with the identity line and the printed-precision band; saved to ``path`` when given."""
        return plot_comparison(self.rows, metric=metric, path=path)


def _paper_method(name: str):
    return PAPER_METHODS.get(name)


def compare_rows(means: pd.DataFrame) -> pd.DataFrame:
    """Our per-dataset means (:func:`~parsimony.experiments.reporting.dataset_means`) joined with
    Table 11 on (quantile, dataset, paper method); complete rows only."""
    ours = means[means["complete"] & means["method"].map(lambda m: _paper_method(m) is not None)].copy()
    ours["paper_method"] = ours["method"].map(_paper_method)
    ours["quantile"] = ours["quantile"].round(10)
    paper = paper_table11().rename(columns={"method": "paper_method", "n": "paper_n", "d": "paper_d"})
    paper["quantile"] = paper["quantile"].round(10)
    joined = ours.merge(paper, on=["quantile", "dataset", "paper_method"], how="inner", suffixes=("", "_paper"))
    out = joined[["quantile", "dataset", "method", "paper_method", "n", "d"]].copy()
    for metric in ("nql", "ace", "complexity", "time_ms"):
        out[f"ours_{metric}"] = joined[metric].to_numpy()
        out[f"paper_{metric}"] = joined[f"{metric}_paper"].to_numpy()
        out[f"diff_{metric}"] = out[f"ours_{metric}"] - out[f"paper_{metric}"]
    for metric in _REPRODUCED:
        gap = out[f"diff_{metric}"].abs()
        out[f"{metric}_within_print"] = gap <= PRINTED_PRECISION + 1e-12
        out[f"{metric}_within_band"] = gap <= BAND + 1e-12
    return out.sort_values(["method", "quantile", "dataset"]).reset_index(drop=True)


def reproduction_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method and quantile, then per method over both quantiles (``quantile="all"``): rows
    compared, and for NQL and ACE alike the rows within the printed precision and within 0.01 (count
    and share) and the mean, median and mean absolute differences."""
    records = []
    for method, sub in rows.groupby("method", sort=True):
        parts = [(f"{q:g}", g) for q, g in sub.groupby("quantile")] + [("all", sub)]
        for label, g in parts:
            record = {"method": method, "paper": _paper_method(method), "quantile": label, "rows": len(g)}
            for metric in _REPRODUCED:
                compared = g.dropna(subset=[f"diff_{metric}"])
                diff, n = compared[f"diff_{metric}"], len(compared)
                inside, band = int(compared[f"{metric}_within_print"].sum()), int(compared[f"{metric}_within_band"].sum())
                record.update({
                    f"{metric}_within_print": inside, f"{metric}_within_print_%": 100.0 * inside / n if n else math.nan,
                    f"{metric}_within_0.01": band, f"{metric}_within_0.01_%": 100.0 * band / n if n else math.nan,
                    f"{metric}_mean_diff": diff.mean() if n else math.nan,
                    f"{metric}_median_diff": diff.median() if n else math.nan,
                    f"{metric}_mean_abs_diff": diff.abs().mean() if n else math.nan,
                })
            records.append(record)
    columns = ["method", "paper", "quantile", "rows"] + [
        f"{metric}_{part}" for metric in _REPRODUCED
        for part in ("within_print", "within_print_%", "within_0.01", "within_0.01_%", "mean_diff", "median_diff",
                     "mean_abs_diff")]
    return pd.DataFrame(records, columns=columns)


def outside_band(rows: pd.DataFrame) -> pd.DataFrame:
    """The compared rows whose NQL or ACE differs from the paper's by more than 0.01, by name."""
    records = []
    for metric in _REPRODUCED:
        far = rows[~rows[f"{metric}_within_band"] & rows[f"diff_{metric}"].notna()]
        for r in far.itertuples(index=False):
            records.append({"method": r.method, "metric": _NAMES[metric], "tau": r.quantile, "dataset": r.dataset,
                            "ours": getattr(r, f"ours_{metric}"), "paper": getattr(r, f"paper_{metric}"),
                            "diff": getattr(r, f"diff_{metric}")})
    return pd.DataFrame(records, columns=["method", "metric", "tau", "dataset", "ours", "paper", "diff"])


def _mean_sd(values, decimals) -> str:
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        return ""
    sd = values.std(ddof=1) if len(values) > 1 else math.nan
    return f"{values.mean():.{decimals}f} ± {sd:.{decimals}f}" if np.isfinite(sd) else f"{values.mean():.{decimals}f} ± -"


def side_by_side_table2(summary: pd.DataFrame, rows: pd.DataFrame, metrics: dict) -> pd.DataFrame:
    """Table 2 with two paper lines under each method mapped to the paper: its Table 11 means on
    the datasets that ran (``paper, same N datasets``) and its published Table 2 (114 datasets).

    ``metrics`` is the report's ``column -> (label, abbreviation, decimals)`` of ``summary``.
    """
    published = paper_table2()
    lines = []
    for method in summary.index:
        ours = summary.loc[method]
        lines.append(((method, "ours"), ours))
        paper = _paper_method(method)
        if paper is None:
            continue
        mine = rows[rows["method"] == method]
        same, full = pd.Series(index=summary.columns, dtype=object), pd.Series(index=summary.columns, dtype=object)
        counts = {}
        for column in summary.columns:
            label, tau = column
            metric = next((m for m, spec in metrics.items() if spec[0] == label), None)
            if metric is None or not tau:
                same[column] = full[column] = ours[column] if not tau else ""
                continue
            q = float(tau.split("=")[1])
            sub = mine[np.isclose(mine["quantile"], q)]
            same[column] = _mean_sd(sub[f"paper_{metric}"], metrics[metric][2])
            counts[column] = int(sub[f"paper_{metric}"].notna().sum())
            pub = published[(published["method"] == paper) & (published["metric"] == metric)
                             & np.isclose(published["quantile"], q)]
            if len(pub):
                bold = "**" if pub["bold"].iloc[0] else ""
                full[column] = f"{bold}{pub['mean'].iloc[0]:g} ± {pub['sd'].iloc[0]:g}{bold}"
            else:
                full[column] = ""
        used = sorted({n for n in counts.values() if n})
        if len(used) <= 1:  # every mean is over the same number of datasets
            label = f"paper, same {used[0] if used else 0} datasets (Table 11)"
        else:  # say over how many each mean is (a dataset the paper reports at one quantile only, say)
            label = "paper, same datasets (Table 11; n per cell)"
            for column, n in counts.items():
                if n:
                    same[column] = f"{same[column]} (n={n})"
        lines.append(((method, label), same))
        lines.append(((method, "paper, 114 datasets (Table 2)"), full))
    table = pd.DataFrame([line for _, line in lines], columns=summary.columns)
    table.index = pd.MultiIndex.from_tuples([key for key, _ in lines], names=["method", "source"])
    return table


def side_by_side_table11(rows: pd.DataFrame, metrics=("nql", "ace", "complexity")) -> pd.DataFrame:
    """Per (tau, dataset): ``("METRIC METHOD", "ours"|"paper"|"diff")`` columns."""
    if rows.empty:
        return pd.DataFrame()
    frames = []
    for metric in metrics:
        for part in ("ours", "paper", "diff"):
            wide = rows.pivot_table(index=["quantile", "dataset"], columns="method", values=f"{part}_{metric}",
                                    dropna=False)
            wide.columns = pd.MultiIndex.from_tuples([(metric, m, part) for m in wide.columns])
            frames.append(wide)
    table = pd.concat(frames, axis=1)
    order = sorted(table.columns, key=lambda c: (metrics.index(c[0]), c[1], ("ours", "paper", "diff").index(c[2])))
    table = table[order]
    table.columns = pd.MultiIndex.from_tuples([(f"{_NAMES[metric]} {method}", part) for metric, method, part in order])
    return table.reset_index().rename(columns={"quantile": "tau"})


def _pair(models: str, mapping=None) -> frozenset:
    names = [m.strip() for m in models.split(" vs ")]
    return frozenset(_paper_method(n) or n for n in names) if mapping else frozenset(names)


def tests_beside_paper(friedman: pd.DataFrame, wilcoxon: pd.DataFrame) -> pd.DataFrame:
    """Our Friedman and pairwise Wilcoxon tests (on the methods mapped to the paper's transparent
    SQR, QDT and LQR) beside the paper's statistic, p-value and verdict."""
    paper = paper_tests()
    records = []
    metric_key = {"nql": "nql", "ace": "ace", "pars": "complexity"}
    for _, row in friedman.iterrows():
        metric = metric_key[row["abbr"]]
        ref = paper[(paper["test"] == "friedman") & (paper["metric"] == metric) & np.isclose(paper["quantile"], row["quantile"])]
        records.append(_test_record("Friedman", metric, row, "all tested", ref))
    for _, row in wilcoxon.iterrows():
        metric = metric_key[row["abbr"]]
        pair = _pair(row["models"], mapping=True)
        ref = paper[(paper["test"] == "wilcoxon") & (paper["metric"] == metric) & np.isclose(paper["quantile"], row["quantile"])]
        ref = ref[[_pair(m) == pair for m in ref["models"]]]
        records.append(_test_record("Wilcoxon", metric, row, row["models"], ref))
    return pd.DataFrame(records, columns=["test", "metric", "tau", "models", "n_datasets", "ours_statistic", "ours_p",
                                          "ours_significant", "paper_statistic", "paper_p", "paper_significant", "agree"])


def _test_record(test, metric, row, models, ref) -> dict:
    from ..stats import verdict

    paper_sig = bool(ref["significant"].iloc[0]) if len(ref) else None
    p = row["p_value"]
    ours = verdict(row)
    decided = ours in ("Yes", "No")  # a test not run, or unable to be significant, gives no verdict
    record = {"test": test, "metric": _NAMES[metric], "tau": row["quantile"], "models": models,
              "n_datasets": row["n_datasets"], "ours_statistic": row["statistic"],
              "ours_p": ("<0.001" if p < 0.001 else f"{p:.4f}") if np.isfinite(p) else "",
              "ours_significant": ours}
    if len(ref):
        ref = ref.iloc[0]
        record.update(paper_statistic=ref["statistic"],
                      paper_p="<0.001" if ref["p_below"] else f"{ref['p_value']:.4f}",
                      paper_significant="Yes" if paper_sig else "No",
                      agree=("yes" if paper_sig == bool(row["significant"]) else "no") if decided else "")
    else:
        record.update(paper_statistic=np.nan, paper_p="", paper_significant="", agree="")
    return record


def conclusions_beside_paper(means: pd.DataFrame, wilcoxon: pd.DataFrame) -> pd.DataFrame:
    """Per (metric, tau) of the tests: the tested method with the lowest mean, the methods it beats
    significantly, and the paper's conclusion."""
    paper = paper_tests()
    paper = paper[paper["test"] == "friedman"]
    metric_key = {"nql": "nql", "ace": "ace", "pars": "complexity"}
    records = []
    for (abbr, q), sub in wilcoxon.groupby(["abbr", "quantile"], sort=False):
        metric = metric_key[abbr]
        names = sorted(set(sub["method_a"]) | set(sub["method_b"]))
        avg = means[np.isclose(means["quantile"], q) & means["method"].isin(names) & means["complete"]]
        blocks = avg.pivot(index="dataset", columns="method", values=metric).dropna()
        if blocks.empty:
            continue
        best = blocks.mean().idxmin()
        mine = sub[(sub["method_a"] == best) | (sub["method_b"] == best)]
        beaten = sorted((r["method_b"] if r["method_a"] == best else r["method_a"]) for _, r in mine.iterrows()
                        if r["significant"])
        unable = len(mine) and (mine["smallest_p"] >= mine["alpha"]).all()
        ref = paper[(paper["metric"] == metric) & np.isclose(paper["quantile"], q)]
        records.append({"metric": _NAMES[metric], "tau": q, "n_datasets": len(blocks), "ours_best": best,
                        "ours_significantly_better_than": ", ".join(beaten) or (
                            f"cannot tell: {len(blocks)} datasets are too few for a significant Wilcoxon test "
                            f"(smallest possible p {mine['smallest_p'].min():.2g} >= alpha {mine['alpha'].iloc[0]:.2g})"
                            if unable else "none"),
                        "paper": ref["conclusion"].iloc[0] if len(ref) else ""})
    columns = ["metric", "tau", "n_datasets", "ours_best", "ours_significantly_better_than", "paper"]
    if not records:  # fewer than two of the paper's transparent methods ran: the paper's conclusions alone
        records = [{"metric": _NAMES[r.metric], "tau": r.quantile, "n_datasets": 0, "ours_best": "",
                    "ours_significantly_better_than": "not tested (fewer than two of SQR, QDT, LQR ran)",
                    "paper": r.conclusion} for r in paper.itertuples()]
    return pd.DataFrame(records, columns=columns)


def compare_with_paper(means, summary, friedman, wilcoxon, metrics, protocol: str = "") -> PaperComparison:
    """Compare a benchmark's per-dataset means, Table 2 (whose ``metrics`` are the report's
    ``column -> (label, abbreviation, decimals)``) and tests with the paper's; ``protocol`` (a sentence
    from :func:`parsimony.experiments.reporting.protocol_differences`) comes first in the note."""
    rows = compare_rows(means)
    all_rows = paper_table11()
    n_paper = len(all_rows[["quantile", "dataset"]].drop_duplicates())
    ran = rows[["quantile", "dataset"]].drop_duplicates()
    datasets = sorted(rows["dataset"].unique())
    unmapped = sorted(set(means["method"]) - set(PAPER_METHODS))
    note = (f"Compared with {SOURCE}: {len(ran)} of the paper's {n_paper} (dataset, quantile) rows on "
            f"{len(datasets)} of its {all_rows['dataset'].nunique()} datasets, the rows that ran here"
            + (" (a subset: the paper's means over all its datasets are not comparable to ours; the 'same datasets' "
               "line is)" if len(ran) < n_paper else "")
            + f". A row reproduces within the printed precision when |ours - paper| <= {PRINTED_PRECISION} (the "
              f"paper prints two decimals), within the band when <= {BAND}. Methods: "
            + ", ".join(f"{m} -> paper {PAPER_METHODS[m]}" for m in sorted(set(rows["method"])))
            + (f"; not in the paper: {', '.join(unmapped)}" if unmapped else "") + ".")
    return PaperComparison(rows=rows, counts=reproduction_counts(rows), table2=side_by_side_table2(summary, rows, metrics),
                           table11=side_by_side_table11(rows), tests=tests_beside_paper(friedman, wilcoxon),
                           conclusions=conclusions_beside_paper(means, wilcoxon),
                           note=f"**{protocol}** {note}" if protocol else note, outside=outside_band(rows),
                           protocol=protocol)


def plot_comparison(rows: pd.DataFrame, metric="nql", path=None):
    """Ours against the paper's per-dataset ``metric``: one panel per method (rows) and quantile
    (columns), the identity line, the printed-precision band and per-panel counts. Returns the figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if rows.empty:
        raise ValueError("no rows to plot: no method of the results is in the paper's Table 11")
    methods = sorted(rows["method"].unique())
    quantiles = sorted(rows["quantile"].unique())
    fig, axes = plt.subplots(len(methods), len(quantiles), figsize=(3.6 * len(quantiles), 3.3 * len(methods)),
                             squeeze=False, constrained_layout=True)
    ours, paper = f"ours_{metric}", f"paper_{metric}"
    for i, method in enumerate(methods):
        for j, q in enumerate(quantiles):
            ax = axes[i, j]
            sub = rows[(rows["method"] == method) & np.isclose(rows["quantile"], q)].dropna(subset=[ours, paper])
            top = max(float(np.nanmax(sub[[ours, paper]].to_numpy())) if len(sub) else 0.0, 0.02) * 1.08
            line = np.array([0.0, top])
            ax.fill_between(line, line - PRINTED_PRECISION, line + PRINTED_PRECISION, color="0.88", lw=0,
                            label=f"±{PRINTED_PRECISION:g} (printed precision)")
            ax.plot(line, line, color="0.45", lw=0.8, ls="--", label="ours = paper")
            inside = (sub[ours] - sub[paper]).abs() <= PRINTED_PRECISION + 1e-12
            ax.scatter(sub.loc[inside, paper], sub.loc[inside, ours], s=18, color="#1f77b4", alpha=0.85,
                       edgecolor="white", linewidth=0.4, label="within")
            ax.scatter(sub.loc[~inside, paper], sub.loc[~inside, ours], s=18, color="#d62728", alpha=0.85,
                       edgecolor="white", linewidth=0.4, label="outside")
            ax.set_xlim(0, top)
            ax.set_ylim(0, top)
            ax.set_aspect("equal")
            ax.grid(True, color="0.93", lw=0.6)
            ax.set_axisbelow(True)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
            ax.set_title(f"{method} (paper {_paper_method(method)}), τ = {q:g}", fontsize=10)
            if len(sub):
                diff = (sub[ours] - sub[paper]).mean()
                ax.text(0.04, 0.96, f"{int(inside.sum())}/{len(sub)} within ±{PRINTED_PRECISION:g}\nmean Δ = {diff:+.4f}",
                        transform=ax.transAxes, va="top", fontsize=8,
                        bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="0.8"))
            if i == len(methods) - 1:
                ax.set_xlabel(f"paper {_NAMES[metric]} (Table 11)")
            if j == 0:
                ax.set_ylabel(f"our {_NAMES[metric]}")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, frameon=False, fontsize=8)
    fig.suptitle(f"{_NAMES[metric]} per dataset: this benchmark against the SQR paper", fontsize=11)
    if path is not None:
        fig.savefig(path, dpi=150)
        plt.close(fig)
    return fig
