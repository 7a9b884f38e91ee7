"""model_selection="cost" at the accurate end of a front, and the law within the noise as a rule on
the rows (fronts built by hand, no search).

Where every row explains nearly all of the best constant's loss, the cost counts the loss on a log
scale, so a token never has to buy more than ``RELATIVE_TOKEN_PRICE`` of a row's own loss; and a row
fitting at most ``LAW_CONSTANTS`` constants replaces the cost's choice when its Schwarz criterion is
within ``LAW_EVIDENCE / n`` of the lowest row at least as complex as the choice, even when that
lowest row fits more constants."""

import numpy as np
import pandas as pd
import pytest

from parsimony.symbolic import regressor, select_equation
from parsimony.symbolic.regressor import LAW_EVIDENCE, RELATIVE_TOKEN_PRICE, SELECTION_PARSIMONY, _loss_scale

N = 1000
SIC_TOKEN = np.log(N) / (2 * N)  # the Schwarz price of one unit of complexity, in log loss


def _select(loss, complexity, fitted=None, coverage=None, n=N, baseline=1.0):
    frame = pd.DataFrame({"complexity": complexity, "loss": loss, "score": 0.0,
                          "coverage": coverage if coverage is not None else [0.5] * len(loss)})
    return select_equation(frame, "cost", 0.5, 0.04, n_samples=n, baseline=baseline, fitted_constants=fitted)


def test_a_large_relative_gain_at_the_accurate_end_is_worth_a_token():
    # 252 rows: a line and a one-token-longer hyperbola, both ~97% below the constant; the
    # hyperbola's loss is 35% lower (1.36% of the constant's, less than a token on the constant's scale)
    loss, complexity = [1.0, 0.0387, 0.0251], [1, 5, 6]
    assert _select(loss, complexity, n=252) == 2
    # the same rows with the gain below a token's relative price keep the shorter row
    assert _select([1.0, 0.0387, 0.0387 * (1 - 0.8 * RELATIVE_TOKEN_PRICE)], complexity, n=252) == 1


def test_away_from_the_accurate_end_the_cost_is_linear_in_the_loss():
    # above token_price / RELATIVE_TOKEN_PRICE of the constant's loss a token must buy 1.6% of the
    # constant's loss, however large that is relative to the row's own loss
    r0 = SELECTION_PARSIMONY / RELATIVE_TOKEN_PRICE
    gain = 0.9 * SELECTION_PARSIMONY  # 90% of a token's price
    assert _select([1.0, r0 + gain, r0], [1, 5, 6]) == 1
    assert _select([1.0, r0 + 1.1 * SELECTION_PARSIMONY, r0], [1, 5, 6]) == 2
    relative = np.array([2.0, 1.0, r0, 0.5 * r0, 1e-3, 0.0])
    scaled = _loss_scale(relative, SELECTION_PARSIMONY)
    assert np.all(scaled[:3] == relative[:3]) and np.all(np.diff(scaled) < 0) and np.isfinite(scaled[-1])
    # continuous with a continuous slope at r0
    eps = 1e-7
    below, at = _loss_scale(np.array([r0 - eps, r0]), SELECTION_PARSIMONY)
    assert abs((at - below) / eps - 1.0) < 1e-4


def test_the_relative_price_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(regressor, "RELATIVE_TOKEN_PRICE", np.inf)  # the constant's scale throughout
    assert _select([1.0, 0.0387, 0.0251], [1, 5, 6], n=252) == 1


def _near_law_front(behind):
    """The constant, a 2-constant fit the cost takes, a 1-constant near-law and a longer 2-constant
    row of lowest Schwarz criterion, the near-law ``behind`` (in units of 1/n) above it."""
    complexity = [1, 5, 22, 18]
    fit = 0.2 * np.exp(-SIC_TOKEN * 3)  # the c 18 row beats the c 5 row by 3 tokens' Schwarz price
    law = fit * np.exp(-(complexity[2] - complexity[3]) * SIC_TOKEN + behind / N)
    order = np.argsort(complexity)
    loss = np.array([1.0, 0.2 * np.exp(SIC_TOKEN * 13), law, fit])
    return list(loss[order]), list(np.array(complexity)[order]), list(np.array([1, 2, 1, 2])[order])


def test_a_near_law_a_hair_behind_a_longer_fit_is_chosen():
    loss, complexity, fitted = _near_law_front(0.5 * LAW_EVIDENCE)
    assert complexity == [1, 5, 18, 22] and _select(loss, complexity) == 1  # the cost alone: the short fit
    assert complexity[_select(loss, complexity, fitted)] == 22


@pytest.mark.parametrize("behind", [2.0, 8.0])
def test_a_near_law_the_data_reject_is_not_chosen(behind):
    loss, complexity, fitted = _near_law_front(behind * LAW_EVIDENCE)
    assert _select(loss, complexity, fitted) == _select(loss, complexity)


def test_an_uncalibrated_near_law_is_not_chosen():
    loss, complexity, fitted = _near_law_front(0.5 * LAW_EVIDENCE)
    assert _select(loss, complexity, fitted, coverage=[0.5, 0.5, 0.5, 0.6]) == 1
