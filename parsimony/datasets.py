"""Datasets: PMLB-format and CSV loaders with a local lookup order, and the papers' synthetic generators.

Lookup order of :func:`load_dataset` for a name: an explicit path, ``data_dir``, the
environment variable ``PARSIMONY_DATA``, the user cache directory, and, when online, PMLB's
public file layout (downloaded into the cache).
"""

from __future__ import annotations

import os
import urllib.error
import warnings
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

from ._validation import check_int, check_nonnegative, check_quantile

ENV_DATA = "PARSIMONY_DATA"
PMLB_URL = "https://github.com/EpistasisLab/pmlb/raw/master/datasets/{name}/{name}.tsv.gz"
_SUFFIXES = (".tsv.gz", ".tsv", ".csv.gz", ".csv")


def cache_dir() -> Path:
    """The user cache directory for downloaded datasets (``$XDG_CACHE_HOME/parsimony``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "parsimony" / "datasets"


def _search_dirs(data_dir) -> list[Path]:
    dirs = []
    if data_dir is not None:
        dirs.append(Path(data_dir))
    if os.environ.get(ENV_DATA):
        dirs.extend(Path(p) for p in os.environ[ENV_DATA].split(os.pathsep) if p)
    dirs.append(cache_dir())
    return dirs


def _candidates(directory: Path, name: str):
    for folder in (directory, directory / name, *sorted(p for p in directory.glob("*") if p.is_dir())):
        for suffix in _SUFFIXES:
            yield folder / f"{name}{suffix}"


def read_table(path) -> tuple[pd.DataFrame, pd.Series]:
    """Read a PMLB-format (tab-separated, column ``target``) or CSV file; the last column is the target."""
    path = Path(path)
    sep = "\t" if ".tsv" in path.suffixes else ","
    frame = _read_csv(path, sep=sep)
    if frame.shape[1] < 2:
        raise ValueError(f"{path} needs at least one feature column and a target column")
    if frame.empty:
        raise ValueError(f"{path} has no rows")
    if sep == "\t" and "target" not in frame.columns:
        raise ValueError(f"{path} is not in PMLB format: no column named 'target'")
    target = "target" if "target" in frame.columns else frame.columns[-1]
    try:
        y = frame[target].astype(np.float64).rename("target")
    except (TypeError, ValueError):
        raise ValueError(f"{path}: the target column {target!r} is not numeric") from None
    X = frame.drop(columns=[target])
    return X, y


def _read_csv(path: Path, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` whose failures (empty, corrupt, binary file) raise a ValueError naming the file."""
    import gzip
    import zlib

    try:
        return pd.read_csv(path, **kwargs)
    except pd.errors.EmptyDataError:
        raise ValueError(f"cannot read dataset file {path}: it is empty") from None
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise ValueError(f"cannot read dataset file {path}: corrupt or truncated gzip data ({exc})") from None
    except UnicodeDecodeError:
        raise ValueError(f"cannot read dataset file {path}: not a text table (binary content)") from None
    except pd.errors.ParserError as exc:
        raise ValueError(f"cannot read dataset file {path}: malformed table ({exc})") from None


def _has_target_column(path: Path) -> bool:
    """PMLB tables name their target column; CSVs take the last column."""
    if ".tsv" not in path.suffixes:
        return True
    return "target" in _read_csv(path, sep="\t", nrows=0).columns


def find_dataset(name_or_path, data_dir=None) -> Path | None:
    """Return the local file for a dataset name or path, or ``None`` when none is found."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    name = path.name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    for directory in _search_dirs(data_dir):
        if directory.is_dir():
            for candidate in _candidates(directory, name):
                if candidate.is_file():
                    return candidate
    return None


def _download_pmlb(name: str) -> Path:
    target = cache_dir() / f"{name}.tsv.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    with urllib.request.urlopen(PMLB_URL.format(name=name), timeout=30) as response:
        tmp.write_bytes(response.read())
    tmp.replace(target)
    return target


def load_dataset(name_or_path, data_dir=None, download: bool = True) -> tuple[pd.DataFrame, pd.Series]:
    """Load a regression dataset as ``(X, y)``.

    Parameters
    ----------
    name_or_path : str or path
        A file (PMLB ``.tsv.gz``/``.tsv`` or ``.csv``, last column the target) or a dataset name
        such as ``"192_vineyard"`` looked up in ``data_dir``, ``$PARSIMONY_DATA``, the user cache,
        and finally PMLB online (when ``download`` is true).
    data_dir : path, optional
        A folder holding ``NAME.tsv.gz`` / ``NAME.csv`` files (sub-folders are searched too).

    Returns
    -------
    X : DataFrame of features; y : Series named ``target``.
    """
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path):
        raise ValueError(f"name_or_path must be a non-empty name or path, got {name_or_path!r}")
    found = find_dataset(name_or_path, data_dir)
    if found is not None:
        return read_table(found)
    name = Path(name_or_path).name
    looked = [str(d) for d in _search_dirs(data_dir)]
    if download and "/" not in str(name_or_path) and not any(name.endswith(s) for s in _SUFFIXES):
        try:
            return read_table(_download_pmlb(name))
        except urllib.error.HTTPError as exc:
            reason = f"PMLB has no dataset named {name!r} (HTTP {exc.code})"
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = f"downloading from PMLB failed (offline?): {exc}"
    else:
        reason = "download disabled" if not download else "not a PMLB name"
    raise FileNotFoundError(
        f"dataset {str(name_or_path)!r} not found: looked for {name}{{{','.join(_SUFFIXES)}}} in "
        f"{looked} and their sub-folders; {reason}. Pass data_dir= or set {ENV_DATA}."
    )


def list_datasets(data_dir=None) -> pd.DataFrame:
    """List the datasets found in ``data_dir`` (and ``$PARSIMONY_DATA``, the cache) with n and d.

    An unreadable file is left out with a warning naming it.
    """
    rows, seen = [], set()
    for directory in _search_dirs(data_dir):
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*")):
            suffix = next((s for s in _SUFFIXES if path.name.endswith(s)), None)
            if suffix is None or not path.is_file():
                continue
            name = path.name[: -len(suffix)]
            if name in seen:
                continue
            try:
                if not _has_target_column(path):
                    continue
                X, _ = read_table(path)
            except ValueError as exc:  # one unreadable file must not hide the others
                warnings.warn(f"skipped: {exc}", stacklevel=2)
                continue
            seen.add(name)
            rows.append({"name": name, "n": X.shape[0], "d": X.shape[1], "path": str(path)})
    return pd.DataFrame(rows, columns=["name", "n", "d", "path"])


# ------------------------------------------------------------------------------ synthetic data
def _frame(X: np.ndarray, y: np.ndarray) -> tuple[pd.DataFrame, pd.Series]:
    cols = [f"x{j}" for j in range(X.shape[1])]
    return pd.DataFrame(X, columns=cols), pd.Series(y, name="target")


def make_friedman1(n_samples=200, noise=1.0, n_features=10, random_state=None):
    """Friedman #1: ``10 sin(pi x0 x1) + 20 (x2 - .5)^2 + 10 x3 + 5 x4 + noise`` (sd 1 in the papers)."""
    from sklearn.datasets import make_friedman1 as _f1

    n = check_int(n_samples, "n_samples", minimum=1)
    X, y = _f1(n_samples=n, n_features=n_features, noise=check_nonnegative(noise, "noise"), random_state=random_state)
    return _frame(X, y)


def make_friedman2(n_samples=200, noise=150.0, random_state=None):
    """Friedman #2: ``sqrt(x0^2 + (x1 x2 - 1/(x1 x3))^2) + noise`` (sd 150 in the papers)."""
    from sklearn.datasets import make_friedman2 as _f2

    n = check_int(n_samples, "n_samples", minimum=1)
    return _frame(*_f2(n_samples=n, noise=check_nonnegative(noise, "noise"), random_state=random_state))


def make_friedman3(n_samples=200, noise=0.1, random_state=None):
    """Friedman #3: ``atan((x1 x2 - 1/(x1 x3)) / x0) + noise`` (sd 0.1 in the papers)."""
    from sklearn.datasets import make_friedman3 as _f3

    n = check_int(n_samples, "n_samples", minimum=1)
    return _frame(*_f3(n_samples=n, noise=check_nonnegative(noise, "noise"), random_state=random_state))


def make_peak(n_samples=200, n_features=20, noise=1.0, random_state=None):
    """Breiman's Peak: ``y = 25 exp(-r^2 / 2) + noise`` with ``r ~ U[0, 3]`` and ``x`` uniform on the
    ``n_features``-sphere of radius ``r``."""
    n = check_int(n_samples, "n_samples", minimum=1)
    d = check_int(n_features, "n_features", minimum=1)
    rng = np.random.default_rng(random_state)
    r = rng.uniform(0.0, 3.0, n)
    direction = rng.standard_normal((n, d))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    X = direction * r[:, None]
    y = 25.0 * np.exp(-0.5 * r**2) + check_nonnegative(noise, "noise") * rng.standard_normal(n)
    return _frame(X, y)


def make_heteroskedastic(n_samples=1000, low=0.0, high=1.0, random_state=None):
    """The SQR paper's Figure 1 example: ``y = x + x^2.5 * e`` with ``e ~ N(0, 1)``.

    Its conditional ``tau``-quantile is :func:`heteroskedastic_quantile` ``= x + z_tau x^2.5``.
    """
    n = check_int(n_samples, "n_samples", minimum=1)
    low, high = check_nonnegative(low, "low"), check_nonnegative(high, "high")
    if not low < high:
        raise ValueError(f"need 0 <= low < high, got low={low!r}, high={high!r}")
    with np.errstate(over="ignore"):
        if not np.isfinite(np.float64(high) ** 2.5 * 10):  # the noise scale x^2.5 times a few sd
            raise ValueError(f"high={high!r} is too large: x^2.5 overflows float64 (use high <= 1e120)")
    rng = np.random.default_rng(random_state)
    x = rng.uniform(low, high, n)
    y = x + x**2.5 * rng.standard_normal(n)
    return _frame(x[:, None], y)


def heteroskedastic_quantile(x, quantile):
    """True conditional quantile ``x + z_tau x^2.5`` of :func:`make_heteroskedastic`."""
    from scipy.stats import norm

    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("x must be finite and >= 0: the model y = x + x^2.5 e is defined for x >= 0 only")
    return x + norm.ppf(check_quantile(quantile)) * x**2.5
