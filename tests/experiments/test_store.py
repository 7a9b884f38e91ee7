"""The SQLite results store: one row per task key, transactions, reload."""

from __future__ import annotations

import sqlite3

import pytest

from parsimony.experiments.store import COLUMNS, ResultStore, load_results


def _row(**kw):
    row = {"dataset": "d", "method": "m", "quantile": 0.9, "fold": 0, "seed": 0, "status": "ok", "nql": 0.1}
    row.update(kw)
    return row


def test_unique_task_key(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        assert store.add(_row())
        assert not store.add(_row(nql=0.5))  # same key: ignored, first row kept
        assert not store.add(_row(quantile=0.9000000000000001))  # the same level after normalisation
        assert store.add(_row(fold=1))
        assert len(store) == 2
        assert store.finished() == {("d", "m", 0.9, 0, 0), ("d", "m", 0.9, 1, 0)}
    table = load_results(path)
    assert list(table.columns) == list(COLUMNS)
    assert table["nql"].tolist() == [0.1, 0.1]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO results (dataset, method, quantile, fold, seed, status) VALUES ('d','m',0.9,0,0,'ok')")


def test_failed_rows_and_delete(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.add(_row(status="failed", nql=None, error="boom"))
        store.add(_row(fold=1))
        assert store.failed() == {("d", "m", 0.9, 0, 0)}
        assert store.delete(store.failed()) == 1
        assert len(store) == 1


def test_bad_rows_and_paths(tmp_path):
    with ResultStore(":memory:") as store:
        with pytest.raises(ValueError, match="unknown result columns"):
            store.add(_row(colour="red"))
        with pytest.raises(ValueError, match="status"):
            store.add(_row(status=None))
        with pytest.raises(ValueError, match="status must be"):
            store.add(_row(status="maybe"))
        assert len(store) == 0
    with pytest.raises(ValueError, match="does not exist"):
        ResultStore(tmp_path / "missing" / "r.sqlite")
    with pytest.raises(FileNotFoundError):
        load_results(tmp_path / "none.sqlite")


def test_a_store_from_before_y_range_is_migrated_and_refilled(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:  # the schema before nql_fold / y_range, nql = fold range
        conn.execute("CREATE TABLE results (dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, "
                     "fold INTEGER NOT NULL, seed INTEGER NOT NULL, status TEXT NOT NULL, nql REAL, pinball REAL, "
                     "UNIQUE (dataset, method, quantile, fold, seed))")
        conn.execute("INSERT INTO results VALUES ('d', 'm', 0.5, 0, 0, 'ok', 0.25, 1.0)")
        conn.execute("INSERT INTO results VALUES ('e', 'm', 0.5, 0, 0, 'ok', 0.5, 2.0)")
    with ResultStore(path) as store:
        table = store.load()
        assert table["nql_fold"].tolist() == [0.25, 0.5] and table["nql"].isna().all()
        assert store.fill_range("d", 8.0) == 1 and store.fill_range("d", 8.0) == 0
        table = store.load().set_index("dataset")
        assert table.loc["d", "nql"] == 1.0 / 8.0 and table.loc["d", "y_range"] == 8.0
        assert table.loc["e", ["nql", "y_range"]].isna().all()  # not named by a run yet
    with ResultStore(path) as store:  # reopening does not migrate twice
        assert store.load().set_index("dataset").loc["d", "nql_fold"] == 0.25
