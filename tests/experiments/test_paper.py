"""The sqr-paper suite: the paper's figures as data, the comparison with them, the suite and its CLI."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from parsimony import datasets
from parsimony.cli import main
from parsimony.experiments import paper, reporting
from parsimony.experiments.reporting import report
from types import SimpleNamespace
from parsimony.experiments.store import ResultStore
from parsimony.experiments.suites import (
    BUDGETS, estimate_seconds, estimate_task_seconds, prepare_datasets, sqr_paper_suite,
)


def test_table11_is_the_papers_datasets():
    t11 = paper.paper_table11()
    names = paper.paper_datasets()
    assert len(names) == 115 and len(t11) == 4 * 228
    assert {"1027_ESL", "663_rabe_266", "banana", "titanic", "586_fri_c3_1000_25"} <= set(names["dataset"])
    row = t11[(t11["dataset"] == "1027_ESL") & (t11["quantile"] == 0.5)].set_index("method")
    assert row.loc["LQR", ["nql", "ace", "complexity"]].tolist() == [0.03, 0.02, 34.0]
    assert row.loc["SQR", "time_ms"] == 417.37 and np.isnan(row.loc["LGBM", "complexity"])
    # the parse agrees with the paper's own Table 2 (its means over the datasets) to the printed precision,
    # except LQR's NQL at tau .9, where the paper's two tables disagree (Table 11 averages 0.053, Table 2 prints .059)
    t2 = paper.paper_table2().set_index(["method", "metric", "quantile"])
    for method in ("LQR", "QDT", "LGBM", "SQR"):
        for q in (0.5, 0.9):
            for metric in ("nql", "ace"):
                mean = t11[(t11["method"] == method) & (t11["quantile"] == q)][metric].mean()
                gap = abs(mean - t2.loc[(method, metric, q), "mean"])
                assert gap > 0.005 if (method, metric, q) == ("LQR", "nql", 0.9) else gap < 0.0015, (method, q, metric)


def test_table11_sizes_match_the_shared_copies(pmlb_dir):
    sizes = paper.paper_datasets().set_index("dataset")
    table = datasets.list_datasets(pmlb_dir).set_index("name")
    assert len(table) == 34 and set(table.index) <= set(sizes.index)
    assert (table["n"] == sizes.loc[table.index, "n"]).all() and (table["d"] == sizes.loc[table.index, "d"]).all()
    known = datasets.known_checksums()
    for name in ("192_vineyard", "663_rabe_266"):
        data = (pmlb_dir / f"{name}.tsv.gz").read_bytes()
        assert known[name] == (len(data), hashlib.sha256(data).hexdigest())


def _means(values: dict, method="LQR-U") -> pd.DataFrame:
    """dataset_means-shaped rows: (dataset, quantile) -> our nql."""
    rows = [{"dataset": d, "method": method, "quantile": q, "complete": True, "nql": v, "ace": 0.1,
             "complexity": 5.0, "time_ms": 1.0, "n": 10, "d": 2, "transparent": True, "target": "quantile"}
            for (d, q), v in values.items()]
    return pd.DataFrame(rows)


def test_reproduction_counts_are_exact():
    # the paper's LQR NQL: 1027_ESL .5 -> 0.03, .9 -> 0.01; 192_vineyard .5 -> 0.06
    means = _means({("1027_ESL", 0.5): 0.034, ("1027_ESL", 0.9): 0.019, ("192_vineyard", 0.5): 0.075,
                    ("not_in_paper", 0.5): 0.5})
    rows = paper.compare_rows(means)
    assert len(rows) == 3 and set(rows["paper_method"]) == {"LQR"}
    counts = paper.reproduction_counts(rows).set_index("quantile")
    assert counts.loc["all", ["rows", "nql_within_print", "nql_within_0.01"]].tolist() == [3, 1, 2]
    assert counts.loc["0.5", ["rows", "nql_within_print", "nql_within_0.01"]].tolist() == [2, 1, 1]
    assert counts.loc["all", "nql_mean_diff"] == pytest.approx((0.004 + 0.009 + 0.015) / 3)
    # ACE is counted the same way: the paper's LQR ACE is 0.02, 0.09 (1027_ESL .5, .9) and 0.17 (192_vineyard .5)
    means["ace"] = [0.024, 0.098, 0.2, 0.1]
    rows = paper.compare_rows(means)
    counts = paper.reproduction_counts(rows).set_index("quantile")
    assert counts.loc["all", ["ace_within_print", "ace_within_0.01"]].tolist() == [1, 2]
    assert counts.loc["all", "ace_mean_abs_diff"] == pytest.approx((0.004 + 0.008 + 0.03) / 3)
    outside = paper.outside_band(rows)
    assert sorted(zip(outside["metric"], outside["dataset"], outside["tau"])) == [
        ("ACE", "192_vineyard", 0.5), ("NQL", "192_vineyard", 0.5)]
    assert outside.set_index("metric").loc["ACE", "diff"] == pytest.approx(0.03)


@pytest.fixture(scope="module")
def paper_store(tmp_path_factory):
    """Five of the paper's datasets, LQR-U, QDT, SQR and a method the paper lacks; two folds."""
    path = tmp_path_factory.mktemp("paper") / "store.sqlite"
    t11 = paper.paper_table11().set_index(["dataset", "quantile", "method"])
    names = ["1027_ESL", "1028_SWD", "192_vineyard", "210_cloud", "522_pm10"]
    rng = np.random.default_rng(0)
    with ResultStore(path) as db:
        for d in names:
            for method, col, shift in (("LQR-U", "LQR", 0.0), ("QDT", "QDT", 0.002), ("SQR", "SQR", -0.02),
                                       ("OSRT", None, 0.0)):
                for q in ((0.5,) if method == "OSRT" else (0.5, 0.9)):
                    base = t11.loc[(d, q, col), "nql"] if col else 0.1
                    for fold in (0, 1):
                        db.add({"dataset": d, "method": method, "quantile": q, "fold": fold, "seed": 0, "folds": 2,
                                "settings": f"settings-{method}", "data": f"data-{d}", "status": "ok",
                                "transparent": 1, "target": "mean" if method == "OSRT" else "quantile", "n_train": 40,
                                "n_test": 10, "n_features": 3, "fit_time": 0.01, "nql": base + shift + 1e-4 * fold,
                                "ace": rng.random() / 5, "complexity": float(rng.integers(2, 30))})
    return path


def test_report_beside_the_paper(paper_store, tmp_path):
    rep = report(paper_store, out=tmp_path, compare="sqr-paper")
    cmp = rep.comparison
    assert "10 of the paper's 228 (dataset, quantile) rows on 5 of its 115 datasets" in cmp.note
    assert "a subset" in cmp.note and "not in the paper: OSRT" in cmp.note
    counts = cmp.counts.set_index(["method", "quantile"])
    assert counts.loc[("LQR-U", "all"), ["rows", "nql_within_print"]].tolist() == [10, 10]
    assert counts.loc[("QDT", "all"), "nql_mean_diff"] == pytest.approx(0.00205)
    assert counts.loc[("SQR", "all"), "nql_within_0.01"] == 0
    # SQR's 10 rows are 0.02 from the paper's NQL: listed by name
    far = cmp.outside[cmp.outside["metric"] == "NQL"]
    assert set(far["method"]) == {"SQR"} and len(far) == 10 and set(far["dataset"]) == {
        "1027_ESL", "1028_SWD", "192_vineyard", "210_cloud", "522_pm10"}
    # 2 folds and settings of no known budget: said first
    assert cmp.note.startswith("**This run's protocol differs from the paper's: 2 folds (the paper: 5); a custom budget")
    sources = cmp.table2.index.get_level_values("source")
    assert "paper, same 5 datasets (Table 11)" in sources and "paper, 114 datasets (Table 2)" in sources
    assert cmp.table2.loc[("SQR", "paper, 114 datasets (Table 2)"), ("Normalized quantile loss", "tau=0.5")] == "**0.03 ± 0.021**"
    assert len(cmp.table11) == 10 and ("NQL QDT", "diff") in cmp.table11.columns
    # the tests ran on LQR-U, QDT, SQR (the paper's transparent methods), beside the paper's verdicts
    assert set(cmp.tests["test"]) == {"Friedman", "Wilcoxon"} and (cmp.tests["paper_significant"] != "").all()
    assert set(cmp.conclusions["ours_best"]) >= {"SQR"}
    text = (tmp_path / "report.md").read_text()
    assert text.splitlines()[2].startswith("**This run's protocol differs from the paper's")
    assert "## Rows more than 0.01 from the paper's" in text and "| SQR | NQL | 0.5 | 1027_ESL |" in text
    assert "numba's compilation of kernels left out" in text
    assert "# Beside the SQR paper" in text and "| SQR | paper, same 5 datasets (Table 11) |" in text
    assert {"paper_nql.png", "paper_counts.csv", "paper_table11.tex", "paper_rows.csv"} <= {p.name for p in tmp_path.iterdir()}
    assert (tmp_path / "paper_nql.png").stat().st_size > 20_000
    with pytest.raises(ValueError, match="compare must be one of"):
        report(paper_store, compare="pysr-paper")


def test_one_paper_method_gives_the_papers_conclusions_alone(paper_store):
    rows = ResultStore(paper_store).load()
    cmp = report(rows[rows["method"] == "QDT"], plots=False, compare="sqr-paper").comparison
    assert len(cmp.conclusions) == 6 and (cmp.conclusions["ours_best"] == "").all()
    assert cmp.conclusions["ours_significantly_better_than"].str.startswith("not tested").all()
    assert (cmp.tests["ours_significant"].str.startswith("not run")).all() and (cmp.tests["agree"] == "").all()


def test_the_tests_take_one_lqr_as_the_paper_does(paper_store):
    rows = ResultStore(paper_store).load()
    twin = rows[rows["method"] == "LQR-U"].assign(method="LQR-NC", settings="settings-LQR-NC")
    cmp = report(pd.concat([rows, twin], ignore_index=True), plots=False, compare="sqr-paper").comparison
    assert set(cmp.counts["method"]) >= {"LQR-U", "LQR-NC"}
    models = " ".join(cmp.tests["models"])
    assert "LQR-NC" in models and "LQR-U" not in models and len(cmp.tests) == 6 + 18


def test_report_without_compare_is_unchanged(paper_store):
    rep = report(paper_store, plots=False)
    assert rep.comparison is None and "Beside the SQR paper" not in rep.to_markdown()


def test_suite_and_bad_datasets():
    suite = sqr_paper_suite()
    assert suite.name == "sqr-paper" and len(suite.datasets) == 115 and suite.budget == "paper"
    assert suite.methods == ("LQR-NC", "LQR-U", "QDT", "LGBM", "SQR", "SQR10K") and suite.quantiles == (0.5, 0.9) and suite.folds == 5
    assert len(sqr_paper_suite(max_rows=100).datasets) == 19
    with pytest.raises(ValueError, match="not in the SQR paper's Table 11: \\['friedman1'\\]"):
        sqr_paper_suite(datasets=["192_vineyard", "friedman1"])


def test_prepare_offline_names_the_missing(tmp_path, monkeypatch, pmlb_dir):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(datasets.ENV_PMLB_URL, "http://127.0.0.1:9/{name}.tsv.gz")  # nothing listens there
    lines = []
    available, missing, advice = prepare_datasets(["192_vineyard", "1030_ERA", "banana"], data_dir=pmlb_dir, log=lines.append)
    assert available == ["192_vineyard"] and set(missing) == {"1030_ERA", "banana"}
    assert "cannot reach" in missing["1030_ERA"] and missing["banana"].startswith("not tried")
    assert "--data-dir" in advice and any(line.startswith("1030_ERA: cannot be fetched") for line in lines)
    available, missing, _ = prepare_datasets(["192_vineyard", "1030_ERA"], data_dir=pmlb_dir, fetch=False)
    assert available == ["192_vineyard"] and "fetching is off" in missing["1030_ERA"]


def test_a_local_copy_of_another_dataset_is_left_out(tmp_path, monkeypatch, pmlb_dir, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    local = tmp_path / "local"
    local.mkdir()
    (local / "192_vineyard.tsv.gz").write_bytes((pmlb_dir / "228_elusage.tsv.gz").read_bytes())
    (local / "228_elusage.tsv.gz").write_bytes((pmlb_dir / "228_elusage.tsv.gz").read_bytes())
    lines = []
    available, missing, _ = prepare_datasets(["192_vineyard", "228_elusage"], data_dir=local, fetch=False,
                                             log=lines.append)
    assert available == ["228_elusage"] and "checksum mismatch" in missing["192_vineyard"]
    assert str(local / "192_vineyard.tsv.gz") in lines[0]
    (local / "192_vineyard.tsv").write_text("a\tb\ttarget\n1\t2\t3\n")  # another format: the shape is checked
    (local / "192_vineyard.tsv.gz").unlink()
    with pytest.warns(UserWarning, match="1 rows x 2 features, expected 52 x 2"):
        assert prepare_datasets(["192_vineyard"], data_dir=local, fetch=False)[0] == []
    (local / "192_vineyard.tsv").unlink()
    (local / "192_vineyard.tsv.gz").write_bytes((pmlb_dir / "228_elusage.tsv.gz").read_bytes())
    code = main(["bench", "run", "--suite", "sqr-paper", "--data-dir", str(local), "--no-fetch", "--datasets",
                 "192_vineyard", "--methods", "LQR-U", "--folds", "2", "--budget", "tiny", "--n-jobs", "1",
                 "--no-progress", "--store", str(tmp_path / "r.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and "is not PMLB's 192_vineyard: checksum mismatch" in err
    assert "none of the sqr-paper suite's datasets is available" in err


def test_estimate():
    paper_budget = BUDGETS["paper"]
    small, large = estimate_task_seconds("QDT", 500, 5, paper_budget), estimate_task_seconds("QDT", 20000, 5, paper_budget)
    assert 0 < small < large <= paper_budget.tune_time + 2 * large / paper_budget.n_trials + large
    assert estimate_task_seconds("LQR-U", 500, 5, paper_budget) < estimate_task_seconds("LQR", 500, 5, paper_budget)
    assert np.isnan(estimate_task_seconds("OSRT", 500, 5, paper_budget))
    tasks = [SimpleNamespace(dataset="a", method="QDT") for _ in range(5)]
    total, per = estimate_seconds(tasks, {"a": (500, 5)}, paper_budget)
    assert total == pytest.approx(5 * small) and per == {"QDT": pytest.approx(5 * small)}
    measured = pd.DataFrame({"dataset": ["a"], "method": ["QDT"], "status": ["ok"], "fit_time": [3 * small]})
    assert estimate_seconds(tasks, {"a": (500, 5)}, paper_budget, measured=measured)[0] == pytest.approx(15 * small)


def test_cli_sqr_paper_offline_subset_then_report(tmp_path, monkeypatch, pmlb_dir, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    store = tmp_path / "r.sqlite"
    code = main(["bench", "run", "--suite", "sqr-paper", "--data-dir", str(pmlb_dir), "--no-fetch", "--max-rows", "60",
                 "--methods", "LQR-U,QDT", "--folds", "2", "--budget", "tiny", "--n-jobs", "1", "--no-progress",
                 "--store", str(store)])
    assert code == 0
    captured = capsys.readouterr()
    # 7 paper datasets have <= 60 rows; 4 of them are in the shared folder
    assert "3 of the suite's 7 datasets are missing and left out: 1096_FacultySalaries" in captured.err
    assert "--data-dir DIR" in captured.err
    assert "parsimony bench: 32 tasks to run; estimated" in captured.err
    assert "## Beside the SQR paper" in captured.out and "| LQR-U | paper, same 4 datasets (Table 11) |" in captured.out
    assert main(["bench", "report", str(store), "--compare", "sqr-paper", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "# Beside the SQR paper" in out and "8 of the paper's 228" in out


def test_a_test_that_cannot_be_significant_gives_no_verdict(paper_store):
    from parsimony.experiments.reporting import smallest_p

    # Wilcoxon on 5 datasets: the smallest two-sided p is 2/2^5 = 0.0625, above 0.05/18; Friedman on 3 methods
    # and 5 datasets can reach chi2.sf(10, 2) = 0.0067 < 0.05/6
    assert smallest_p("wilcoxon", 5) == 0.0625 and smallest_p("wilcoxon", 10) == 2 / 2**10
    assert smallest_p("friedman", 5, 3) == pytest.approx(0.006738, rel=1e-3) and np.isnan(smallest_p("wilcoxon", 1))
    rep = report(paper_store, plots=False, compare="sqr-paper")
    tests = rep.comparison.tests
    wilcoxon, friedman = tests[tests["test"] == "Wilcoxon"], tests[tests["test"] == "Friedman"]
    assert wilcoxon["ours_significant"].str.startswith("cannot be with 5 datasets (smallest possible p 0.062").all()
    assert (wilcoxon["agree"] == "").all()  # was "no" beside the paper's significant differences
    assert friedman["ours_significant"].isin(["Yes", "No"]).all() and friedman["agree"].isin(["yes", "no"]).all()
    assert rep.comparison.conclusions["ours_significantly_better_than"].str.startswith("cannot tell: 5 datasets").all()
    text = rep.to_markdown()
    assert "| Normalized quantile loss | nql | 0.5 | LQR-U vs QDT |" in text and "cannot be with 5 datasets" in text


def test_a_test_not_run_shows_no_verdict(paper_store):
    rows = ResultStore(paper_store).load()
    rep = report(rows[rows["method"].isin(["QDT", "SQR"])], plots=False)
    assert (rep.friedman["p_value"].isna()).all()  # two methods: no Friedman test
    assert "| Normalized quantile loss | nql | 0.5 |  |  | not run (too few methods or datasets) |" in rep.to_markdown()


def test_counts_are_those_of_each_mean(paper_store):
    rows = ResultStore(paper_store).load()
    # SQR fails on one fold of 210_cloud at tau .9: its mean there is over 4 datasets, not 5
    broken = (rows["method"] == "SQR") & (rows["dataset"] == "210_cloud") & (rows["quantile"] == 0.9) & (rows["fold"] == 1)
    rows.loc[broken, "status"] = "failed"
    rep = report(rows, plots=False, compare="sqr-paper")
    assert "(fewer where a method has no complete result: SQR at tau=0.9 over 4)" in rep.to_markdown()
    sources = list(rep.comparison.table2.index.get_level_values("source"))
    assert "paper, same datasets (Table 11; n per cell)" in sources and "paper, same 5 datasets (Table 11)" in sources
    line = rep.comparison.table2.loc[("SQR", "paper, same datasets (Table 11; n per cell)")]
    assert line[("Normalized quantile loss", "tau=0.9")].endswith("(n=4)")
    assert line[("Normalized quantile loss", "tau=0.5")].endswith("(n=5)")


def test_a_run_of_the_papers_protocol_says_nothing_of_it(paper_store):
    from parsimony.experiments.runner import method_settings
    from parsimony.experiments.suites import resolve_method

    rows = ResultStore(paper_store).load()
    rows = rows[rows["method"] != "OSRT"].copy()
    rows["folds"] = 5
    rows["settings"] = [method_settings(resolve_method(m), BUDGETS["paper"]) for m in rows["method"]]
    assert reporting.protocol_differences(rows) == ""
    rows.loc[rows["method"] == "QDT", "settings"] = method_settings(resolve_method("QDT"), BUDGETS["tiny"])
    assert reporting.protocol_differences(rows) == ("This run's protocol differs from the paper's: the 'tiny' budget (the "
                                                "paper's: 'paper'). Its figures are not expected to match the paper's.")


@pytest.mark.parametrize("seconds, text", [(0.25, "0.25 CPU-s"), (42, "42 CPU-s"), (840, "14 CPU-min"),
                                           (8280, "2.3 CPU-hours"), (360_000, "100 CPU-hours")])
def test_the_cpu_estimate_reads_in_units(seconds, text):
    from parsimony.experiments.reporting import duration

    assert duration(seconds, "CPU-") == text
