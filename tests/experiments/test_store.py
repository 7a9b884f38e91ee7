"""The SQLite results store: one row per task key, transactions, reload."""

from __future__ import annotations

import sqlite3

import pytest

from parsimony.experiments.store import COLUMNS, ResultStore, load_results


def _row(**kw):
    row = {"dataset": "d", "method": "m", "quantile": 0.9, "fold": 0, "seed": 0, "folds": 3, "settings": "s", "data": "x",
           "status": "ok", "nql": 0.1}
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
        assert store.add(_row(folds=5))  # another split, settings or data is another task
        assert store.add(_row(settings="t")) and store.add(_row(data="y"))
        assert store.finished() == {("d", "m", 0.9, 0, 0, 3, "s", "x"), ("d", "m", 0.9, 1, 0, 3, "s", "x"),
                                    ("d", "m", 0.9, 0, 0, 5, "s", "x"), ("d", "m", 0.9, 0, 0, 3, "t", "x"),
                                    ("d", "m", 0.9, 0, 0, 3, "s", "y")}
    table = load_results(path)
    assert list(table.columns) == list(COLUMNS)
    assert table["nql"].tolist() == [0.1] * 5
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO results (dataset, method, quantile, fold, seed, folds, settings, data, status) "
                         "VALUES ('d','m',0.9,0,0,3,'s','x','ok')")


def test_failed_rows_and_delete(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.add(_row(status="failed", nql=None, error="boom"))
        store.add(_row(fold=1))
        assert store.failed() == {("d", "m", 0.9, 0, 0, 3, "s", "x")}
        assert store.delete(store.failed()) == 1
        assert len(store) == 1


def test_a_ctrl_c_anywhere_in_a_write_stays_a_ctrl_c(tmp_path):
    """An interrupt mid-write rolls the row back; one that lands after COMMIT took effect (found by
    the CLI's Ctrl-C test) leaves the row and must not turn into 'cannot rollback'."""
    from parsimony.experiments.store import _transaction

    with ResultStore(tmp_path / "r.sqlite") as store:
        conn = store._conn
        insert = "INSERT INTO experiment (name, value) VALUES (?, '1')"
        with pytest.raises(KeyboardInterrupt), _transaction(conn):
            conn.execute(insert, ("mid-write",))
            raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt), _transaction(conn):
            conn.execute(insert, ("after-commit",))
            conn.execute("COMMIT")
            raise KeyboardInterrupt
        assert not conn.in_transaction
        assert [r[0] for r in conn.execute("SELECT name FROM experiment")] == ["after-commit"]
        assert store.add(_row())  # the connection still writes


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


_OLD_SCHEMAS = {  # the key before it held the split, settings and data; before y_range, nql was the fold's
    "before y_range": "status TEXT NOT NULL, nql REAL, pinball REAL",
    "before settings": "status TEXT NOT NULL, nql REAL, nql_fold REAL, y_range REAL, pinball REAL",
}


def _old_store(path, columns, rows):
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE results (dataset TEXT NOT NULL, method TEXT NOT NULL, quantile REAL NOT NULL, "
                     f"fold INTEGER NOT NULL, seed INTEGER NOT NULL, {columns}, "
                     "UNIQUE (dataset, method, quantile, fold, seed))")
        for row in rows:
            conn.execute(f"INSERT INTO results VALUES ({', '.join('?' * len(row))})", row)
    conn.close()


@pytest.mark.parametrize("version", list(_OLD_SCHEMAS))
def test_an_old_store_is_read_but_never_written(tmp_path, version):
    path = tmp_path / "old.sqlite"
    if version == "before y_range":
        rows = [("d", "m", 0.5, 0, 0, "ok", 0.25, 1.0), ("e", "m", 0.5, 0, 0, "ok", 0.5, 2.0)]
    else:
        rows = [("d", "m", 0.5, 0, 0, "ok", 0.125, 0.25, 8.0, 1.0), ("e", "m", 0.5, 0, 0, "ok", 0.25, 0.5, 8.0, 2.0)]
    _old_store(path, _OLD_SCHEMAS[version], rows)
    before = path.read_bytes()
    table = load_results(path)
    assert list(table.columns) == list(COLUMNS) and table["nql_fold"].tolist() == [0.25, 0.5]
    assert table[["folds", "settings", "data"]].isna().all().all()
    if version == "before y_range":  # its nql divided by the test fold's range: that is nql_fold
        assert table["nql"].isna().all()
    else:
        assert table["nql"].tolist() == [0.125, 0.25]
    with pytest.raises(ValueError, match=r"older parsimony.*2 rows.*fresh store.*bench report .*old.sqlite"):
        ResultStore(path)
    assert path.read_bytes() == before


def test_an_empty_old_store_gets_the_new_key(tmp_path):
    path = tmp_path / "old.sqlite"
    _old_store(path, _OLD_SCHEMAS["before settings"], [])
    with ResultStore(path) as store:
        assert store.add(_row()) and store.finished() == {("d", "m", 0.9, 0, 0, 3, "s", "x")}


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
    key = ("d", "m", 0.9, 0, 0, 3, "s", "x")
    me, other = f"{socket.gethostname()}:{os.getpid()}:a", f"{socket.gethostname()}:{os.getppid()}:b"
    with ResultStore(path) as store:
        assert store.claim(key, me, lease=60)
        assert not store.claim(key, other, lease=60)  # a live claim is respected
        assert store.claimed_by_others(other) == {key} and store.claimed_by_others(me) == set()
        store.add(_row())  # storing the result ends the claim ...
        assert store.claimed_by_others(other) == set()
        assert not store.claim(key, other, lease=60)  # ... and a stored task is never claimed again
        second = ("d", "m", 0.9, 1, 0, 3, "s", "x")
        assert store.claim(second, me, lease=0.01)
        time.sleep(0.05)
        assert store.claim(second, other, lease=60)  # a lapsed lease is taken over
        dead = f"{socket.gethostname()}:999999999:c"  # no such process: its claims lapse at once
        third = ("d", "m", 0.9, 2, 0, 3, "s", "x")
        assert store.claim(third, dead, lease=60)
        assert store.claim(third, me, lease=60)
        store.release(me)
        assert store.claim(third, other, lease=60)


def test_a_file_that_is_not_a_store_is_never_overwritten(tmp_path):
    for content in (b"x", b"xy", b"not a database at all", b"not a database " * 60):
        path = tmp_path / "f"
        path.write_bytes(content)
        for call in (lambda: ResultStore(path), lambda: load_results(path)):
            with pytest.raises(ValueError, match=f"{path}.*(is not a SQLite results store|not a database)"):
                call()
        assert path.read_bytes() == content
    other = tmp_path / "other.sqlite"  # somebody else's database
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = other.read_bytes()
    with pytest.raises(ValueError, match=r"not a results store .*\['t'\].*left untouched"):
        ResultStore(other)
    assert other.read_bytes() == before
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with ResultStore(empty) as store:  # an empty file becomes a store
        assert store.add(_row())


_KILLED_WRITER = """
import os, signal, sys
from parsimony.experiments.store import COLUMNS, ResultStore
store = ResultStore(sys.argv[1])
for fold in range(int(sys.argv[2])):
    row = {"dataset": "d", "method": "m", "quantile": 0.5, "fold": fold, "seed": 0, "folds": 300, "settings": "s",
           "data": "x", "status": "ok", "nql": fold / 1000}
    store.add({k: v for k, v in row.items() if k in COLUMNS})
    if fold == 100:  # the first rows reach the store file, the others stay in its -wal file
        store._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_store_read_without_its_shm_file_shows_every_committed_row(tmp_path, monkeypatch):
    import shutil
    import subprocess
    import sys

    from parsimony.experiments import store as store_module

    written = tmp_path / "written"
    written.mkdir()
    n_rows = 260
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(written / "r.sqlite"), str(n_rows)],
                          capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    assert (written / "r.sqlite-wal").stat().st_size > 0  # the killed writer left rows in its WAL
    shipped = tmp_path / "shipped"  # what reaches a read-only folder: the store and its WAL, no -shm
    shipped.mkdir()
    shutil.copy(written / "r.sqlite", shipped / "r.sqlite")
    shutil.copy(written / "r.sqlite-wal", shipped / "r.sqlite-wal")
    real_connect = sqlite3.connect

    class NoShm:  # the store opens, but its first read needs a -shm file the folder cannot hold
        def execute(self, *args):
            raise sqlite3.OperationalError("unable to open database file")

        def close(self):
            pass

    def read_only_folder(target, *args, **kwargs):
        if str(target).endswith("?mode=ro") and str(shipped) in str(target):
            return NoShm()
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", read_only_folder)
    before = {p.name: p.read_bytes() for p in shipped.iterdir()}
    table = load_results(shipped / "r.sqlite")
    assert len(table) == n_rows and table["fold"].tolist() == list(range(n_rows))
    with ResultStore(shipped / "r.sqlite", readonly=True) as store:
        assert len(store) == n_rows
    assert {p.name: p.read_bytes() for p in shipped.iterdir()} == before  # nothing written there
    monkeypatch.setattr(store_module.shutil, "copyfile", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(ValueError, match=r"cannot read the results store .*-wal.*disk full"):
        load_results(shipped / "r.sqlite")
