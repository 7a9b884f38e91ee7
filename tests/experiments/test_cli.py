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


def _rows(store):
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT dataset, method, quantile, fold, seed, folds, settings, data, nql FROM results "
                            "ORDER BY dataset, method, quantile, fold, seed").fetchall()
    conn.close()
    return rows


def test_a_rerun_with_other_settings_stops_and_says_what_differs(tmp_path, capsys):
    """folds 3 then 5, budget tiny then quick: the second run stops before computing anything, the
    store keeps the first experiment alone and its report averages nothing else."""
    store = tmp_path / "r.sqlite"
    base = ["bench", "run", "--datasets", "heteroskedastic", "--methods", "LQR", "--quantiles", "0.5", "--n-jobs", "1",
            "--no-progress", "--store", str(store)]
    assert main([*base, "--folds", "3", "--budget", "tiny"]) == 0
    first = _rows(store)
    assert len(first) == 3 and {r[5] for r in first} == {3}
    capsys.readouterr()
    assert main([*base, "--folds", "5", "--budget", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "folds: 3 in the store, 5 in this run" in err and "start a fresh store" in err
    assert main([*base, "--folds", "3", "--budget", "quick"]) == 2
    err = capsys.readouterr().err
    assert "budget: 'tiny' in the store, 'quick' in this run" in err and "n_trials 2 -> 6" in err
    assert _rows(store) == first  # nothing added, nothing lost
    assert main(["bench", "report", str(store), "--no-plots"]) == 0
    assert "3 tasks (0 failed)" in capsys.readouterr().out
    # the same experiment grows: another seed and another method are added to it
    assert main([*base, "--folds", "3", "--budget", "tiny", "--seeds", "0,1", "--methods", "LQR,QDT"]) == 0
    assert len(_rows(store)) == 12 and set(first) <= set(_rows(store))
    # a fresh store takes the new settings
    fresh = tmp_path / "folds5.sqlite"
    assert main([*base[:-1], str(fresh), "--folds", "5", "--budget", "tiny"]) == 0
    assert {r[5] for r in _rows(fresh)} == {5}


def test_a_store_of_an_older_version_is_reported_but_not_run_into(tmp_path, capsys):
    store = tmp_path / "old.sqlite"
    with sqlite3.connect(store) as conn:
        conn.execute("CREATE TABLE results (dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, "
                     "fold INTEGER NOT NULL, seed INTEGER NOT NULL, status TEXT NOT NULL, nql REAL, nql_fold REAL, "
                     "y_range REAL, ace REAL, complexity REAL, fit_time REAL, n_train INTEGER, n_test INTEGER, "
                     "n_features INTEGER, transparent INTEGER, target TEXT, UNIQUE (dataset, method, quantile, fold, seed))")
        for fold in range(3):
            conn.execute("INSERT INTO results VALUES ('heteroskedastic', 'LQR', 0.5, ?, 0, 'ok', 0.1, 0.2, 1.0, 0.05, "
                         "2.0, 0.01, 200, 100, 1, 1, 'quantile')", (fold,))
    conn.close()
    before = store.read_bytes()
    assert _run(tmp_path, "--datasets", "heteroskedastic", "--store", str(store)) == 2
    err = capsys.readouterr().err
    assert "older parsimony" in err and "3 rows" in err and "fresh store" in err
    assert store.read_bytes() == before
    assert main(["bench", "report", str(store), "--no-plots"]) == 0
    assert "| LQR |" in capsys.readouterr().out


def test_other_data_under_a_dataset_name_stops_the_run(tmp_path):
    import numpy as np
    import pytest

    from parsimony.experiments import run_benchmark
    from parsimony.experiments.reporting import report
    from parsimony.experiments.store import ExperimentMismatch, load_results

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 2))
    y = X[:, 0] + rng.standard_normal(40)
    store = tmp_path / "r.sqlite"
    args = dict(methods=["LQR"], quantiles=(0.5,), folds=2, store=store, budget="tiny")
    first = run_benchmark([("toy", X, y)], **args)
    with pytest.raises(ExperimentMismatch, match=r"data of dataset 'toy': 40 rows x 2 features.*another dataset name"):
        run_benchmark([("toy", X, 100 * y + 7)], **args)
    import pandas as pd

    renamed = pd.DataFrame(X, columns=["a", "b"])  # other column names are other data too
    with pytest.raises(ExperimentMismatch, match="data of dataset 'toy'"):
        run_benchmark([("toy", renamed, y)], **args)
    assert len(load_results(store)) == 2
    second = run_benchmark([("toy-scaled", X, 100 * y + 7)], **args)  # under its own name it is its own dataset
    assert set(first["data"]) != set(second["data"]) and len(load_results(store)) == 4
    # frames joined from two stores with other splits are not averaged together
    other = run_benchmark([("toy", X, y)], **{**args, "folds": 3, "store": tmp_path / "folds3.sqlite"})
    with pytest.raises(ValueError, match=r"mix experiments: dataset 'toy'.*folds \[2, 3\]"):
        report(pd.concat([first, other]), plots=False)


def test_empty_lists_on_the_command_line_are_errors(tmp_path, capsys):
    import pytest

    for option, value in (("--methods", ""), ("--datasets", ""), ("--datasets", ","), ("--quantiles", ""),
                          ("--seeds", ""), ("--seeds", " , ")):
        with pytest.raises(SystemExit) as stop:
            main(["bench", "run", option, value, "--store", str(tmp_path / "r.sqlite"), "--no-progress"])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {option}" in err and "names nothing" in err
    assert not (tmp_path / "r.sqlite").exists()


_SLOW_CLI = """
import sys
from parsimony.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_says_what_was_stored_and_how_to_resume(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    store = tmp_path / "r.sqlite"
    command = [sys.executable, "-c", _SLOW_CLI, "bench", "run", "--datasets", "heteroskedastic,friedman1",
               "--methods", "QDT", "--folds", "2", "--budget", "tiny", "--n-jobs", "1", "--no-progress",
               "--store", str(store)]
    # a child inherits an ignored SIGINT (which a library may have set in this test worker), and Python
    # then never raises KeyboardInterrupt: the child gets the default disposition back
    proc = subprocess.Popen([*command, "--seeds", ",".join(map(str, range(40)))], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 180
    count = 0
    while time.time() < deadline and proc.poll() is None:
        try:
            count = len(_rows(store))
        except sqlite3.OperationalError:
            count = 0
        if count >= 2:
            break
        time.sleep(0.1)
    assert proc.poll() is None and count >= 2
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = err.strip().splitlines()[-1]
    stored = len(_rows(store))
    assert last == (f"parsimony bench: interrupted; {stored} finished tasks are stored in {store} "
                    "(tasks still running were not stored); rerun the same command to resume")
    resumed = subprocess.run([*command, "--seeds", "0"], capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    keys = [r[:5] for r in _rows(store)]
    assert len(keys) == len(set(keys)) >= 8


def test_ctrl_c_once_every_task_is_stored_with_workers_ends_cleanly(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    store = tmp_path / "r.sqlite"
    # as a terminal's Ctrl-C: SIGINT to the runner and its joblib workers, just after the report is printed,
    # when it was shutting the workers down and tearing the interpreter down (rc -2, or a traceback and rc 0)
    proc = subprocess.Popen([sys.executable, "-m", "parsimony.cli", "bench", "run", "--datasets", "heteroskedastic",
                             "--methods", "QDT", "--folds", "2", "--seeds", "0,1", "--budget", "tiny", "--n-jobs", "2",
                             "--no-progress", "--store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in proc.stdout:
        if line.startswith(b"results in"):
            break
    time.sleep(0.3)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=120)
    err = proc.stderr.read().decode()
    assert proc.returncode in (0, 130), err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == 130:
        assert err.strip().splitlines()[-1] == "parsimony: interrupted"
    assert len(_rows(store)) == 8
