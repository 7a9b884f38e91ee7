"""The numba evaluator against a NumPy oracle; lazy leaves, trig kernels, losses."""

import numpy as np
import pytest

from parsimony.losses import Pinball, Squared
from parsimony.metrics import pinball_loss
from parsimony.symbolic import _expressions as E
from parsimony.symbolic._engine import random_expressions
from parsimony.symbolic._evaluator import evaluate, make_data, make_workspace, tree_loss

from ._helpers import reference_eval


def _eval(ops, feats, vals, X):
    out = np.empty(X.shape[0])
    evaluate(ops, feats, vals, len(ops), np.ascontiguousarray(X.T), make_workspace(len(ops), X.shape[0]), out)
    return out


def test_paper_expression():
    X = np.random.default_rng(0).normal(size=(200, 4))
    ops, feats, vals = E.from_tokens(["x1", "x2", "mul", "x3", "cos", "add"])
    np.testing.assert_allclose(_eval(ops, feats, vals, X), X[:, 1] * X[:, 2] + np.cos(X[:, 3]), rtol=1e-14)


def test_random_expressions_match_numpy():
    rng = np.random.default_rng(1)
    X = rng.normal(scale=2.0, size=(64, 3))
    checked = 0
    for ops, feats, vals in random_expressions(400, 3, seed=3):
        got = _eval(ops, feats, vals, X)
        want, tame = reference_eval(ops, feats, vals, X, return_tame=True)
        # where the oracle is well conditioned the values agree; where it is not finite, neither is ours
        np.testing.assert_allclose(got[tame], want[tame], rtol=1e-9, atol=1e-12)
        assert not np.isfinite(got[~np.isfinite(want)]).any()
        checked += tame.sum()
    assert checked > 10_000


@pytest.mark.parametrize("scale", [1.0, 100.0, 1e4, 1e6, 1e12])
def test_vectorised_sin_cos_accuracy(scale):
    x = np.random.default_rng(2).normal(scale=scale, size=(5000, 1))
    for token, ref in (("sin", np.sin), ("cos", np.cos)):
        ops, feats, vals = E.from_tokens(["x0", token])
        np.testing.assert_allclose(_eval(ops, feats, vals, x), ref(x[:, 0]), rtol=0, atol=4e-16 * max(1, scale))
    ops, feats, vals = E.from_tokens(["x0", "cos"])
    assert np.isnan(_eval(ops, feats, vals, np.array([[np.inf], [np.nan]]))).all()


def test_constant_only_and_feature_only_results():
    X = np.arange(6.0).reshape(3, 2)
    assert np.all(_eval(*E.from_tokens([2.0, 3.0, "mul"]), X) == 6.0)
    np.testing.assert_array_equal(_eval(*E.from_tokens(["x1"]), X), X[:, 1])


def test_tree_loss_equals_metric_and_invalid_is_inf():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 2))
    y = rng.normal(size=50)
    w = rng.uniform(0.5, 2.0, size=50)
    ops, feats, vals = E.from_tokens(["x0", 0.5, "mul", "x1", "sin", "add"])
    ws = make_workspace(len(ops), 50)
    data = make_data(np.ascontiguousarray(X.T), y, w, Pinball(0.3))
    pred = 0.5 * X[:, 0] + np.sin(X[:, 1])
    assert tree_loss(ops, feats, vals, len(ops), data, ws) == pytest.approx(pinball_loss(y, pred, 0.3, w), rel=1e-12)
    sq = make_data(data.Xt, y, w, Squared())
    assert tree_loss(ops, feats, vals, len(ops), sq, ws) == pytest.approx(np.average((y - pred) ** 2, weights=w))
    bad = E.from_tokens(["x0", "log"])  # log of negative inputs
    assert tree_loss(*bad, 2, data, ws) == np.inf
    div0 = E.from_tokens(["x0", 0.0, "div"])
    assert tree_loss(*div0, 3, data, ws) == np.inf


def test_from_tokens_rejects_bad_sequences():
    with pytest.raises(ValueError, match="lacks operands"):
        E.from_tokens(["x0", "add"])
    with pytest.raises(ValueError, match="single expression"):
        E.from_tokens(["x0", "x1"])
    with pytest.raises(ValueError, match="unknown operator"):
        E.from_tokens(["x0", "tanh"])
