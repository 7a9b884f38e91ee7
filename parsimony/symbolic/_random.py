"""A tiny counter-based generator (splitmix64) for the numba kernels.

Each population carries its own ``uint64[1]`` state, so a population's random stream does not
depend on which thread runs it: results are identical for every ``n_jobs``.
"""

from __future__ import annotations

import math

import numpy as np

from .._numba import njit

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def new_state(seed: int) -> np.ndarray:
    """A fresh generator state from an integer seed."""
    return np.array([np.uint64(seed % (1 << 64))], dtype=np.uint64)


@njit
def next_u64(state):
    state[0] += _GAMMA
    z = state[0]
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit
def uniform(state):
    """A float in [0, 1)."""
    return float(next_u64(state) >> _S11) * (1.0 / 9007199254740992.0)


@njit
def randint(state, n):
    """An int in [0, n)."""
    k = int(uniform(state) * n)
    return k if k < n else n - 1


@njit
def normal(state):
    """A standard normal draw (Box-Muller)."""
    u = uniform(state)
    while u <= 1e-300:
        u = uniform(state)
    return math.sqrt(-2.0 * math.log(u)) * math.cos(2.0 * math.pi * uniform(state))
