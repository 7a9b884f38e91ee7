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


def test_a_key_that_cannot_be_stored_raises_instead_of_being_lost():
    with ResultStore(":memory:") as store:
        with pytest.raises(ValueError, match="quantile"):
            store.add(_row(quantile=float("nan")))
        with pytest.raises(TypeError, match="fold"):
            store.add(_row(fold="x"))
        with pytest.raises(ValueError, match="seed"):
            store.add(_row(seed=-1))
        assert len(store) == 0


def test_unreadable_stores_name_the_file(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database" * 100)
    for call in (lambda: ResultStore(corrupt), lambda: load_results(corrupt)):
        with pytest.raises(ValueError, match=f"{corrupt}.*SQLite"):
            call()
    for call in (lambda: ResultStore(tmp_path), lambda: load_results(tmp_path)):
        with pytest.raises(ValueError, match=f"{tmp_path} is a folder"):
            call()
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(ValueError, match="not a results store"):
        load_results(other)


def test_reading_writes_nothing(tmp_path):
    """A store is read without switching it to WAL, so a read-only folder can be read."""
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        store.add(_row())
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    before = path.read_bytes()
    assert load_results(path)["nql"].tolist() == [0.1]
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]


def test_writing_into_a_read_only_folder_names_it(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(os, "access", lambda p, mode: False)  # the tests may run as root
    with pytest.raises(ValueError, match=f"cannot write the results store .*{tmp_path}.* not writable"):
        ResultStore(tmp_path / "r.sqlite")


def test_claims_keep_runners_apart_and_lapse(tmp_path):
    import os
    import socket
    import time

    path = tmp_path / "r.sqlite"
    key = ("d", "m", 0.9, 0, 0)
    me, other = f"{socket.gethostname()}:{os.getpid()}:a", f"{socket.gethostname()}:{os.getppid()}:b"
    with ResultStore(path) as store:
        assert store.claim(key, me, lease=60)
        assert not store.claim(key, other, lease=60)  # a live claim is respected
        assert store.claimed_by_others(other) == {key} and store.claimed_by_others(me) == set()
        store.add(_row())  # storing the result ends the claim ...
        assert store.claimed_by_others(other) == set()
        assert not store.claim(key, other, lease=60)  # ... and a stored task is never claimed again
        second = ("d", "m", 0.9, 1, 0)
        assert store.claim(second, me, lease=0.01)
        time.sleep(0.05)
        assert store.claim(second, other, lease=60)  # a lapsed lease is taken over
        dead = f"{socket.gethostname()}:999999999:c"  # no such process: its claims lapse at once
        third = ("d", "m", 0.9, 2, 0)
        assert store.claim(third, dead, lease=60)
        assert store.claim(third, me, lease=60)
        store.release(me)
        assert store.claim(third, other, lease=60)
