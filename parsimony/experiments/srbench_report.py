"""The report of SRBench's tracks beside SRBench's published figures (``--compare srbench``).

Ground truth: per method and noise level, the symbolic solution rate (% with solved / run), the
accuracy solution rate (test R^2 > 0.999), sympy time-outs and failures; per problem whether it was
solved (solved seeds / seeds); SRBench's published rates beside them, with what each covers. A run
on a subset of the problems or seeds says so beside every published all-problem figure.

Black box: per method, the median over datasets of the per-dataset medians (over seeds) of test
R^2, model size and training time, beside SRBench's medians over its 122 datasets, and an
accuracy-size figure in SRBench's style (size on a log axis, R^2, first front joined).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .srbench import (ACCURACY_R2, GROUPS, SEEDS, TRAIN_ROWS, blackbox_datasets, groundtruth_problems,
                      published_medians, published_rates, split_key)


def _pct(k, n) -> str:
    return f"{100.0 * k / n:.1f}% ({k}/{n})" if n else ""


def _groups_present(names) -> list:
    return [g for g in GROUPS if any(str(n).startswith(g + "_") for n in names)]


def coverage_note(rows: pd.DataFrame, track: str) -> str:
    """Which problems (or datasets), seeds and rows a run covers, against SRBench's full benchmark."""
    names = sorted({split_key(d)[0] for d in rows["dataset"]})
    seeds = sorted({int(s) for s in rows["seed"]})
    train = rows["n_train"].dropna()
    rows_text = f"{int(train.median())} training rows (median)" if len(train) else "no finished task"
    unit = "problem" if track == "groundtruth" else "dataset"
    seed_text = (f"seeds {seeds}" + ("" if len(seeds) >= len(SEEDS) else
                                     f" ({len(seeds)} of SRBench's 10 per {unit})"))
    if track == "groundtruth":
        table = groundtruth_problems()
        parts, subset = [], len(seeds) < len(SEEDS)
        for group in GROUPS:
            everyone = set(table.loc[table["group"] == group, "name"])
            mine = [n for n in names if n in everyone]
            if mine:
                subset |= len(mine) < len(everyone)
                parts.append(f"{len(mine)} of the {len(everyone)} {group.capitalize()} problems"
                             + ("" if len(mine) == len(everyone) else f" ({', '.join(mine)})"))
        others = [n for n in names if n not in set(table["name"])]
        if others:
            subset = True
            parts.append(f"{len(others)} problems not in SRBench ({', '.join(others)})")
        return (f"This run covers {'; '.join(parts)}; {seed_text}; {rows_text} (SRBench: up to {TRAIN_ROWS:,}). "
                "SRBench's published rates are over all its Feynman (116) or Strogatz (14) problems, 10 seeds, "
                "hours of search a run"
                + (": this run is a subset, so its rates and the published ones are not measured on the same "
                   "problems and seeds." if subset else "."))
    everyone = set(blackbox_datasets()["name"])
    mine = [n for n in names if n in everyone]
    return (f"This run covers {len(mine)} of SRBench's 122 black-box datasets"
            + (f" and {len(names) - len(mine)} others" if len(names) > len(mine) else "")
            + f"; {seed_text}; {rows_text}. SRBench's medians are over all 122 datasets and 10 seeds"
            + (": this run is a subset, so the medians are not over the same datasets." if len(mine) < 122 else "."))


# ------------------------------------------------------------------------------------ ground truth


def solution_rates(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method, problem group and noise level: tasks run, failed, symbolic solutions, accuracy
    solutions, time-outs."""
    df = rows.copy()
    df["problem"], df["noise"] = zip(*df["dataset"].map(split_key))
    df["group"] = [next((g for g in GROUPS if p.startswith(g + "_")), "other") for p in df["problem"]]
    records = []
    for (method, group, noise), sub in df.groupby(["method", "group", "noise"], sort=True):
        ok = sub[sub["status"] == "ok"]
        run = len(sub)
        solved = int((ok["solution"] == "yes").sum())
        accurate = int((ok["r2"] > ACCURACY_R2).sum())
        records.append({"method": method, "group": group, "noise": noise, "problems": sub["problem"].nunique(),
                        "seeds": sub["seed"].nunique(), "runs": run, "failed": run - len(ok),
                        "sympy timeouts": int((ok["solution"] == "timeout").sum()),
                        "symbolic solution": _pct(solved, run), "solved": solved,
                        "accuracy solution (R2 > 0.999)": _pct(accurate, run),
                        "median fit s": float(ok["fit_time"].median()) if len(ok) else np.nan,
                        "median fit CPU s": float(ok["fit_cpu"].median()) if len(ok) and "fit_cpu" in ok else np.nan})
    return pd.DataFrame(records)


def rates_beside_published(rates: pd.DataFrame, groups) -> pd.DataFrame:
    """Our symbolic solution rate per method (rows) and noise level (columns) with SRBench's methods
    below, for the groups the run covers (published figures over all of a group's problems)."""
    levels = sorted(rates["noise"].unique())
    lines = []
    for (method, group), sub in rates.groupby(["method", "group"], sort=True):
        line = {"method": f"{method} (this run)", "source": f"this run, {sub['problems'].max()} {group.capitalize()} problems"}
        for level in levels:
            cell = sub[sub["noise"] == level]
            line[f"noise {level:g}"] = cell["symbolic solution"].iloc[0] if len(cell) else ""
        lines.append(line)
    published = published_rates()
    for group in groups:
        pub = published[published["group"] == group]
        for method, sub in pub.groupby("method", sort=False):
            line = {"method": method, "source": f"SRBench, all {int(sub['problems'].iloc[0])} {group.capitalize()} problems"}
            for level in levels:
                cell = sub[np.isclose(sub["noise"], level)]
                line[f"noise {level:g}"] = ((f"{cell['rate'].iloc[0]:.2f}%" + (" (read off the figure)"
                                                                                if cell["read_off"].iloc[0] else ""))
                                            if len(cell) else "not published")
            lines.append(line)
    return pd.DataFrame(lines)


def per_problem(rows: pd.DataFrame) -> pd.DataFrame:
    """Per problem: for each (method, noise) the solved seeds / seeds (``timeout`` noted)."""
    df = rows.copy()
    df["problem"], df["noise"] = zip(*df["dataset"].map(split_key))
    df["cell"] = [f"{m} @ {n:g}" for m, n in zip(df["method"], df["noise"])]

    def summary(sub):
        solved = int((sub["solution"] == "yes").sum())
        timeouts = int((sub["solution"] == "timeout").sum())
        failed = int((sub["status"] != "ok").sum())
        text = ("yes" if solved else "no") if len(sub) == 1 else f"{solved}/{len(sub)}"
        extra = ([f"{timeouts} sympy timeout"] if timeouts else []) + ([f"{failed} failed"] if failed else [])
        return text + (f" ({', '.join(extra)})" if extra else "")

    table = df.groupby(["problem", "cell"]).apply(summary, include_groups=False).unstack("cell")
    return table.reset_index()


# ------------------------------------------------------------------------------------ black box


def blackbox_medians(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method: datasets, median over datasets of the per-dataset medians of test R^2, size,
    training time and its CPU time (s); failed tasks counted."""
    ok = rows[rows["status"] == "ok"]
    ok = ok.assign(cpu=ok["fit_cpu"] if "fit_cpu" in ok else np.nan)
    per = ok.groupby(["method", "dataset"]).agg(r2=("r2", "median"), size=("model_size", "median"),
                                                time_s=("fit_time", "median"), cpu_s=("cpu", "median")).reset_index()
    out = per.groupby("method").agg(datasets=("dataset", "nunique"), r2=("r2", "median"), size=("size", "median"),
                                    time_s=("time_s", "median"), cpu_s=("cpu_s", "median")).reset_index()
    failed = rows[rows["status"] != "ok"].groupby("method").size()
    out["failed tasks"] = out["method"].map(failed).fillna(0).astype(int)
    return out


def medians_beside_published(ours: pd.DataFrame) -> pd.DataFrame:
    """Our medians, then SRBench's (122 datasets), sorted by R^2 within each source."""
    a = ours.assign(source="this run").rename(columns={"time_s": "time (s)", "r2": "median R2", "size": "median size",
                                                       "cpu_s": "CPU (s)"})
    pub = published_medians()
    b = pub.assign(source="SRBench (122 datasets)", datasets=122).rename(
        columns={"time_s": "time (s)", "r2": "median R2", "size": "median size"})
    b["method"] = [m + ("" if s else " (not symbolic)") for m, s in zip(b["method"], b["symbolic"])]
    cols = ["source", "method", "datasets", "median R2", "median size", "time (s)", "CPU (s)"]
    b["CPU (s)"] = np.nan
    return pd.concat([a.sort_values("median R2", ascending=False)[cols],
                      b.sort_values("median R2", ascending=False)[cols]], ignore_index=True)


def _front(points: pd.DataFrame) -> pd.DataFrame:
    """The non-dominated points (smaller size, larger R^2), by size."""
    pts = points.sort_values(["size", "r2"], ascending=[True, False])
    keep, best = [], -np.inf
    for idx, r in pts.iterrows():
        if r["r2"] > best:
            keep.append(idx)
            best = r["r2"]
    return pts.loc[keep]


def plot_accuracy_size(ours: pd.DataFrame, path=None, title=None):
    """SRBench's accuracy-size plot: median model size (log axis) against median test R^2, one point
    per method, ours filled and SRBench's hollow, each set's first front joined."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    pub = published_medians()
    fig, ax = plt.subplots(figsize=(7.5, 5.0), layout="constrained")
    for frame, style, label in ((pub, dict(facecolors="none", edgecolors="0.45"), "SRBench (122 datasets)"),
                                (ours, dict(color="#d62728"), "this run")):
        points = frame[["method", "r2", "size"]].dropna()
        points = points[points["size"] > 0]
        if points.empty:
            continue
        ax.scatter(points["size"], points["r2"], s=40, zorder=3, label=label, **style)
        for _, r in points.iterrows():
            ax.annotate(r["method"], (r["size"], r["r2"]), fontsize=7, xytext=(4, 3), textcoords="offset points",
                        color="0.3" if frame is pub else "#d62728")
        front = _front(points)
        ax.step(front["size"], front["r2"], where="post", color="0.6" if frame is pub else "#d62728", lw=0.9, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("median model size (sympy nodes of the simplified model)")
    ax.set_ylabel("median test R²")
    ax.grid(True, color="0.92", lw=0.6)
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    ax.set_title(title or "Accuracy against size, black-box track (first fronts dashed)", fontsize=10)
    if path is not None:
        fig.savefig(path, dpi=150)
        plt.close(fig)
    return fig


# ------------------------------------------------------------------------------------ the report


@dataclass
class SRBenchReport:
    """Tables of a store of SRBench's tracks beside the published figures; :meth:`write` saves them."""

    results: pd.DataFrame
    groundtruth: dict = field(default_factory=dict)
    blackbox: dict = field(default_factory=dict)
    failures: pd.DataFrame = None

    def to_markdown(self) -> str:
        from .reporting import to_markdown

        parts = ["# SRBench report", ""]
        if self.groundtruth:
            g = self.groundtruth
            parts += ["## Ground-truth track: symbolic solution rates", "", g["note"], "",
                      to_markdown(g["beside"]), "",
                      "## Per method and noise level", "", to_markdown(g["rates"].drop(columns="solved")), "",
                      "## Per problem (solved seeds / seeds)", "", to_markdown(g["per_problem"]), ""]
        if self.blackbox:
            b = self.blackbox
            parts += ["## Black-box track: medians over datasets", "", b["note"], "", to_markdown(b["beside"]), ""]
        if self.failures is not None and not self.failures.empty:
            parts += ["## Failed tasks", "", to_markdown(self.failures), ""]
        return "\n".join(parts)

    def write(self, out, plots=True) -> list:
        """Write ``report.md`` and the tables as CSV (and ``srbench_accuracy_size.png``) into ``out``."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(self.to_markdown(), encoding="utf-8")
        written = [out / "report.md"]
        tables = {}
        if self.groundtruth:
            tables.update(srbench_rates=self.groundtruth["rates"], srbench_beside=self.groundtruth["beside"],
                          srbench_per_problem=self.groundtruth["per_problem"])
        if self.blackbox:
            tables.update(srbench_blackbox=self.blackbox["beside"])
        for name, table in tables.items():
            table.to_csv(out / f"{name}.csv", index=False)
            written.append(out / f"{name}.csv")
        if plots and self.blackbox:
            plot_accuracy_size(self.blackbox["medians"], out / "srbench_accuracy_size.png")
            written.append(out / "srbench_accuracy_size.png")
        return written


def is_srbench_store(store) -> bool:
    """Whether a store (path, ResultStore or frame) holds rows of SRBench's suites (R^2 or solutions,
    no NQL); False when it cannot be read (the report then says why)."""
    from .store import load_results

    try:
        results = load_results(store)
    except (OSError, ValueError):
        return False
    return bool(len(results)) and results["nql"].isna().all() and (results["r2"].notna().any()
                                                                   or results["solution"].notna().any())


def srbench_report(store, out=None, plots=True) -> SRBenchReport:
    """The report of a store written by ``--suite srbench-groundtruth`` or ``srbench-blackbox``."""
    from .reporting import failures_table
    from .store import load_results

    results = load_results(store)
    if results.empty:
        raise ValueError("the results store has no rows")
    if results["r2"].isna().all() and results["solution"].isna().all() and (results["status"] == "ok").any():
        raise ValueError("this store was not written by an SRBench suite (no R^2 and no solution in its rows): "
                         "run parsimony bench run --suite srbench-groundtruth or srbench-blackbox")
    gt_mask = results["dataset"].map(lambda d: split_key(d)[1] is not None)
    rep = SRBenchReport(results=results, failures=failures_table(None, results))
    gt, bb = results[gt_mask], results[~gt_mask]
    if len(gt):
        rates = solution_rates(gt)
        names = {split_key(d)[0] for d in gt["dataset"]}
        rep.groundtruth = {"rates": rates, "beside": rates_beside_published(rates, _groups_present(names)),
                           "per_problem": per_problem(gt), "note": coverage_note(gt, "groundtruth")}
    if len(bb):
        medians = blackbox_medians(bb)
        rep.blackbox = {"medians": medians, "beside": medians_beside_published(medians),
                        "note": coverage_note(bb, "blackbox")}
    if out is not None:
        rep.write(out, plots=plots)
    return rep
