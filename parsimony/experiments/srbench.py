"""SRBench's two tracks (La Cava et al., NeurIPS Datasets and Benchmarks 2021) on the benchmark runner.

- **Ground truth** (``srbench-groundtruth``): the Feynman (119) and Strogatz (14) problems of PMLB,
  defined by their ``metadata.yaml`` (formula, target and each variable's sampling range:
  :func:`parse_metadata`, fetched and cached by :func:`fetch_metadata`). Data are generated as the
  AI Feynman database was: every variable uniform in its range (:func:`generate_data`), or read from
  PMLB's data files on request (the Strogatz problems have no ranges: always their files). Gaussian
  noise of standard deviation ``level x RMS(y)`` is added to the training target only. A model is a
  *symbolic solution* (:func:`symbolic_solution`) when, after its constants are rounded to 3 decimals
  and sympy simplification, ``model - truth`` is a constant or ``model / truth`` a nonzero constant;
  an *accuracy solution* when its test R^2 exceeds 0.999.
- **Black box** (``srbench-blackbox``): PMLB regression datasets; one 75/25 split per seed, test R^2,
  model size as the sympy nodes of the simplified model (:func:`model_size`) and training time.

Protocol (SRBench's unless said): one seed drives the split, the noise and the method's
``random_state``. Training rows: SRBench caps training sets at 10,000 rows (``--rows``); generated
problems get ``rows`` training rows from ``numpy.random.default_rng(seed)`` (uniform draws, then the
noise) and ``test_rows`` noise-free test rows (default a third of ``rows``, so 75/25) from
``default_rng([seed, 1])``. PMLB files are split 75/25 by ``train_test_split(random_state=seed)`` and
the training part subsampled to ``rows`` without replacement (SRBench draws with replacement).
Inputs and targets are not standardised (SRBench standardises them in the black-box track).

A task is stored like every benchmark task (:mod:`~parsimony.experiments.store`): dataset
``NAME|noise=LEVEL`` (ground truth) or ``NAME`` (black box), quantile 0.5, fold 0 of ``folds=4`` (one
75/25 split), the seed; its row holds ``r2``, ``model_size`` and ``solution``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import keyword
import math
import os
import re
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .store import KEY, fingerprint
from .suites import Budget, MethodSpec

GROUPS = ("feynman", "strogatz")
#: SRBench's target noise levels.
NOISE_LEVELS = (0.0, 0.001, 0.01, 0.1)
#: Ten seeds per problem, as SRBench runs (its seeds are other numbers).
SEEDS = tuple(range(10))
#: SRBench's cap on training rows.
TRAIN_ROWS = 10_000
#: CPU seconds each sympy step of the criterion and of the size may take.
SYMPY_TIMEOUT = 20.0
#: Test R^2 above which a model is an accuracy solution.
ACCURACY_R2 = 0.999
#: One 75/25 split, stored as fold 0 of a 4-fold split.
SPLIT_FOLDS = 4
SEP = "|noise="
METADATA_URL = "https://github.com/EpistasisLab/pmlb/raw/master/datasets/{name}/metadata.yaml"
ENV_METADATA_URL = "PARSIMONY_PMLB_METADATA_URL"
#: Budget of the tracks: the peers' time limit (``sr_time_limit``) and OSRT's settings.
BUDGET = Budget(sr_time_limit=60.0, osrt_regularization=0.01, osrt_depth_limit=5, osrt_thresholds=4,
                osrt_time_limit=60.0)
_FORMULA = re.compile(r"^\s*([A-Za-z_]\w*'?)\s*=\s*(.+?)\s*$")
_RANGE = re.compile(r"^\s*([A-Za-z_]\w*)\s+in\s+\[\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\]")


def _read(name: str) -> pd.DataFrame:
    with resources.files("parsimony.experiments").joinpath("data", name).open(encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")


def groundtruth_problems() -> pd.DataFrame:
    """SRBench's ground-truth problems: ``name, group`` (119 Feynman, 14 Strogatz)."""
    return _read("srbench_groundtruth_problems.csv")


def blackbox_datasets() -> pd.DataFrame:
    """SRBench's black-box datasets (PMLB's 122 regression sets): ``name, n, d``."""
    return _read("srbench_blackbox_datasets.csv")


def published_rates() -> pd.DataFrame:
    """SRBench's symbolic solution rates (%): ``method, group, noise, rate, problems, read_off``."""
    return _read("srbench_groundtruth_rates.csv")


def published_medians() -> pd.DataFrame:
    """SRBench's black-box medians over 122 datasets: ``method, r2, size, time_s, symbolic, front``."""
    return _read("srbench_blackbox_medians.csv")


# ------------------------------------------------------------------------------------ problems


@dataclass(frozen=True)
class Problem:
    """A ground-truth problem from its PMLB ``metadata.yaml``.

    Attributes
    ----------
    name : str
    target : str
        The formula's left-hand side (``x'`` for a Strogatz rate).
    formula : str
        The right-hand side, as printed.
    variables : tuple of (name, low, high)
        In the order of the data's columns; ``low``/``high`` are None without a sampling range.
    units : tuple (target unit, tuple of feature units) or None
        The physical units of the metadata's descriptions (``"m^1 * s^(-1)"``, ``""`` for
        dimensionless; :func:`metadata_unit`), None where the metadata gives none.
    """

    name: str
    target: str
    formula: str
    variables: tuple
    units: tuple | None = None

    @property
    def group(self) -> str:
        """``"feynman"``, ``"strogatz"`` or ``"other"``, from the name."""
        return next((g for g in GROUPS if self.name.startswith(g + "_")), "other")

    @property
    def features(self) -> list:
        return [v[0] for v in self.variables]

    @property
    def has_ranges(self) -> bool:
        """Whether every variable has a sampling range (data can be generated)."""
        return all(v[1] is not None for v in self.variables)

    def truth(self):
        """The formula as sympy, every variable a plain symbol."""
        return parse_formula(self.formula, self.features)


def parse_formula(formula: str, names):
    """``formula`` (Python syntax, ``^`` read as ``**``) as sympy with ``names`` as plain symbols
    (``gamma``, ``I``, ``E`` or ``lambda`` included); ``arcsin``/``ln``-style names are understood."""
    import sympy

    text = str(formula).replace("^", "**")
    local = {"arcsin": sympy.asin, "arccos": sympy.acos, "arctan": sympy.atan, "ln": sympy.log, "pi": sympy.pi}
    for name in names:
        alias = name
        if keyword.iskeyword(name):
            alias = f"{name}_kw_"
            text = re.sub(rf"\b{name}\b", alias, text)
        local[alias] = sympy.Symbol(name)
    try:
        return sympy.sympify(text, locals=local)
    except (sympy.SympifyError, SyntaxError, TypeError) as exc:
        raise ValueError(f"cannot read the formula {formula!r}: {exc}") from None


def parse_metadata(text: str, source="metadata.yaml") -> Problem:
    """A :class:`Problem` from the text of a PMLB ``metadata.yaml``.

    Reads ``dataset``, the formula line ``TARGET = EXPRESSION`` and the ``VAR in [low,high]`` lines
    of ``description``, and the ``features`` names (the data's column order).

    Raises
    ------
    ValueError
        Naming ``source`` when there is no dataset name, no formula, or a formula that does not parse.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be the str content of a metadata.yaml, got {type(text).__name__}")
    lines = text.splitlines()
    name = next((m.group(1).strip().strip("'\"") for m in map(re.compile(r"^dataset:\s*(\S+)").match, lines) if m), None)
    if not name:
        raise ValueError(f"{source}: no 'dataset:' line, so not a PMLB metadata.yaml")
    description, features, block = [], [], None
    target_unit, feature_units = None, []
    for line in lines:
        top = re.match(r"^([A-Za-z_]\w*):", line)
        if top:
            block = top.group(1)
            continue
        if block == "description":
            description.append(line)
        elif block == "features":
            m = re.match(r"^\s*-\s*name:\s*(.+?)\s*$", line)
            if m:
                features.append(m.group(1).strip("'\""))
                feature_units.append(None)
            d = re.match(r"^\s*description:\s*(.+?)\s*$", line)
            if d and features:
                feature_units[-1] = metadata_unit(d.group(1))
        elif block == "target":
            d = re.match(r"^\s*description:\s*(.+?)\s*$", line)
            if d:
                target_unit = metadata_unit(d.group(1))
    formula = next((m for m in map(_FORMULA.match, description) if m), None)
    if formula is None:
        raise ValueError(f"{source}: the description of {name} has no formula line 'TARGET = EXPRESSION'")
    ranges = {}
    for m in filter(None, map(_RANGE.match, description)):
        ranges[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    names = features or list(ranges)
    if not names:
        raise ValueError(f"{source}: {name} lists no features and no variable ranges")
    variables = tuple((v, *ranges.get(v, (None, None))) for v in names)
    units = None
    if features and target_unit is not None and None not in feature_units:
        units = (target_unit, tuple(feature_units))
    problem = Problem(name, formula.group(1), formula.group(2), variables, units)
    truth = problem.truth()
    unknown = sorted(str(s) for s in truth.free_symbols if str(s) not in names)
    if unknown:
        raise ValueError(f"{source}: the formula of {name} uses {unknown}, which are not among its features {names}")
    return problem


def metadata_unit(description: str) -> str | None:
    """The unit of a PMLB metadata ``description`` (``"Velocity, m^1 * s^(-1)"``, ``"v, Velocity,
    m^1 * s^(-1)"``, ``"Dimensionless"``): the text after its last comma (``""`` for dimensionless),
    None when it names no unit (no exponent, and not dimensionless)."""
    text = description.strip().strip("'\"").strip()
    last = text.rpartition(",")[2].strip()
    if last.lower() == "dimensionless":
        return ""
    return last if re.fullmatch(r"[A-Za-z]+\^\(?-?\d+\)?(\s*\*\s*[A-Za-z]+\^\(?-?\d+\)?)*", last) else None


def read_metadata(path) -> Problem:
    """:func:`parse_metadata` of a file."""
    path = Path(path)
    return parse_metadata(path.read_text(encoding="utf-8"), source=str(path))


# ------------------------------------------------------------------------------------ fetch


def metadata_cache() -> Path:
    """Where fetched ``metadata.yaml`` files are kept, in PMLB's layout (``NAME/metadata.yaml``)."""
    from ..datasets import cache_dir

    return cache_dir() / "pmlb-metadata"


def metadata_url() -> str:
    """URL template of a ``metadata.yaml``: ``$PARSIMONY_PMLB_METADATA_URL``, else beside the data
    files of ``$PARSIMONY_PMLB_URL`` (a PMLB mirror), else PMLB's GitHub repository."""
    if os.environ.get(ENV_METADATA_URL):
        return os.environ[ENV_METADATA_URL]
    from ..datasets import ENV_PMLB_URL

    data = os.environ.get(ENV_PMLB_URL)
    if data and data.endswith("{name}.tsv.gz"):
        return data[: -len("{name}.tsv.gz")] + "metadata.yaml"
    return METADATA_URL


def known_metadata_checksums() -> dict:
    """``name -> sha256`` of the ``metadata.yaml`` files whose hashes ship with the package."""
    table = _read("srbench_metadata_checksums.csv")
    return dict(zip(table["name"], table["sha256"]))


def find_metadata(name: str, data_dir=None) -> Path | None:
    """``DIR/NAME/metadata.yaml`` in ``data_dir``, ``$PARSIMONY_DATA`` or the cache, else None."""
    from ..datasets import ENV_DATA

    dirs = [Path(data_dir)] if data_dir is not None else []
    dirs += [Path(p) for p in os.environ.get(ENV_DATA, "").split(os.pathsep) if p]
    dirs.append(metadata_cache())
    for directory in dirs:
        path = directory / name / "metadata.yaml"
        if path.is_file():
            return path
    return None


@dataclass
class MetadataFetch:
    """What :func:`fetch_metadata` got: ``paths`` (name -> file), ``downloaded``, ``failed`` (name -> reason)
    and ``unreachable`` (why the source could not be reached at all, else None)."""

    paths: dict = field(default_factory=dict)
    downloaded: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    unreachable: str | None = None


def _check_name(name) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", name) or name.startswith("."):
        raise ValueError(f"problem names must be PMLB dataset names like 'feynman_I_12_5', got {name!r}")
    return name


def fetch_metadata(names, cache=None, url=None, timeout: float = 30.0, log=None) -> MetadataFetch:
    """Fetch PMLB ``metadata.yaml`` files into ``cache`` (default :func:`metadata_cache`), checked.

    A file already cached is verified and kept. A download must parse (:func:`parse_metadata`) and
    match the sha256 shipped with the package when there is one (:func:`known_metadata_checksums`);
    otherwise its hash is recorded in the cache's ``checksums.json`` on first fetch and checked later.
    A file that fails its check is discarded. When the source is unreachable (offline) the remaining
    names are not tried.
    """
    names = [_check_name(n) for n in ([names] if isinstance(names, str) else names)]
    timeout = float(timeout)
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    cache = Path(cache) if cache is not None else metadata_cache()
    template = url or metadata_url()
    if "{name}" not in template:
        raise ValueError(f"url must contain '{{name}}', got {template!r}")
    manifest_path = cache / "checksums.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    expected = {**manifest, **known_metadata_checksums()}
    say = log or (lambda line: None)
    result = MetadataFetch()
    for name in dict.fromkeys(names):
        target = cache / name / "metadata.yaml"
        if target.is_file():
            problem = _verified(target.read_bytes(), name, expected.get(name))
            if isinstance(problem, Problem):
                result.paths[name] = target
                continue
            say(f"{name}: the cached metadata.yaml fails its check ({problem}); fetching it again")
            target.unlink()
        if result.unreachable is not None:
            result.failed[name] = f"not tried: {result.unreachable}"
            continue
        source = template.format(name=name)
        try:
            with urllib.request.urlopen(source, timeout=timeout) as response:
                content = response.read()
        except urllib.error.HTTPError as exc:
            result.failed[name] = (f"PMLB has no dataset {name!r} (HTTP 404 at {source})" if exc.code == 404
                                   else f"HTTP {exc.code} {exc.reason} at {source}")
            say(f"{name}: cannot be fetched: {result.failed[name]}")
            continue
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            result.unreachable = f"cannot reach {source.split(name)[0]} ({getattr(exc, 'reason', exc)})"
            result.failed[name] = result.unreachable
            say(f"{name}: cannot be fetched: {result.unreachable}")
            continue
        problem = _verified(content, name, expected.get(name))
        if not isinstance(problem, Problem):
            result.failed[name] = f"{problem}; the download was discarded"
            say(f"{name}: cannot be fetched: {result.failed[name]}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(".part")
        part.write_bytes(content)
        part.replace(target)
        if name not in expected:
            manifest[name] = expected[name] = hashlib.sha256(content).hexdigest()
            manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        result.paths[name] = target
        result.downloaded.append(name)
        say(f"{name}: metadata.yaml downloaded ({len(content)} bytes)")
    return result


def _verified(content: bytes, name: str, sha256):
    """The parsed problem, or the reason ``content`` is not ``name``'s metadata (a str)."""
    digest = hashlib.sha256(content).hexdigest()
    if sha256 is not None and digest != sha256:
        return f"checksum mismatch: expected sha256 {sha256[:16]}..., got {digest[:16]}..."
    try:
        problem = parse_metadata(content.decode("utf-8"), source=f"{name}/metadata.yaml")
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not a PMLB metadata.yaml: {exc}"
    if problem.name != name:
        return f"it describes dataset {problem.name!r}, not {name!r}"
    return problem


def how_to_get(data_dir=None) -> str:
    """How to make problems available offline."""
    return ("to run offline, put PMLB's files in its layout DIR/NAME/metadata.yaml (and DIR/NAME/NAME.tsv.gz for "
            "--pmlb-data and the Strogatz problems) (git clone https://github.com/EpistasisLab/pmlb: DIR = "
            "pmlb/datasets) and pass --data-dir DIR, or copy them into the cache " + str(metadata_cache()))


def load_problems(names, data_dir=None, fetch=True, log=None) -> tuple[dict, dict]:
    """``(problems, missing)``: ``name -> Problem`` found locally (:func:`find_metadata`) or fetched,
    and ``name -> reason`` for those that could not be had (or do not parse)."""
    problems, missing, absent = {}, {}, []
    for name in names:
        path = find_metadata(_check_name(name), data_dir)
        if path is None:
            absent.append(name)
            continue
        try:
            problems[name] = read_metadata(path)
        except ValueError as exc:
            missing[name] = str(exc)
    if absent and fetch:
        got = fetch_metadata(absent, log=log)
        missing.update(got.failed)
        for name, path in got.paths.items():
            problems[name] = read_metadata(path)
    elif absent:
        missing.update({name: "not found locally and fetching is off (--no-fetch)" for name in absent})
    return {n: problems[n] for n in names if n in problems}, missing


def expand_names(items, track: str) -> list:
    """Problem or dataset names, with the groups ``feynman`` / ``strogatz`` expanded (ground truth)."""
    if track == "groundtruth":
        table = groundtruth_problems()
        if items is None:
            return list(table["name"])
        out = []
        for item in items:
            out += list(table.loc[table["group"] == item, "name"]) if item in GROUPS else [item]
        return list(dict.fromkeys(out))
    return list(blackbox_datasets()["name"]) if items is None else list(dict.fromkeys(items))


# ------------------------------------------------------------------------------------ data


def _evaluate(problem: Problem, X: np.ndarray) -> np.ndarray:
    import sympy

    symbols = [sympy.Symbol(n) for n in problem.features]
    f = sympy.lambdify(symbols, problem.truth(), "numpy")
    with np.errstate(all="ignore"):
        return np.asarray(f(*X.T), dtype=float) * np.ones(len(X))


def add_noise(y: np.ndarray, level: float, rng) -> np.ndarray:
    """``y`` plus Gaussian noise of standard deviation ``level x RMS(y)`` (SRBench's target noise)."""
    if level <= 0:
        return y
    return y + rng.normal(0.0, level * np.sqrt(np.mean(y ** 2)), size=len(y))


def generate_data(problem: Problem, rows: int, noise: float = 0.0, seed: int = 0, test_rows: int = 0):
    """``(X_train, y_train, X_test, y_test)`` of a problem with sampling ranges.

    Training: ``rows`` rows uniform in the ranges from ``numpy.random.default_rng(seed)``, the formula
    plus noise (:func:`add_noise`, same generator). Test: ``test_rows`` rows from
    ``default_rng([seed, 1])``, noise-free.
    """
    if not problem.has_ranges:
        raise ValueError(f"{problem.name} has no sampling ranges in its metadata: use PMLB's data file (--pmlb-data)")
    low = np.array([v[1] for v in problem.variables], dtype=float)
    high = np.array([v[2] for v in problem.variables], dtype=float)
    rng = np.random.default_rng(seed)
    X = rng.uniform(low, high, size=(rows, len(low)))
    y = add_noise(_evaluate(problem, X), noise, rng)
    test = np.random.default_rng([seed, 1])
    X_test = test.uniform(low, high, size=(test_rows, len(low)))
    return X, y, X_test, _evaluate(problem, X_test)


def split_table(X: np.ndarray, y: np.ndarray, rows, noise: float = 0.0, seed: int = 0):
    """SRBench's split of a data file: 75/25 by ``train_test_split(random_state=seed)``, the training
    part subsampled to ``rows`` (without replacement) and its target noised (:func:`add_noise`)."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed)
    rng = np.random.default_rng(seed)
    if rows is not None and len(train) > rows:
        train = np.sort(rng.choice(train, size=rows, replace=False))
    return X[train], add_noise(y[train], noise, rng), X[test], y[test]


def task_data(payload: dict, seed: int):
    """The four arrays of one task from its dataset's payload (see :func:`run_srbench`)."""
    if payload.get("table") is None:
        return generate_data(payload["problem"], payload["rows"], payload["noise"], seed, payload["test_rows"])
    X, y = payload["table"]
    return split_table(X, y, payload["rows"], payload["noise"], seed)


# ------------------------------------------------------------------------------------ criterion


class SympyTimeout(BaseException):
    """A sympy step ran past its time limit (a BaseException, so no ``except Exception`` in sympy eats it)."""


def _raise_timeout(signum, frame):
    raise SympyTimeout


def _cpu_limited(fn, args, seconds):
    """``fn(*args)`` in this (main) thread, interrupted after ``seconds`` of this process's CPU time."""
    previous = signal.signal(signal.SIGPROF, _raise_timeout)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _fork_call(fn, args, seconds):
    """``fn(*args)`` CPU-limited in a forked process (outside the main thread no signal can interrupt)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
        try:
            send.send(("ok", _cpu_limited(fn, args, seconds)))
        except SympyTimeout:
            send.send(("timeout", None))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            send.send(("error", repr(exc)))

    process = ctx.Process(target=child, daemon=True)
    process.start()
    ready = receive.poll(max(60.0, 20 * seconds))  # a wall-clock guard far beyond the CPU limit
    if not ready:
        process.kill()
        process.join()
        raise SympyTimeout
    kind, value = receive.recv()
    process.join()
    if kind == "timeout":
        raise SympyTimeout
    if kind == "error":
        raise RuntimeError(value)
    return value


def with_time_limit(fn, args=(), seconds: float = SYMPY_TIMEOUT):
    """``fn(*args)``, raising :class:`SympyTimeout` after ``seconds`` of CPU time (not wall time, so a
    busy machine does not change the outcome): a CPU timer in the main thread, a forked process
    elsewhere."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return _fork_call(fn, args, seconds)
    return _cpu_limited(fn, args, seconds)


def round_constants(expr, decimals: int = 3):
    """``expr`` with every float rounded to ``decimals`` decimal places (SRBench's rounding); one that
    rounds to a whole number becomes that integer, so that ``sqrt(1.0 - u**2)`` cancels against the
    truth's ``sqrt(1 - u**2)`` (sympy keeps a float 1.0 apart from the integer 1)."""
    import sympy

    def rounded(value):
        value = round(float(value), decimals)
        return sympy.Integer(int(value)) if value.is_integer() else sympy.Float(value)

    return expr.xreplace({n: rounded(n) for n in expr.atoms(sympy.Float)})


def _simplify(expr):
    import sympy

    return sympy.simplify(expr)


def symbolic_solution(model, truth, timeout: float = SYMPY_TIMEOUT) -> str:
    """SRBench's symbolic-solution check: ``"yes"``, ``"no"`` or ``"timeout"``.

    ``model``'s constants are rounded to 3 decimals; it is a solution when ``simplify(model - truth)``
    is a constant, or ``simplify(model / truth)`` a nonzero constant. Each simplification runs under
    ``timeout`` CPU seconds; ``"timeout"`` means neither finished with a solution and one ran out of time
    (it counts as not solved). A constant model of a non-constant truth is no solution.
    """
    import sympy

    if not isinstance(model, sympy.Basic) or not isinstance(truth, sympy.Basic):
        raise TypeError(f"model and truth must be sympy expressions, got {type(model).__name__} and "
                        f"{type(truth).__name__}")
    timeout = float(timeout)
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    model = round_constants(model)
    if not model.free_symbols and truth.free_symbols:
        return "no"
    ran_out = False
    for ratio in (False, True):
        try:
            value = with_time_limit(_simplify, (model / truth if ratio else model - truth,), timeout)
        except SympyTimeout:
            ran_out = True
            continue
        if value.free_symbols or value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            continue
        if not ratio or value.is_zero is False:
            return "yes"
    return "timeout" if ran_out else "no"


def count_nodes(expr) -> int:
    """Nodes of a sympy expression (every operator, function, symbol and number), as SRBench counts."""
    import sympy

    return sum(1 for _ in sympy.preorder_traversal(expr))


def model_size(expr, timeout: float = SYMPY_TIMEOUT) -> int:
    """SRBench's model size: :func:`count_nodes` of ``sympy.simplify(expr)`` (of ``expr`` itself when
    simplification runs past ``timeout`` seconds)."""
    try:
        expr = with_time_limit(_simplify, (expr,), timeout)
    except SympyTimeout:
        pass
    return count_nodes(expr)


# ------------------------------------------------------------------------------------ methods


def _sqr(quantile, random_state, budget, loss=None):
    from ..symbolic import SymbolicQuantileRegressor

    return SymbolicQuantileRegressor(quantile=0.5, loss=loss, random_state=random_state, progress=False)


def _sqr_squared(quantile, random_state, budget):
    return _sqr(quantile, random_state, budget, loss="squared")


def _sqr_custom(quantile, random_state, budget, tau=0.5, settings=()):
    from ..symbolic import SymbolicQuantileRegressor

    return SymbolicQuantileRegressor(quantile=tau, random_state=random_state, progress=False, **dict(settings))


def sqr_method(name="SQR", tau=0.5, **settings) -> MethodSpec:
    """SQR at quantile ``tau`` with other settings (``SymbolicQuantileRegressor`` parameters) as a
    method of the tracks (e.g. ``sqr_method("SQR-30", maxsize=30)``)."""
    return MethodSpec(name, functools.partial(_sqr_custom, tau=float(tau), settings=tuple(sorted(settings.items()))),
                      target="median" if tau == 0.5 else "quantile", requires=("parsimony.symbolic",))


def _lqr(quantile, random_state, budget):
    from .baselines import make_lqr

    return make_lqr(0.5, random_state, tune=False)


def _osrt(quantile, random_state, budget):
    from ..trees import Binarizer, OptimalSparseRegressionTree

    return OptimalSparseRegressionTree(regularization=budget.osrt_regularization, depth_limit=budget.osrt_depth_limit,
                                       binarizer=Binarizer(n_thresholds=budget.osrt_thresholds),
                                       time_limit=budget.osrt_time_limit)


_OPERATORS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"


def _operon(quantile, random_state, budget):
    from pyoperon.sklearn import SymbolicRegressor

    return SymbolicRegressor(allowed_symbols=_OPERATORS, population_size=1000, max_length=50,
                             max_evaluations=500_000, n_threads=1, random_state=random_state,
                             max_time=int(budget.sr_time_limit or 0) or None)


def _eggp(quantile, random_state, budget):
    from eggp import EGGP

    return EGGP(gen=100, nPop=100, maxSize=25, loss="MSE", nonterminals="add,sub,mul,div,square,sqrt,exp,log,sin,cos",
                max_time=int(budget.sr_time_limit or -1))


def _pysr(quantile, random_state, budget):
    from pysr import PySRRegressor

    return PySRRegressor(niterations=40, maxsize=30, binary_operators=["+", "-", "*", "/"],
                         unary_operators=["sin", "cos", "exp", "log", "sqrt"], random_state=random_state,
                         deterministic=True, parallelism="serial", timeout_in_seconds=budget.sr_time_limit,
                         progress=False, verbosity=0)


#: The methods of the two tracks (``--methods``): SQR at tau = .5, SQR with the squared loss, linear
#: QR (unpenalised) and OSRT as transparent baselines, and peers run when installed.
METHODS = {spec.name: spec for spec in (
    MethodSpec("SQR", _sqr, target="median", requires=("parsimony.symbolic",)),
    MethodSpec("SQR-L2", _sqr_squared, target="mean", requires=("parsimony.symbolic",)),
    MethodSpec("LQR", _lqr, target="median", requires=("sklearn",)),
    MethodSpec("OSRT", _osrt, target="mean", requires=("parsimony.trees.osrt",)),
    MethodSpec("Operon", _operon, target="mean", requires=("pyoperon",)),
    MethodSpec("eggp", _eggp, target="mean", requires=("eggp",)),
    MethodSpec("PySR", _pysr, target="mean", requires=("pysr",)),
)}
DEFAULT_METHODS = {"groundtruth": ("SQR",), "blackbox": ("SQR", "SQR-L2", "LQR", "OSRT")}


def method_unavailable(name: str) -> str | None:
    """Why a method cannot run here (None when it can): a missing package, or PySR without Julia."""
    import shutil

    from ._optional import available

    spec = METHODS[name]
    missing = [m for m in spec.requires if not available(m)]
    if missing:
        extra = {"pyoperon": "pip install pyoperon", "eggp": "pip install eggp",
                 "pysr": "pip install 'parsimony-ml[julia]' and a Julia installation"}
        return f"{name} needs {', '.join(missing)} ({extra.get(missing[0], 'pip install ' + missing[0])})"
    if name == "PySR" and shutil.which("julia") is None and not os.environ.get("JULIA_BINDIR"):
        return "PySR needs Julia (no `julia` on PATH): install Julia, or leave PySR out"
    return None


def _neutral(expr, names, pattern: str, first: int):
    """``expr`` with the symbols ``pattern.format(j + first)`` renamed to ``names[j]``."""
    import sympy

    return expr.xreplace({sympy.Symbol(pattern.format(j + first)): sympy.Symbol(n) for j, n in enumerate(names)})


def _parse_printed(text: str, d: int, pattern: str, first: int):
    import sympy

    functions = dict(square=lambda a: a ** 2, cube=lambda a: a ** 3, recip=lambda a: 1 / a, cbrt=sympy.cbrt,
                     sqrtabs=lambda a: sympy.sqrt(sympy.Abs(a)), logabs=lambda a: sympy.log(sympy.Abs(a)),
                     aq=lambda a, b: a / sympy.sqrt(1 + b ** 2), abs=sympy.Abs)
    for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
                 "exp", "log", "sqrt"):
        functions[name] = getattr(sympy, name)
    local = {name: f for lower, f in functions.items() for name in (lower, lower.capitalize())}  # eggp: Recip
    local.update({pattern.format(j + first): sympy.Symbol(pattern.format(j + first)) for j in range(d)})
    return sympy.sympify(text.replace("^", "**"), locals=local)


def model_expression(model, names):
    """The fitted model as a sympy expression in the symbols ``names``; None for a model that has
    none (a tree)."""
    import sympy

    d = len(names)
    if type(model).__name__ == "SymbolicQuantileRegressor":
        return _neutral(model.sympy(precision=None), names, "x{}", 0)
    if type(model).__module__.startswith("pyoperon"):
        return _neutral(_parse_printed(model.get_model_string(model.model_, 17), d, "X{}", 1), names, "X{}", 1)
    if type(model).__name__ == "EGGP":
        best = model._best_row() if hasattr(model, "_best_row") else model.results.iloc[-1]  # the one predict uses
        return _neutral(_parse_printed(str(best["Expression"]), d, "x{}", 0), names, "x{}", 0)
    if type(model).__name__ == "PySRRegressor":
        return _neutral(model.sympy(), names, "x{}", 0)
    final = getattr(model, "best_estimator_", model)
    steps = getattr(final, "steps", None)
    if steps is not None:
        scaler, last = (steps[0][1] if len(steps) > 1 else None), steps[-1][1]
    else:
        scaler, last = None, final
    if hasattr(last, "coef_"):
        coef = np.ravel(last.coef_).astype(float)
        intercept = float(np.ravel(getattr(last, "intercept_", 0.0))[0])
        if scaler is not None and hasattr(scaler, "scale_"):
            mean = getattr(scaler, "mean_", np.zeros(d))
            coef = coef / scaler.scale_
            intercept -= float(np.dot(coef, mean))
        return sympy.Float(intercept) + sum(sympy.Float(c) * sympy.Symbol(n) for c, n in zip(coef, names) if c != 0)
    return None


# ------------------------------------------------------------------------------------ one task


def run_srbench_task(task, payload: dict, spec: MethodSpec, budget, feature_names=None) -> dict:
    """Fit one method on one seed's split of one problem or dataset; never raises (a failure is a
    row with ``error``). The method's ``random_state`` is the seed, as in SRBench."""
    from sklearn.metrics import r2_score

    from ..metrics import complexity
    from .runner import finished, model_text, record_failure

    row = {**dict(zip(KEY, task.key)), "transparent": int(spec.transparent), "target": spec.target,
           "host": socket.gethostname()}
    try:
        X, y, X_test, y_test = task_data(payload, task.seed)
        names = list(payload["features"])
        row.update(n_train=len(y), n_test=len(y_test), n_features=X.shape[1])
        model = spec.build(task.quantile, task.seed, budget)
        if payload.get("units") is not None and "feature_units" in model.get_params():
            target_unit, feature_units = payload["units"]
            model.set_params(feature_units=list(feature_units), target_units=target_unit)
        start, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        row["fit_time"], row["fit_cpu"] = time.perf_counter() - start, time.process_time() - cpu
        start = time.perf_counter()
        pred = np.asarray(model.predict(X_test), dtype=np.float64).ravel()
        row["predict_time"] = time.perf_counter() - start
        if not np.all(np.isfinite(pred)):
            raise ValueError("the model predicted NaN or infinite values on the test set")
        row["r2"] = float(r2_score(y_test, pred))
        timeout = payload["sympy_timeout"]
        expr = model_expression(model, names)
        if expr is None:
            row["model_size"] = float(complexity(model))  # a tree: its nodes
            row["model"] = model_text(model, names)
        else:
            row["model_size"] = float(model_size(expr, timeout))
            row["model"] = str(expr)[:20_000]
        if payload.get("problem") is not None:
            row["solution"] = ("no expression" if expr is None
                               else symbolic_solution(expr, payload["problem"].truth(), timeout))
        try:
            row["complexity"] = float(complexity(expr if expr is not None else model))
        except (TypeError, ValueError):
            pass
        row["params"] = "{}"
        row["status"] = "ok"
    except Exception as exc:  # a failed task is a result, not a crash of the run
        record_failure(row, exc)
    return finished(row)


# ------------------------------------------------------------------------------------ the run


def dataset_key(name: str, noise: float | None) -> str:
    """The stored dataset name of a problem at a noise level (``NAME|noise=LEVEL``)."""
    return name if noise is None else f"{name}{SEP}{float(noise):g}"


def split_key(key: str) -> tuple:
    """``(name, noise)`` of a stored dataset name (noise None for a black-box dataset)."""
    name, sep, level = str(key).rpartition(SEP)
    return (name, float(level)) if sep else (str(key), None)


def groundtruth_payloads(problems: dict, noise, rows: int, test_rows: int, pmlb_data=False, data_dir=None,
                         sympy_timeout=SYMPY_TIMEOUT, tables=None, units=False) -> dict:
    """``key -> (payload, feature names, fingerprint)`` of every (problem, noise level). A problem
    without ranges, or every problem when ``pmlb_data``, reads its data file (``tables[name]`` =
    ``(X, y)`` arrays). With ``units`` each problem's :attr:`Problem.units` go to the methods that
    take them (``feature_units`` and ``target_units``: SQR's dimensional prior), where its metadata
    gives them."""
    items = {}
    for name, problem in problems.items():
        table = None
        if pmlb_data or not problem.has_ranges:
            if tables is None or name not in tables:
                raise ValueError(f"{name}: its PMLB data file is needed (no sampling ranges, or --pmlb-data)")
            table = tables[name]
        for level in noise:
            recipe = {"problem": [problem.formula, [list(v) for v in problem.variables]], "rows": rows, "noise": level,
                      "generator": "uniform-v1" if table is None else "pmlb-split-v1"}
            if table is None:
                recipe["test_rows"] = test_rows
            else:
                recipe["table"] = fingerprint(np.column_stack(table).tobytes())
            if units and problem.units is not None:  # (results with the prior are not those without)
                recipe["units"] = [problem.units[0], list(problem.units[1])]
            payload = {"problem": problem, "noise": float(level), "rows": rows, "test_rows": test_rows,
                       "table": table, "features": problem.features, "sympy_timeout": sympy_timeout,
                       "units": problem.units if units else None}
            items[dataset_key(name, level)] = (payload, problem.features, fingerprint(recipe))
    return items


def blackbox_payloads(tables: dict, rows, sympy_timeout=SYMPY_TIMEOUT) -> dict:
    """``name -> (payload, feature names, fingerprint)`` of black-box datasets ``name -> (X, y, names)``."""
    items = {}
    for name, (X, y, names) in tables.items():
        recipe = {"table": fingerprint(np.column_stack([X, y]).tobytes()), "columns": list(names), "rows": rows,
                  "generator": "pmlb-split-v1"}
        payload = {"problem": None, "noise": 0.0, "rows": rows, "test_rows": None, "table": (X, y),
                   "features": list(names), "sympy_timeout": sympy_timeout}
        items[name] = (payload, list(names), fingerprint(recipe))
    return items


def make_tasks(items: dict, methods, seeds, budget=BUDGET) -> list:
    """Every (dataset key, method, seed) task."""
    from .runner import Task, method_settings

    specs = [METHODS[m] if isinstance(m, str) else m for m in methods]
    settings = {s.name: method_settings(s, budget) for s in specs}
    return [Task(key, s.name, 0.5, 0, int(seed), SPLIT_FOLDS, settings[s.name], item[2])
            for key, item in items.items() for s in specs for seed in seeds]


def run_srbench(items: dict, methods, seeds, store, n_jobs=1, scheduler=None, budget=BUDGET, retry_failed=False,
                progress=False) -> pd.DataFrame:
    """Run every task of ``items`` (:func:`groundtruth_payloads` / :func:`blackbox_payloads`) not yet
    in ``store`` on the benchmark runner (joblib, Dask or this process; resumable, claims shared by
    several runners) and return this run's stored rows."""
    from .runner import _build_name, _run_claimed
    from .store import ResultStore, task_key

    unknown = [m for m in methods if isinstance(m, str) and m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown} for the SRBench tracks; choose among {list(METHODS)}")
    specs = {s.name: s for s in (METHODS[m] if isinstance(m, str) else m for m in methods)}
    tasks = make_tasks(items, list(specs.values()), seeds, budget)
    entries = {"folds": SPLIT_FOLDS, "budget": {"name": "srbench", "fields": dataclasses.asdict(budget)}}
    entries.update({f"method:{m}": _build_name(s.build) for m, s in specs.items()})
    entries.update({f"data:{k}": {"fingerprint": item[2], "rows": int(item[0]["rows"] or 0),
                                  "features": len(item[1])} for k, item in items.items()})
    own = not isinstance(store, ResultStore)
    results = ResultStore(store) if own else store
    try:
        results.bind(entries)
        if retry_failed:
            failed = results.failed()
            results.delete([t.key for t in tasks if t.key in failed])
        _run_claimed(tasks, items, specs, budget, results, n_jobs, scheduler, progress, run=run_srbench_task)
        table = results.load()
    finally:
        if own:
            results.close()
    keys = {t.key for t in tasks}
    mask = [task_key(*k) in keys for k in table[list(KEY)].itertuples(index=False)]
    return table[mask].reset_index(drop=True)


# ------------------------------------------------------------------------------------ estimate


def estimate_seconds(tasks, sizes: dict, budget=BUDGET, measured=None) -> tuple[float, dict]:
    """CPU seconds of ``tasks`` for ``sizes`` ``key -> (training rows, features)``: SQR's cost model of
    the other suites (its default search), linear QR's, a peer's time limit, a few seconds of sympy a
    task; rescaled per method by the median fit time ``measured`` (stored rows) shows."""
    from .suites import _FIT_COST, _FIT_OVERHEAD

    scale = {}
    if measured is not None and len(measured):
        ok = measured[measured["status"] == "ok"]
        for method, sub in ok.groupby("method"):
            scale[method] = float(sub["fit_time"].median())
    per_method = {}
    for task in tasks:
        n, d = sizes[task.dataset]
        if task.method in scale:
            seconds = scale[task.method]
        elif task.method in ("SQR", "SQR-L2"):
            a, b, c = _FIT_COST["SQR"]
            seconds = _FIT_OVERHEAD + a * n ** b * max(d, 1) ** c * 6 / 15  # default search: 6 populations, not 15
        elif task.method == "LQR":
            a, b, c = _FIT_COST["LQR-U"]
            seconds = _FIT_OVERHEAD + a * n ** b * max(d, 1) ** c
        elif task.method == "OSRT":
            seconds = min(1.0 + n * d * 1e-4, budget.osrt_time_limit or math.inf)
        else:
            seconds = float(budget.sr_time_limit or 600.0)
        per_method[task.method] = per_method.get(task.method, 0.0) + seconds + 2.0
    return float(sum(per_method.values())), per_method
