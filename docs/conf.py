"""Sphinx configuration: API reference from the numpydoc docstrings, notebooks with stored outputs."""

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if (ROOT / "parsimony").is_dir():
    sys.path.insert(0, str(ROOT))  # document the checkout, not an installed copy
# autosummary writes the API pages to docs/generated/ (not in git): start afresh, so that a page
# of a renamed or removed object cannot linger
shutil.rmtree(Path(__file__).resolve().parent / "generated", ignore_errors=True)
os.environ.setdefault("MPLBACKEND", "Agg")

from parsimony import __version__  # noqa: E402

project = "parsimony"
author = "the parsimony developers"
copyright = "the parsimony developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax copied into the build (_static/mathjax), so formulas render offline
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "generated/*.rst.orig"]
templates_path = ["_templates"]

# notebooks are rendered with the outputs stored in them; the build never executes them
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"  # numpydoc's parameter lists say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping = {}  # the build stays offline

html_theme = "furo"
html_title = f"parsimony {release}"
html_static_path = []


def skip_metadata_requests(app, what, name, obj, skip, options):
    """Leave out the ``set_*_request`` methods scikit-learn generates on every estimator."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_metadata_requests)
