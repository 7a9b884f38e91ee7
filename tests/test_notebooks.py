"""Execute every notebook in notebooks/ top to bottom; any error fails the test. The notebooks are
stored executed, with their figures, so that the repository and the documentation show results."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
STORED_WITH_FIGURES = ["quickstart", "sqr", "osrt", "forestprune", "ordered_bagging"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="notebook execution needs the dev extra")
    nbclient = pytest.importorskip("nbclient", reason="notebook execution needs the dev extra")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


@pytest.mark.parametrize("name", STORED_WITH_FIGURES)
def test_notebook_is_stored_executed_with_figures(name):
    cells = json.loads((NOTEBOOKS[0].parent / f"{name}.ipynb").read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), "run top to bottom, once"
    outputs = [o for c in code for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no stored figure"


def test_every_method_has_a_notebook():
    stems = {p.stem for p in NOTEBOOKS}
    assert {"quickstart", "sqr", "osrt", "forestprune", "ordered_bagging"} <= stems
