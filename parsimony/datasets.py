"""Datasets: PMLB-format and CSV loaders with a local lookup order, and the papers' synthetic generators.

Lookup order of :func:`load_dataset` for a name: an explicit path, ``data_dir``, the
environment variable ``PARSIMONY_DATA``, the user cache directory, and, when online, PMLB's
public file layout (downloaded into the cache by :func:`fetch_pmlb`: resumable, checksummed).
"""

from __future__ import annotations

import http.client
import os
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass, field
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


# ------------------------------------------------------------------------------ PMLB fetch
#: Set to a mirror of PMLB's ``datasets/`` layout (``{name}`` is replaced by the dataset name).
ENV_PMLB_URL = "PARSIMONY_PMLB_URL"
_MANIFEST = "checksums.json"
_CHUNK = 1 << 16
_MAX_STALLED = 3  # downloads in a row that time out before the source counts as unreachable
_HOW_TO_GET = (
    "to get them, download PMLB's files datasets/NAME/NAME.tsv.gz (git clone https://github.com/EpistasisLab/pmlb, "
    "or `pip install pmlb` and pmlb.fetch_data(NAME, local_cache_dir=DIR)) into a folder DIR and pass "
    f"--data-dir DIR (data_dir=DIR), set {ENV_DATA}=DIR, or copy them into the cache {{cache}}"
)


def pmlb_url() -> str:
    """URL template of a PMLB file: ``$PARSIMONY_PMLB_URL`` or PMLB's GitHub repository."""
    return os.environ.get(ENV_PMLB_URL) or PMLB_URL


def known_checksums() -> dict:
    """``name -> (size, sha256)`` of the PMLB files whose hashes ship with the package."""
    from importlib import resources

    text = resources.files("parsimony").joinpath("data", "pmlb_checksums.csv").read_text(encoding="utf-8")
    rows = [line.split(",") for line in text.splitlines() if line and not line.startswith(("#", "dataset,"))]
    return {name: (int(size), digest) for name, size, digest in rows}


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_manifest(cache: Path) -> dict:
    import json

    try:
        data = json.loads((cache / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: (int(v["size"]), str(v["sha256"])) for k, v in data.items() if isinstance(v, dict)}


def _expected_checksums(cache: Path) -> dict:
    """``name -> (size, sha256, origin)``: the shipped checksums, and for other names those recorded in
    the cache's manifest; ``origin`` says where a checksum comes from, for a mismatch's message."""
    shipped = {name: (*value, "shipped with parsimony") for name, value in known_checksums().items()}
    recorded = {name: (*value, f"recorded in {cache / _MANIFEST} on its first fetch (delete that entry to accept "
                               "another file)") for name, value in _read_manifest(cache).items()}
    return {**recorded, **shipped}


def _record(cache: Path, name: str, size: int, digest: str) -> None:
    """Add ``name`` to the cache's manifest (written atomically)."""
    import json

    manifest = _read_manifest(cache)
    manifest[name] = (size, digest)
    tmp = cache / f".{_MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps({k: {"size": s, "sha256": h} for k, (s, h) in sorted(manifest.items())}, indent=1),
                   encoding="utf-8")
    tmp.replace(cache / _MANIFEST)


@dataclass
class FetchResult:
    """Outcome of :func:`fetch_pmlb`.

    Attributes
    ----------
    paths : dict
        ``name -> Path`` of every dataset now in the cache (downloaded or already there, verified).
    downloaded : list of str
        The names downloaded by this call.
    failed : dict
        ``name -> reason`` of every dataset that could not be fetched.
    unreachable : str or None
        Why the source could not be reached at all (offline), else ``None``.
    """

    paths: dict = field(default_factory=dict)
    downloaded: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    unreachable: str | None = None

    def advice(self, cache=None) -> str:
        """How to get the datasets that could not be fetched."""
        return _HOW_TO_GET.format(cache=cache or cache_dir())


class _Mismatch(ValueError):
    """A downloaded file differs from what was expected (checksum, size, table shape)."""


def _verify(path: Path, expected, shape) -> tuple[int, str]:
    """Size and sha256 of ``path``; raise :class:`_Mismatch` when they differ from ``expected``
    ``(size, sha256, origin)``, or when it is not a PMLB table (of ``shape`` ``(n, d)`` when given)."""
    size, digest = path.stat().st_size, _sha256(path)
    if expected is not None and (size, digest) != tuple(expected[:2]):
        raise _Mismatch(f"checksum mismatch: expected sha256 {expected[1][:16]}... ({expected[0]} bytes, "
                        f"{expected[2]}), got {digest[:16]}... ({size} bytes)")
    if expected is None or shape is not None:
        _verify_shape(path, shape)
    return size, digest


def _verify_shape(path: Path, shape) -> None:
    """Raise :class:`_Mismatch` unless ``path`` is a PMLB table (of ``shape`` ``(n, d)`` when given)."""
    try:
        frame = _read_csv(path, sep="\t" if ".tsv" in path.suffixes else ",",
                          compression="gzip" if ".gz" in path.suffixes else None)
    except ValueError as exc:
        raise _Mismatch(f"not a PMLB table: {exc}") from None
    if frame.shape[1] < 2 or (".tsv" in path.suffixes and "target" not in frame.columns):
        raise _Mismatch("not a PMLB table: no 'target' column beside the features")
    n, d = frame.shape[0], frame.shape[1] - 1
    if shape is not None and (n, d) != tuple(shape):
        raise _Mismatch(f"the table has {n} rows x {d} features, expected {shape[0]} x {shape[1]}")


def check_dataset_file(path, name: str, shape=None) -> None:
    """Check a local copy of the PMLB dataset ``name``: a ``.tsv.gz`` file must match the checksum
    shipped with the package (or recorded in the cache on its first fetch), and any file must be a
    table of ``shape`` ``(n, d)`` rows x features when given. Raises ValueError naming the file."""
    path = Path(path)
    try:
        if path.name.endswith(".tsv.gz"):
            _verify(path, _expected_checksums(cache_dir()).get(name), shape)
        else:  # another format than PMLB's file: no checksum to compare with
            _verify_shape(path, shape)
    except _Mismatch as exc:
        raise ValueError(f"{path} is not PMLB's {name}: {exc}") from None


def _download(url: str, part: Path, timeout: float, desc: str, progress: bool) -> None:
    """Download ``url`` into ``part``, resuming after the bytes it already holds (HTTP Range).

    Every 64 kB (or the rest of the file) must arrive within ``timeout`` seconds, so a silent or
    trickling server is abandoned; every byte received is written to ``part`` at once, so the next
    call resumes after it.
    """
    import time

    from tqdm.auto import tqdm

    start = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-"} if start else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if start and response.status != 206:  # the server ignores ranges: start over
            start = 0
        length = response.headers.get("Content-Length")
        total = start + int(length) if length and length.isdigit() else None
        with (open(part, "ab" if start else "wb") as fh,
              tqdm(total=total, initial=start, unit="B", unit_scale=True, desc=desc, leave=False,
                   disable=not progress) as bar):
            written, mark, due = start, start, time.monotonic() + timeout
            while block := response.read1(_CHUNK):
                fh.write(block)
                bar.update(len(block))
                written += len(block)
                if written - mark >= _CHUNK:
                    mark, due = written, time.monotonic() + timeout
                elif time.monotonic() > due and (total is None or written < total):
                    raise TimeoutError(f"less than {_CHUNK // 1024} kB arrived in {timeout:g} s "
                                       f"({written - mark} bytes)")
        if total is not None and part.stat().st_size < total:
            raise TimeoutError(f"connection closed after {part.stat().st_size} of {total} bytes")


def fetch_pmlb(names, cache=None, url=None, timeout: float = 30.0, shapes=None, progress: bool = False,
               log=None) -> FetchResult:
    """Fetch PMLB datasets into the user cache: resumable, checksummed, one failure never stops the rest.

    A file already in the cache is verified and kept. A download goes to ``NAME.tsv.gz.part`` and
    resumes from its bytes after an interruption (HTTP Range). A finished file is checked against
    the sha256 shipped with the package (:func:`known_checksums`) or recorded in the cache's
    ``checksums.json`` on its first fetch (a mismatch names where the expected hash comes from), and
    must read as a PMLB table of ``shapes[name]`` rows x features when given; a file with no
    checksum yet must read as a PMLB table and its size and sha256 are then recorded. A mismatching
    download is discarded. When the source is unreachable (offline), the remaining datasets are not
    tried.

    Parameters
    ----------
    names : iterable of str
        PMLB dataset names, e.g. ``"192_vineyard"``.
    cache : path, optional
        Target folder (default :func:`cache_dir`).
    url : str, optional
        URL template with ``{name}`` (default :func:`pmlb_url`).
    timeout : float, default=30.0
        Seconds a download may take for each 64 kB (or the rest of its file) before it is abandoned,
        keeping the bytes received: the next call resumes after them.
    shapes : dict, optional
        ``name -> (n, d)`` expected of a file that has no checksum.
    progress : bool, default=False
        A byte progress bar per download.
    log : callable, optional
        Called with one line per dataset downloaded or failed.

    Returns
    -------
    FetchResult
    """
    names, cache, template, timeout = _fetch_arguments(names, cache, url, timeout)
    shapes = dict(shapes or {})
    expected = _expected_checksums(cache)
    say = log or (lambda line: None)
    result, stalled = FetchResult(), 0
    for i, name in enumerate(names):
        target, part = _cache_paths(cache, name)
        if _cached_file_holds(target, cache, name, expected, shapes.get(name), say):
            result.paths[name] = target
            continue
        if result.unreachable is not None:
            result.failed[name] = f"not tried: {result.unreachable}"
            continue
        source = template.format(name=name)
        try:
            size, digest = _download_verified(source, part, expected.get(name), shapes.get(name), timeout,
                                              f"{name} ({i + 1}/{len(names)})", progress)
        except (_Mismatch, TimeoutError, OSError, http.client.HTTPException) as exc:
            if isinstance(exc, _Mismatch):
                part.unlink(missing_ok=True)
            reason, kind = _failure(exc, name, source, part, timeout)
            if kind == "unreachable":
                result.unreachable = reason
            elif kind == "stalled":
                stalled += 1
                if stalled >= _MAX_STALLED:
                    result.unreachable = f"{stalled} downloads in a row timed out or broke off"
            result.failed[name] = reason
            say(f"{name}: cannot be fetched: {reason}")
            continue
        stalled = 0
        part.replace(target)
        if name not in expected:
            _record(cache, name, size, digest)
            expected[name] = (size, digest, "recorded")
        result.paths[name] = target
        result.downloaded.append(name)
        say(f"{name}: downloaded ({size / 1024:.0f} kB, sha256 {digest[:12]}..."
            f"{' verified' if name in known_checksums() else ' recorded'})")
    return result


def _fetch_arguments(names, cache, url, timeout):
    """:func:`fetch_pmlb`'s arguments checked: the names (deduplicated), the cache folder (created), the
    URL template and the timeout."""
    if isinstance(names, str):
        names = [names]
    names = list(dict.fromkeys(names))
    for name in names:
        if not _is_pmlb_name(name):
            raise ValueError(f"names must be PMLB dataset names like '192_vineyard' (letters, digits, '_', '-' and "
                             f"'.', not starting with '.'), got {name!r}")
    timeout = float(timeout)
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    cache = Path(cache) if cache is not None else cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    template = url or pmlb_url()
    if "{name}" not in template:
        raise ValueError(f"url must contain '{{name}}', got {template!r}")
    return names, cache, template, timeout


def _is_pmlb_name(name) -> bool:
    import re

    return isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", name) is not None


def _cache_paths(cache: Path, name: str) -> tuple[Path, Path]:
    """The cache's layout: a dataset's verified file and the partial download it grows from."""
    return cache / f"{name}.tsv.gz", cache / f"{name}.tsv.gz.part"


def _cached_file_holds(target: Path, cache: Path, name: str, expected: dict, shape, say) -> bool:
    """Whether the cache holds ``name`` verified (recording a first checksum); a file failing its
    check is deleted."""
    if not target.is_file():
        return False
    try:
        size, digest = _verify(target, expected.get(name), shape)
    except _Mismatch as exc:
        say(f"{name}: the cached file fails its check ({exc}); downloading it again")
        target.unlink()
        return False
    if name not in expected:
        _record(cache, name, size, digest)
    return True


def _download_verified(source: str, part: Path, checksum, shape, timeout: float, desc: str,
                       progress: bool) -> tuple[int, str]:
    """Download ``source`` into ``part`` (resuming) and verify it: its size and sha256.

    A server answering 416 to the resume means ``part`` already holds the whole file: it is verified
    as it is, and downloaded afresh once when it fails.
    """
    try:
        _download(source, part, timeout, desc, progress)
    except urllib.error.HTTPError as exc:
        if exc.code != 416 or not part.exists():
            raise
        try:
            return _verify(part, checksum, shape)
        except _Mismatch:
            part.unlink()
            _download(source, part, timeout, desc, progress)
    return _verify(part, checksum, shape)


def _failure(exc: BaseException, name: str, source: str, part: Path, timeout: float) -> tuple[str, str]:
    """Why a download failed, and its kind: ``"unreachable"`` (the source cannot be reached),
    ``"stalled"`` (timed out or broke off; its bytes are kept) or ``"failed"``."""
    if isinstance(exc, urllib.error.HTTPError):
        return (f"PMLB has no dataset {name!r} (HTTP 404 at {source})" if exc.code == 404
                else f"HTTP {exc.code} {exc.reason} at {source}"), "failed"
    if isinstance(exc, _Mismatch):
        return f"{exc}; the download was discarded", "failed"
    if isinstance(exc, urllib.error.URLError) and not isinstance(getattr(exc, "reason", None), TimeoutError):
        return f"cannot reach {source.split(name)[0]} ({exc.reason})", "unreachable"
    kept = part.stat().st_size if part.exists() else 0
    return (f"timed out or interrupted ({type(exc).__name__}: {exc}; timeout {timeout:g} s); "
            f"{kept} bytes kept in the cache, the next fetch resumes from there"), "stalled"


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
    if download and _is_pmlb_name(str(name_or_path)) and not any(name.endswith(s) for s in _SUFFIXES):
        fetched = fetch_pmlb([name])
        if name in fetched.paths:
            return read_table(fetched.paths[name])
        reason = f"fetching it from PMLB failed: {fetched.failed[name]}"
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
