"""The notebooks show what the code does: executed today, each prints what is stored in it.

The notebooks are stored executed, with their figures, and the documentation renders them as
stored; so each is executed here top to bottom and its text outputs are compared with the stored
ones, cell by cell:

* compared: the stdout of each code cell and the plain text of its results and displays, and the
  number of figures it draws; not compared: stderr (warnings, compile notices, progress bars);
* words (everything but numbers) must match exactly, whitespace aside;
* timings are left out: a number followed by ``s`` (seconds, as in ``0.59 s``) is not compared;
* every other number must match to ``RTOL`` relative plus one unit of its last printed digit, so
  a rounding that flips the last digit passes and a different model does not.
* a cell tagged ``search-path`` shows what another seed or CPU may change (a whole Pareto front of
  a stochastic search): it must run and give the same kind of output (text, figures), but its
  text is not compared, and no markdown may quote its figures. The notebooks tag only such cells.

``python tests/test_notebooks.py [NAME ...]`` executes the notebooks as this test does and stores
their outputs (run it when the code they show changes, then read their text again).

The data are served, never downloaded and never replaced by synthetic stand-ins: ``PARSIMONY_DATA``
points at the shared dataset folders, the user cache is an empty folder and PMLB's address is
unreachable, so a notebook that cannot find its data fails.

Elsewhere the notebooks print only what does not depend on the last bits of the floating point,
which differ between CPUs and BLAS builds (FMA, vector width): exact and convex computations, and of
a stochastic search only results that it reaches from every seed tried (the notebooks say which). ``RTOL`` covers what such differences leave: the comparison passes both on the machine that
stored the outputs (an AMD EPYC whose OpenBLAS core is Haswell) and under ``NUMBA_CPU_NAME=generic``
(with its own ``NUMBA_CACHE_DIR``) and ``OPENBLAS_CORETYPE=Sandybridge`` (no FMA in either). While
the kernels compiled with fastmath, the searches' paths did change there (the SQR notebook's Bodyfat
front, a ``search-path`` cell, held Siri's ``495/Density - 450`` under generic only) and every
compared output stayed the same; now that they compile without it, every output is the same there.

Every figure (a number) that a markdown cell states must be shown by an output or set in a code
cell of the same notebook; references (Figure 2, Table 1, Eq. 6, Friedman #1, a year) are not
figures.
"""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
STORED_WITH_FIGURES = ["quickstart", "sqr", "osrt", "forestprune", "ordered_bagging"]
RTOL = 1e-3
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?<=[A-Za-z_])\d+(?:\.\d+)?")
TIMING = re.compile(r"(?:\d+\.?\d*|\.\d+)(?=\s?s\b)")


def cells(notebook) -> list[dict]:
    return [c for c in notebook["cells"] if c["cell_type"] == "code"]


def text_of(cell) -> str:
    """The stdout and the plain text of the results and displays of a code cell."""
    parts = []
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream" and output["name"] == "stdout":
            parts.append("".join(output["text"]))
        elif output["output_type"] in ("execute_result", "display_data"):
            parts.append("".join(output["data"].get("text/plain", "")))
    return "".join(parts)


def searched(cell) -> bool:
    """Whether a cell shows what another seed or CPU may change (tagged ``search-path``)."""
    return "search-path" in cell.get("metadata", {}).get("tags", [])


def figures_of(cell) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def words_and_numbers(text: str) -> tuple[str, list[str]]:
    """The text with its numbers cut out (whitespace normalised, timings dropped) and the numbers."""
    text = TIMING.sub("", text)
    numbers = NUMBER.findall(text)
    words = NUMBER.sub(" # ", text)
    return " ".join(words.split()), numbers


def unit(number: str) -> float:
    """One unit of the last printed digit of ``number`` (``0.0049`` -> 1e-4, ``2.29e-07`` -> 1e-9)."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def same_number(stored: str, fresh: str) -> bool:
    a, b = float(stored), float(fresh)
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) + 1.001 * max(unit(stored), unit(fresh))


def differences(stored_cell, fresh_cell) -> list[str]:
    """What differs between the stored and the fresh outputs of one code cell, as readable lines."""
    source = "".join(stored_cell["source"]).splitlines()[:1]
    if figures_of(stored_cell) != figures_of(fresh_cell):
        return [f"cell {source}: {figures_of(stored_cell)} figures stored, {figures_of(fresh_cell)} now"]
    if searched(stored_cell):
        return [] if bool(text_of(stored_cell)) == bool(text_of(fresh_cell)) else [f"cell {source}: no text"]
    stored, fresh = text_of(stored_cell), text_of(fresh_cell)
    (stored_words, stored_numbers), (fresh_words, fresh_numbers) = words_and_numbers(stored), words_and_numbers(fresh)
    if stored_words != fresh_words or len(stored_numbers) != len(fresh_numbers):
        return [f"cell {source}: the text differs\n--- stored:\n{stored[:1500]}\n--- now:\n{fresh[:1500]}"]
    return [f"cell {source}: {a} stored, {b} now" for a, b in zip(stored_numbers, fresh_numbers) if not same_number(a, b)]


def test_the_comparison_catches_what_it_should():
    words, numbers = words_and_numbers("tau=0.9: CACH + 2.4479e-07 * MMAX^2 + 61.333\npath in 0.59 s (x0)")
    assert words == "tau= # : CACH + # * MMAX^ # + # path in s (x # )"
    assert numbers == ["0.9", "2.4479e-07", "2", "61.333", "0"]
    assert same_number("0.6983", "0.6984") and same_number("53.909", "53.91")  # last digit, printed precision
    assert not same_number("53.909", "61.333") and not same_number("0.0049", "0.0052")
    assert same_number("2.2917e-07", "2.2918e-07") and not same_number("2.2917e-07", "2.4479e-07")
    stored = {"source": ["print(m)"], "outputs": [{"output_type": "stream", "name": "stdout", "text": ["CACH + 53.909\n"]}]}
    other = {"source": ["print(m)"], "outputs": [{"output_type": "stream", "name": "stdout", "text": ["MMAX + 53.909\n"]}]}
    assert differences(stored, stored) == [] and differences(stored, other)


def execute(path: Path) -> dict:
    """The notebook at ``path`` executed top to bottom in its folder, as a dict (nbformat 4)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    return notebook


@pytest.fixture
def served_data(monkeypatch, tmp_path, pmlb_dir, osrt_dir):
    """The shared datasets through ``PARSIMONY_DATA``; an empty cache; no network."""
    import os

    monkeypatch.setenv("PARSIMONY_DATA", os.pathsep.join([str(pmlb_dir), str(osrt_dir)]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PARSIMONY_PMLB_URL", "http://127.0.0.1:9/{name}.tsv.gz")  # refused at once
    monkeypatch.setenv("MPLBACKEND", "Agg")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_prints_what_is_stored(path, served_data):
    nbformat = pytest.importorskip("nbformat", reason="notebook execution needs the dev extra")
    pytest.importorskip("nbclient", reason="notebook execution needs the dev extra")
    stored = json.loads(path.read_text())
    fresh = json.loads(nbformat.writes(execute(path)))
    errors = [o for c in cells(fresh) for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors[0]["evalue"] if errors else ""
    assert len(cells(fresh)) == len(cells(stored))
    found = [line for a, b in zip(cells(stored), cells(fresh)) for line in differences(a, b)]
    assert not found, (f"{path.name} no longer prints what is stored in it (re-run it top to bottom and read its "
                       "text again):\n" + "\n".join(found))


@pytest.mark.parametrize("name", STORED_WITH_FIGURES)
def test_notebook_is_stored_executed_with_figures(name):
    code = cells(json.loads((NOTEBOOKS[0].parent / f"{name}.ipynb").read_text()))
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), "run top to bottom, once"
    outputs = [o for c in code for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no stored figure"


# --- the markdown states only figures the notebook shows --------------------------------------
FIGURE = re.compile(r"(?<![\w.#^/-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])%?")
NOT_FIGURES = [
    re.compile(r"`[^`]*`"),  # code
    re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S),  # formulas
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"^#+\s*\d+\.", re.M),  # section numbers
    re.compile(r"\b(?:Figures?|Tables?|Eqs?\.|Equations?|Sections?|Appendix|problem)\s+\d+(?:\s*(?:-|–|,|and)\s*\d+)*"),
    re.compile(r"\b(?:19|20)\d\d\b"),  # years of the papers cited
]


def stated_figures(markdown: str) -> list[str]:
    for pattern in NOT_FIGURES:
        markdown = pattern.sub(" ", markdown)
    return FIGURE.findall(markdown)


def shown(figure: str, values: list[float]) -> bool:
    """Whether a figure as written (``1.6``, ``75.0%``, ``2,000``) is one of ``values`` rounded to its
    digits (a percentage may also be a share: ``14%`` is 0.14)."""
    digits = figure.rstrip("%").replace(",", "")
    x, half = float(digits), 0.5 * unit(digits) * 1.0001
    candidates = values + ([100 * v for v in values] if figure.endswith("%") else [])
    return any(abs(v - x) <= half for v in candidates)


def test_the_figure_check_catches_what_it_should():
    markdown = ("## 3. Trees (paper Figure 7, Eqs. 2-3, Zhang et al. 2023)\nThe tree has 5 leaves and "
                "R² = 69.6% (`depth_limit=4`, $x^{2.5}$, Friedman #1), about 35 units higher, 2,000 rows.")
    assert stated_figures(markdown) == ["5", "69.6%", "35", "2,000"]
    assert shown("69.6%", [0.6963]) and shown("1.6", [1.559]) and shown("2,000", [2000.0])
    assert not shown("35", [53.909, 19.334]) and not shown("1.6", [1.66])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_markdown_states_only_figures_the_notebook_shows(path):
    notebook = json.loads(path.read_text())
    code = cells(notebook)
    values = [float(n) for c in code if not searched(c) for n in words_and_numbers(text_of(c))[1]]
    values += [float(n) for c in code for n in NUMBER.findall("".join(c["source"]))]
    unshown = [(figure, "".join(c["source"])[:60]) for c in notebook["cells"] if c["cell_type"] == "markdown"
               for figure in stated_figures("".join(c["source"])) if not shown(figure, values)]
    assert not unshown, f"{path.name}: markdown figures that no output shows and no code sets: {unshown}"


def test_every_method_has_a_notebook():
    stems = {p.stem for p in NOTEBOOKS}
    assert {"quickstart", "sqr", "osrt", "forestprune", "ordered_bagging"} <= stems


if __name__ == "__main__":  # store the outputs: executed as the test executes them, with the served data
    import os
    import sys
    import tempfile

    import nbformat

    shared = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    with tempfile.TemporaryDirectory() as cache:
        os.environ.update(PARSIMONY_DATA=os.pathsep.join([str(shared / "pmlb"), str(shared / "osrt")]),
                          XDG_CACHE_HOME=cache, PARSIMONY_PMLB_URL="http://127.0.0.1:9/{name}.tsv.gz", MPLBACKEND="Agg")
        for path in NOTEBOOKS:
            if sys.argv[1:] and path.stem not in sys.argv[1:]:
                continue
            notebook = execute(path)
            errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
                      if o.output_type == "error"]
            if errors:
                sys.exit(f"{path.name}: {errors[0].ename}: {errors[0].evalue}")
            for cell in notebook.cells:  # stderr (compile notices, warnings) depends on the machine and its cache
                if cell.cell_type == "code":
                    cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
            nbformat.write(notebook, path)
            print("stored", path.name)
