"""The documentation site builds with warnings as errors, and its example code runs."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GETTING_STARTED = DOCS / "getting_started.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GETTING_STARTED.read_text(), flags=re.S)


def stored_figures(notebook: Path) -> int:
    cells = json.loads(notebook.read_text())["cells"]
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="building the docs needs the docs (or dev) extra")
    pytest.importorskip("myst_nb", reason="building the docs needs the docs (or dev) extra")
    # build a copy (the notebooks link followed), so that the generated API pages never touch the checkout
    source = tmp_path / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("generated", "_build"))
    out = tmp_path / "html"
    pythonpath = os.pathsep.join(filter(None, [str(DOCS.parent), os.environ.get("PYTHONPATH")]))
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
                            "-d", str(tmp_path / "doctrees"), str(source), str(out)],
                           capture_output=True, text=True,
                           env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": pythonpath})
    assert build.returncode == 0, f"sphinx-build -W failed:\n{build.stdout}\n{build.stderr}"
    # the API reference comes from the docstrings; the notebooks are rendered with their stored figures
    sqr_page = (out / "generated" / "parsimony.symbolic.SymbolicQuantileRegressor.html").read_text()
    assert "niterations" in sqr_page and "equations_" in sqr_page
    # autosummary lists each object with the first sentence of its docstring, cut at the first ". ":
    # every summary must be a whole sentence, not stop inside parentheses or at an abbreviation
    rows = re.findall(r"<tr[^>]*>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*</tr>", (out / "api.html").read_text(), flags=re.S)
    summaries = [re.sub(r"<[^>]+>", "", summary).strip() for _, summary in rows]
    cut = [s for s in summaries if s.count("(") != s.count(")") or re.search(r"\b(?:Eq|e\.g|i\.e|al|vs|cf)\.$", s)]
    assert len(summaries) > 50 and not cut, cut
    for notebook in sorted((DOCS.parent / "notebooks").glob("*.ipynb")):
        page = (out / "notebooks" / f"{notebook.stem}.html").read_text()
        images = re.findall(r'<img[^>]+src="[^"]+\.png"', page)
        assert len(images) == stored_figures(notebook), f"{notebook.name}: stored figures not all rendered"
    # formulas render offline: the pages load the MathJax copied into the build, never a CDN
    osrt_page = (out / "methods" / "osrt.html").read_text()
    assert "$" in (DOCS / "methods" / "osrt.md").read_text() and "math" in osrt_page
    scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', osrt_page, flags=re.I)
    assert scripts and not any("://" in src for src in scripts), scripts
    assert all((out / "methods" / src.split("?")[0]).resolve().is_file() for src in scripts), scripts


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_getting_started_example_runs(code, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(GETTING_STARTED), "exec"), {"__name__": "__docs__"})
