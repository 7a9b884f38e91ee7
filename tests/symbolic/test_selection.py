"""model_selection="cost" under noise: a row with at most one fitted constant (its scale) that no
longer row beats by more than the Schwarz price of its tokens is the law (fronts built by hand, no
search)."""

import numpy as np
import pandas as pd
import pytest

from parsimony.metrics import pinball_loss
from parsimony.symbolic import regressor, select_equation
from parsimony.symbolic._expressions import CONST, MUL, VAR
from parsimony.symbolic._front import calibration_tolerance
from parsimony.symbolic._search import snap_values
from parsimony.symbolic._units import unit_free_complexity
from parsimony.symbolic.regressor import ROWS_PER_TOKEN, fitted_constants

N = 1000


def _data(truth, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(1, 5, N), rng.uniform(1, 2, N)])
    f = truth(X)
    e = rng.normal(0.0, noise * np.sqrt(np.mean(f ** 2)), N)
    return X, f + e - np.median(e)  # noise of median 0: the law covers half the targets


def _law(X):  # rho_0 / sqrt(1 - v^2 / c^2) with c = 3: no fitted constant
    return X[:, 0] / np.sqrt(1 - X[:, 1] ** 2 / 9)


def _wave(X):  # a longer law, no fitted constant either
    return _law(X) + np.sin(6 * np.pi * X[:, 1]) / 10  # three periods: the law stays calibrated


def _front(X, y, rows):
    """A front of ``(complexity, prediction, fitted constants)`` rows, as select_equation reads it."""
    loss = [pinball_loss(y, p, 0.5) for _, p, _ in rows]
    frame = pd.DataFrame({"complexity": [c for c, _, _ in rows], "loss": loss, "score": 0.0,
                          "coverage": [np.mean(y <= p) for _, p, _ in rows]})
    assert np.all(np.diff(frame.loss) < 0), "a front: each longer row fits better"
    return frame, [k for _, _, k in rows]


def _candidates(X, y):
    """The best constant, a fitted line, the law, the law plus a fitted wiggle
    (which can only fit the noise), the longer law: predictions with their complexity and
    fitted constants."""
    slope = np.median(y / X[:, 0])
    offset = np.median(y - slope * X[:, 0])  # calibrated, as the search's rows are
    wiggle = np.sin(37 * X[:, 1])
    amplitude = np.dot(y - _law(X), wiggle) / np.dot(wiggle, wiggle)
    return [(1, np.full(N, np.median(y)), 1), (5, slope * X[:, 0] + offset, 2), (17, _law(X), 0),
            (23, _law(X) + amplitude * wiggle, 1), (25, _wave(X), 0)]


def _select(frame, fitted=None, n=N, quantile=0.5):
    return select_equation(frame, "cost", quantile, calibration_tolerance(quantile, np.ones(N)), n_samples=n,
                           baseline=pinball_loss(frame.attrs["y"], np.full(N, np.quantile(frame.attrs["y"], quantile)),
                                                 quantile), fitted_constants=fitted)


def _frame(truth, keep):
    X, y = _data(truth)
    rows = [r for i, r in enumerate(_candidates(X, y)) if i in keep]
    frame, fitted = _front(X, y, rows)
    frame.attrs["y"] = y
    return frame, fitted


def test_the_constant_free_row_within_the_noise_is_chosen(monkeypatch):
    frame, fitted = _frame(_law, keep={0, 1, 2, 3})
    # the law lowers the line's loss by far more than RELATIVE_TOKEN_PRICE of it a token: the cost takes it
    assert frame.complexity[_select(frame)] == 17
    monkeypatch.setattr(regressor, "RELATIVE_TOKEN_PRICE", np.inf)  # the constant's scale throughout
    cost_choice = _select(frame)
    assert frame.complexity[cost_choice] == 5  # the cost alone keeps the line: the law buys < 1.6% a token
    # the fitted wiggle lowers the loss by less than its tokens' Schwarz price: the law is chosen
    assert frame.complexity[_select(frame, fitted)] == 17
    # too few rows per unit of the law's complexity: an interpolation, not a law
    assert frame.complexity[_select(frame, fitted, n=ROWS_PER_TOKEN * 17 - 1)] == 5


def test_a_real_improvement_is_not_given_up_for_a_constant_free_row():
    # the data follow the longer law: it beats the shorter one by far more than its tokens' price
    frame, fitted = _frame(_wave, keep={0, 1, 2, 4})
    assert frame.complexity[_select(frame, fitted)] == 25
    # and when the better longer row fits one constant (a law up to its scale), it is chosen too
    assert frame.complexity[_select(frame, [1, 2, 0, 1])] == 25
    # with two fitted constants it is a fit: the cost's choice stands, the shorter law is not chosen either
    assert _select(frame, [1, 2, 0, 2]) == _select(frame)


def test_rows_fitting_two_constants_keep_the_cost_choice():
    frame, _ = _frame(_law, keep={0, 1, 2, 3})
    assert _select(frame, [1, 2, 2, 2]) == _select(frame)
    assert _select(frame, None) == _select(frame)


def test_a_law_up_to_its_scale_within_the_noise_is_chosen(monkeypatch):
    # the law's one fitted constant is its scale (m v^2 / 2, q / (4 pi eps)): fitted, it is still the law
    monkeypatch.setattr(regressor, "RELATIVE_TOKEN_PRICE", np.inf)  # the cost alone keeps the line
    frame, _ = _frame(_law, keep={0, 1, 2, 3})
    assert frame.complexity[_select(frame)] == 5
    assert frame.complexity[_select(frame, [1, 2, 1, 1])] == 17
    assert frame.complexity[_select(frame, [1, 2, 1, 1], n=ROWS_PER_TOKEN * 17 - 1)] == 5


def test_an_uncalibrated_law_is_not_chosen():
    frame, fitted = _frame(_law, keep={0, 1, 2, 3})
    # at tau .9 the median law covers half the targets: not calibrated, the cost choice stands
    assert _select(frame, fitted, quantile=0.9) == _select(frame, None, quantile=0.9)


@pytest.mark.parametrize("rows, simple, fitted", [
    (1000, [0.0, 31.0, -31.0, 7.5, -0.5, 90.0, -300.0], [32.0, -4441.0, 15.5, 0.25, 450.0, np.inf, np.nan]),
    (100, [10.0, -10.0, 2.5, 0.5, 9e6], [11.0, 3.5, 1e30]),
])
def test_an_integer_is_simple_only_when_writing_it_costs_less_than_fitting_it(rows, simple, fitted):
    # p/q takes log(|p| q) nats to write (p's digits: 90 is 9 in other units), a fitted constant
    # log(rows)/2 in the Schwarz criterion: at 1,000 rows |p| q <= 31.6
    ops = np.array([CONST])
    assert [fitted_constants(ops, [v], rows) for v in simple] == [0] * len(simple)
    assert [fitted_constants(ops, [v], rows) for v in fitted] == [1] * len(fitted)
    assert snap_values(-4441.3, 1000) == [] and snap_values(-4441.3, 2e7) == [-4441.0]
    assert snap_values(2.49, rows)[:2] == [2.0, 2.5]  # the integer first, then the half


def test_fitted_constants_are_counted_and_checked():
    ops = np.array([CONST, VAR, MUL, CONST, MUL, CONST, MUL, CONST, MUL])
    assert fitted_constants(ops, [2.0, 0, 0, 0.5, 0, -3.0, 0, 1e30, 0], N) == 1  # 1e30 (a half is snapped, not fitted)
    assert fitted_constants(ops, [2.0, 0, 0, 0.25, 0, -3.5, 0, 1.0, 0], N) == 1  # 0.25
    assert fitted_constants(np.array([VAR]), [0.0], N) == 0
    frame, fitted = _frame(_law, keep={0, 1, 2, 3})
    with pytest.raises(ValueError, match="fitted_constants must give one count per row"):
        _select(frame, fitted[:-1])


def test_the_estimator_selects_with_its_rows_fitted_constants_and_unit_free_complexity(monkeypatch):
    from parsimony.symbolic import SymbolicQuantileRegressor

    seen = []

    def recording(equations, *args, **kwargs):
        seen.append((kwargs.get("fitted_constants"), kwargs.get("unit_free")))
        return select_equation(equations, *args, **kwargs)

    monkeypatch.setattr(regressor, "select_equation", recording)
    X, y = _data(_law)
    model = SymbolicQuantileRegressor(niterations=3, populations=2, population_size=20, random_state=0,
                                      progress=False).fit(X[:300], y[:300])
    rows = model._fronts[0]
    assert seen == [([r["fitted"] for r in rows],  # (counted in the search's units: test_units)
                     [unit_free_complexity(r["ops"], r["feats"], r["vals"], model.complexity_weights_) for r in rows])]


def test_a_law_with_a_half_is_not_fitted():
    """``1.5*x0*x1`` (a half: the value snapping makes a constant) fits nothing to the targets: its
    coverage may miss the level by three standard errors (here 0.533, beyond two), and it is
    chosen over its refit twin ``a*x0*x1 + b``. Counting the half as fitted chose the twin."""
    from parsimony.symbolic._expressions import from_tokens

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (N, 2))
    f = 1.5 * X[:, 0] * X[:, 1]
    e = rng.normal(0.0, 0.1 * np.sqrt(np.mean(f ** 2)), N)
    y = f + e - np.quantile(e, 0.533)  # the law covers 53.3% of the targets
    slopes = np.linspace(1.45, 1.55, 201)
    fits = [(pinball_loss(y, a * f / 1.5 + np.median(y - a * f / 1.5), 0.5), a) for a in slopes]
    a = min(fits)[1]
    b = float(np.median(y - a * f / 1.5))
    tokens = [[float(np.median(y))], ["x0", "x1", "mul"], ["x0", "x1", "mul", 1.5, "mul"],
              ["x0", "x1", "mul", a, "mul", b, "add"]]
    preds = [np.full(N, np.median(y)), f / 1.5, f, a * f / 1.5 + b]
    rows = []
    for c, p, tok in zip([1, 3, 5, 7], preds, tokens):
        ops, _, vals = from_tokens(tok)
        rows.append((c, p, fitted_constants(ops, vals, N)))
    frame, fitted = _front(X, y, rows)
    frame.attrs["y"] = y
    assert fitted == [1, 0, 0, 2] and abs(frame.coverage[2] - 0.533) < 1e-9
    assert frame.coverage[2] - 0.5 > calibration_tolerance(0.5, np.ones(N))  # not calibrated by two errors
    assert _select(frame, fitted) == 2
    assert _select(frame, [1, 0, 1, 2]) == 3  # the half counted as fitted: the twin
