"""The compile policy of parsimony._numba: one specialisation per argument type, a single
announcement of the first compile, progress bars whose ETA leaves a compiling step out."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from tqdm import tqdm

from parsimony._numba import KernelDispatcher, assign, compiled_kernels, njit, njit_by_constant, restart_eta


def _kernels(decorator):
    """A kernel and a caller that passes it the constants 0 and 1 and a variable."""

    @decorator(cache=False)
    def scaled(a, k):
        return a[0] * k

    @njit(cache=False)
    def three_calls(a, i):
        return scaled(a, 0) + scaled(a, 1) + scaled(a, i)

    return scaled, three_calls


@pytest.mark.parametrize("decorator, specialisations", [(njit, 1), (njit_by_constant, 3)])
def test_constants_do_not_multiply_specialisations(decorator, specialisations):
    scaled, three_calls = _kernels(decorator)
    before = compiled_kernels()
    assert three_calls(np.arange(1.0, 4.0), 5) == 0.0 + 1.0 + 5.0
    # numba.njit compiles scaled for Literal[int](0), Literal[int](1) and int64; njit only for int64
    assert len(scaled.signatures) == specialisations
    assert isinstance(scaled, KernelDispatcher)
    assert compiled_kernels() == before + 1 + specialisations


def test_assign_copies_a_row():
    dst = np.zeros((2, 3))
    assign(dst[1], np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(dst, [[0, 0, 0], [1, 2, 3]])


def test_first_compile_is_announced_once(tmp_path):
    code = (
        "from parsimony._numba import njit, compiled_kernels\n"
        "@njit(cache=False)\n"
        "def f(x):\n"
        "    return x + 1\n"
        "f(1); f(1.0); f(2)\n"
        "print(compiled_kernels())\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2"]  # int64 and float64
    assert out.stderr.count("compiling numba kernels, first use only") == 1


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
