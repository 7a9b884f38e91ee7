"""The results store: one SQLite row per finished task, safe against kills at any moment.

SQLite in WAL mode; every row is written in its own transaction; the task key
``(dataset, method, quantile, fold, seed)`` is UNIQUE, so a rerun that finds a row skips the task
and a row can never be stored twice. A process killed mid-write leaves the last committed state.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

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


def quantile_key(quantile) -> float:
    """The quantile as stored in the key (rounded to 10 decimals so 0.9 == 0.9000000000000001)."""
    return round(float(quantile), 10)


def task_key(dataset, method, quantile, fold, seed) -> tuple:
    """The normalised UNIQUE key of a task."""
    return (str(dataset), str(method), quantile_key(quantile), int(fold), int(seed))


class ResultStore:
    """A results database (created when missing).

    Parameters
    ----------
    path : str or path
        SQLite file; ``":memory:"`` for a throwaway store.
    """

    def __init__(self, path):
        self.path = str(path)
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise ValueError(f"the folder of the results store does not exist: {parent}")
        self._conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout = 60000")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute(_SCHEMA)
        self._migrate()

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
        query = f"SELECT {', '.join(COLUMNS)} FROM results ORDER BY dataset, method, quantile, fold, seed"
        return pd.read_sql_query(query, self._conn)

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
        key = task_key(*(row[k] for k in KEY))
        values = {**row, **dict(zip(KEY, key))}
        names = list(values)
        sql = f"INSERT OR IGNORE INTO results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = self._conn.execute(sql, [values[n] for n in names])
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
                count += self._conn.execute(
                    "DELETE FROM results WHERE dataset = ? AND method = ? AND quantile = ? AND fold = ? AND seed = ?", k
                ).rowcount
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return count


def load_results(store) -> pd.DataFrame:
    """The rows of a results store given as a path, a :class:`ResultStore` or a DataFrame."""
    if isinstance(store, pd.DataFrame):
        return store.copy()
    if isinstance(store, ResultStore):
        return store.load()
    if not os.path.isfile(store):
        raise FileNotFoundError(f"no results store at {store!r}")
    with ResultStore(store) as opened:
        return opened.load()
