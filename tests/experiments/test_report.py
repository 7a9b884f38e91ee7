"""The report on a fixture store of known numbers: exact tables, statistics equal scipy's."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from parsimony.experiments.reporting import report, to_latex, to_markdown
from parsimony.experiments.store import KEY, ResultStore

DATASETS = [f"d{i}" for i in range(10)]
# name: (transparent, target, quantiles)
METHODS = {"A": (1, "quantile", (0.5, 0.9)), "B": (1, "quantile", (0.5, 0.9)), "D": (1, "quantile", (0.5, 0.9)),
           "C": (0, "quantile", (0.5, 0.9)), "E": (0, "mean", (0.5,))}
FAILED = ("d3", "B", 0.9, 1)


def _value(rng, dataset, method, quantile, fold, metric):
    i = DATASETS.index(dataset)
    if method == "A" and metric == "nql":
        return 0.1 + 0.01 * i + 0.002 * fold  # known: per-dataset mean 0.101 + 0.01 i
    if metric == "nql":
        return 0.2 + 0.05 * rng.random()
    if metric == "complexity":
        return float(rng.integers(1, 60))
    return rng.random() / 4


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "fixture.sqlite"
    rng = np.random.default_rng(42)
    with ResultStore(path) as db:
        for d, (m, (transparent, target, qs)) in itertools.product(DATASETS, METHODS.items()):
            for q in qs:
                for fold in (0, 1):
                    row = {"dataset": d, "method": m, "quantile": q, "fold": fold, "seed": 0, "folds": 2,
                           "settings": f"settings-{m}", "data": f"data-{d}", "status": "ok",
                           "transparent": transparent, "target": target, "n_train": 80, "n_test": 20,
                           "n_features": 3 + DATASETS.index(d), "fit_time": 0.001 * (1 + fold)}
                    for metric in ("nql", "ace", "complexity"):
                        row[metric] = _value(rng, d, m, q, fold, metric)
                    if (d, m, q, fold) == FAILED:
                        row = {**{k: row[k] for k in (*KEY, "transparent", "target")}, "status": "failed",
                               "error": "ValueError: boom\nmore"}
                    db.add(row)
    return path


def _per_dataset(store_path, metric, quantile, methods):
    """Per-dataset fold means computed directly from the rows (complete datasets only)."""
    rows = ResultStore(store_path).load()
    out = {}
    for m in methods:
        sub = rows[(rows["method"] == m) & (rows["quantile"] == quantile)]
        out[m] = {d: (g[metric].mean() if (g["status"] == "ok").all() else np.nan) for d, g in sub.groupby("dataset")}
    table = pd.DataFrame(out).dropna()
    return table


def test_table2_cells_are_exact(store):
    rep = report(store)
    summary = rep.summary
    # A's NQL: per-dataset means 0.101 + 0.01 i, i = 0..9 -> mean 0.146, sd 0.0303; A beats B and D on
    # every dataset: with 10 datasets the exact Wilcoxon p-value 2/2**10 < 0.05/18, so bold at tau=.5;
    # at tau=.9 the failed fold leaves 9 complete datasets and 2/2**9 > 0.05/18: not bold
    assert summary.loc["A", ("Normalized quantile loss", "tau=0.5")] == "**0.146 ± 0.030**"
    assert summary.loc["A", ("Normalized quantile loss", "tau=0.9")] == "0.146 ± 0.030"
    assert summary.loc["E", ("Normalized quantile loss", "tau=0.9")] == ""
    assert summary.loc["E", ("Target", "")] == "mean" and summary.loc["C", ("Transparent", "")] == "no"
    for metric, name, decimals in (("ace", "Absolute coverage error", 3), ("complexity", "Parsimony", 2)):
        for q in (0.5, 0.9):
            means = _per_dataset(store, metric, q, ["B"])["B"].to_numpy()
            expected = f"{means.mean():.{decimals}f} ± {means.std(ddof=1):.{decimals}f}"
            assert summary.loc["B", (name, f"tau={q:g}")].strip("*") == expected
    assert len(_per_dataset(store, "ace", 0.9, ["B"])) == 9  # the failed fold removes d3 for B at 0.9
    assert rep.runtime.loc["A", "tau=0.5"] == "1.50 ± 0.00"


def test_statistics_equal_scipy(store):
    rep = report(store)
    assert rep.tested == ["A", "B", "D"]
    friedman = rep.friedman.set_index(["abbr", "quantile"])
    assert len(friedman) == 6
    wilcoxon = rep.wilcoxon.set_index(["abbr", "quantile", "models"])
    assert len(wilcoxon) == 18
    for (metric, abbr), q in itertools.product([("nql", "nql"), ("ace", "ace"), ("complexity", "pars")], (0.5, 0.9)):
        table = _per_dataset(store, metric, q, ["A", "B", "D"])
        assert len(table) == (9 if q == 0.9 else 10)
        ref = st.friedmanchisquare(*(table[c].to_numpy() for c in table.columns))
        row = friedman.loc[(abbr, q)]
        assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
        assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
        assert row["alpha"] == pytest.approx(0.05 / 6) and row["significant"] == (ref.pvalue < 0.05 / 6)
        for a, b in itertools.combinations("ABD", 2):
            ref = st.wilcoxon(table[a].to_numpy(), table[b].to_numpy())
            row = wilcoxon.loc[(abbr, q, f"{a} vs {b}")]
            assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
            assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
            assert row["alpha"] == pytest.approx(0.05 / 18) and row["significant"] == (ref.pvalue < 0.05 / 18)
    assert friedman.loc[("nql", 0.5), "significant"]


def test_per_dataset_table_and_failures(store):
    rep = report(store)
    table = rep.per_dataset.set_index(["tau", "dataset"])
    assert table.loc[(0.5, "d2"), ("NQL", "A")] == pytest.approx(0.121)
    assert table.loc[(0.5, "d2"), ("n", "")] == 100 and table.loc[(0.5, "d2"), ("d", "")] == 5
    assert np.isnan(table.loc[(0.9, "d3"), ("NQL", "B")])
    assert np.isnan(table.loc[(0.9, "d3"), ("NQL", "E")])
    assert table.loc[(0.9, "d1"), ("Time (ms)", "C")] == pytest.approx(1.5)
    expected = _per_dataset(store, "complexity", 0.9, ["D"])["D"]
    assert np.allclose(table.xs(0.9)[("Parsimony", "D")].to_numpy(), expected.to_numpy())
    assert rep.failures.to_dict("records") == [
        {"dataset": "d3", "method": "B", "quantile": 0.9, "n_failed": 1, "error": "ValueError: boom"}]


def test_written_outputs(store, tmp_path):
    out = tmp_path / "out"
    rep = report(store, out=out, tested="all")
    names = {p.name for p in out.iterdir()}
    for stem in ("summary", "runtime", "friedman", "wilcoxon", "per_dataset"):
        assert {f"{stem}.csv", f"{stem}.tex"} <= names
    assert {"report.md", "failures.csv", "pareto_0.5.png", "pareto_0.9.png", "cd_nql_0.5.png"} <= names
    assert len(rep.wilcoxon) == 3 * (10 + 6)  # all methods: 5 at tau=.5, 4 at tau=.9
    assert rep.wilcoxon["alpha"].eq(0.05 / 48).all()
    md = (out / "report.md").read_text()
    # comparing all 5 methods makes 48 pairs: 2/2**10 > 0.05/48, so nothing is bold
    assert "## Table 2" in md and "| A | 0.146 ± 0.030 | 0.146 ± 0.030 |" in md and "**" not in md
    csv = pd.read_csv(out / "summary.csv")
    assert csv.loc[csv["method"] == "A", "Normalized quantile loss tau=0.5"].item() == "0.146 ± 0.030"
    tex = (out / "summary.tex").read_text()
    assert r"A & 0.146 $\pm$ 0.030 & 0.146 $\pm$ 0.030" in tex and r"\multicolumn{2}{c}{Normalized quantile loss}" in tex
    with pytest.raises(ValueError, match="not in the results"):
        report(store, tested=["A", "Z"])


def test_latex_bold():
    frame = pd.DataFrame({("M", "x"): ["**0.1 ± 0.2**"], ("M", "y"): ["1%"]}, index=pd.Index(["a"], name="m"))
    assert r"a & \textbf{0.1 $\pm$ 0.2} & 1\% \\" in to_latex(frame)
    assert r"m & \multicolumn{2}{c}{M} \\" in to_latex(frame)


def test_markdown_and_latex_writers():
    frame = pd.DataFrame({"method": ["a_b", "c"], "x": [0.5, np.nan], "ok": [True, False]}).set_index("method")
    assert to_markdown(frame) == "| method | x | ok |\n|---|---|---|\n| a_b | 0.5 | yes |\n| c |  | no |"
    assert to_latex(frame) == (
        "\\begin{tabular}{lll}\n\\toprule\nmethod & x & ok \\\\\n\\midrule\na\\_b & 0.5 & yes \\\\\n"
        "c &  & no \\\\\n\\bottomrule\n\\end{tabular}\n"
    )


def test_report_rejects_bad_alpha_and_frames_without_results(store):
    for alpha in (2, 0, -0.1):
        with pytest.raises(ValueError, match="alpha"):
            report(store, alpha=alpha, plots=False)
    with pytest.raises(ValueError, match=r"lacks the columns \['dataset'"):
        report(pd.DataFrame({"x": [1.0, 2.0]}), plots=False)


def test_report_says_how_to_read_table2(store):
    md = report(store, plots=False).to_markdown()
    table2 = md.split("## Table 2")[1].split("## Table 3")[0]
    assert "Lower is better" in table2 and "blank cell" in table2
    assert "d0, d1" in table2 or all(d in table2 for d in DATASETS)
