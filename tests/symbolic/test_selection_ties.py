"""model_selection="cost" between rows of equal unit-free complexity: when their losses differ by
less than the Schwarz price of the constants one fits more, the row written with fewer tokens and
fitted constants is chosen (fronts built by hand, no search)."""

import numpy as np
import pandas as pd
import pytest

from parsimony.symbolic import select_equation
from parsimony.symbolic._expressions import complexity_weights, from_tokens
from parsimony.symbolic._front import calibration_tolerance
from parsimony.symbolic._units import unit_free_complexity
from parsimony.symbolic.regressor import fitted_constants

WEIGHTS = complexity_weights(None)
N = 1000
PRICE = np.log(N) / (2 * N)  # the Schwarz price of one fitted constant, relative to the loss

#: The constant, ``x0*x1 - b`` and ``a*x0*x1 - b``: the last two count the same unit-free tokens
#: (``c*x0*x1 + d``), the second writes 2 tokens and fits 1 constant more.
ROWS = [[7.8], ["x0", "x1", "mul", 0.13, "sub"], ["x0", "x1", "mul", 1.0025, "mul", 0.16, "sub"]]


def _front(gap, coverage=(0.5, 0.5, 0.5), rows=ROWS):
    """The three rows with the last one's loss ``gap`` (relative) below the second's."""
    trees = [from_tokens(r) for r in rows]
    frame = pd.DataFrame({"complexity": [int(WEIGHTS[ops].sum()) for ops, _, _ in trees],
                          "loss": [1.0, 0.2, 0.2 * (1 - gap)], "score": 0.0, "coverage": list(coverage)})
    fitted = [fitted_constants(ops, vals, N) for ops, _, vals in trees]
    unit_free = [unit_free_complexity(ops, feats, vals, WEIGHTS) for ops, feats, vals in trees]
    return frame, fitted, unit_free


def _select(frame, fitted, unit_free, n=N):
    return select_equation(frame, "cost", 0.5, calibration_tolerance(0.5, np.ones(n)), n_samples=n, baseline=1.0,
                           fitted_constants=fitted, unit_free=unit_free)


def test_the_rows_tie_in_unit_free_tokens():
    frame, fitted, unit_free = _front(1e-4)
    assert unit_free[1] == unit_free[2] and list(frame.complexity[1:]) == [5, 7] and fitted[1:] == [1, 2]


@pytest.mark.parametrize("gap", [7e-5, 0.5 * PRICE, 0.99 * PRICE])
def test_a_loss_gap_the_data_cannot_resolve_goes_to_fewer_written_tokens(gap):
    frame, fitted, unit_free = _front(gap)
    assert _select(frame, None, unit_free) == 2  # the cost alone: the lower loss at equal unit-free tokens
    assert _select(frame, fitted, unit_free) == 1


@pytest.mark.parametrize("gap", [1.01 * PRICE, 0.01, 0.1])
def test_a_clear_loss_gap_keeps_the_cost_choice(gap):
    frame, fitted, unit_free = _front(gap)
    assert _select(frame, fitted, unit_free) == 2


def test_the_resolution_shrinks_with_more_rows():
    frame, fitted, unit_free = _front(2 * PRICE)  # resolved at N rows, not at N / 10
    assert _select(frame, fitted, unit_free) == 2
    assert _select(frame, fitted, unit_free, n=N // 10) == 1


def test_rows_of_other_unit_free_tokens_are_not_tied():
    # x0 + x1 - b (a*x0 + b*x1 + d) counts more unit-free tokens than a*x0*x1 - b: the cost decides alone
    rows = [ROWS[0], ["x0", "x1", "add", 0.13, "sub"], ROWS[2]]
    frame, fitted, unit_free = _front(1e-4, rows=rows)
    assert unit_free[1] > unit_free[2] and frame.complexity[1] < frame.complexity[2]
    assert _select(frame, fitted, unit_free) == 2


def test_a_calibrated_choice_is_not_given_up_for_an_uncalibrated_row():
    frame, fitted, unit_free = _front(1e-4, coverage=(0.5, 0.6, 0.5))
    assert _select(frame, fitted, unit_free) == 2
    frame, fitted, unit_free = _front(1e-4, coverage=(0.5, 0.6, 0.6))  # neither calibrated: a tie again
    assert _select(frame, fitted, unit_free) == 1


def test_a_longer_row_fitting_the_noise_does_not_displace_the_tie_break():
    # x0*x1 - d/x0 (one fitted constant, more unit-free tokens) beats a*x0*x1 - b by more than the
    # Schwarz price of its extra tokens, but not x0*x1 - b, the row the tie-break takes: it stays
    frame, fitted, unit_free = _front(1e-4)
    ops, feats, vals = from_tokens(["x0", "x1", "mul", 0.036, "x0", "div", "sub"])
    c = int(WEIGHTS[ops].sum())
    loss = 0.2 * (1 - 1e-4) * np.exp(-(c - frame.complexity[2] + 0.5) * PRICE)
    frame.loc[3] = {"complexity": c, "loss": loss, "score": 0.0, "coverage": 0.5}
    fitted, unit_free = [*fitted, fitted_constants(ops, vals, N)], [*unit_free, unit_free_complexity(ops, feats, vals,
                                                                                                   WEIGHTS)]
    assert fitted == [1, 1, 2, 1] and unit_free[3] > unit_free[2]
    assert _select(frame, None, unit_free) == 2
    assert _select(frame, fitted, unit_free) == 1


@pytest.mark.parametrize("errors, law", [(2.5, True), (3.5, False)])
def test_a_row_without_fitted_constants_is_calibrated_within_three_errors(errors, law):
    # x0*x1 fits nothing to cover the level: its coverage is one binomial draw; 2.5 errors off
    # (outside the two of calibration_tolerance) it is still the law, 3.5 errors off it is not
    trees = [from_tokens(r) for r in (ROWS[0], ["x0", "x1", "mul"], ROWS[1])]
    cover = 0.5 + errors * np.sqrt(0.25 / N)
    frame = pd.DataFrame({"complexity": [int(WEIGHTS[ops].sum()) for ops, _, _ in trees],
                          "loss": [1.0, 0.2, 0.2 * (1 - 1e-3)], "score": 0.0, "coverage": [0.5, cover, 0.5]})
    fitted = [fitted_constants(ops, vals, N) for ops, _, vals in trees]
    unit_free = [unit_free_complexity(ops, feats, vals, WEIGHTS) for ops, feats, vals in trees]
    assert fitted == [1, 0, 1]
    assert _select(frame, fitted, unit_free) == (1 if law else 2)
    assert _select(frame, None, unit_free) == 2  # without the counts, every row is judged alike
    frame["coverage"] = [0.9, 0.9 + errors * np.sqrt(0.09 / N), 0.9]  # at tau .9, errors of 0.009
    assert select_equation(frame, "cost", 0.9, calibration_tolerance(0.9, np.ones(N)), n_samples=N, baseline=1.0,
                           fitted_constants=fitted, unit_free=unit_free) == (1 if law else 2)
