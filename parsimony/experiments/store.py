"""The results store: one SQLite row per finished task, safe against kills at any moment.

SQLite in WAL mode; every row is written in its own transaction. A task's key covers everything
that defines its result: ``(dataset, method, quantile, fold, seed)`` plus the split's ``folds``
(the shuffle is seeded by ``seed``), the ``settings`` (a fingerprint of the budget and of the
method's build function) and ``data`` (a fingerprint of the dataset's values and column names).
The key is UNIQUE, so a rerun that finds a row skips the task and a row can never be stored twice.
A process killed mid-write leaves the last committed state.

A store holds one experiment: :meth:`ResultStore.bind` records its folds, budget, methods and
data fingerprints when a run first starts and refuses a later run that differs, saying what
differs and how to start a fresh store. So a report never averages rows of different settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sqlite3
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import check_int, check_quantile

KEY = ("dataset", "method", "quantile", "fold", "seed", "folds", "settings", "data")
#: The store's schema version (``PRAGMA user_version``); stores of version 0 have no settings in their key.
SCHEMA_VERSION = 2

#: Columns of the ``results`` table after the key, with their SQL types.
FIELDS = {
    "status": "TEXT NOT NULL CHECK (status IN ('ok', 'failed'))",
    "nql": "REAL", "nql_fold": "REAL", "y_range": "REAL", "ace": "REAL", "pinball": "REAL", "coverage": "REAL", "complexity": "REAL",
    "fit_time": "REAL", "tune_time": "REAL", "predict_time": "REAL",
    # SRBench's tracks (parsimony.experiments.srbench): test R^2, sympy nodes of the simplified
    # model, symbolic-solution status ("yes", "no", "timeout", "no expression"), fit CPU seconds
    "r2": "REAL", "model_size": "REAL", "solution": "TEXT", "fit_cpu": "REAL",
    "n_train": "INTEGER", "n_test": "INTEGER", "n_features": "INTEGER",
    "transparent": "INTEGER", "target": "TEXT",
    "model": "TEXT", "params": "TEXT", "error": "TEXT", "host": "TEXT", "finished_at": "TEXT",
}
COLUMNS = (*KEY, *FIELDS)

_KEY_SQL = ("dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, fold INTEGER NOT NULL, "
            "seed INTEGER NOT NULL, folds INTEGER NOT NULL, settings TEXT NOT NULL, data TEXT NOT NULL")
_UNIQUE = f"UNIQUE ({', '.join(KEY)})"
_SCHEMA = (f"CREATE TABLE IF NOT EXISTS results ({_KEY_SQL}, "
           + ", ".join(f"{name} {kind}" for name, kind in FIELDS.items()) + f", {_UNIQUE})")
# a runner's claim on a task it is computing; the lease lapses unless its owner renews it
_CLAIMS = f"CREATE TABLE IF NOT EXISTS claims ({_KEY_SQL}, owner TEXT NOT NULL, expires REAL NOT NULL, {_UNIQUE})"
# the experiment the store holds: folds, budget, each method's build and each dataset's fingerprint
_EXPERIMENT = "CREATE TABLE IF NOT EXISTS experiment (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
_WHERE_KEY = " AND ".join(f"{k} = ?" for k in KEY)
_SMALLEST_DATABASE = 512  # bytes: one page of the smallest page size


@contextmanager
def _transaction(conn: sqlite3.Connection):
    """One write transaction: committed on success, rolled back on any exception, including a
    Ctrl-C. An interrupt can land after COMMIT (or before BEGIN) took effect, so only a
    transaction still open is rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def quantile_key(quantile) -> float:
    """The quantile as stored in the key (rounded to 10 decimals so 0.9 == 0.9000000000000001)."""
    return round(float(quantile), 10)


def task_key(dataset, method, quantile, fold, seed, folds, settings, data) -> tuple:
    """The normalised UNIQUE key of a task (the columns :data:`KEY`)."""
    return (str(dataset), str(method), quantile_key(quantile), int(fold), int(seed), int(folds), str(settings),
            str(data))


def fingerprint(value) -> str:
    """A short stable hash (16 hex digits) of bytes or of a JSON-serialisable value."""
    raw = value if isinstance(value, bytes) else json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


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
    check_int(row["folds"], "folds", minimum=2)
    return task_key(*(row[k] for k in KEY))


def _budget_name(value: dict) -> str:
    return repr(value["name"]) if value.get("name") else "a custom one"


def _data_text(value: dict) -> str:
    return f"{value['rows']} rows x {value['features']} features, fingerprint {value['fingerprint']}"


def _difference(name: str, stored, wanted) -> str:
    """What differs between the stored and the wanted value of an experiment entry."""
    if name == "folds":
        return f"folds: {stored} in the store, {wanted} in this run"
    if name == "budget":
        changed = [f"{k} {stored['fields'].get(k)!r} -> {v!r}" for k, v in wanted["fields"].items()
                   if stored["fields"].get(k) != v]
        return (f"budget: {_budget_name(stored)} in the store, {_budget_name(wanted)} in this run "
                f"({', '.join(changed)})")
    if name.startswith("method:"):
        return f"method {name[7:]!r}: built by {stored} in the store, by {wanted} in this run"
    return f"data of dataset {name[5:]!r}: {_data_text(stored)} in the store, {_data_text(wanted)} in this run"


class ExperimentMismatch(ValueError):
    """A run's settings differ from those of the experiment its store holds."""


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
        self._copy = None  # a private copy read instead of a WAL store whose -shm file cannot be made
        try:
            self._conn = self._open()
        except sqlite3.Error as exc:
            self._drop_copy()
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
            # SQLite takes a file too short to hold a database page for an empty database and would
            # overwrite it. The size tells, without opening the file: closing any descriptor of it
            # would drop the locks of this process's own connections to it (POSIX advisory locks).
            if file.is_file() and 0 < file.stat().st_size < _SMALLEST_DATABASE:
                raise ValueError(f"{self.path} is not a SQLite results store ({file.stat().st_size} bytes, less than "
                                 "any SQLite database); it is left untouched: give another --store")
        if self.readonly and not memory:
            if not file.is_file():
                raise FileNotFoundError(f"no results store at {self.path!r}")
            conn = self._connect_readonly(file)
            if "results" not in self._tables(conn):
                conn.close()
                raise ValueError(f"{self.path} is a SQLite file but not a results store (no results table)")
            return conn
        if not memory and not os.access(file.parent.resolve(), os.W_OK):
            raise ValueError(f"cannot write the results store {self.path}: its folder {file.parent.resolve()} "
                             "is not writable (reading works: parsimony bench report)")
        if file.is_file() and not memory and not os.access(file, os.W_OK):
            raise ValueError(f"cannot write the results store {self.path}: the file is read-only")
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=not self.any_thread)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            tables = self._tables(conn)
            if tables and "results" not in tables:
                raise ValueError(f"{self.path} is a SQLite file but not a results store (it has the tables "
                                 f"{sorted(tables)} and no results table); it is left untouched: give another --store")
            self._refuse_old_rows(conn)
            if not memory:
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._upgrade(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _tables(conn) -> set:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _refuse_old_rows(self, conn) -> None:
        """Refuse to write into a store of an older schema that has rows (they do not say which
        split, budget and data they came from); nothing is written to it."""
        present = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
        if present and not set(KEY) <= present:
            count = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            if count:
                raise ValueError(
                    f"the results store {self.path} was written by an older parsimony whose task key did not "
                    f"record the split, the budget and the data, so its {count} rows cannot be checked against "
                    "this run's settings: start a fresh store (another --store or store= path); "
                    f"parsimony bench report {self.path} still reads it")

    def _upgrade(self, conn) -> None:
        """Create the tables of a new store; an empty store of an older schema is recreated."""
        with _transaction(conn):
            self._refuse_old_rows(conn)  # again, under the lock: another runner may have written meanwhile
            present = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
            if present and not set(KEY) <= present:
                conn.execute("DROP TABLE results")
                conn.execute("DROP TABLE IF EXISTS claims")
            conn.execute(_SCHEMA)
            present = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
            for name, kind in FIELDS.items():  # columns added since the store was created
                if name not in present:
                    conn.execute(f"ALTER TABLE results ADD COLUMN {name} {kind}")
            conn.execute(_CLAIMS)
            conn.execute(_EXPERIMENT)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _connect_readonly(self, file: Path) -> sqlite3.Connection:
        uri = file.resolve().as_uri()
        conn = None
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60.0, isolation_level=None)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            if conn is not None:
                conn.close()
        # A WAL store in a read-only folder without its -shm file (its writer was killed) cannot be
        # opened in place. Reading the file alone (immutable=1) would miss the rows still in its
        # -wal file, so when that file holds any, a private copy of both is read instead.
        wal = Path(f"{file}-wal")
        if not wal.is_file() or wal.stat().st_size == 0:
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)
        try:  # (this process holds no lock on the store to lose by reading it: it could not open it)
            self._copy = tempfile.mkdtemp(prefix="parsimony-store-")
            copy = Path(self._copy) / file.name
            shutil.copyfile(file, copy)
            shutil.copyfile(wal, f"{copy}-wal")
            conn = sqlite3.connect(str(copy), timeout=60.0, isolation_level=None)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except (OSError, sqlite3.Error) as exc:
            self._drop_copy()
            raise ValueError(f"cannot read the results store {self.path}: it is in a read-only folder without its "
                             f"-shm file and its -wal file holds rows that only a copy could read ({exc}); read it "
                             "where it can be written, or copy it with its -wal file to a writable folder") from None

    def _drop_copy(self) -> None:
        if self._copy is not None:
            shutil.rmtree(self._copy, ignore_errors=True)
            self._copy = None

    # -- the experiment ---------------------------------------------------------------------------
    def experiment(self) -> dict:
        """The recorded experiment: ``{"folds": int, "budget": {...}, "method:NAME": str,
        "data:NAME": {...}}`` (empty for a store no run has bound yet)."""
        if "experiment" not in self._tables(self._conn):
            return {}
        return {name: json.loads(value) for name, value in self._conn.execute("SELECT name, value FROM experiment")}

    def bind(self, entries: dict) -> None:
        """Record this run's experiment in the store, or check it against the one recorded.

        ``entries`` maps ``"folds"``, ``"budget"``, ``"method:NAME"`` and ``"data:NAME"`` to
        JSON-serialisable values. Entries the store lacks are added (a run may add datasets,
        methods, quantiles and seeds); if one differs nothing is recorded and this raises.

        Raises
        ------
        ExperimentMismatch
            Naming every entry that differs and how to start a fresh store.
        """
        wanted = {name: json.loads(json.dumps(value, default=str)) for name, value in entries.items()}
        with _transaction(self._conn):
            stored = {name: json.loads(value) for name, value in self._conn.execute("SELECT name, value FROM experiment")}
            changed = [name for name, value in wanted.items() if name in stored and stored[name] != value]
            if changed:
                raise ExperimentMismatch(
                    f"the results store {self.path} holds another experiment: "
                    f"{'; '.join(_difference(name, stored[name], wanted[name]) for name in changed)}. A store keeps "
                    "one experiment so that its rows are never averaged across settings: start a fresh store "
                    "(another --store, or store= path), or delete this one to start over"
                    + ("; or give the changed data another dataset name" if any(n.startswith("data:") for n in changed)
                       else ""))
            for name, value in wanted.items():
                if name not in stored:
                    self._conn.execute("INSERT INTO experiment (name, value) VALUES (?, ?)",
                                       (name, json.dumps(value, sort_keys=True)))

    # -- context manager ------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
        self._drop_copy()

    # -- reading --------------------------------------------------------------------------------
    def finished(self) -> set:
        """Keys of every stored task (finished, successfully or not)."""
        rows = self._conn.execute(f"SELECT {', '.join(KEY)} FROM results").fetchall()
        return {task_key(*r) for r in rows}

    def failed(self) -> set:
        """Keys of the tasks stored as failed."""
        rows = self._conn.execute(f"SELECT {', '.join(KEY)} FROM results WHERE status = 'failed'").fetchall()
        return {task_key(*r) for r in rows}

    def load(self) -> pd.DataFrame:
        """All rows as a DataFrame (columns :data:`COLUMNS`), sorted by key.

        A store of an older version lacks some columns (empty here); one written before ``y_range``
        existed divided its ``nql`` by the test fold's range, so that value is ``nql_fold`` here.
        """
        present = {row[1] for row in self._conn.execute("PRAGMA table_info(results)")}
        names = [c for c in COLUMNS if c in present]
        order = ", ".join(c for c in KEY if c in present)
        table = pd.read_sql_query(f"SELECT {', '.join(names)} FROM results ORDER BY {order}", self._conn)
        if "y_range" not in present and "nql" in table:
            table["nql_fold"], table["nql"] = table["nql"], np.nan
        return table.reindex(columns=list(COLUMNS))

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
        with _transaction(self._conn):
            cursor = self._conn.execute(sql, [values[n] for n in names])
            self._conn.execute(f"DELETE FROM claims WHERE {_WHERE_KEY}", key)
        return cursor.rowcount == 1

    def delete(self, keys) -> int:
        """Remove the rows of ``keys`` (e.g. failed tasks to retry); returns how many went."""
        keys = [task_key(*k) for k in keys]
        if not keys:
            return 0
        with _transaction(self._conn):
            count = 0
            for k in keys:
                count += self._conn.execute(f"DELETE FROM results WHERE {_WHERE_KEY}", k).rowcount
        return count


    # -- claims: several runners on one store ---------------------------------------------------
    def claim(self, key, owner: str, lease: float) -> bool:
        """Claim the task ``key`` for ``owner`` for ``lease`` seconds; False when it is stored or
        another owner holds a live claim (a lapsed claim, e.g. of a killed runner, is taken over)."""
        key = task_key(*key)
        now = time.time()
        with _transaction(self._conn):
            stored = self._conn.execute(f"SELECT 1 FROM results WHERE {_WHERE_KEY}", key).fetchone()
            held = self._conn.execute(f"SELECT owner, expires FROM claims WHERE {_WHERE_KEY}", key).fetchone()
            free = stored is None and (held is None or held[0] == owner or held[1] < now or not _owner_alive(held[0]))
            if free:
                self._conn.execute(f"INSERT OR REPLACE INTO claims ({', '.join(KEY)}, owner, expires) "
                                   f"VALUES ({', '.join('?' * (len(KEY) + 2))})", (*key, owner, now + lease))
        return free

    def renew(self, owner: str, lease: float) -> None:
        """Extend every claim of ``owner`` by ``lease`` seconds from now."""
        self._conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + lease, owner))

    def release(self, owner: str) -> None:
        """Drop every claim of ``owner`` (its unfinished tasks become free at once)."""
        self._conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def claimed_by_others(self, owner: str) -> set:
        """Keys of the tasks other owners hold a live claim on."""
        rows = self._conn.execute(f"SELECT {', '.join(KEY)}, owner FROM claims WHERE owner != ? AND expires >= ?",
                                  (owner, time.time())).fetchall()
        return {task_key(*r[:-1]) for r in rows if _owner_alive(r[-1])}


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
