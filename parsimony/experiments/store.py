"""The results store: one SQLite row per finished task, safe against kills at any moment.

SQLite in WAL mode; every row is written in its own transaction; the task key
``(dataset, method, quantile, fold, seed)`` is UNIQUE, so a rerun that finds a row skips the task
and a row can never be stored twice. A process killed mid-write leaves the last committed state.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_int, check_quantile

KEY = ("dataset", "method", "quantile", "fold", "seed")

#: Columns of the ``results`` table after the key, with their SQL types.
FIELDS = {
    "status": "TEXT NOT NULL CHECK (status IN ('ok', 'failed'))",
    "nql": "REAL", "nql_fold": "REAL", "y_range": "REAL", "ace": "REAL", "pinball": "REAL", "coverage": "REAL", "complexity": "REAL",
    "fit_time": "REAL", "tune_time": "REAL", "predict_time": "REAL",
    "n_train": "INTEGER", "n_test": "INTEGER", "n_features": "INTEGER",
    "transparent": "INTEGER", "target": "TEXT",
    "model": "TEXT", "params": "TEXT", "error": "TEXT", "host": "TEXT", "finished_at": "TEXT",
}
COLUMNS = (*KEY, *FIELDS)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS results (dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, "
    "fold INTEGER NOT NULL, seed INTEGER NOT NULL, "
    + ", ".join(f"{name} {kind}" for name, kind in FIELDS.items())
    + ", UNIQUE (dataset, method, quantile, fold, seed))"
)
# a runner's claim on a task it is computing; the lease lapses unless its owner renews it
_CLAIMS = (
    "CREATE TABLE IF NOT EXISTS claims (dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, "
    "fold INTEGER NOT NULL, seed INTEGER NOT NULL, owner TEXT NOT NULL, expires REAL NOT NULL, "
    "UNIQUE (dataset, method, quantile, fold, seed))"
)
_WHERE_KEY = "dataset = ? AND method = ? AND quantile = ? AND fold = ? AND seed = ?"


def quantile_key(quantile) -> float:
    """The quantile as stored in the key (rounded to 10 decimals so 0.9 == 0.9000000000000001)."""
    return round(float(quantile), 10)


def task_key(dataset, method, quantile, fold, seed) -> tuple:
    """The normalised UNIQUE key of a task."""
    return (str(dataset), str(method), quantile_key(quantile), int(fold), int(seed))


def claim_owner() -> str:
    """A new claim owner name for this process: ``host:pid:nonce``."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def _owner_alive(owner: str) -> bool:
    """False when ``owner`` is a process of this host that no longer exists (its claims lapse at once)."""
    host, pid, _ = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def _checked_key(row) -> tuple:
    """The normalised key of a row to store; a key part that cannot be stored raises, naming it."""
    check_quantile(row["quantile"], "quantile")
    check_int(row["fold"], "fold", minimum=0)
    check_int(row["seed"], "seed", minimum=0)
    return task_key(*(row[k] for k in KEY))


class ResultStore:
    """A results database (created when missing).

    Parameters
    ----------
    path : str or path
        SQLite file; ``":memory:"`` for a throwaway store.
    readonly : bool, default=False
        Only read: the file must exist, nothing is written (works in a read-only folder).
    any_thread : bool, default=False
        Let any thread use the connection, one at a time (the caller serialises), not only the
        thread that opened it.

    Raises
    ------
    ValueError
        Naming the file when it is a folder, not a SQLite results store, or not writable.
    """

    def __init__(self, path, readonly=False, any_thread=False):
        self.path = str(path)
        self.readonly = bool(readonly)
        self.any_thread = bool(any_thread)
        try:
            self._conn = self._open()
        except sqlite3.Error as exc:
            raise ValueError(f"cannot open the results store {self.path}: {exc} "
                             "(it must be a SQLite file written by parsimony bench run)") from None

    def _open(self) -> sqlite3.Connection:
        memory = self.path == ":memory:"
        file = Path(self.path).expanduser()
        if not memory:
            if file.is_dir():
                raise ValueError(f"the results store {self.path} is a folder; give a file such as "
                                 f"{file / 'results.sqlite'}")
            if not file.parent.resolve().is_dir():
                raise ValueError(f"the folder of the results store does not exist: {file.parent.resolve()}")
        if self.readonly and not memory:
            if not file.is_file():
                raise FileNotFoundError(f"no results store at {self.path!r}")
            conn = self._connect_readonly(file)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "results" not in tables:
                conn.close()
                raise ValueError(f"{self.path} is a SQLite file but not a results store (no results table)")
            return conn
        if not memory and not os.access(file.parent.resolve(), os.W_OK):
            raise ValueError(f"cannot write the results store {self.path}: its folder {file.parent.resolve()} "
                             "is not writable (reading works: parsimony bench report)")
        if file.is_file() and not memory and not os.access(file, os.W_OK):
            raise ValueError(f"cannot write the results store {self.path}: the file is read-only")
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=not self.any_thread)
        conn.execute("PRAGMA busy_timeout = 60000")
        if not memory:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(_SCHEMA)
        conn.execute(_CLAIMS)
        self._conn = conn
        self._migrate()
        return conn

    @staticmethod
    def _connect_readonly(file: Path) -> sqlite3.Connection:
        uri = file.resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60.0, isolation_level=None)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            # a WAL store in a read-only folder cannot create its shared-memory file: read the file as is
            conn.close()
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)

    def _migrate(self) -> None:
        """Bring a store written before ``y_range`` existed to the current columns.

        Its ``nql`` divided by the test fold's range: that value moves to ``nql_fold`` and ``nql``
        (whole-dataset range) stays empty until :meth:`fill_range` learns the dataset's range.
        """
        present = {row[1] for row in self._conn.execute("PRAGMA table_info(results)")}
        missing = [name for name in FIELDS if name not in present]
        if not missing:
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            for name in missing:
                self._conn.execute(f"ALTER TABLE results ADD COLUMN {name} {FIELDS[name]}")
            if "nql_fold" in missing:
                self._conn.execute("UPDATE results SET nql_fold = nql, nql = NULL")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def fill_range(self, dataset, y_range) -> int:
        """Give ``dataset``'s rows without a ``y_range`` that range and ``nql = pinball / y_range``.

        Rows of a migrated store get their whole-range NQL back when a run names the dataset;
        returns how many rows changed.
        """
        span = float(y_range)
        if not np.isfinite(span) or span <= 0:
            return 0
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            count = self._conn.execute(
                "UPDATE results SET y_range = ?, nql = pinball / ? WHERE dataset = ? AND y_range IS NULL "
                "AND pinball IS NOT NULL", (span, span, str(dataset))).rowcount
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return count

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    # -- reading --------------------------------------------------------------------------------
    def finished(self) -> set:
        """Keys of every stored task (finished, successfully or not)."""
        rows = self._conn.execute("SELECT dataset, method, quantile, fold, seed FROM results").fetchall()
        return {task_key(*r) for r in rows}

    def failed(self) -> set:
        """Keys of the tasks stored as failed."""
        rows = self._conn.execute(
            "SELECT dataset, method, quantile, fold, seed FROM results WHERE status = 'failed'"
        ).fetchall()
        return {task_key(*r) for r in rows}

    def load(self) -> pd.DataFrame:
        """All rows as a DataFrame (columns :data:`COLUMNS`), sorted by key."""
        present = {row[1] for row in self._conn.execute("PRAGMA table_info(results)")}
        names = [c for c in COLUMNS if c in present]  # a read-only store from an older version
        query = f"SELECT {', '.join(names)} FROM results ORDER BY dataset, method, quantile, fold, seed"
        return pd.read_sql_query(query, self._conn).reindex(columns=list(COLUMNS))

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    # -- writing --------------------------------------------------------------------------------
    def add(self, row: dict) -> bool:
        """Store one finished task in its own transaction; False when its key is already there."""
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown result columns: {sorted(unknown)}")
        missing = [k for k in (*KEY, "status") if row.get(k) is None]
        if missing:
            raise ValueError(f"a result row needs {missing}")
        if row["status"] not in ("ok", "failed"):
            raise ValueError(f"status must be 'ok' or 'failed', got {row['status']!r}")
        key = _checked_key(row)
        values = {**row, **dict(zip(KEY, key))}
        names = list(values)
        sql = f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = self._conn.execute(sql, [values[n] for n in names])
            self._conn.execute(f"DELETE FROM claims WHERE {_WHERE_KEY}", key)
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return cursor.rowcount == 1

    def delete(self, keys) -> int:
        """Remove the rows of ``keys`` (e.g. failed tasks to retry); returns how many went."""
        keys = [task_key(*k) for k in keys]
        if not keys:
            return 0
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            count = 0
            for k in keys:
                count += self._conn.execute(f"DELETE FROM results WHERE {_WHERE_KEY}", k).rowcount
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return count


    # -- claims: several runners on one store ---------------------------------------------------
    def claim(self, key, owner: str, lease: float) -> bool:
        """Claim the task ``key`` for ``owner`` for ``lease`` seconds; False when it is stored or
        another owner holds a live claim (a lapsed claim, e.g. of a killed runner, is taken over)."""
        key = task_key(*key)
        now = time.time()
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            stored = self._conn.execute(f"SELECT 1 FROM results WHERE {_WHERE_KEY}", key).fetchone()
            held = self._conn.execute(f"SELECT owner, expires FROM claims WHERE {_WHERE_KEY}", key).fetchone()
            free = stored is None and (held is None or held[0] == owner or held[1] < now or not _owner_alive(held[0]))
            if free:
                self._conn.execute(
                    "INSERT OR REPLACE INTO claims (dataset, method, quantile, fold, seed, owner, expires) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)", (*key, owner, now + lease))
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return free

    def renew(self, owner: str, lease: float) -> None:
        """Extend every claim of ``owner`` by ``lease`` seconds from now."""
        self._conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + lease, owner))

    def release(self, owner: str) -> None:
        """Drop every claim of ``owner`` (its unfinished tasks become free at once)."""
        self._conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def claimed_by_others(self, owner: str) -> set:
        """Keys of the tasks other owners hold a live claim on."""
        rows = self._conn.execute("SELECT dataset, method, quantile, fold, seed, owner FROM claims WHERE owner != ? "
                                  "AND expires >= ?", (owner, time.time())).fetchall()
        return {task_key(*r[:5]) for r in rows if _owner_alive(r[5])}


def load_results(store) -> pd.DataFrame:
    """The rows of a results store given as a path, a :class:`ResultStore` or a DataFrame."""
    if isinstance(store, pd.DataFrame):
        missing = [c for c in (*KEY, "status") if c not in store.columns]
        if missing:
            raise ValueError(f"the results frame lacks the columns {missing}: it must hold result rows "
                             f"(columns {list(COLUMNS)}), as ResultStore.load or run_benchmark return")
        return store.reindex(columns=[*COLUMNS, *(c for c in store.columns if c not in COLUMNS)])
    if isinstance(store, ResultStore):
        return store.load()
    if not os.path.exists(store):
        raise FileNotFoundError(f"no results store at {store!r}")
    with ResultStore(store, readonly=True) as opened:
        return opened.load()
