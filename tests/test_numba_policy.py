"""The stable compile layer of parsimony._numba (numba's public API, in every mode): the numpy
replacements, a single announcement of the first compile, progress bars whose ETA leaves a
compiling step out. The compile accelerator's own tests: test_compile_accelerator.py."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from tqdm import tqdm

from parsimony._numba import argsort, assign, restart_eta

pytestmark = pytest.mark.kernels


def test_assign_copies_a_row():
    dst = np.zeros((2, 3))
    assign(dst[1], np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(dst, [[0, 0, 0], [1, 2, 3]])


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 200])
def test_argsort_is_numpys_stable_argsort(n):
    rng = np.random.default_rng(n)
    for values in (rng.standard_normal(n), rng.integers(0, 3, n).astype(float), -np.arange(n, dtype=float)):
        np.testing.assert_array_equal(argsort(values), np.argsort(values, kind="stable"))


def _run(code, cache_dir):
    """``python -c code`` on the numba cache ``cache_dir``: its output."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)


def test_first_compile_is_announced_once(tmp_path):
    code = (
        "from parsimony._numba import njit, compiled_kernels\n"
        "@njit(cache=False)\n"
        "def f(x):\n"
        "    return x + 1\n"
        "f(1); f(1.0); f(2)\n"
        "print(compiled_kernels())\n"
    )
    out = _run(code, tmp_path)
    assert out.stdout.split() == ["2"]  # int64 and float64
    assert out.stderr.count("compiling numba kernels, first use only") == 1
    # one line when the compiling is over, with the count and the time (here: at exit)
    assert out.stderr.count("parsimony: compiled 2 numba kernels in ") == 1
    assert out.stderr.index("first use only") < out.stderr.index("compiled 2 numba kernels")


def test_a_burst_of_compiles_is_reported_when_quiet(tmp_path):
    """The completion line comes QUIET_SECONDS after the last compile, before the process goes on
    for long; a later burst shorter than a second says nothing."""
    code = (
        "import sys, time\n"
        "from parsimony import _numba\n"
        "_numba.QUIET_SECONDS = 0.2\n"
        "@_numba.njit(cache=False)\n"
        "def f(x):\n"
        "    return x + 1\n"
        "f(1)\n"
        "time.sleep(1.0)\n"
        "print('after the pause', file=sys.stderr)\n"
        "f(1.0)\n"
    )
    out = _run(code, tmp_path)
    assert out.stderr.index("compiled 1 numba kernel in ") < out.stderr.index("after the pause")
    assert out.stderr.count("parsimony: compiled") == 1


def test_restart_eta_counts_only_the_steps_to_come():
    bar = tqdm(total=10, desc="SQR", file=io.StringIO(), mininterval=0)
    bar.start_t -= 100.0  # a first step that took 100 s of compiling
    bar.set_postfix_str("best_loss=1", refresh=False)
    bar.update(1)
    fresh = restart_eta(bar)
    assert (fresh.n, fresh.initial, fresh.total, fresh.desc) == (1, 1, 10, "SQR")
    assert fresh.format_dict["elapsed"] < 50.0
    assert fresh.postfix == "best_loss=1"
    fresh.close()


def test_restart_eta_keeps_a_disabled_bar():  # `bench run --no-progress` on a cold cache
    bar = tqdm(total=10, disable=True)
    bar.update(1)
    assert restart_eta(bar) is bar


def test_fastmath_is_refused():
    from parsimony._numba import njit

    with pytest.raises(ValueError, match="fastmath must not be set, got {'contract'}"):
        njit(fastmath={"contract"})(lambda x: x)


_BITS = """
import hashlib, numpy as np
from parsimony.ensembles._cbcd import _dot
from parsimony.symbolic._evaluator import _trig_array
rng = np.random.default_rng(0)
a, b, x = rng.standard_normal(1003), rng.standard_normal(1003), rng.uniform(-40, 40, 1003)
sin, cos = np.empty(1003), np.empty(1003)
_trig_array(x, sin, 0.0)
_trig_array(x, cos, 1.0)
print(hashlib.sha1(np.r_[_dot(a, b), _dot(x, a), sin, cos].tobytes()).hexdigest())
"""


def test_kernels_give_the_same_bits_on_numbas_generic_cpu(tmp_path):
    # the sums and polynomials that FMA contraction and reassociation by vector width would change:
    # numba's generic x86-64 target (SSE2, no FMA) against this CPU's, each in a cache of its own
    digests = []
    for name, cpu in (("native", {}), ("generic", {"NUMBA_CPU_NAME": "generic"})):
        env = {**os.environ, **cpu, "NUMBA_CACHE_DIR": str(tmp_path / name), "PARSIMONY_NUMBA_HELPER": "0"}
        run = subprocess.run([sys.executable, "-c", _BITS], env=env, capture_output=True, text=True, timeout=600,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        assert run.returncode == 0, run.stderr
        digests.append(run.stdout.strip())
    assert digests[0] == digests[1]
