"""PMLB fetch against a local HTTP server on 127.0.0.1: fetch, cache, checksum, 404, timeout, resume."""

import gzip
import hashlib
import http.server
import io
import json
import threading
import time

import pandas as pd
import pytest

from parsimony import datasets
from parsimony.datasets import fetch_pmlb, load_dataset


def _pmlb_bytes(rows: int, seed: int) -> bytes:
    frame = pd.DataFrame({"a": [float(i * seed % 7) for i in range(rows)], "target": [float(i) for i in range(rows)]})
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as fh:
        fh.write(frame.to_csv(sep="\t", index=False).encode())
    return buffer.getvalue()


class _Server:
    """Serves ``files`` (name -> bytes) in PMLB's layout; ``slow`` names stall, ``broken`` names send half
    their bytes and close once, ``stalling`` ones send half and then nothing for 1.5 s, ``trickling``
    ones send a byte every 0.1 s; ``Range`` requests get 206. Every request is logged."""

    def __init__(self, files, slow=(), broken=(), stalling=(), trickling=()):
        self.files, self.slow, self.broken, self.requests = dict(files), set(slow), set(broken), []
        self.stalling, self.trickling = set(stalling), set(trickling)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1].removesuffix(".tsv.gz")
                server.requests.append((name, self.headers.get("Range")))
                if name in server.slow:
                    time.sleep(1.5)
                if name not in server.files:
                    self.send_error(404)
                    return
                body, status = server.files[name], 200
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):  # nothing left to send: 416 Range Not Satisfiable
                        self.send_error(416)
                        return
                    body, status = body[start:], 206
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if name in server.broken:
                    server.broken.discard(name)
                    body = body[: len(body) // 2]
                    self.close_connection = True
                try:
                    if name in server.trickling:
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.1)
                    elif name in server.stalling:
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        time.sleep(1.5)
                        self.wfile.write(body[len(body) // 2:])
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/datasets/{{name}}/{{name}}.tsv.gz"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return datasets.cache_dir()


def test_fetch_then_cache_and_manifest(cache):
    files = {"1_one": _pmlb_bytes(30, 3), "2_two": _pmlb_bytes(40, 5)}
    lines = []
    with _Server(files) as server:
        first = fetch_pmlb(["1_one", "2_two"], url=server.url, shapes={"1_one": (30, 1)}, log=lines.append)
        assert first.downloaded == ["1_one", "2_two"] and not first.failed and first.unreachable is None
        assert (cache / "1_one.tsv.gz").read_bytes() == files["1_one"]
        manifest = json.loads((cache / "checksums.json").read_text())
        assert manifest["2_two"] == {"size": len(files["2_two"]), "sha256": hashlib.sha256(files["2_two"]).hexdigest()}
        assert any("1_one: downloaded" in line and "recorded" in line for line in lines)
        n_requests = len(server.requests)
        again = fetch_pmlb(["1_one", "2_two"], url=server.url)
        assert again.downloaded == [] and set(again.paths) == {"1_one", "2_two"}
        assert len(server.requests) == n_requests  # served from the cache
        # load_dataset finds the cached file without any download
        X, y = load_dataset("2_two", download=False)
        assert X.shape == (40, 1) and y.iloc[-1] == 39.0


def test_cached_file_corrupted_is_fetched_again(cache):
    files = {"1_one": _pmlb_bytes(30, 3)}
    with _Server(files) as server:
        fetch_pmlb(["1_one"], url=server.url)
        (cache / "1_one.tsv.gz").write_bytes(b"garbage")
        lines = []
        again = fetch_pmlb(["1_one"], url=server.url, log=lines.append)
    assert again.downloaded == ["1_one"] and (cache / "1_one.tsv.gz").read_bytes() == files["1_one"]
    assert "fails its check" in lines[0]


def test_checksum_mismatch_is_discarded(cache, monkeypatch):
    good, bad = _pmlb_bytes(30, 3), _pmlb_bytes(30, 4)
    monkeypatch.setattr(datasets, "known_checksums", lambda: {"1_one": (len(good), hashlib.sha256(good).hexdigest())})
    with _Server({"1_one": bad, "2_two": _pmlb_bytes(12, 2)}) as server:
        result = fetch_pmlb(["1_one", "2_two"], url=server.url)
    assert "checksum mismatch" in result.failed["1_one"] and "discarded" in result.failed["1_one"]
    assert not (cache / "1_one.tsv.gz").exists() and not (cache / "1_one.tsv.gz.part").exists()
    assert result.downloaded == ["2_two"]  # the run carries on with the rest


def test_unchecksummed_file_must_have_the_expected_shape(cache):
    with _Server({"1_one": _pmlb_bytes(30, 3), "3_html": b"<html>not a table</html>"}) as server:
        result = fetch_pmlb(["1_one", "3_html"], url=server.url, shapes={"1_one": (31, 1)})
    assert "30 rows x 1 features, expected 31 x 1" in result.failed["1_one"]
    assert "not a PMLB table" in result.failed["3_html"]
    assert not list(cache.glob("*.tsv.gz"))


def test_404_names_the_dataset_and_the_rest_continue(cache):
    with _Server({"2_two": _pmlb_bytes(12, 2)}) as server:
        result = fetch_pmlb(["9_missing", "2_two"], url=server.url)
    assert "PMLB has no dataset '9_missing' (HTTP 404" in result.failed["9_missing"]
    assert result.downloaded == ["2_two"] and result.unreachable is None


def test_timeout_then_resume_and_unreachable(cache):
    files = {"1_one": _pmlb_bytes(3000, 3), "2_two": _pmlb_bytes(12, 2)}
    with _Server(files, slow={"1_one"}) as server:
        result = fetch_pmlb(["1_one", "2_two"], url=server.url, timeout=0.3)
        assert "timed out" in result.failed["1_one"] and result.downloaded == ["2_two"]
    # the source disappears (offline): every remaining dataset is reported, none is tried twice
    result = fetch_pmlb(["1_one", "5_five"], url=server.url, timeout=0.3)
    assert result.unreachable and "cannot reach" in result.failed["1_one"]
    assert result.failed["5_five"].startswith("not tried")
    assert "--data-dir" in result.advice()


def test_broken_download_resumes_with_a_range_request(cache):
    files = {"1_one": _pmlb_bytes(20000, 3)}
    assert len(files["1_one"]) > 1000
    with _Server(files, broken={"1_one"}) as server:
        first = fetch_pmlb(["1_one"], url=server.url)
        assert "resumes" in first.failed["1_one"]
        kept = (cache / "1_one.tsv.gz.part").stat().st_size
        assert 0 < kept < len(files["1_one"])
        second = fetch_pmlb(["1_one"], url=server.url)
    assert second.downloaded == ["1_one"] and (cache / "1_one.tsv.gz").read_bytes() == files["1_one"]
    assert server.requests[-1] == ("1_one", f"bytes={kept}-")
    assert not (cache / "1_one.tsv.gz.part").exists()


def test_a_complete_part_answered_416_is_verified_and_kept(cache):
    files = {"1_one": _pmlb_bytes(300, 3)}
    cache.mkdir(parents=True)
    (cache / "1_one.tsv.gz.part").write_bytes(files["1_one"])
    with _Server(files) as server:
        result = fetch_pmlb(["1_one"], url=server.url)
        assert server.requests == [("1_one", f"bytes={len(files['1_one'])}-")]
        assert result.downloaded == ["1_one"] and (cache / "1_one.tsv.gz").read_bytes() == files["1_one"]
        # a complete part that is not the file is downloaded afresh
        (cache / "1_one.tsv.gz").unlink()
        (cache / "1_one.tsv.gz.part").write_bytes(files["1_one"][:-10] + bytes(10))
        again = fetch_pmlb(["1_one"], url=server.url)
    assert server.requests[-1] == ("1_one", None)
    assert again.downloaded == ["1_one"] and (cache / "1_one.tsv.gz").read_bytes() == files["1_one"]


def test_a_trickling_server_is_abandoned_and_its_bytes_kept(cache):
    files = {"1_one": _pmlb_bytes(300, 3)}
    with _Server(files, trickling={"1_one"}) as server:
        began = time.monotonic()
        result = fetch_pmlb(["1_one"], url=server.url, timeout=0.6)
        took = time.monotonic() - began
    assert took < 3.0, took  # a byte every 0.1 s never trips a socket timeout of 0.6 s: the 64 kB rule does
    assert "less than 64 kB arrived in 0.6 s" in result.failed["1_one"]
    kept = (cache / "1_one.tsv.gz.part").read_bytes()
    assert 3 <= len(kept) < len(files["1_one"]) and files["1_one"].startswith(kept)


def test_a_stalled_block_keeps_the_bytes_received(cache):
    files = {"1_one": _pmlb_bytes(3000, 3)}
    assert len(files["1_one"]) < 64 * 1024
    with _Server(files, stalling={"1_one"}) as server:
        result = fetch_pmlb(["1_one"], url=server.url, timeout=0.4)
        assert "timed out" in result.failed["1_one"]
        kept = (cache / "1_one.tsv.gz.part").read_bytes()
        assert kept == files["1_one"][: len(files["1_one"]) // 2]  # a whole block read at once kept none
        server.stalling.clear()
        again = fetch_pmlb(["1_one"], url=server.url, timeout=0.4)
    assert again.downloaded == ["1_one"] and server.requests[-1] == ("1_one", f"bytes={len(kept)}-")


def test_a_wrong_recorded_checksum_names_its_file(cache):
    files = {"1_one": _pmlb_bytes(30, 3)}
    with _Server(files) as server:
        fetch_pmlb(["1_one"], url=server.url)
        manifest = json.loads((cache / "checksums.json").read_text())
        manifest["1_one"]["sha256"] = "0" * 64
        (cache / "checksums.json").write_text(json.dumps(manifest))
        (cache / "1_one.tsv.gz").unlink()
        result = fetch_pmlb(["1_one"], url=server.url)
    assert str(cache / "checksums.json") in result.failed["1_one"]
    assert "checksum mismatch" in result.failed["1_one"]


def test_a_shipped_checksum_is_not_overridden_by_the_cache(cache, monkeypatch):
    good = _pmlb_bytes(30, 3)
    monkeypatch.setattr(datasets, "known_checksums", lambda: {"1_one": (len(good), hashlib.sha256(good).hexdigest())})
    cache.mkdir(parents=True)
    (cache / "checksums.json").write_text(json.dumps({"1_one": {"size": 3, "sha256": "0" * 64}}))
    with _Server({"1_one": good}) as server:
        assert fetch_pmlb(["1_one"], url=server.url).downloaded == ["1_one"]


def test_a_fetched_file_gets_both_checks(cache, monkeypatch):
    good = _pmlb_bytes(30, 3)
    monkeypatch.setattr(datasets, "known_checksums", lambda: {"1_one": (len(good), hashlib.sha256(good).hexdigest())})
    with _Server({"1_one": good}) as server:
        result = fetch_pmlb(["1_one"], url=server.url, shapes={"1_one": (29, 1)})
    assert "30 rows x 1 features, expected 29 x 1" in result.failed["1_one"]


def test_local_copies_are_checked(tmp_path, cache, monkeypatch):
    one, two = _pmlb_bytes(30, 3), _pmlb_bytes(40, 5)
    monkeypatch.setattr(datasets, "known_checksums", lambda: {"1_one": (len(one), hashlib.sha256(one).hexdigest())})
    (tmp_path / "1_one.tsv.gz").write_bytes(two)  # another dataset copied over it
    with pytest.raises(ValueError, match=r"1_one.tsv.gz is not PMLB's 1_one: checksum mismatch.*shipped"):
        datasets.check_dataset_file(tmp_path / "1_one.tsv.gz", "1_one", (30, 1))
    (tmp_path / "1_one.tsv.gz").write_bytes(one)
    datasets.check_dataset_file(tmp_path / "1_one.tsv.gz", "1_one", (30, 1))
    pd.DataFrame({"a": range(5), "target": range(5)}).to_csv(tmp_path / "2_two.csv", index=False)
    with pytest.raises(ValueError, match="5 rows x 1 features, expected 40 x 1"):
        datasets.check_dataset_file(tmp_path / "2_two.csv", "2_two", (40, 1))


def test_shipped_checksums_match_the_shared_copies():
    known = datasets.known_checksums()
    assert len(known) == 34 and all(len(h) == 64 and size > 0 for size, h in known.values())


@pytest.mark.parametrize("bad", [["../x"], [""], [3], ["192 vineyard"], ["a?b"]])
def test_bad_names(bad, cache):
    with pytest.raises(ValueError, match="names must be PMLB dataset names"):
        fetch_pmlb(bad, url="http://127.0.0.1:1/{name}")


def test_load_dataset_does_not_fetch_a_name_pmlb_cannot_have(cache):
    with pytest.raises(FileNotFoundError, match="not a PMLB name"):
        load_dataset("my data")
