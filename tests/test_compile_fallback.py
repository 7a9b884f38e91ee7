"""The compile accelerator never changes a fit: off (PARSIMONY_COMPILE_ACCELERATOR=0), failing its
install checks, or failing in a compile, fits are the same as with it, with exactly one warning
when it fails (none when it is switched off)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.kernels

ROOT = Path(__file__).resolve().parents[1]

# what makes the accelerator fail, run before the fits
_SABOTAGE = {
    "on": "",
    "off": "",
    # a method it re-implements takes other arguments than the tested one (numba's own calls still work)
    "install": ("from numba.core.codegen import JITCodeLibrary\n"
                "_verify = JITCodeLibrary._verify_declare_only_symbols\n"
                "JITCodeLibrary._verify_declare_only_symbols = lambda self, strict=True: _verify(self)\n"),
    # its cache raises on every load: the first kernel a fit calls fails inside the accelerator
    "cache": ("import parsimony._numba\n"
              "import parsimony._compile_accelerator as accelerator\n"
              "def _broken(self, *args):\n"
              "    raise RuntimeError('sabotaged cache')\n"
              "accelerator._PackageStampedCache.load_overload = _broken\n"),
    # its link-only library raises while compiling a kernel's callee
    "codegen": ("import numpy as np\n"
                "import parsimony._numba\n"
                "import parsimony._compile_accelerator as accelerator\n"
                "def _broken(self):\n"
                "    raise RuntimeError('sabotaged code generation')\n"
                "accelerator._LinkOnlyLibrary._finalize_final_module = _broken\n"
                "@parsimony._numba.njit(cache=False)\n"
                "def inner(x):\n"
                "    return 2.0 * x\n"
                "@parsimony._numba.njit(cache=False)\n"
                "def outer(x):\n"
                "    return inner(x) + 1.0\n"
                "assert outer(1.5) == 4.0\n"),
}

_FITS = """
import hashlib, json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    exec(sys.argv[1])
    import numpy as np
    from parsimony import OptimalSparseRegressionTree, SymbolicQuantileRegressor
    from parsimony import _numba

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(80, 3))
    y = X[:, 0] * X[:, 1] + np.where(X[:, 2] > 0, 1.0, 0.0) + 0.1 * rng.normal(size=80)
    fits = {}
    for quantile in (0.5, 0.8):
        model = SymbolicQuantileRegressor(quantile, niterations=2, populations=2, population_size=20, progress=False,
                                          random_state=3).fit(X, y)
        fits[f"sqr{quantile}"] = [model.predict(X).tobytes().hex(), str(model.equations_["equation"].tolist())]
    for loss in ("squared", "quantile"):
        model = OptimalSparseRegressionTree(regularization=0.02, depth_limit=3, loss=loss, quantile=0.8).fit(X, y)
        fits[f"osrt-{loss}"] = [model.predict(X).tobytes().hex(), model.export_text()]
messages = [str(w.message) for w in caught if "compile accelerator" in str(w.message)]
print(json.dumps({"fits": fits, "warnings": messages, "accelerated": _numba.accelerated()}))
"""


def _fit(mode):
    env = dict(os.environ, PARSIMONY_NUMBA_HELPER="0",
               PARSIMONY_COMPILE_ACCELERATOR={"on": "auto", "off": "0"}.get(mode, "1"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _FITS, _SABOTAGE[mode]], env=env, capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


#: What the warning names where the accelerator fails, by the sabotage of :data:`_SABOTAGE`.
_FAILURE = {"install": "_verify_declare_only_symbols", "cache": "sabotaged cache",
            "codegen": "sabotaged code generation"}


@pytest.fixture(scope="module")
def accelerated_fits():
    """The fits with the accelerator on (once per test process), and their checks."""
    from parsimony._numba import accelerated

    run = _fit("on")
    assert run["warnings"] == []
    if accelerated():  # a tested numba
        assert run["accelerated"]
    return run


def _same_fits(mode, accelerated_fits):
    from parsimony._numba import accelerated

    run = _fit(mode)
    assert run["fits"] == accelerated_fits["fits"]
    assert not run["accelerated"]
    if mode == "off":
        assert run["warnings"] == []
        return
    assert len(run["warnings"]) == 1, run["warnings"]
    if accelerated():  # a tested numba: the failure is the sabotage, found where it happens
        assert _FAILURE[mode] in run["warnings"][0]


def test_fits_are_the_same_with_the_accelerator_off(accelerated_fits):
    _same_fits("off", accelerated_fits)


def test_fits_are_the_same_with_the_accelerator_failing(accelerated_fits):
    # one test, in this order: "cache" compiles every kernel afresh into the files of a process whose
    # accelerator failed mid-way (``.records``) and "codegen" loads them; "install" fails before any
    # kernel and uses numba's own files, as the "off" test does. A test per mode compiled the kernels
    # three times on the two test processes (off 272 s, cache 393 s, codegen 425 s of 1,153 s idle)
    for mode in ("cache", "codegen", "install"):
        _same_fits(mode, accelerated_fits)
