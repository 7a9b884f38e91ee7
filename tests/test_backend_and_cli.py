import subprocess
import sys

import pytest

from parsimony import backend
from parsimony.cli import main


def test_native_and_auto_without_julia(monkeypatch):
    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (False, "juliacall could not be imported"))
    assert backend.resolve_backend("native") == "native"
    assert backend.resolve_backend("auto") == "native"
    assert backend.resolve_backend(None) == "native"
    with pytest.raises(backend.JuliaUnavailableError, match="pip install 'parsimony-ml\\[julia\\]'"):
        backend.resolve_backend("julia")
    monkeypatch.setenv("PARSIMONY_BACKEND", "julia")
    with pytest.raises(backend.JuliaUnavailableError):
        backend.resolve_backend("auto")
    monkeypatch.setenv("PARSIMONY_BACKEND", "fortran")
    with pytest.raises(ValueError, match="PARSIMONY_BACKEND"):
        backend.resolve_backend("auto")
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.resolve_backend("rust")


def test_auto_uses_julia_when_it_works(monkeypatch):
    monkeypatch.delenv("PARSIMONY_BACKEND", raising=False)
    monkeypatch.setattr(backend, "julia_status", lambda: (True, "ok"))
    assert backend.resolve_backend("auto") == "julia"
    monkeypatch.setenv("PARSIMONY_BACKEND", "native")
    assert backend.resolve_backend("auto") == "native"


def test_import_is_light_and_fast():
    code = (
        "import sys, time; t = time.perf_counter(); import parsimony; dt = time.perf_counter() - t;"
        "heavy = [m for m in ('numba', 'juliacall', 'pysr', 'pandas', 'sklearn', 'matplotlib') if m in sys.modules];"
        "print(dt); assert not heavy, heavy"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 0.5


def test_cli_datasets_list(tmp_path, capsys):
    (tmp_path / "toy.csv").write_text("a,b,y\n1,2,3\n4,5,6\n")
    assert main(["datasets", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "2" in out
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0


def test_cli_datasets_list_shows_built_in_sets_on_a_fresh_install(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PARSIMONY_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "friedman1" in out and "diabetes" in out and "built-in" in out
    (tmp_path / "toy.csv").write_text("a,b,y\n1,2,3\n4,5,6\n")
    (tmp_path / "broken.tsv.gz").write_bytes(b"\x1f\x8b not gzip")
    with pytest.warns(UserWarning, match="broken.tsv.gz"):
        assert main(["datasets", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "friedman1" in out
