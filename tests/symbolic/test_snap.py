"""The final front's snapping (``_search._Evolution.snap_constants``): a fitted constant is made
the simplest value (an integer, else a half) that the data cannot tell from it."""

import numpy as np

from parsimony.losses import as_loss
from parsimony.symbolic._engine import Grammar, Search
from parsimony.symbolic._evaluator import make_data, tree_loss
from parsimony.symbolic._expressions import (
    DEFAULT_OPERATORS, TOKEN_COMPLEXITY, complexity_weights, from_tokens, operator_codes,
)
from parsimony.symbolic._search import (
    SNAP_PRICE, SearchSettings, _Evolution, _fresh_state, _mutation_vector, constant_baseline,
    search_kernel_settings, snap_values,
)


def _run(X, y):
    """An evolution over ``(X, y)`` (median loss) as :func:`run_search` builds it, and its baseline."""
    settings = SearchSettings(populations=1, population_size=10)
    binops, unops, _ = operator_codes(DEFAULT_OPERATORS)
    weights = complexity_weights(TOKEN_COMPLEXITY)
    w, loss = np.ones(len(y)), as_loss("pinball", 0.5)
    data = make_data(np.ascontiguousarray(X.T), y, w, loss, None)
    baseline = constant_baseline(y, w, loss)
    search = Search(Grammar(binops, unops, weights, np.cumsum(np.full(X.shape[1], 1.0 / X.shape[1]))),
                    _mutation_vector(settings.mutation_weights), search_kernel_settings(settings, baseline),
                    np.zeros(settings.maxsize + 1))
    return _Evolution(_fresh_state(None, "", 0, settings, None), data, search, settings, None), baseline


def _gaussian(rng, n, noise):  # exp(-x0^2 / (2 x1^2)) / x1, Feynman I.6.2's shape
    X = np.column_stack([rng.uniform(-3, 3, n), rng.uniform(1, 3, n)])
    y = np.exp(-X[:, 0] ** 2 / (2 * X[:, 1] ** 2)) / X[:, 1]
    return X, y + rng.normal(0, noise * np.sqrt(np.mean(y ** 2)), n)


def _model(inner, outer, X, y):
    """``outer * exp(inner * x0^2 / x1^2) / x1 + a``, ``a`` the median residual (a calibrated median)."""
    f = outer * np.exp(inner * X[:, 0] ** 2 / X[:, 1] ** 2) / X[:, 1]
    return from_tokens([outer, inner, "x0", "square", "mul", "x1", "square", "div", "exp", "mul", "x1", "div",
                        float(np.median(y - f)), "add"])


def test_snap_values_are_an_integer_then_a_half():
    assert snap_values(-0.5014) == [-1.0, -0.5]
    assert snap_values(2.98) == [3.0]
    assert snap_values(0.2) == [0.0]  # each value once
    assert snap_values(1.26) == [1.0, 1.5]


def test_a_half_within_the_noise_is_snapped():
    rng = np.random.default_rng(0)
    X, y = _gaussian(rng, 1000, 0.01)
    run, baseline = _run(X, y)
    ops, feats, vals = _model(-0.5014, 0.998, X, y)
    loss = tree_loss(ops, feats, vals, len(ops), run.data, run.full_ws)
    new_loss, new_vals = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
    assert new_vals[1] == -0.5  # the exponent's half, exactly
    assert new_loss <= loss + SNAP_PRICE * baseline
    # the integer is tried first: a 1 in the place of a fitted 0.998 is taken, the half stays
    assert new_vals[0] == 1.0


def test_a_constant_the_data_tells_from_a_half_stays():
    rng = np.random.default_rng(1)
    X, y = _gaussian(rng, 1000, 0.0)
    y = np.exp(-0.45 * X[:, 0] ** 2 / X[:, 1] ** 2) / X[:, 1]  # 0.45: neither 0 nor 1/2
    run, baseline = _run(X, y)
    ops, feats, vals = _model(-0.45, 1.0, X, y)
    loss = tree_loss(ops, feats, vals, len(ops), run.data, run.full_ws)
    _, new_vals = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
    assert new_vals[1] == -0.45
