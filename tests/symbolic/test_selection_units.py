"""model_selection="cost" does not depend on the scales of the features or the target: it counts each
row's unit-free complexity (parsimony.symbolic._units.unit_free_complexity), the tokens its terms
need in generic units (fronts built by hand, no search)."""

import numpy as np
import pandas as pd
import pytest

from parsimony.metrics import pinball_loss
from parsimony.symbolic import select_equation
from parsimony.symbolic._expressions import complexity_weights, from_tokens
from parsimony.symbolic._units import Units, to_user_units, unit_free_complexity

from .test_intervals import values

WEIGHTS = complexity_weights(None)

#: Changes of units a formula in features on [0, 1] is rewritten under (``to_user_units`` reads
#: feature j as ``x_j / x_scale[j]`` and multiplies the output by ``y_scale``): the features
#: divided by 0.2887 (PMLB's fri_c0 scale), times 1e3 / 0.2887, every feature and the target in
#: units of their own.
CHANGES = [Units(np.full(5, 1 / 0.2887), 1.0), Units(np.full(5, 1e3 / 0.2887), 1.0),
           Units(np.array([3.0, 0.02, 70.0, 1.7, 0.4]), 1e-3)]

FRIEDMAN = [  # (tokens, elided): Friedman #1's law and rows of its fronts (waves, squares, linear
    # terms), and rows with a coefficient of 1 elided, whose tokens as written change with the units
    ([np.pi, "x0", "mul", "x1", "mul", "sin", 10.0, "mul", "x2", 0.5, "sub", "square", 20.0, "mul", "add",
      10.0, "x3", "mul", "add", 5.0, "x4", "mul", "add"], False),
    (["x0", "x1", "mul", 2.9, "mul", "sin", 9.6, "mul", "x3", 10.1, "mul", "add", 4.2, "add"], False),
    (["x3", 9.0, "mul", "x4", 5.0, "mul", "add", "x0", "x1", "mul", 0.49, "sub", "square", -41.0, "mul", "add",
      "x2", 0.507, "sub", "square", 21.0, "mul", "add", 9.97, "add"], False),
    (["x0", 7.1, "mul", "x1", 6.8, "mul", "add", "x3", 10.2, "mul", "add", "x4", 4.9, "mul", "add", 1.5, "add"], False),
    (["x3", 2.7, "mul", "x4", "add", "x2", 0.04, "sub", "square", "add", "x0", "x1", "mul", 0.27, "mul", "sin",
      10.0, "mul", "add", 12.8, "add"], True),
    (["x0", "x1", "add", "x3", "add", 2.9, "add"], True),
]


@pytest.mark.parametrize("tokens, count", [
    ([2.5], 1),                                       # a constant is a constant in any units
    (["x0"], 3),                                      # x0 is c*x0 in general
    (["x0", 2.0, "mul", 1.0, "add"], 5),              # already c*x0 + d
    (["x0", 1.7, "add", 2.0, "mul", 1.0, "add"], 5),  # c*(x0 + m) + d: the shift folds into d
    (["x0", "x1", "add"], 7),                         # a*x0 + b*x1: each feature in its own units
    (["x0", "x1", "mul"], 5),                         # c*x0*x1
    (["x0", "x1", "mul", "sin"], 10),                 # sin(a*x0*x1)*b
    (["x2", 0.5, "sub", "square"], 7),                # c*(x2 - m)^2
    (["x2", 0.5, "sub", "square", 20.0, "mul"], 7),   # already
])
def test_unit_free_complexity_counts_the_coefficients_and_shifts_terms_need(tokens, count):
    ops, feats, vals = from_tokens(tokens)
    assert unit_free_complexity(ops, feats, vals, WEIGHTS) == count


@pytest.mark.parametrize("tokens, elided", FRIEDMAN)
def test_unit_free_complexity_does_not_change_with_the_units(tokens, elided):
    """The same function written in other units (exactly) has the same unit-free complexity."""
    ops, feats, vals = from_tokens(tokens)
    count, written = unit_free_complexity(ops, feats, vals, WEIGHTS), {int(WEIGHTS[ops].sum())}
    X = np.random.default_rng(0).uniform(0.0, 1.0, (40, 5))
    for units in CHANGES:
        new = to_user_units(ops, feats, vals, units, WEIGHTS)  # the same function in other units
        np.testing.assert_allclose(values(*new, X * units.x_scale) / units.y_scale,
                                   values(ops, feats, vals, X), rtol=1e-9, atol=1e-9)
        assert unit_free_complexity(*new, WEIGHTS) == count
        written.add(int(WEIGHTS[new[0]].sum()))
    assert (len(written) > 1) == elided  # while the tokens as written change where a 1 was elided


def _front_in(units, rows, X, y, tau=0.5):
    """The rows (formulas on ``X``'s features) written in ``units`` (the identity: as given):
    a front as select_equation reads it, its baseline and the rows' unit-free complexities."""
    Xu = X * units.x_scale + (0.0 if units.x_shift is None else units.x_shift)
    yu = y * units.y_scale
    written = [to_user_units(*row, units, WEIGHTS) for row in rows]
    frame = pd.DataFrame({"complexity": [int(WEIGHTS[r[0]].sum()) for r in written],
                          "loss": [pinball_loss(yu, values(*r, Xu), tau) for r in written], "score": 0.0})
    baseline = pinball_loss(yu, np.full(len(yu), np.quantile(yu, tau)), tau)
    return frame, baseline, [unit_free_complexity(*r, WEIGHTS) for r in written]


def test_the_cost_choice_does_not_change_with_the_units():
    # y = 1.05 x0 + noise: in these units "x0 + c" is nearly as good as "1.05 x0 + c" for 2 tokens
    # fewer, a coincidence of the units: in others x0's coefficient is written either way (the
    # changes shift x0 too: a shift that enters linearly folds into the constant term)
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (500, 1))
    y = 1.05 * X[:, 0] + 0.1 * rng.standard_normal(500)
    rows = [from_tokens([float(np.median(y))]),
            from_tokens(["x0", float(np.median(y - X[:, 0])), "add"]),
            from_tokens(["x0", 1.05, "mul", float(np.median(y - 1.05 * X[:, 0])), "add"])]
    picks, by_tokens = set(), set()
    for units in [Units.identity(1), Units(np.array([3.0]), 1.0, np.array([-2.0])),
                  Units(np.array([1e-3]), 40.0, np.array([7.0])), Units(np.array([0.3]), 1e-2)]:
        frame, baseline, unit_free = _front_in(units, rows, X, y)
        picks.add(select_equation(frame, "cost", baseline=baseline, unit_free=unit_free))
        by_tokens.add(select_equation(frame, "cost", baseline=baseline))
    assert picks == {2}  # the row that fits best at the same unit-free complexity, in every units
    assert by_tokens == {1, 2}  # counting the tokens as written, the choice follows the units


def test_unit_free_counts_are_checked():
    frame = pd.DataFrame({"complexity": [1, 5], "loss": [1.0, 0.5], "score": 0.0})
    with pytest.raises(ValueError, match="unit_free must give one count per row"):
        select_equation(frame, "cost", baseline=1.0, unit_free=[1])


