"""SRBench's tracks: the symbolic-solution criterion, the metadata parser and fetch, data, the suites."""

import functools
import http.server
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest
import sympy

from parsimony.cli import main
from parsimony.experiments import srbench
from parsimony.experiments.srbench_report import coverage_note, plot_accuracy_size, solution_rates, srbench_report

x, y, z = sympy.symbols("x y z")

FEYNMAN = """# Created by William La Cava (@lacava)
dataset: {name}
description: |
    A synthetic physics model from the Feynman Lectures on Physics.
    Formula and simulated variable ranges given below.

    {target} = {formula}

{ranges}

    Note the original data has been down-sampled to 100,000 rows (see source).
source: Feynman Symbolic Regression Database
task: regression
target:
  type: continuous
  description: {target}, something
features: # list of features in the dataset
{features}
"""


def feynman_yaml(name, formula, variables, target="F"):
    ranges = "\n".join(f"    {v} in [{lo},{hi}]" for v, lo, hi in variables)
    features = "\n".join(f"  - name: {v}\n    type: continuous\n    description: a variable" for v, _, _ in variables)
    return FEYNMAN.format(name=name, target=target, formula=formula, ranges=ranges, features=features)


STROGATZ = """# Reviewed by William La Cava
dataset: strogatz_toy1
description: |
    This is one state of a 2-state dynamic model.

    x' = 20 - x - (x * y)/(1+0.5 * x**2)

    It is adapted from Steven Strogatz's book.
source: https://github.com/lacava/ode-strogatz
task: regression
target:
  type: continuous
  description: rate of change of x
features:
  - name: x
    type: continuous
  - name: "y"
    type: continuous
"""

LINEAR = [("feynman_toy_lin", "2*a + 3*b", [("a", 1.0, 5.0), ("b", 1.0, 2.0)]),
          ("feynman_toy_prod", "a*b/lambda", [("a", 1.0, 5.0), ("b", 1.0, 5.0), ("lambda", 1.0, 3.0)])]


# ----------------------------------------------------------------------------- the criterion


@pytest.mark.parametrize("model, truth", [
    (0.5 * x, x / 2),                                              # x/2 vs 0.5*x
    (3.0 * x * y, x * y),                                          # a rescaled constant
    (y + x * z, z * x + y),                                        # rearranged terms
    (x ** 2 + 1.5, x ** 2),                                        # an added constant
    (0.50004 * x * sympy.sin(y), x * sympy.sin(y) / 2),            # equal once rounded to 3 decimals
    ((x + y) * (x - y), x ** 2 - y ** 2),                          # equal after simplification
    (2.0 / (1 + x), 1 / (x + 1)),
    # a whole float inside a nonlinearity: sympy keeps 1.0 apart from the truth's 1 unless rounded to it
    ((x - 1.0 * y * z) / sympy.sqrt(1.0 - z ** 2 / y ** 2), (x - y * z) / sympy.sqrt(1 - z ** 2 / y ** 2)),
    (sympy.sqrt(0.99996 - z ** 2), sympy.sqrt(1 - z ** 2)),
])
def test_equivalent_forms_are_solutions(model, truth):
    assert srbench.symbolic_solution(model, truth) == "yes"


@pytest.mark.parametrize("model, truth", [
    (x ** 3, x ** 2),                                              # a wrong exponent
    (x + y, x + y + z),                                            # a missing term
    (sympy.sin(2 * x), sympy.sin(x)),                              # a constant off by a factor inside a nonlinearity
    (sympy.exp(0.5 * x) * y, sympy.exp(x) * y),
    (2.0 * x * y + 3, x * y),                                      # rescaled and shifted: neither a difference nor a ratio
    (sympy.Float(1.7), x),                                         # a constant model of a varying truth
    (0.0004 * x, x),                                               # rounds to the constant 0
    (sympy.sqrt(1.002 - z ** 2), sympy.sqrt(1 - z ** 2)),          # 1.002 is not the whole 1
])
def test_near_misses_are_not_solutions(model, truth):
    assert srbench.symbolic_solution(model, truth) == "no"


def _busy(expr=None, seconds=120.0):
    """Burn CPU for up to ``seconds`` of wall time (a CPU time limit must stop it long before)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return expr


def test_a_simplification_past_its_time_limit_is_a_timeout(monkeypatch):
    monkeypatch.setattr(srbench, "_simplify", _busy)
    start = time.perf_counter()
    assert srbench.symbolic_solution(x * y, x * y, timeout=0.2) == "timeout"
    assert time.perf_counter() - start < 100
    assert srbench.model_size(x * y + x, timeout=0.2) == srbench.count_nodes(x * y + x)  # the unsimplified size


def test_the_time_limit_counts_cpu_time_not_waiting():
    assert srbench.with_time_limit(time.sleep, (0.5,), 0.2) is None  # sleeping uses no CPU: no timeout


def test_the_time_limit_works_outside_the_main_thread():
    out = {}

    def worker():
        try:
            srbench.with_time_limit(_busy, (None,), 0.3)
        except srbench.SympyTimeout:
            out["timeout"] = True
        out["value"] = srbench.with_time_limit(sympy.simplify, ((x + y) ** 2 - x ** 2 - 2 * x * y,), 20)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(150)
    assert out == {"timeout": True, "value": y ** 2}


def test_criterion_bad_input():
    with pytest.raises(TypeError, match="sympy"):
        srbench.symbolic_solution("x", x)
    with pytest.raises(ValueError, match="timeout"):
        srbench.symbolic_solution(x, x, timeout=0)


def test_model_size_counts_the_simplified_model():
    assert srbench.count_nodes(x * y + 2) == 5  # Add, Mul, x, y, 2
    assert srbench.model_size(x + x + x) == srbench.count_nodes(3 * x)


# ----------------------------------------------------------------------------- the parser


def test_parse_feynman_metadata():
    text = feynman_yaml("feynman_toy_prod", "a*b/lambda", LINEAR[1][2], target="E_n")
    problem = srbench.parse_metadata(text)
    assert problem.name == "feynman_toy_prod" and problem.group == "feynman" and problem.target == "E_n"
    assert problem.variables == (("a", 1.0, 5.0), ("b", 1.0, 5.0), ("lambda", 1.0, 3.0))
    assert problem.has_ranges
    a, b, lam = sympy.symbols("a b lambda")
    assert sympy.simplify(problem.truth() - a * b / lam) == 0


def test_parse_strogatz_metadata_without_ranges():
    problem = srbench.parse_metadata(STROGATZ)
    assert problem.group == "strogatz" and problem.target == "x'" and problem.features == ["x", "y"]
    assert not problem.has_ranges
    sx, sy = sympy.symbols("x y")
    assert sympy.simplify(problem.truth() - (20 - sx - sx * sy / (1 + sympy.Rational(1, 2) * sx ** 2))) == 0
    with pytest.raises(ValueError, match="no sampling ranges"):
        srbench.generate_data(problem, 10)


@pytest.mark.parametrize("text, match", [
    ("description: |\n    y = x\n", "no 'dataset:'"),
    ("dataset: feynman_bad\ndescription: |\n    nothing here\nfeatures:\n  - name: x\n", "no formula"),
    (feynman_yaml("feynman_bad", "a*q", [("a", 1, 2)]), r"uses \['q'\]"),
    (feynman_yaml("feynman_bad", "a*(b", [("a", 1, 2), ("b", 1, 2)]), "cannot read the formula"),
])
def test_parse_metadata_rejects_what_is_not_a_problem(text, match):
    with pytest.raises(ValueError, match=match):
        srbench.parse_metadata(text, source="some/metadata.yaml")


# ----------------------------------------------------------------------------- data


def test_generated_data_follow_the_formula_and_the_noise_level():
    problem = srbench.parse_metadata(feynman_yaml(*LINEAR[0]))
    X, y_, Xt, yt = srbench.generate_data(problem, 4000, noise=0.1, seed=3, test_rows=500)
    assert X.shape == (4000, 2) and Xt.shape == (500, 2)
    assert X[:, 0].min() >= 1 and X[:, 0].max() <= 5 and X[:, 1].min() >= 1 and X[:, 1].max() <= 2
    clean = 2 * X[:, 0] + 3 * X[:, 1]
    assert np.std(y_ - clean) == pytest.approx(0.1 * np.sqrt(np.mean(clean ** 2)), rel=0.05)
    np.testing.assert_allclose(yt, 2 * Xt[:, 0] + 3 * Xt[:, 1])  # the test target is noise-free
    again = srbench.generate_data(problem, 4000, noise=0.1, seed=3, test_rows=500)
    assert all(np.array_equal(u, v) for u, v in zip((X, y_, Xt, yt), again))
    other = srbench.generate_data(problem, 4000, noise=0.1, seed=4, test_rows=500)
    assert not np.array_equal(X, other[0])
    X0, y0, _, _ = srbench.generate_data(problem, 4000, noise=0.0, seed=3)
    np.testing.assert_array_equal(X0, X)  # the noise is drawn after the inputs
    np.testing.assert_allclose(y0, clean)


def test_split_table_is_srbench_75_25_with_a_training_cap():
    X = np.arange(400.0).reshape(200, 2)
    target = X[:, 0]
    Xtr, ytr, Xte, yte = srbench.split_table(X, target, rows=100, noise=0.0, seed=0)
    assert len(ytr) == 100 and len(yte) == 50
    assert not set(Xtr[:, 0]) & set(Xte[:, 0])
    Xtr, ytr, _, _ = srbench.split_table(X, target, rows=None, noise=0.0, seed=0)
    assert len(ytr) == 150


# ----------------------------------------------------------------------------- fetch


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """PMLB's layout (NAME/metadata.yaml) served on 127.0.0.1; yields (folder, URL template)."""
    root = tmp_path / "pmlb"
    for name, formula, variables in LINEAR:
        (root / name).mkdir(parents=True)
        (root / name / "metadata.yaml").write_text(feynman_yaml(name, formula, variables))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}/{{name}}/metadata.yaml"
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fetch_metadata_downloads_checks_and_caches(served, tmp_path):
    _, url = served
    cache = tmp_path / "cache"
    got = srbench.fetch_metadata(["feynman_toy_lin", "feynman_toy_prod", "feynman_toy_none"], cache=cache, url=url)
    assert sorted(got.downloaded) == ["feynman_toy_lin", "feynman_toy_prod"]
    assert "404" in got.failed["feynman_toy_none"]
    assert (cache / "feynman_toy_lin" / "metadata.yaml").is_file()
    assert "feynman_toy_lin" in (cache / "checksums.json").read_text()
    # a second fetch reads the cache (no server needed), and a tampered file fails its recorded checksum
    offline = f"http://127.0.0.1:{_closed_port()}/{{name}}/metadata.yaml"
    again = srbench.fetch_metadata(["feynman_toy_lin"], cache=cache, url=offline)
    assert again.downloaded == [] and "feynman_toy_lin" in again.paths
    path = cache / "feynman_toy_prod" / "metadata.yaml"
    path.write_text(path.read_text().replace("a*b/lambda", "a*b"))
    tampered = srbench.fetch_metadata(["feynman_toy_prod", "feynman_toy_lin"], cache=cache, url=offline)
    assert "cannot reach" in tampered.failed["feynman_toy_prod"] and tampered.unreachable
    assert not path.exists()  # discarded, fetched again when online


def test_fetch_metadata_refuses_a_file_failing_its_shipped_checksum(served, tmp_path, monkeypatch):
    _, url = served
    monkeypatch.setattr(srbench, "known_metadata_checksums", lambda: {"feynman_toy_lin": "0" * 64})
    got = srbench.fetch_metadata(["feynman_toy_lin"], cache=tmp_path / "cache", url=url)
    assert "checksum mismatch" in got.failed["feynman_toy_lin"]
    assert not (tmp_path / "cache" / "feynman_toy_lin" / "metadata.yaml").exists()


def test_fetch_metadata_offline_names_every_problem(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/{{name}}/metadata.yaml"
    got = srbench.fetch_metadata(["feynman_a", "feynman_b"], cache=tmp_path, url=url)
    assert set(got.failed) == {"feynman_a", "feynman_b"} and got.unreachable
    assert got.failed["feynman_b"].startswith("not tried")
    with pytest.raises(ValueError, match="PMLB dataset names"):
        srbench.fetch_metadata(["../etc"], cache=tmp_path, url=url)


def test_shipped_lists_and_figures():
    problems = srbench.groundtruth_problems()
    assert (problems["group"] == "feynman").sum() == 119 and (problems["group"] == "strogatz").sum() == 14
    assert len(srbench.blackbox_datasets()) == 122
    rates = srbench.published_rates()
    assert set(rates["noise"]) == {0.0, 0.001, 0.01, 0.1} and rates["rate"].between(0, 100).all()
    medians = srbench.published_medians().set_index("method")
    assert medians.loc["Operon", "size"] == 50 and set(medians.index[medians["front"] == 1]) == {"Operon", "GP-GOMEA", "DSR"}
    assert len(srbench.known_metadata_checksums()) == 60


# ----------------------------------------------------------------------------- the suites


def _run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_groundtruth_suite_from_127_0_0_1_runs_resumes_and_reports(served, tmp_path, monkeypatch, capsys):
    _, url = served
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(srbench.ENV_METADATA_URL, url)
    store = str(tmp_path / "gt.sqlite")
    argv = ["bench", "run", "--suite", "srbench-groundtruth", "--datasets", "feynman_toy_lin,feynman_toy_prod",
            "--noise", "0,0.01", "--rows", "200", "--seeds", "0,1", "--methods", "LQR", "--store", store,
            "--n-jobs", "1", "--no-progress"]
    code, out, err = _run(argv, capsys)
    assert code == 0, err
    assert "8 tasks to run" in err and "estimated" in err and "CPU-" in err
    rows = pd.read_sql_query("SELECT * FROM results", __import__("sqlite3").connect(store))
    assert len(rows) == 8 and (rows["status"] == "ok").all()
    by = rows.set_index(["dataset", "seed"])
    # linear QR recovers the linear formula exactly without noise, never the product
    assert (by.loc["feynman_toy_lin|noise=0", "solution"] == "yes").all()
    assert (by.loc["feynman_toy_prod|noise=0", "solution"] == "no").all()
    assert (by.loc["feynman_toy_lin|noise=0", "r2"] > 0.999999).all()
    assert "LQR (this run)" in out and "GP-GOMEA" in out and "50.0% (2/4)" in out
    assert "2 problems not in SRBench (feynman_toy_lin, feynman_toy_prod)" in out and "subset" in out
    code, _, err = _run(argv, capsys)  # resumed: nothing left to run
    assert code == 0 and "0 tasks to run" in err
    code, out, _ = _run(["bench", "report", store, "--compare", "srbench"], capsys)
    assert code == 0 and "feynman_toy_lin" in out and "Per problem" in out
    code, plain, _ = _run(["bench", "report", store], capsys)  # an SRBench store gets its own tables anyway
    assert code == 0 and plain == out


def test_groundtruth_suite_offline_names_the_missing_problems(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(srbench.ENV_METADATA_URL, f"http://127.0.0.1:{_closed_port()}/{{name}}/metadata.yaml")
    monkeypatch.delenv("PARSIMONY_DATA", raising=False)
    code, out, err = _run(["bench", "run", "--suite", "srbench-groundtruth", "--datasets", "feynman_I_12_5,feynman_II_11_28",
                           "--store", str(tmp_path / "s.sqlite"), "--no-progress"], capsys)
    assert code != 0
    assert "feynman_I_12_5" in err and "feynman_II_11_28" in err and "--data-dir" in err
    assert "Traceback" not in err and not (tmp_path / "s.sqlite").exists()


def test_blackbox_suite_on_local_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    rng = np.random.default_rng(0)
    data = tmp_path / "pmlb"
    for name in ("toy_a", "toy_b"):
        X = rng.uniform(size=(120, 3))
        frame = pd.DataFrame(X, columns=["u", "v", "w"]).assign(target=1 + 2 * X[:, 0] - X[:, 2] + 0.01 * rng.normal(size=120))
        (data / name).mkdir(parents=True)
        frame.to_csv(data / name / f"{name}.tsv.gz", sep="\t", index=False)
    store, out_dir = str(tmp_path / "bb.sqlite"), tmp_path / "report"
    code, out, err = _run(["bench", "run", "--suite", "srbench-blackbox", "--data-dir", str(data), "--datasets",
                           "toy_a,toy_b", "--methods", "LQR", "--seeds", "0", "--store", store, "--no-fetch",
                           "--n-jobs", "1", "--no-progress", "--out", str(out_dir)], capsys)
    assert code == 0, err
    assert "Operon" in out and "this run" in out and "2 of SRBench's 122" not in out  # toy sets are not SRBench's
    table = pd.read_csv(out_dir / "srbench_blackbox.csv").set_index(["source", "method"])
    assert table.loc[("this run", "LQR"), "median R2"] > 0.99
    assert table.loc[("this run", "LQR"), "median size"] <= 12  # a + b*u + c*v + d*w
    assert (out_dir / "srbench_accuracy_size.png").stat().st_size > 10_000
    code, _, err = _run(["bench", "run", "--suite", "srbench-blackbox", "--noise", "0.1", "--store", store], capsys)
    assert code != 0 and "srbench-groundtruth" in err


def test_linear_model_expression_predicts_like_the_model():
    from parsimony.experiments.baselines import make_lqr

    rng = np.random.default_rng(1)
    X = rng.uniform(1, 3, size=(80, 2))
    model = make_lqr(0.5, 0, tune=False).fit(X, 3 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=80))
    expr = srbench.model_expression(model, ["p", "q"])
    f = sympy.lambdify(sympy.symbols("p q"), expr)
    np.testing.assert_allclose(f(X[:, 0], X[:, 1]), model.predict(X), rtol=1e-8)


def test_report_counts_rates_and_says_what_a_run_covers():
    rows = pd.DataFrame({
        "dataset": ["feynman_I_12_5|noise=0", "feynman_I_12_5|noise=0", "feynman_II_11_28|noise=0",
                    "feynman_II_11_28|noise=0"],
        "method": ["SQR"] * 4, "seed": [0, 1, 0, 1], "status": ["ok", "ok", "ok", "failed"],
        "solution": ["yes", "timeout", "yes", None], "r2": [1.0, 0.9995, 0.5, np.nan],
        "fit_time": [1.0, 2.0, 3.0, np.nan], "n_train": [1000, 1000, 1000, np.nan]})
    rates = solution_rates(rows).iloc[0]
    assert rates["runs"] == 4 and rates["failed"] == 1 and rates["sympy timeouts"] == 1
    assert rates["symbolic solution"] == "50.0% (2/4)" and rates["accuracy solution (R2 > 0.999)"] == "50.0% (2/4)"
    note = coverage_note(rows, "groundtruth")
    assert "2 of the 119 Feynman problems (feynman_II_11_28, feynman_I_12_5)" in note and "subset" in note
    assert "2 of SRBench's 10" in note


def test_report_refuses_a_store_of_another_suite(tmp_path):
    rows = pd.DataFrame({"dataset": ["d"], "method": ["SQR"], "quantile": [0.5], "fold": [0], "seed": [0],
                         "folds": [5], "settings": ["s"], "data": ["x"], "status": ["ok"]})
    with pytest.raises(ValueError, match="not written by an SRBench suite"):
        srbench_report(rows)


def test_accuracy_size_plot(tmp_path):
    ours = pd.DataFrame({"method": ["SQR", "LQR"], "r2": [0.8, 0.5], "size": [9.0, 12.0]})
    plot_accuracy_size(ours, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000


def test_strogatz_problems_read_their_data_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    rng = np.random.default_rng(2)
    folder = tmp_path / "pmlb" / "strogatz_toy1"
    folder.mkdir(parents=True)
    (folder / "metadata.yaml").write_text(STROGATZ)
    X = rng.uniform(0, 3, size=(160, 2))
    rate = 20 - X[:, 0] - X[:, 0] * X[:, 1] / (1 + 0.5 * X[:, 0] ** 2)
    pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "target": rate}).to_csv(folder / "strogatz_toy1.tsv.gz", sep="\t",
                                                                       index=False)
    store = str(tmp_path / "s.sqlite")
    code, out, err = _run(["bench", "run", "--suite", "srbench-groundtruth", "--data-dir", str(tmp_path / "pmlb"),
                           "--datasets", "strogatz_toy1", "--noise", "0", "--seeds", "0", "--methods", "LQR",
                           "--store", store, "--no-fetch", "--n-jobs", "1", "--no-progress"], capsys)
    assert code == 0, err
    row = pd.read_sql_query("SELECT * FROM results", __import__("sqlite3").connect(store)).iloc[0]
    assert row["status"] == "ok" and row["n_train"] == 120 and row["n_test"] == 40  # PMLB's file, split 75/25
    assert row["solution"] == "no" and 0 < row["r2"] < 1


@pytest.mark.parametrize("peer", ["pyoperon", "eggp"])
def test_a_peer_model_as_sympy_predicts_like_the_peer(peer):
    pytest.importorskip(peer)
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(150, 2))
    target = X[:, 0] * X[:, 1] + np.sin(X[:, 0])
    if peer == "pyoperon":
        from pyoperon.sklearn import SymbolicRegressor

        model = SymbolicRegressor(allowed_symbols=srbench._OPERATORS, random_state=0, n_threads=1,
                                  max_evaluations=5000, max_time=3).fit(X, target)
    else:
        from eggp import EGGP

        model = EGGP(gen=10, nPop=30, maxSize=12, max_time=3).fit(X, target)
    expr = srbench.model_expression(model, ["p", "q"])
    f = sympy.lambdify(sympy.symbols("p q"), expr)
    np.testing.assert_allclose(f(X[:, 0], X[:, 1]), model.predict(X), rtol=1e-5, atol=1e-5)


def test_a_peers_printed_functions_parse_in_either_case():
    # eggp prints its reciprocal as Recip (a CI run failed on it); each name in lower case and capitalised
    text = "Recip(x0 - 4) + Square(x1) + cube(x0) + Cbrt(x1) + Logabs(x0 - 3) + Sqrtabs(x1 - 3) + Sinh(x0) + Aq(x0, x1)"
    f = sympy.lambdify(sympy.symbols("x0 x1"), srbench._parse_printed(text, 2, "x{}", 0))
    a, b = np.array([1.5, 2.5]), np.array([1.2, 2.9])
    expected = (1 / (a - 4) + b ** 2 + a ** 3 + np.cbrt(b) + np.log(np.abs(a - 3)) + np.sqrt(np.abs(b - 3))
                + np.sinh(a) + a / np.sqrt(1 + b ** 2))
    np.testing.assert_allclose(f(a, b), expected, rtol=1e-12)


def test_the_estimate_follows_the_peers_time_limit_and_measured_times():
    problem = srbench.parse_metadata(feynman_yaml(*LINEAR[0]))
    items = srbench.groundtruth_payloads({problem.name: problem}, [0.0, 0.01], 1000, 333)
    tasks = srbench.make_tasks(items, ["Operon", "SQR"], [0, 1])
    sizes = {key: (1000, 2) for key in items}
    short, per = srbench.estimate_seconds(tasks, sizes, srbench.BUDGET.replace(sr_time_limit=20.0))
    long, _ = srbench.estimate_seconds(tasks, sizes, srbench.BUDGET.replace(sr_time_limit=80.0))
    assert long - short == pytest.approx(4 * 60.0)  # four Operon tasks, 60 s more each
    assert 0 < per["SQR"] < per["Operon"]
    measured = pd.DataFrame({"method": ["SQR"], "status": ["ok"], "fit_time": [50.0]})
    _, rescaled = srbench.estimate_seconds(tasks, sizes, measured=measured)
    assert rescaled["SQR"] == pytest.approx(4 * (50.0 + 2.0))


def test_pysr_is_skipped_with_a_reason_without_its_package_or_julia(monkeypatch, capsys):
    import shutil

    from parsimony.experiments import _optional

    monkeypatch.setattr(_optional, "available", lambda module: module != "pysr")
    assert "pip install 'parsimony-ml[julia]'" in srbench.method_unavailable("PySR")
    monkeypatch.setattr(_optional, "available", lambda module: True)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("JULIA_BINDIR", raising=False)
    assert "needs Julia" in srbench.method_unavailable("PySR")
    assert srbench.method_unavailable("LQR") is None
    code, _, err = _run(["bench", "run", "--suite", "srbench-groundtruth", "--methods", "PySR", "--datasets",
                         "feynman_I_12_5", "--no-fetch", "--store", "unused.sqlite"], capsys)
    assert code != 0 and "skipped: PySR needs Julia" in err and "Traceback" not in err
