"""Constant optimisation against brute force; the pluggable losses against their definitions."""

import numpy as np
import pytest

from parsimony.metrics import pinball_loss
from parsimony.symbolic import Absolute, Pinball, Squared
from parsimony.symbolic import _expressions as E
from parsimony.symbolic._evaluator import make_data, make_workspace, tree_loss
from parsimony.symbolic._optimize import optimize_constants
from parsimony.symbolic._random import new_state


def _setup(tokens, X, y, tau):
    ops, feats, vals = E.from_tokens(tokens)
    data = make_data(np.ascontiguousarray(X.T), y, np.ones(len(y)), Pinball(tau))
    ws = make_workspace(len(ops), len(y))
    return ops, feats, vals, data, ws


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("tokens", [["x0", 1.0, "mul"], ["x0", 1.0, "mul", "exp"], [0.3, "x0", "add", "cos"]])
def test_one_constant_matches_brute_force(tau, tokens):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.1, 2.0, size=(80, 1))
    y = np.exp(0.7 * X[:, 0]) + rng.normal(scale=0.3, size=80)
    ops, feats, vals, data, ws = _setup(tokens, X, y, tau)
    pos = int(np.flatnonzero(ops == E.CONST)[0])
    start = tree_loss(ops, feats, vals, len(ops), data, ws)
    loss = optimize_constants(ops, feats, vals, len(ops), data, ws, new_state(1), start, 200, 3)
    assert loss == pytest.approx(tree_loss(ops, feats, vals, len(ops), data, ws), rel=1e-12)  # consistent

    def at(c):
        v = vals.copy()
        v[pos] = c
        return tree_loss(ops, feats, v, len(ops), data, ws)

    grid = np.linspace(-3, 3, 60001)
    losses = np.array([at(c) for c in grid])
    best = int(np.argmin(losses))
    fine = np.linspace(grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)], 2001)
    brute = min(losses.min(), min(at(c) for c in fine))
    # restarts reach the global minimum of this 1-D problem (up to the grid's resolution)
    assert loss <= brute + 1e-9
    assert loss <= start


def test_two_constants_reach_the_pinball_optimum_of_a_line():
    """Quantile regression of a line: an exact optimum passes through two data points."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(40, 1))
    y = 1.0 + 2.0 * X[:, 0] + rng.standard_t(3, size=40)
    tau = 0.75
    ops, feats, vals, data, ws = _setup(["x0", 0.0, "mul", 0.0, "add"], X, y, tau)
    loss = optimize_constants(ops, feats, vals, len(ops), data, ws, new_state(2), np.inf, 400, 4)
    # brute force over every line through two data points (the LP optimum is one of them)
    best = np.inf
    for i in range(40):
        for j in range(i + 1, 40):
            slope = (y[j] - y[i]) / (X[j, 0] - X[i, 0])
            best = min(best, pinball_loss(y, y[i] + slope * (X[:, 0] - X[i, 0]), tau))
    assert loss == pytest.approx(best, rel=1e-6)


def test_no_constants_returns_current_loss():
    X = np.ones((5, 1))
    ops, feats, vals, data, ws = _setup(["x0", "cos"], X, np.zeros(5), 0.5)
    assert optimize_constants(ops, feats, vals, 2, data, ws, new_state(0), 0.123, 50, 1) == 0.123


def test_losses_values_and_gradients():
    rng = np.random.default_rng(0)
    y, p, w = rng.normal(size=30), rng.normal(size=30), rng.uniform(0.1, 1, size=30)
    assert Pinball(0.3).value(y, p, w) == pytest.approx(pinball_loss(y, p, 0.3, w))
    assert Absolute().value(y, p) == pytest.approx(2 * Pinball(0.5).value(y, p))
    assert Squared().value(y, p, w) == pytest.approx(np.average((y - p) ** 2, weights=w))
    eps = 1e-6
    for loss in (Pinball(0.3), Squared(), Absolute()):
        g = loss.gradient(y, p, w)
        for i in range(0, 30, 7):
            d = np.zeros(30)
            d[i] = eps
            numeric = (loss.value(y, p + d, w) - loss.value(y, p - d, w)) / (2 * eps)
            assert g[i] == pytest.approx(numeric, rel=1e-4, abs=1e-8)
    with pytest.raises(ValueError, match="tau"):
        Pinball(1.5)


def test_small_solver_matches_numpy_and_refuses_singular_systems():
    from parsimony.symbolic._optimize import _solve_small

    rng = np.random.default_rng(0)
    for k in range(1, 7):
        a = rng.normal(size=(k, k)) + k * np.eye(k)
        b = rng.normal(size=k)
        x = np.empty(k)
        assert _solve_small(a.copy(), b.copy(), x)
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not _solve_small(singular, np.array([1.0, 1.0]), np.empty(2))
    assert not _solve_small(np.zeros((3, 3)), np.ones(3), np.empty(3))
