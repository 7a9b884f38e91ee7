"""The additive terms of an expression and their exact loss-optimal coefficients."""

import zlib

import numpy as np
import pytest

from parsimony.symbolic._expressions import from_tokens
from parsimony.symbolic._scaling import pinball_line
from parsimony.symbolic._terms import (
    least_squares_terms,
    pinball_regression,
    write_sum,
)

from ._helpers import lp_pinball_optimum


def _pinball(r, w, tau):
    return float(np.sum(w * np.where(r >= 0, tau * r, (tau - 1) * r)))


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("case", ["plain", "ties", "weights", "heavy", "dependent"])
def test_pinball_regression_reaches_the_lp_optimum(tau, case):
    rng = np.random.default_rng(zlib.crc32(f"{tau} {case}".encode()))
    for _ in range(12):
        n = int(rng.integers(6, 120))
        k = int(rng.integers(1, 6))
        cols = rng.standard_normal((k, n)) * rng.uniform(0.1, 50, size=(k, 1))
        if case == "ties":
            cols = np.round(cols / np.abs(cols).max(axis=1, keepdims=True) * 2)
        if case == "dependent" and k > 1:
            cols[-1] = 2 * cols[0] - 1  # an affine copy: adds nothing
        noise = rng.standard_cauchy(n) if case == "heavy" else rng.standard_normal(n)
        y = rng.standard_normal(k) @ cols + noise + 7
        if case == "ties":
            y = np.round(y)
        w = rng.integers(0, 4, n).astype(float) if case == "weights" else np.ones(n)
        w[:k + 2] = 1.0
        coef = np.empty(k)
        a, loss = pinball_regression(cols, y, w, tau, coef)
        best = lp_pinball_optimum(cols, y, w, tau)
        assert loss == pytest.approx(_pinball(y - a - coef @ cols, w, tau), rel=1e-9, abs=1e-9)
        scale = np.abs(y).max() * w.sum()
        assert loss <= best + 1e-7 * scale + 1e-9 * abs(best), (n, k, loss, best)
        if case == "dependent" and k > 1:
            assert coef[-1] == 0.0


@pytest.mark.parametrize("tau", [0.2, 0.5, 0.8])
def test_one_term_matches_the_exact_line(tau):
    rng = np.random.default_rng(5)
    f = rng.standard_normal(80) * 3
    y = 2 * f + rng.standard_normal(80)
    w = np.ones(80)
    coef = np.empty(1)
    a, loss = pinball_regression(f[None, :], y, w, tau, coef)
    assert loss == pytest.approx(_pinball(y - a - coef[0] * f, w, tau), rel=1e-12)
    assert loss == pytest.approx(pinball_line(f, y, w, tau)[2], rel=1e-7)


def test_least_squares_terms_matches_lstsq():
    rng = np.random.default_rng(1)
    cols = rng.standard_normal((3, 50))
    cols[2] = 1.0  # a constant column: coefficient 0, the offset takes it
    y = 1.5 + cols[0] * 2 - cols[1] + rng.standard_normal(50)
    w = rng.uniform(0.5, 2, 50)
    coef = np.empty(3)
    a = least_squares_terms(cols, y, w, coef)
    design = np.c_[np.ones(50), cols[:2].T] * np.sqrt(w)[:, None]
    expected = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)[0]
    np.testing.assert_allclose([a, *coef[:2]], expected, rtol=1e-10)
    assert coef[2] == 0.0
    cols[1, 3] = np.nan
    assert np.isnan(least_squares_terms(cols, y, w, coef))
    assert pinball_regression(cols, y, w, 0.5, coef)[1] == np.inf


@pytest.mark.parametrize("tokens, spans", [
    (["x0", "x1", "mul", "x2", "sin", 2.0], [(0, 2), (3, 4), (5, 5)]),
    ([3.0, "x0", "mul", "x1", 0.5, "mul"], [(0, 2), (3, 5)]),
    (["x0", "x1", "x2", "x0", "mul"], [(0, 0), (1, 1), (2, 4)]),
])
def test_write_sum_gives_the_new_coefficients(tokens, spans):
    """Every term times its new coefficient, plus the offset: constant factors absorb the
    coefficients, other terms get one, a zero coefficient drops its term."""
    from parsimony.symbolic._evaluator import evaluate, make_workspace

    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, size=(30, 3))
    Xt = np.ascontiguousarray(X.T)
    ops = np.concatenate([from_tokens(tokens[s:e + 1])[0] for s, e in spans])  # the terms side by side
    feats = np.concatenate([from_tokens(tokens[s:e + 1])[1] for s, e in spans])
    vals = np.concatenate([from_tokens(tokens[s:e + 1])[2] for s, e in spans])
    k = len(spans)
    starts, ends = np.array([s for s, _ in spans]), np.array([e for _, e in spans])
    ws = make_workspace(len(ops) + 3 * k + 2, 30)
    cols = np.empty((k, 30))
    for t, (s, e) in enumerate(spans):
        evaluate(ops[s:e + 1], feats[s:e + 1], vals[s:e + 1], e - s + 1, Xt, ws, cols[t])
    coefs = rng.normal(size=k)
    coefs[-1] = 0.0
    cap = len(ops) + 3 * k + 2
    o = (np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64), np.zeros(cap))
    m = write_sum(ops, feats, vals, k, starts, ends, coefs, 1.25, *o)
    out = np.empty(30)
    evaluate(o[0], o[1], o[2], m, Xt, ws, out)
    np.testing.assert_allclose(out, coefs @ cols + 1.25, rtol=1e-12, atol=1e-12)
    assert write_sum(ops, feats, vals, k, starts, ends, coefs, 1.25, *(a[:2] for a in o)) == -1
