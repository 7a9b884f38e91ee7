"""The optional Julia backend.

- ``@pytest.mark.julia``: parity of ParsimonyKernels with the numba twins on the same inputs
  (and SQR through PySR); skipped with the reason when Julia does not work.
- Always: backend resolution and errors without Julia, the PySR argument mapping (without
  importing pysr), the conversion of PySR's hall of fame, the juliapkg declarations and their
  packaging, and a tree-sitter syntax check of every ``.jl`` file.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sympy

from parsimony import _julia, backend
from parsimony.ensembles import _cbcd_julia
from parsimony.losses import Absolute, Pinball, Squared
from parsimony.symbolic import _pysr
from parsimony.metrics import TOKEN_COMPLEXITY, pinball_loss

ROOT = Path(__file__).resolve().parents[1]
JULIA_DIR = ROOT / "julia"
JL_FILES = sorted(JULIA_DIR.rglob("*.jl"))
SEEDS = Path(os.environ.get("PARSIMONY_SHARED_SEEDS", ROOT.parent / "shared" / "seeds"))


@pytest.fixture
def no_julia(monkeypatch):
    """Pretend juliacall is missing (whatever this machine has)."""
    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (False, "juliacall could not be imported (test)"))
    monkeypatch.setattr(_julia, "julia_status", backend.julia_status)
    _julia.kernels.cache_clear()
    yield
    _julia.kernels.cache_clear()


# ------------------------------------------------------------------------ tree-sitter syntax check


def julia_syntax_errors(source: bytes) -> list[str]:
    """Syntax errors of Julia source by tree-sitter's Julia grammar: ERROR and MISSING nodes."""
    ts = pytest.importorskip("tree_sitter")
    ts_julia = pytest.importorskip("tree_sitter_julia")
    parser = ts.Parser(ts.Language(ts_julia.language()))
    tree = parser.parse(source)
    errors = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_missing:
            errors.append(f"missing {node.type!r} at line {node.start_point[0] + 1}")
        elif node.is_error or node.type == "ERROR":
            errors.append(f"syntax error at line {node.start_point[0] + 1}, column {node.start_point[1] + 1}")
        if node.has_error:
            stack.extend(node.children)
    return errors


def test_julia_package_files_exist():
    names = {p.relative_to(JULIA_DIR).as_posix() for p in JL_FILES}
    assert {"src/ParsimonyKernels.jl", "src/cbcd.jl",
            "test/runtests.jl"} <= names


@pytest.mark.parametrize("path", JL_FILES, ids=lambda p: p.relative_to(JULIA_DIR).as_posix())
def test_julia_file_parses(path):
    assert julia_syntax_errors(path.read_bytes()) == []


@pytest.mark.parametrize("snippet", [
    b"function f(x)\n    return x +\nend\n",         # dangling operator
    b"function f(x)\n    return x\n",               # unterminated block
    b"x = [1, 2\n",                                  # unclosed bracket
    b"if x > 1\n    y = 2\nelse\n",                  # if without end
    b"f(x) = (x + )\n",                             # missing operand
    b"x = \"unterminated\n",                         # open string
    b"a = b ? c\n",                                  # ternary without else
])
def test_syntax_checker_catches_broken_julia(snippet):
    assert julia_syntax_errors(snippet)


def test_every_include_exists_and_is_checked():
    main = (JULIA_DIR / "src" / "ParsimonyKernels.jl").read_text()
    included = re.findall(r'include\("([^"]+)"\)', main)
    assert included
    for name in included:
        assert (JULIA_DIR / "src" / name) in JL_FILES


def test_generated_losses_are_valid_julia():
    for tau in (0.01, 0.5, 0.9, 1 / 3):
        code = Pinball(tau).julia_source()
        assert julia_syntax_errors(code.encode()) == []
        literal = re.search(r"convert\(typeof\(r\), ([^)]+)\)", code).group(1)
        assert float(literal) == tau  # the quantile survives the round trip exactly
    for loss in (Squared(), Absolute()):
        assert julia_syntax_errors(loss.julia_source().encode()) == []


# ------------------------------------------------------------------- declarations and packaging


def _juliapkg_resolved(path: Path) -> dict:
    """Packages of a juliapkg.json with dev paths resolved the way juliapkg does (dirname + normpath)."""
    data = json.loads(path.read_text())
    out = {}
    for name, spec in data["packages"].items():
        spec = dict(spec)
        if "path" in spec:
            spec["path"] = os.path.normpath(os.path.join(os.path.dirname(path), spec["path"]))
        out[name] = spec
    return data.get("julia"), out


def test_juliapkg_declarations_agree_and_point_at_the_package():
    top_compat, top = _juliapkg_resolved(ROOT / "juliapkg.json")
    inner_compat, inner = _juliapkg_resolved(ROOT / "parsimony" / "juliapkg.json")
    # juliapkg merges every juliapkg.json it finds and rejects differing paths for one package:
    # from a checkout both files are found, so they must resolve to the same directory
    assert top == inner and top_compat == inner_compat
    assert top_compat.startswith("^1.")
    assert top["SymbolicRegression"]["uuid"] == "8254be44-1295-4e6a-a16d-46603ac705cb"
    kernels = top["ParsimonyKernels"]
    assert kernels["dev"] is True and kernels["uuid"] == _julia.KERNELS_UUID
    package_dir = Path(kernels["path"])
    assert package_dir.resolve() == JULIA_DIR.resolve()
    # the imported package (a source checkout or an installed wheel) carries the same Julia files
    for path in [JULIA_DIR / "Project.toml", *JL_FILES]:
        installed = _julia.KERNELS_DIR / path.resolve().relative_to(JULIA_DIR.resolve())
        assert installed.read_bytes() == path.read_bytes(), installed
    project = (package_dir / "Project.toml").read_text()
    assert re.search(r'^name = "ParsimonyKernels"$', project, re.M)
    assert re.search(rf'^uuid = "{_julia.KERNELS_UUID}"$', project, re.M)
    assert re.search(r'^julia = "1\.10"$', project, re.M)


def test_wheel_ships_the_declaration_and_every_julia_file():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["parsimony"]
    assert "juliapkg.json" in patterns
    package = ROOT / "parsimony"
    shipped = {p.resolve() for pattern in patterns for p in package.glob(pattern)}
    needed = {(JULIA_DIR / "Project.toml").resolve(), *(p.resolve() for p in JL_FILES)}
    assert needed <= shipped
    # in the wheel, parsimony/juliapkg.json's relative path must reach the shipped copy
    _, inner = _juliapkg_resolved(package / "juliapkg.json")
    assert Path(inner["ParsimonyKernels"]["path"]) == package / "julia"


def test_julia_extra_declares_juliacall_and_pysr():
    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["julia"]
    assert any(d.startswith("juliacall") for d in extra) and any(d.startswith("pysr") for d in extra)


# ---------------------------------------------------------------------------- without Julia


def test_import_never_loads_julia_or_pysr():
    code = ("import sys, parsimony, parsimony._julia, parsimony.backend;"
            "heavy = [m for m in ('juliacall', 'juliapkg', 'pysr') if m in sys.modules]; assert not heavy, heavy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_without_julia_the_twins_and_pysr_explain(no_julia):
    from parsimony.ensembles import _cbcd

    assert _cbcd_julia.get_kernel("cbcd", "native") is _cbcd.cbcd
    assert _cbcd_julia.get_kernel("cbcd", "julia") is _cbcd_julia.cbcd
    with pytest.raises(backend.JuliaUnavailableError, match="juliacall could not be imported"):
        _julia.kernels()
    with pytest.raises(backend.JuliaUnavailableError):
        _cbcd_julia.residual(np.zeros((1, 2), dtype=np.int64), np.ones((1, 1)), np.array([0, 1]), np.ones(2),
                             np.ones(1, dtype=np.int64), np.ones(1), 1.0)
    with pytest.raises(backend.JuliaUnavailableError, match="julia"):
        _pysr.fit_pysr(np.ones((5, 1)), np.arange(5.0), 0.5)
    with pytest.raises(ValueError, match="unknown kernel"):
        _cbcd_julia.get_kernel("simplex", "native")
    with pytest.raises(ValueError, match="resolve the backend first"):
        _cbcd_julia.get_kernel("cbcd", "auto")


def test_julia_session_module_holds_nothing_method_specific():
    public = {name for name in vars(_julia) if not name.startswith("_")}
    assert public <= {"annotations", "functools", "Path", "JULIA_INSTALL_HINT", "JuliaUnavailableError",
                      "julia_status", "KERNELS_UUID", "KERNELS_DIR", "kernels"}


def test_no_import_cycle_between_parsimony_modules():
    """The package's module-level import graph is acyclic (every module imported in a fresh interpreter)."""
    import ast

    package = ROOT / "parsimony"
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    edges.add(full if full in modules else target)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[name] = {e for e in edges if e in modules and e != name and not name.startswith(e + ".")}
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [node, nxt]))
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    for module in ("parsimony._julia", "parsimony.symbolic._pysr", "parsimony.ensembles._cbcd_julia",
                   "parsimony.symbolic.regressor", "parsimony.ensembles.forestprune", "parsimony.losses"):
        out = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        assert out.returncode == 0, (module, out.stderr)


def test_cbcd_twin_rejects_arrays_it_cannot_update_in_place():
    R = np.zeros(3)
    R.flags.writeable = False
    fac = (np.zeros((1, 3), dtype=np.int64), np.zeros((1, 1)), np.array([0, 1], dtype=np.int64))
    tables = (np.zeros((1, 1, 1)), np.zeros((1, 2)), np.zeros((1, 2)), np.ones(1, dtype=np.int64))
    with pytest.raises(TypeError, match="R must be a writeable float64"):
        _cbcd_julia.cbcd(*fac, *tables, R, np.zeros(1, dtype=np.int64), np.ones(1), 1.0, 0.0, 0.0, 0, 0, 5,
                         np.empty(0))
    with pytest.raises(TypeError, match="layers must be a writeable int64"):
        _cbcd_julia.cbcd(*fac, *tables, np.zeros(3), [0], np.ones(1), 1.0, 0.0, 0.0, 0, 0, 5, np.empty(0))


@pytest.mark.parametrize("name", sorted(_cbcd_julia.TWINS))
def test_twin_wrappers_take_the_native_arguments(name):
    """Each Julia wrapper has its numba twin's parameter list (same names, same order)."""
    import inspect

    from parsimony.ensembles import _cbcd

    native = getattr(_cbcd, name)
    native = getattr(native, "py_func", native)
    assert list(inspect.signature(getattr(_cbcd_julia, name)).parameters) == list(inspect.signature(native).parameters)


def test_kmeans_twin_takes_the_native_arguments():
    import inspect

    from parsimony.trees import _kmeans, _kmeans_julia

    native = inspect.signature(_kmeans.cluster_costs.py_func).parameters
    assert list(inspect.signature(_kmeans_julia.cluster_costs).parameters) == list(native)


def test_osrt_without_julia_auto_is_native_and_julia_explains(no_julia):
    from parsimony.trees import OptimalSparseRegressionTree

    rng = np.random.default_rng(0)
    X = (rng.random((40, 4)) < 0.5).astype(int)
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    with pytest.raises(backend.JuliaUnavailableError, match=r"pip install 'parsimony-ml\[julia\]'"):
        OptimalSparseRegressionTree(binarizer=None, backend="julia").fit(X, y)
    auto = OptimalSparseRegressionTree(binarizer=None).fit(X, y)
    assert auto.backend_ == "native"


def _forest_data():
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(80, 3))
    y = X[:, 0] + 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=80)
    forest = FrozenEstimator(RandomForestRegressor(n_estimators=8, max_depth=3, random_state=0).fit(X, y))
    return X, y, forest


def test_forestprune_without_julia_auto_is_native_and_julia_explains(no_julia):
    from parsimony.ensembles import ForestPrune

    X, y, forest = _forest_data()
    with pytest.raises(backend.JuliaUnavailableError, match=r"pip install 'parsimony-ml\[julia\]'"):
        ForestPrune(forest, alpha=0.05, backend="julia").fit(X, y)
    with pytest.raises(backend.JuliaUnavailableError):
        ForestPrune(forest, backend="julia").path(X, y, alphas=[0.1])
    auto = ForestPrune(forest, alpha=0.05, random_state=0).fit(X, y)
    native = ForestPrune(forest, alpha=0.05, random_state=0, backend="native").fit(X, y)
    assert auto.backend_ == native.backend_ == "native"
    np.testing.assert_array_equal(auto.layers_, native.layers_)
    with pytest.raises(ValueError, match="backend must be one of"):
        ForestPrune(forest, backend="fortran").fit(X, y)


def test_forestprune_sends_every_sweep_to_the_julia_twin(monkeypatch):
    """backend="julia" routes CBCD through ``_cbcd_julia.cbcd`` (here standing in the numba kernel)."""
    from parsimony.ensembles import ForestPrune, _cbcd

    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (True, "ok"))
    calls = []

    def twin(*args):
        calls.append(args[7].shape)  # R, updated in place like the juliacall view
        return _cbcd.cbcd(*args)

    monkeypatch.setattr(_cbcd_julia, "cbcd", twin)
    X, y, forest = _forest_data()
    for joint, polish in ((False, None), (True, "ridge")):
        ref = ForestPrune(forest, alpha=0.05, polish=polish, joint=joint, random_state=0,
                          backend="native").fit(X, y)
        assert not calls
        model = ForestPrune(forest, alpha=0.05, polish=polish, joint=joint, random_state=0,
                            backend="julia").fit(X, y)
        assert model.backend_ == "julia" and len(calls) == 1 + model.n_swaps_
        np.testing.assert_array_equal(model.layers_, ref.layers_)
        np.testing.assert_array_equal(model.coef_, ref.coef_)
        assert model.objective_ == ref.objective_
        calls.clear()
    path = ForestPrune(forest, random_state=0).path(X, y, alphas=[0.2, 0.02])  # auto: Julia "works"
    assert len(path) == 2 and len(calls) >= 2


# ---------------------------------------------------------------------------- PySR mapping


def _table9() -> dict:
    """``name -> value text`` from Table 9 of the SQR paper (two name/value pairs per line)."""
    path = SEEDS / "symbolic-quantile-regression.txt"
    if not path.is_file():
        pytest.skip(f"SQR paper text not found at {path} (set PARSIMONY_SHARED_SEEDS)")
    text = path.read_text()
    start = text.index("Table 9: PySRRegressor Parameters")
    block = text[start:text.index("Table 10", start)].splitlines()[2:]
    table = {}
    for line in block:
        tokens = line.split()
        for i in range(0, len(tokens) - 1, 2):
            table[tokens[i]] = tokens[i + 1]
    return table


def _same(value, text: str) -> bool:
    text = text.strip("’'\"")
    if text == "None":
        return value is None
    if text in ("True", "False"):
        return value is (text == "True")
    try:
        return math.isclose(float(value), float(text), rel_tol=1e-12)
    except (TypeError, ValueError):
        return str(value) == text


def test_defaults_are_the_papers_table_9():
    table = _table9()
    assert len(table) >= 60
    kwargs = _pysr.pysr_kwargs(0.5)
    checked = 0
    for name, value in {**_pysr.PYSR_TABLE9, **_pysr.SQR_TABLE9}.items():
        assert name in table, f"{name} is not a Table 9 parameter"
        assert _same(value, table[name]), f"{name}: ours {value!r}, Table 9 {table[name]!r}"
        if value is not None:
            assert kwargs[name] == value
            checked += 1
    assert checked >= 45
    # Table 9 fixes these through parameters of its own
    assert _same(kwargs["complexity_of_constants"], table["complexity_of_constants"])
    assert _same(kwargs["complexity_of_variables"], table["complexity_of_variables"])


def test_operators_and_token_complexities_are_the_papers():
    kwargs = _pysr.pysr_kwargs(0.9)
    assert kwargs["binary_operators"] == ["+", "-", "*", "/"]
    assert kwargs["unary_operators"] == ["square", "sqrt", "exp", "log", "sin", "cos"]
    # Table 1: + - * feature constant 1; / square 2; sin cos 3; exp log sqrt 4
    assert kwargs["complexity_of_operators"] == {"+": 1, "-": 1, "*": 1, "/": 2, "square": 2, "sqrt": 4, "exp": 4,
                                                 "log": 4, "sin": 3, "cos": 3}
    assert kwargs["complexity_of_variables"] == 1 and kwargs["complexity_of_constants"] == 1
    assert "x = " not in kwargs["elementwise_loss"] and "0.9" in kwargs["elementwise_loss"]


def test_operator_aliases_overrides_and_extra_operators():
    kwargs = _pysr.pysr_kwargs(0.25, operators=["+", "mul", "^", "cube", "neg", "abs", "mul"],
                                complexity_of_operators={"cube": 5, "^": 6, "variable": 2, "constant": 3})
    assert kwargs["binary_operators"] == ["+", "*", "^"]
    assert kwargs["unary_operators"] == ["cube", "neg", "abs"]
    assert kwargs["complexity_of_operators"] == {"+": 1, "*": 1, "^": 6, "cube": 5, "neg": TOKEN_COMPLEXITY["neg"],
                                                 "abs": TOKEN_COMPLEXITY["abs"]}
    assert kwargs["complexity_of_variables"] == 2 and kwargs["complexity_of_constants"] == 3


def test_auto_maxsize_maps_to_the_papers_20_on_pysr():
    # the Julia engine has no additive stage, the only reason for "auto" to exceed the paper's 20
    assert _pysr.pysr_kwargs(0.5, maxsize="auto")["maxsize"] == 20
    assert _pysr.pysr_kwargs(0.5, maxsize=30)["maxsize"] == 30


def test_estimator_parameters_map_to_pysr():
    kwargs = _pysr.pysr_kwargs(0.5, maxsize=12, niterations=3, populations=4, population_size=20, parsimony=0.01,
                                model_selection="elbow", time_limit=30, random_state=7, n_jobs=4, progress=False)
    assert (kwargs["maxsize"], kwargs["niterations"], kwargs["populations"], kwargs["population_size"]) == (12, 3, 4, 20)
    assert kwargs["parsimony"] == 0.01 and kwargs["model_selection"] == "best"
    assert kwargs["timeout_in_seconds"] == 30.0
    # PySR is deterministic only when serial with a fixed seed
    assert kwargs["random_state"] == 7 and kwargs["deterministic"] is True and kwargs["parallelism"] == "serial"
    assert kwargs["progress"] is False and kwargs["verbosity"] == 0
    free = _pysr.pysr_kwargs(0.5, n_jobs=4, model_selection="score")
    assert free["parallelism"] == "multithreading" and "random_state" not in free and "deterministic" not in free
    assert free["model_selection"] == "score" and "timeout_in_seconds" not in free
    assert _pysr.pysr_kwargs(0.5, n_jobs=1)["parallelism"] == "serial"
    # a Generator seed becomes a fixed integer seed, identical for identical generators
    a = _pysr.pysr_kwargs(0.5, random_state=np.random.default_rng(3))["random_state"]
    b = _pysr.pysr_kwargs(0.5, random_state=np.random.default_rng(3))["random_state"]
    assert isinstance(a, int) and a == b
    assert None not in _pysr.pysr_kwargs(0.5).values()


@pytest.mark.parametrize("kwargs, message", [
    ({"quantile": 1.0}, "quantile"),
    ({"quantile": 0.5, "operators": ["add", "tan"]}, "unknown operator"),
    ({"quantile": 0.5, "operators": ["sin", "cos"]}, "binary operator"),
    ({"quantile": 0.5, "maxsize": 0}, "maxsize"),
    ({"quantile": 0.5, "niterations": 2.5}, "niterations"),
    ({"quantile": 0.5, "parsimony": -1.0}, "parsimony"),
    ({"quantile": 0.5, "model_selection": "median"}, "model_selection"),
    ({"quantile": 0.5, "time_limit": 0}, "time_limit"),
    ({"quantile": 0.5, "complexity_of_operators": {"sin": -3}}, "complexity_of_operators"),
    ({"quantile": 0.5, "complexity_of_operators": {"tan": 3}}, "unknown operator"),
])
def test_bad_sqr_parameters_are_rejected(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _pysr.pysr_kwargs(**kwargs)


def _pinball_by_reading_the_julia(code: str, prediction: float, target: float) -> float:
    """Evaluate the generated loss by reading its three lines (a guard against sign slips)."""
    tau = float(re.search(r"convert\(typeof\(r\), ([^)]+)\)", code).group(1))
    assert "r = float(target - prediction)" in code
    assert "return r >= zero(r) ? q * r : (q - one(q)) * r" in code
    r = target - prediction
    return tau * r if r >= 0 else (tau - 1.0) * r


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_generated_loss_is_the_metrics_pinball_loss(tau):
    code = _pysr.pysr_kwargs(tau)["elementwise_loss"]
    rng = np.random.default_rng(0)
    y, p = rng.normal(size=50), rng.normal(size=50)
    ours = np.mean([_pinball_by_reading_the_julia(code, pi, yi) for pi, yi in zip(p, y)])
    assert ours == pytest.approx(pinball_loss(y, p, tau), rel=1e-12)
    assert "parsimony_loss(prediction, target, weight) = weight * " in code


# ----------------------------------------------------------------------- equations conversion


def _pysr_like_frame() -> pd.DataFrame:
    x0, x1 = sympy.symbols("x0 x1")
    rows = [
        (5, 0.40, "square(x0) * 2.5", 2.5 * x0**2),
        (1, 2.00, "x0", x0),
        (3, 0.80, "x0 * 1.7", 1.7 * x0),
        (7, np.inf, "log(x1) - x0", sympy.log(x1) - x0),  # a failed candidate: dropped
        (8, 0.0, "(square(x0) * 2.5) + cos(x1)", 2.5 * x0**2 + sympy.cos(x1)),
        (3, 0.90, "x0 + 1.1", x0 + 1.1),  # worse duplicate complexity: dropped
    ]
    frame = pd.DataFrame(rows, columns=["complexity", "loss", "equation", "sympy_format"])
    frame["score"] = 0.123  # PySR's own column is recomputed on the kept rows
    frame["lambda_format"] = None
    return frame


def test_pysr_equations_become_the_native_schema():
    eq = _pysr.equations_from_pysr(_pysr_like_frame(), feature_names=["age", "dose"])
    assert list(eq.columns) == ["complexity", "loss", "score", "equation", "sympy"]
    assert eq["complexity"].tolist() == [1, 3, 5, 8] and eq["complexity"].dtype == np.int64
    assert eq["loss"].tolist() == [2.0, 0.8, 0.4, 0.0]
    expected = [0.0, -math.log(0.8 / 2.0) / 2, -math.log(0.4 / 0.8) / 2, np.inf]
    assert np.allclose(eq["score"].to_numpy()[:3], expected[:3]) and eq["score"].iloc[3] == np.inf
    age, dose = sympy.symbols("age dose")
    assert sympy.simplify(eq["sympy"].iloc[3] - (2.5 * age**2 + sympy.cos(dose))) == 0
    assert eq["equation"].iloc[3] == "(square(age) * 2.5) + cos(dose)"
    assert eq.index.tolist() == [0, 1, 2, 3]


def test_equations_without_sympy_column_are_parsed():
    frame = _pysr_like_frame().drop(columns=["sympy_format"])
    frame.loc[len(frame)] = [9, 0.0, "neg(x1) ^ 2 + cube(x0) / 3.0", 0.0, None]
    eq = _pysr.equations_from_pysr(frame)
    x0, x1 = sympy.symbols("x0 x1")
    assert sympy.simplify(eq["sympy"].iloc[0] - x0) == 0
    assert sympy.simplify(eq["sympy"].iloc[2] - 2.5 * x0**2) == 0
    assert sympy.simplify(eq["sympy"].iloc[-1] - (x1**2 + x0**3 / 3)) == 0
    with pytest.raises(ValueError, match="missing columns"):
        _pysr.equations_from_pysr(frame.drop(columns=["loss"]))


# -------------------------------------------------------------- parity with Julia (when present)


def _cbcd_problem(seed, n=6, L=4, m=60):
    """A random factored ensemble (leaves, T, leaf_offset) with layer weights, as ``_cbcd`` takes it.

    ``T`` is the transposed leaf table, (L, n_leaves_total), C-contiguous like
    ``EnsembleTables.leaf_table_t``.
    """
    rng = np.random.default_rng(seed)
    n_layers = rng.integers(1, L + 1, size=n).astype(np.int64)
    n_leaves = rng.integers(1, 6, size=n)
    leaf_offset = np.concatenate([[0], np.cumsum(n_leaves)]).astype(np.int64)
    T = rng.normal(size=(L, int(leaf_offset[-1])))
    leaves = np.empty((n, m), dtype=np.int64)
    w = rng.uniform(0.1, 1.0, size=(n, L))
    for i in range(n):
        T[n_layers[i]:, leaf_offset[i]:leaf_offset[i + 1]] = 0.0
        leaves[i] = rng.integers(0, n_leaves[i], size=m)
        w[i, n_layers[i]:] = 0.0
    dense = np.stack([T[:, leaf_offset[i] + leaves[i]].T for i in range(n)])  # (n, m, L)
    target = dense.sum(axis=(0, 2)) + 0.3 * rng.normal(size=m)
    wcum = np.hstack([np.zeros((n, 1)), np.cumsum(w, axis=1)])
    return (leaves, T, leaf_offset), n_layers, target, wcum, float(w.sum())


@pytest.mark.julia
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_julia_cbcd_equals_native(seed, mode):
    from parsimony.ensembles import _cbcd

    fac, n_layers, target, wcum, K = _cbcd_problem(seed)
    n = fac[0].shape[0]
    gram, prefix_norms = _cbcd.gram_tables(*fac, n_layers)
    Gj, PPj = _cbcd_julia.gram_tables(*fac, n_layers)
    np.testing.assert_allclose(Gj, gram, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(PPj, prefix_norms, rtol=1e-10, atol=1e-10)
    gamma = 0.7
    amax = _cbcd.alpha_max(*fac, prefix_norms, wcum, n_layers, target, gamma, K)
    assert _cbcd_julia.alpha_max(*fac, prefix_norms, wcum, n_layers, target, gamma, K) == pytest.approx(amax, rel=1e-10)
    layers = np.random.default_rng(seed).integers(0, n_layers + 1).astype(np.int64)
    idx = np.array([n - 1, 0, 2], dtype=np.int64)
    np.testing.assert_allclose(_cbcd_julia.stack_truncated(*fac, layers, idx),
                               _cbcd.stack_truncated(*fac, layers, idx), atol=1e-12)
    alpha2 = 0.0 if mode == 0 else 0.01
    for alpha in (0.05 * amax, 0.5 * amax):
        pen_scale = alpha / K
        runs = []
        for engine in (_cbcd, _cbcd_julia):
            layers = np.zeros(n, dtype=np.int64)
            beta = np.ones(n) if mode == 0 else np.zeros(n)
            R = engine.residual(*fac, target, layers, beta, gamma)
            history = np.full(100, np.nan)
            sweeps = engine.cbcd(*fac, gram, prefix_norms, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2,
                                 mode, 0, 100, history)
            obj = engine.objective(R, layers, beta, wcum, pen_scale, alpha2, mode)
            runs.append((sweeps, layers, beta, R, history, obj))
        (s_n, l_n, b_n, R_n, h_n, o_n), (s_j, l_j, b_j, R_j, h_j, o_j) = runs
        assert s_j == s_n
        np.testing.assert_array_equal(l_j, l_n)
        np.testing.assert_allclose(b_j, b_n, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(R_j, R_n, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(h_j[:s_n], h_n[:s_n], rtol=1e-9)
        assert o_j == pytest.approx(o_n, rel=1e-9)
    # max_trees is honoured by both
    for engine in (_cbcd, _cbcd_julia):
        layers = np.zeros(n, dtype=np.int64)
        beta = np.ones(n)
        R = engine.residual(*fac, target, layers, beta, gamma)
        engine.cbcd(*fac, gram, prefix_norms, wcum, n_layers, R, layers, beta, gamma, 0.0, 0.0, 0, 2, 100, np.empty(0))
        assert np.count_nonzero(layers) <= 2


@pytest.mark.julia
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_julia_cluster_costs_equal_native(kind):
    from parsimony.trees import _kmeans, _kmeans_julia

    rng = np.random.default_rng(kind)
    for trial in range(40):
        n = int(rng.integers(1, 60))
        values = np.sort(rng.integers(0, 6, n).astype(float) if trial % 2 else rng.normal(size=n))
        weights = (np.ones(n), rng.integers(1, 5, n).astype(float), rng.uniform(0.05, 3.0, n))[trial % 3]
        for max_clusters, lam, floor in ((n, 0.0, 0.0), (n, 0.01, 0.0), (4, 0.05, 0.2), (1, 0.1, 0.0)):
            best, costs = _kmeans.cluster_costs(kind, weights, values, max_clusters, lam, floor, 0.7)
            best_j, costs_j = _kmeans_julia.cluster_costs(kind, weights, values, max_clusters, lam, floor, 0.7)
            assert best_j == best  # the same arithmetic in the same order
            np.testing.assert_array_equal(costs_j, costs)


@pytest.mark.julia
@pytest.mark.parametrize("loss, depth", [("squared", None), ("squared", 4), ("absolute", 3), ("quantile", None)])
def test_osrt_julia_backend_runs_the_native_search(loss, depth):
    from parsimony.trees import OptimalSparseRegressionTree

    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 3))
    y = np.sin(2 * X[:, 0]) + (X[:, 1] > 0) + 0.2 * rng.normal(size=150)
    params = dict(regularization=0.01, depth_limit=depth, loss=loss, quantile=0.7)
    native = OptimalSparseRegressionTree(**params, backend="native").fit(X, y)
    julia = OptimalSparseRegressionTree(**params, backend="julia").fit(X, y)
    assert julia.backend_ == "julia" and julia.status_ == native.status_ == "optimal"
    assert julia.objective_ == native.objective_
    for key in ("subproblems", "expansions", "bounds"):
        assert julia.search_stats_[key] == native.search_stats_[key], key
    np.testing.assert_array_equal(julia.predict(X), native.predict(X))


@pytest.mark.julia
def test_julia_losses_equal_the_loss_objects():
    from juliacall import Main as jl

    rng = np.random.default_rng(1)
    y, p, w = rng.normal(size=30), rng.normal(size=30), rng.uniform(0.5, 2.0, size=30)
    for loss in (Pinball(0.05), Pinball(0.5), Pinball(0.95), Squared(), Absolute()):
        generated = jl.seval(loss.julia_source())
        assert np.mean([float(generated(float(pi), float(yi))) for pi, yi in zip(p, y)]) == pytest.approx(
            loss.value(y, p))
        total = sum(float(generated(float(pi), float(yi), float(wi))) for pi, yi, wi in zip(p, y, w))
        assert total / w.sum() == pytest.approx(loss.value(y, p, w))


@pytest.mark.julia
def test_julia_package_test_suite_passes():
    from juliacall import Main as jl

    _julia.kernels()
    if not bool(jl.seval('Base.find_package("ParsimonyKernels") !== nothing')):
        pytest.skip("ParsimonyKernels is loaded from source, not from the Julia environment")
    jl.seval(f'include(raw"{JULIA_DIR / "test" / "runtests.jl"}")')  # a failing @testset throws


@pytest.mark.julia
def test_sqr_through_pysr_gives_the_native_schema():
    pytest.importorskip("pysr")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(120, 2))
    y = 2.5 * X[:, 0] ** 2 + np.cos(X[:, 1])
    model, eq = _pysr.fit_pysr(X, y, 0.5, feature_names=["a", "b"], niterations=2, populations=2,
                                population_size=20, random_state=0, progress=False)
    assert list(eq.columns) == list(_pysr.EQUATIONS_COLUMNS)
    assert (np.diff(eq["complexity"]) > 0).all()
    best = eq.iloc[int(np.argmin(eq["loss"]))]
    f = sympy.lambdify(sympy.symbols("a b"), best["sympy"], "numpy")
    pred = np.broadcast_to(f(X[:, 0], X[:, 1]), y.shape)
    assert pinball_loss(y, pred, 0.5) == pytest.approx(best["loss"], rel=1e-3, abs=1e-6)


# ------------------------------------------------------- SQR's Julia hook, with PySR simulated


def test_sympy_to_postfix_round_trips_through_native_arrays():
    from parsimony.symbolic._expressions import from_tokens, to_sympy

    x0, x1 = sympy.symbols("x0 x1")
    for expr in (2.5 * x0**2 + sympy.cos(x1), x0 - x1, 1 / x0, sympy.sqrt(x0) * x1**3, -x0,
                 sympy.log(sympy.Abs(x1)) - 3.2 * x0 / (x1 + 1), x0**1.7, sympy.exp(x1) / (x0 * x1)):
        ops, feats, vals = from_tokens(_pysr.sympy_to_postfix(expr), 2)
        assert sympy.simplify(to_sympy(ops, feats, vals, len(ops), [x0, x1]) - expr) == 0
    with pytest.raises(ValueError, match="unexpected variable"):
        _pysr.sympy_to_postfix(sympy.Symbol("age") + 1)
    with pytest.raises(ValueError, match="cannot express"):
        _pysr.sympy_to_postfix(sympy.tan(x0))


@pytest.fixture
def simulated_pysr(monkeypatch):
    """Julia "works", pysr is "installed" and ``_pysr.fit_pysr`` is a stub recording its calls."""
    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (True, "ok"))
    monkeypatch.setattr(_pysr, "pysr_available", lambda: True)
    import parsimony.symbolic.regressor as regressor

    monkeypatch.setattr(regressor, "pysr_available", lambda: True)
    calls = []
    x0, x1 = sympy.symbols("x0 x1")

    def fake_fit_pysr(X, y, quantile, *, sample_weight=None, previous=None, **params):
        kwargs = _pysr.pysr_kwargs(quantile, **params)  # the mapping must accept what the glue passes
        calls.append({"quantile": quantile, "params": params, "kwargs": kwargs, "previous": previous})
        exprs = [x0 + 0.0 * quantile, 2.0 * x0 + sympy.cos(x1), sympy.tan(x0)]
        frame = pd.DataFrame({"complexity": [1, 6, 9], "equation": ["", "", ""], "sympy_format": exprs,
                              "loss": [pinball_loss(y, sympy.lambdify((x0, x1), e)(X[:, 0], X[:, 1]) + 0 * y,
                                                    quantile) for e in exprs[:2]] + [9.0]})
        return ("pysr model", quantile, len(calls)), _pysr.equations_from_pysr(frame)

    monkeypatch.setattr(_pysr, "fit_pysr", fake_fit_pysr)
    return calls


def _sqr_data(n=80):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, 2.0 * X[:, 0] + np.cos(X[:, 1])


def test_sqr_julia_backend_end_to_end_with_a_simulated_pysr(simulated_pysr):
    """backend="julia" runs the PySR glue of symbolic/_pysr.py from the estimator (PySR replaced by a stub)."""
    from parsimony.symbolic import SymbolicQuantileRegressor

    calls = simulated_pysr
    X, y = _sqr_data()
    model = SymbolicQuantileRegressor(quantile=[0.2, 0.8], maxsize=12, random_state=3, progress=False,
                                      backend="julia").fit(X, y)
    assert model.backend_ == "julia"
    assert [c["quantile"] for c in calls] == [0.2, 0.8]
    kwargs = calls[0]["kwargs"]
    assert kwargs["maxsize"] == 12 and kwargs["random_state"] == 3
    assert kwargs["ncycles_per_iteration"] == model.ncycles_per_iteration
    assert kwargs["elementwise_loss"] == Pinball(0.2).julia_source() and kwargs["batching"] is False
    front = model.equations_[0]
    assert front["complexity"].tolist() == [1, 6]  # tan has no native twin: dropped
    np.testing.assert_allclose(model.predict(X, index=[1, 1])[:, 0], y, atol=1e-12)
    assert [c["previous"] for c in calls] == [None, None]
    # warm_start hands each level's PySR model of the last fit back to PySR
    model.set_params(warm_start=True).fit(X, y)
    assert [c["previous"] for c in calls[2:]] == [("pysr model", 0.2, 1), ("pysr model", 0.8, 2)]
    model.set_params(warm_start=False).fit(X, y)
    assert [c["previous"] for c in calls[4:]] == [None, None]


@pytest.mark.parametrize("loss", ["squared", "absolute", "pinball"])
def test_sqr_julia_loss_reaches_pysr(simulated_pysr, loss):
    from parsimony.losses import LOSSES
    from parsimony.symbolic import SymbolicQuantileRegressor

    X, y = _sqr_data()
    SymbolicQuantileRegressor(quantile=0.7, loss=loss, progress=False, backend="julia").fit(X, y)
    expected = Pinball(0.7) if loss == "pinball" else LOSSES[loss]()
    assert simulated_pysr[0]["kwargs"]["elementwise_loss"] == expected.julia_source()


def test_sqr_julia_batch_size_reaches_pysr(simulated_pysr):
    from parsimony.symbolic import SymbolicQuantileRegressor

    X, y = _sqr_data(200)
    SymbolicQuantileRegressor(batch_size=50, progress=False, backend="julia").fit(X, y)
    assert simulated_pysr[-1]["kwargs"]["batching"] is True and simulated_pysr[-1]["kwargs"]["batch_size"] == 50
    SymbolicQuantileRegressor(batch_size=None, progress=False, backend="julia").fit(X, y)
    assert simulated_pysr[-1]["kwargs"]["batching"] is False  # Table 9's value


def test_sqr_julia_feature_relevance_is_uniform_or_refused(simulated_pysr):
    from parsimony.symbolic import SymbolicQuantileRegressor

    X, y = _sqr_data()
    SymbolicQuantileRegressor(progress=False, backend="julia").fit(X, y)  # "auto": PySR's uniform draws
    SymbolicQuantileRegressor(feature_relevance=0, progress=False, backend="julia").fit(X, y)
    assert len(simulated_pysr) == 2
    with pytest.raises(ValueError, match=r"feature_relevance=0\.5 is not supported by the Julia engine"):
        SymbolicQuantileRegressor(feature_relevance=0.5, progress=False, backend="julia").fit(X, y)


def test_sqr_julia_additive_stage_is_off_or_refused(simulated_pysr):
    from parsimony.symbolic import SymbolicQuantileRegressor

    X, y = _sqr_data()
    SymbolicQuantileRegressor(additive_stage=False, progress=False, backend="julia").fit(X, y)  # "auto" is off
    assert len(simulated_pysr) == 1
    with pytest.raises(ValueError, match=r"additive_stage=True is not supported by the Julia engine"):
        SymbolicQuantileRegressor(additive_stage=True, progress=False, backend="julia").fit(X, y)


def test_sqr_auto_stays_native_without_pysr(monkeypatch):
    from parsimony.symbolic import SymbolicQuantileRegressor
    from parsimony.symbolic import regressor

    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (True, "ok"))
    monkeypatch.setattr(regressor, "pysr_available", lambda: False)
    X = np.linspace(-1, 1, 40)[:, None]
    model = SymbolicQuantileRegressor(niterations=1, populations=1, population_size=10, progress=False,
                                      random_state=0).fit(X, 2 * X[:, 0])
    assert model.backend_ == "native"
    with pytest.raises(backend.JuliaUnavailableError, match="needs pysr"):
        SymbolicQuantileRegressor(progress=False, backend="julia").fit(X, 2 * X[:, 0])
