"""The factored seeder (``_factored``): a monomial times an additive model.

The laws below are hand-built (none is one of the AI Feynman problems the search was tuned on)."""

import numpy as np
import pytest

from parsimony.losses import LOSS_PINBALL, LOSS_SQUARED
from parsimony.symbolic._expressions import DEFAULT_OPERATORS, TOKEN_COMPLEXITY, complexity_weights, operator_codes
from parsimony.symbolic.seeds import STAGES, FactoredSeeder, Problem

from ._helpers import predict_tree, stage_losses

WEIGHTS = complexity_weights(TOKEN_COMPLEXITY)

LAWS = {
    "a square over a feature times a sum": lambda X: 0.7 * X[:, 0] ** 2 / X[:, 1] * (X[:, 2] + 3.0 * X[:, 3] ** 2),
    "a product times a difference of inverses": lambda X: 2.5 * X[:, 0] * X[:, 3] * (1.0 / X[:, 1] - 1.0 / X[:, 2]),
    "a feature times a sum with an offset": lambda X: X[:, 2] * (4.0 + X[:, 0] - 0.5 * X[:, 1] ** 2),
}


def _models(X, y, loss=LOSS_PINBALL, maxsize=30):
    binops, unops, _ = operator_codes(DEFAULT_OPERATORS)
    relevance = np.corrcoef(np.c_[X, y].T)[-1, :-1] ** 2
    problem = Problem(X, y, np.ones(len(y)), loss, 0.5, binops, unops, WEIGHTS, maxsize, relevance / relevance.sum())
    return FactoredSeeder().propose(problem).models


@pytest.mark.parametrize("loss", [LOSS_PINBALL, LOSS_SQUARED])
@pytest.mark.parametrize("law", sorted(LAWS))
def test_the_seeder_recovers_a_monomial_times_a_sum_exactly(law, loss):
    rng = np.random.default_rng(5)
    X = rng.uniform(1.0, 4.0, (600, 4))
    y = LAWS[law](X)
    models = _models(X, y, loss)
    exact = [m for m in models if np.max(np.abs(predict_tree(m, X) - y)) <= 1e-6 * np.abs(y).max()]
    assert exact, f"no form reproduces {law}"
    X_new = rng.uniform(1.0, 4.0, (200, 4))  # the law itself, not an interpolation of the rows
    assert np.allclose(predict_tree(exact[0], X_new), LAWS[law](X_new), rtol=1e-6, atol=1e-6 * np.abs(y).max())
    assert all(WEIGHTS[m[0]].sum() <= 30 for m in models)


def test_the_seeder_refuses_noise():
    rng = np.random.default_rng(6)
    X = rng.uniform(1.0, 4.0, (600, 4))
    assert _models(X, rng.normal(size=600)) == []
    assert _models(X, X[:, 0] * rng.normal(size=600)) == []  # a monomial times noise has no law either


def test_the_estimator_runs_the_seeder_as_a_stage():
    assert "factored" in STAGES
    X = np.random.default_rng(7).uniform(1.0, 3.0, (200, 4))
    y = LAWS["a product times a difference of inverses"](X)
    with_it, without = stage_losses("factored", X, y)
    assert with_it <= 1e-9 * np.mean(np.abs(y))
    assert without > 1e-6 * np.mean(np.abs(y))
