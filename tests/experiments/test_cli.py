"""``parsimony bench run`` / ``bench report`` end to end on tiny budgets."""

from __future__ import annotations

import sqlite3

from parsimony.cli import main


def _run(tmp_path, *extra):
    return main(["bench", "run", "--methods", "QDT,LQR", "--quantiles", "0.5,0.9", "--folds", "2", "--budget", "tiny",
                 "--n-jobs", "1", "--no-progress", *extra])


def test_bench_run_quick_then_report(tmp_path, capsys):
    store = tmp_path / "r.sqlite"
    assert _run(tmp_path, "--suite", "quick", "--datasets", "heteroskedastic,diabetes", "--store", str(store)) == 0
    out = capsys.readouterr().out
    assert "Table 2" in out and "| QDT |" in out and "| LQR |" in out and "failed" not in out
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*), SUM(status = 'ok') FROM results").fetchone() == (16, 16)
    # a rerun finds everything done
    assert _run(tmp_path, "--suite", "quick", "--datasets", "heteroskedastic,diabetes", "--store", str(store)) == 0
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 16
    out_dir = tmp_path / "report"
    assert main(["bench", "report", str(store), "--out", str(out_dir), "--no-plots"]) == 0
    assert {"report.md", "summary.csv", "summary.tex", "wilcoxon.tex", "per_dataset.csv"} <= {p.name for p in out_dir.iterdir()}
    assert "| 0.5 | heteroskedastic | 300 | 1 |" in (out_dir / "report.md").read_text()


def test_bench_run_pmlb(tmp_path, pmlb_dir, capsys):
    store = tmp_path / "r.sqlite"
    code = _run(tmp_path, "--suite", "pmlb", "--data-dir", str(pmlb_dir), "--datasets", "192_vineyard",
                "--store", str(store))
    assert code == 0
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT dataset, n_train + n_test, n_features, status FROM results").fetchall()
    assert len(rows) == 8 and {r[0] for r in rows} == {"192_vineyard"} and {r[1:] for r in rows} == {(52, 2, "ok")}


def test_bench_errors(tmp_path, capsys):
    assert main(["bench", "run", "--suite", "pmlb", "--store", str(tmp_path / "r.sqlite")]) == 2
    assert "--data-dir" in capsys.readouterr().err
    assert main(["bench", "report", str(tmp_path / "missing.sqlite")]) == 2
    assert "no results store" in capsys.readouterr().err


def test_bench_run_help_lists_the_methods(capsys):
    import pytest

    from parsimony.experiments.suites import METHODS

    with pytest.raises(SystemExit):
        main(["bench", "run", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in METHODS)


def test_bench_run_output_says_how_to_read_the_table(tmp_path, capsys):
    store = tmp_path / "r.sqlite"
    assert _run(tmp_path, "--suite", "quick", "--datasets", "heteroskedastic", "--store", str(store)) == 0
    out = capsys.readouterr().out
    assert "Lower is better" in out and "heteroskedastic" in out and "blank cell" in out


def test_bench_run_where_every_task_failed_exits_non_zero(tmp_path, capsys):
    data = tmp_path / "holes.csv"
    data.write_text("a,b,y\n" + "".join(f"{i},{'' if i % 2 else i},{i}\n" for i in range(20)))  # NaN in b
    code = _run(tmp_path, "--datasets", str(data), "--store", str(tmp_path / "r.sqlite"))
    captured = capsys.readouterr()
    assert code == 1
    assert "every one of the 8 tasks failed" in captured.err and "NaN" in captured.err
    assert "Table 2" not in captured.out


def test_bench_commands_name_an_unreadable_store(tmp_path, capsys):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"garbage" * 200)
    assert main(["bench", "report", str(corrupt), "--no-plots"]) == 2
    assert str(corrupt) in capsys.readouterr().err
    assert _run(tmp_path, "--suite", "quick", "--datasets", "heteroskedastic", "--store", str(corrupt)) == 2
    assert str(corrupt) in capsys.readouterr().err
    assert _run(tmp_path, "--suite", "quick", "--datasets", "heteroskedastic", "--store", str(tmp_path)) == 2
    assert "is a folder" in capsys.readouterr().err
