"""The exact pinball linear scaling a + b * f against a linear programme."""

import zlib

import numpy as np
import pytest
from scipy.optimize import linprog

from parsimony.symbolic._scaling import pinball_line


def _lp_optimum(f, y, w, tau):
    """min over (a, b) of sum w rho_tau(y - a - b f) as an LP: y - a - b f = u - v, u, v >= 0."""
    n = len(y)
    cost = np.r_[0, 0, 0, 0, tau * w, (1 - tau) * w]
    equality = np.c_[np.ones(n), -np.ones(n), f, -f, np.eye(n), -np.eye(n)]
    return linprog(cost, A_eq=equality, b_eq=y, bounds=[(0, None)] * (4 + 2 * n), method="highs").fun


def _pinball(r, w, tau):
    return float(np.sum(w * np.where(r >= 0, tau * r, (tau - 1) * r)))


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("case", ["plain", "ties", "weights", "heavy"])
def test_pinball_line_reaches_the_lp_optimum(tau, case):
    rng = np.random.default_rng(zlib.crc32(f"{tau} {case}".encode()))
    for _ in range(20):
        n = int(rng.integers(3, 60))
        f = rng.standard_normal(n) * 50
        y = 3 * f + (rng.standard_cauchy(n) if case == "heavy" else rng.standard_normal(n)) + 7
        if case == "ties":
            f = np.round(f / 25)
        w = rng.integers(0, 4, n).astype(float) if case == "weights" else np.ones(n)
        w[0] = 1.0
        a, b, loss = pinball_line(f, y, w, tau)
        best = _lp_optimum(f, y, w, tau)
        assert loss == pytest.approx(_pinball(y - a - b * f, w, tau), rel=1e-9, abs=1e-9)
        assert loss <= best + 1e-9 * (1 + abs(best))
        # never worse than f plus its best constant
        offset = np.sort(y - f)
        assert loss <= min(_pinball(y - f - c, w, tau) for c in offset) + 1e-9


def test_pinball_line_constant_or_invalid_values():
    y = np.array([1.0, 2.0, 5.0, 4.0])
    a, b, loss = pinball_line(np.full(4, 3.0), y, np.ones(4), 0.5)  # no slope to find: the best offset
    assert loss == pytest.approx(_pinball(y - a - b * 3.0, np.ones(4), 0.5))
    assert loss == pytest.approx(min(_pinball(y - c, np.ones(4), 0.5) for c in y))
    assert pinball_line(np.array([1.0, np.nan, 2.0, 3.0]), y, np.ones(4), 0.5)[2] == np.inf
