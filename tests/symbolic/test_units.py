"""The search's units (parsimony.symbolic._units): formulas written back exactly, the same model at any scale."""

import dataclasses

import numpy as np
import pytest

from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._expressions import CONST, DIV, MUL, NEG, complexity_weights, from_tokens
from parsimony.symbolic import regressor, seeds
from parsimony.symbolic._evaluator import make_data, make_workspace, tree_loss
from parsimony.symbolic._front import EngineFit
from parsimony.symbolic._units import (
    FEATURE_OFFSET, Units, power_of_ten, target_scale, to_user_units, unit_free_complexity,
)

from .test_intervals import random_cases, values

WEIGHTS = complexity_weights(None)


def test_power_of_ten_rounds_the_magnitude():
    assert power_of_ten(3.0) == 1.0 and power_of_ten(4.0) == 10.0 and power_of_ten(2e-7) == 1e-7
    assert power_of_ten(0.0) == 1.0 and power_of_ten(np.inf) == 1.0
    assert power_of_ten(4.4, FEATURE_OFFSET) == 1.0 and power_of_ten(0.45, FEATURE_OFFSET) == 1.0
    assert target_scale(0.5) == 0.1 and target_scale(2.0) == 1.0 and target_scale(9999.0) == 1.0
    assert target_scale(2e4) == 1e4 and target_scale(3e-7) == 1e-7


def test_units_scale_with_the_data_and_leave_unit_data_alone():
    rng = np.random.default_rng(0)
    X, y, w = rng.uniform(1, 5, (200, 3)), rng.uniform(0, 8, 200), np.ones(200)
    base = Units.of(X, y, w)
    assert base.is_identity and Units.of(X / 5, y, w).is_identity  # [1, 5], [0, 1]: searched as given
    mixed = Units.of(X * [1.0, 100.0, 1.0], y, w)  # one scale for all features: x1 - x0 stays a difference
    assert np.all(mixed.x_scale == 1.0)
    for k in (-12, -3, 5, 150):  # (y * 10^k for k in 1..3 is searched as given)
        units = Units.of(X * 10.0**k, y * 10.0**k, w)
        assert np.allclose(units.x_scale, 10.0**k, rtol=1e-12) and units.y_scale == pytest.approx(10.0**k, rel=1e-12)
        # the same search data as k = 0's, but for a value within 2 ulps of a rounding boundary
        assert np.mean(units.features(X * 10.0**k) == base.features(X)) > 0.99
        assert np.mean(units.target(y * 10.0**k) == base.target(y)) > 0.99
        assert np.allclose(units.features(X * 10.0**k), X, rtol=1e-10)


def test_formulas_are_written_back_exactly_in_the_users_units():
    rng = np.random.default_rng(1)
    checked = 0
    for i, (d, ops, feats, vals) in enumerate(random_cases(rng, 300, 3, 13)):
        scale = 10.0 ** rng.integers(-8, 9, d).astype(float)
        units = Units(scale, 10.0 ** float(rng.integers(-8, 9)), -scale * rng.uniform(0, 3, d) if i % 2 else None)
        X = rng.uniform(0.5, 2.0, (64, d))  # the search's features
        inner = values(ops, feats, vals, X)
        ok = np.isfinite(inner) & (np.abs(inner) < 1e100)
        # rows where the expression is well conditioned (not sin(8.7e27 * x): its rounding is its value)
        ok &= np.isclose(values(ops, feats, vals, X * (1 + 1e-13)), inner, rtol=1e-8, atol=0)
        if ok.sum() < 10:
            continue
        new = to_user_units(ops, feats, vals, units, WEIGHTS)
        outer = values(*new, X * units.x_scale + (0.0 if units.x_shift is None else units.x_shift))
        close = np.allclose(outer[ok] / units.y_scale, inner[ok], rtol=1e-9, atol=1e-12 * np.abs(inner[ok]).max())
        assert close, (ops, feats, vals, units)
        checked += 1
    assert checked > 150


@pytest.mark.parametrize("tokens, extra", [
    (["x0", 2.0, "mul", 1.0, "add"], 0),                       # 2 x0 + 1: the constants take the factors
    (["x0", "x1", "mul", 1.0, "x2", "add", "div"], 2),         # x0 x1 / (1 + x2): one factor left over
    ([2.0, "x0", "mul", 0.5, "add", "sin", 3.0, "mul"], 0),    # 3 sin(2 x0 + 0.5)
    (["x0", 0.3, "sub", "square", 4.0, "mul"], 0),             # 4 (x0 - 0.3)^2
])
def test_constants_take_the_factors_where_they_can(tokens, extra):
    ops, feats, vals = from_tokens(tokens)
    units = Units(np.array([1e3, 1e-2, 10.0]), 1e-4)
    new_ops, _, new_vals = to_user_units(ops, feats, vals, units, WEIGHTS)
    assert WEIGHTS[new_ops].sum() == WEIGHTS[ops].sum() + extra
    assert np.sum(new_ops == CONST) == np.sum(ops == CONST) + extra // 2


def test_identity_units_leave_the_formula_as_it_is():
    ops, feats, vals = from_tokens(["x0", 2.0, "mul", "sin"])
    out = to_user_units(ops, feats, vals, Units.identity(1), WEIGHTS)
    assert all(a is b for a, b in zip(out, (ops, feats, vals)))


def _products(ops, feats, vals):
    """Per maximal chain of products, quotients and negations: its number of constants, and
    whether their product (or quotient) is a finite nonzero double."""
    from parsimony.symbolic._units import _nest

    def constants(node):
        if node[0] == CONST:
            return [node[2]]
        return [c for a in node[3] for c in constants(a)] if node[0] in (MUL, DIV, NEG) else []

    def chains(node, inside=False):
        chain = node[0] in (MUL, DIV, NEG)
        found = [constants(node)] if chain and not inside else []
        return found + [c for a in node[3] for c in chains(a, chain)]

    out = []
    for c in chains(_nest(ops, feats, vals)):
        logs = np.log10(np.abs(c)) if c and np.all(np.asarray(c) != 0) else None
        out.append((len(c), logs is not None and bool(np.all(np.isfinite(logs))) and abs(logs).sum() < 300))
    return out


@pytest.mark.parametrize("tokens, names, written", [
    # Siri's law as a rescaled search writes it: one coefficient, 4 tokens fewer
    ([-450.17, 10.0, "x0", -5066.0, "mul", "div", -2.5086e5, "mul", "add"], ["x0"], "-450.17 + 495.18 / x0"),
    ([-1.8782, "x0", "mul", "square"], ["x0"], "3.5276 * x0^2"),       # a constant out of an even power
    ([2.0, 3.0, "x0", "mul", "sqrt", "mul"], ["x0"], "3.4641 * sqrt(x0)"),
    (["x0", "neg", "x1", "mul", 3.0, "mul"], ["x0", "x1"], "-3 * x0 * x1"),
    (["x0", 2.0, "div"], ["x0"], "0.5 * x0"),                          # (a quotient costs a token more)
    (["x0", 5.9008, "mul"], ["x0"], "x0 * 5.9008"),                     # already one coefficient: as it is
    (["x0", 2.0, "mul", "x1", 3.0, "mul", "add"], ["x0", "x1"], "x0 * 2 + x1 * 3"),  # one per product
])
def test_one_coefficient_per_product(tokens, names, written):
    from parsimony.symbolic._expressions import to_string

    ops, feats, vals = from_tokens(tokens)
    new = to_user_units(ops, feats, vals, Units.identity(len(names)), WEIGHTS)
    assert to_string(*new, len(new[0]), names) == written
    assert WEIGHTS[new[0]].sum() <= WEIGHTS[ops].sum()
    X = np.random.default_rng(0).uniform(0.5, 3.0, (50, len(names)))
    np.testing.assert_allclose(values(*new, X), values(ops, feats, vals, X), rtol=1e-12)
    # in the user's units too: the constants the rescaling leaves in one product are folded
    units = Units(np.full(len(names), 10.0), 100.0)
    new = to_user_units(ops, feats, vals, units, WEIGHTS)
    assert all(n <= 1 for n, ok in _products(*new) if ok)
    np.testing.assert_allclose(values(*new, X * 10.0) / 100.0, values(ops, feats, vals, X), rtol=1e-12)


def test_formulas_are_written_with_one_coefficient_per_product_and_no_more_tokens():
    """Random formulas: written (identity units and rescaled) with at most one constant in each
    product, no more tokens, the same values wherever the formula is well conditioned."""
    rng = np.random.default_rng(2)
    rewritten = 0
    for d, ops, feats, vals in random_cases(rng, 400, 3, 15):
        X = rng.uniform(0.5, 2.0, (64, d))
        inner = values(ops, feats, vals, X)
        ok = np.isfinite(inner) & (np.abs(inner) < 1e100)
        ok &= np.isclose(values(ops, feats, vals, X * (1 + 1e-13)), inner, rtol=1e-8, atol=0)
        new = to_user_units(ops, feats, vals, Units.identity(d), WEIGHTS)
        rewritten += new[0] is not ops
        assert WEIGHTS[new[0]].sum() <= WEIGHTS[ops].sum()
        assert all(n <= 1 for n, finite in _products(*new) if finite), (ops, vals, new)
        if ok.sum():
            out = values(*new, X)
            assert np.allclose(out[ok], inner[ok], rtol=1e-9, atol=1e-12 * np.abs(inner[ok]).max()), (ops, vals)
        again = to_user_units(*new, Units.identity(d), WEIGHTS)
        assert again[0] is new[0]  # written once for all
    assert rewritten > 40


def law_data(seed=0, rows=200):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1, 5, (rows, 3))
    f = X[:, 0] * X[:, 1] / (1 + X[:, 2])
    return X, f + rng.normal(0, 0.02 * np.sqrt(np.mean(f * f)), rows)


@pytest.mark.parametrize("which", ["y", "X", "both"])
def test_the_same_model_at_any_scale(which):
    """Data times 10^k is the same search (up to the rounding of a division), so the model is the
    k = 0 model in the new units: its predictions are k = 0's scaled. Asserted as a
    rate over scales, with a margin for a search that a rounding difference sends elsewhere."""
    X, y = law_data()
    kwargs = dict(niterations=4, populations=3, random_state=0, progress=False)
    base = SymbolicQuantileRegressor(**kwargs).fit(X, y)
    ks = (-12, -7, 6, 11, 150) if which == "both" else (-12, -7, -3, 4, 9, 12)  # (1..3: y as given)
    same = 0
    for k in ks:
        s = 10.0**k
        Xk, yk = (X * s if which != "y" else X), (y * s if which != "X" else y)
        with np.errstate(over="raise"):  # 1e150 squared overflows: the search must not
            model = SymbolicQuantileRegressor(**kwargs).fit(Xk, yk)
        pred = model.predict(Xk) / (s if which != "X" else 1.0)
        same += bool(np.allclose(pred, base.predict(X), rtol=1e-6))
    assert same >= len(ks) - 1


def test_the_same_model_at_any_scale_when_evolution_finds_the_twin(monkeypatch):
    """A narrower rational beam (16) sends evolution to the law's refit twin ``0.998*x0*x1/(1 + x2)``
    on some seeds (on 2 of these 6 on 993a883 on this machine, which every other scale
    then chose: 12 of 18 fits the same model). Wherever it is found, the model is k = 0's at every
    scale: asserted over seeds, with a margin for a search that a rounding difference sends elsewhere."""
    rational = next(s for s in seeds.SEEDERS if s.name == "rational")
    monkeypatch.setattr(rational, "settings", dataclasses.replace(rational.settings, beam=16))
    X, y = law_data()
    same = 0
    for seed in range(6):
        kwargs = dict(niterations=4, populations=3, random_state=seed, progress=False)
        base = SymbolicQuantileRegressor(**kwargs).fit(X, y).predict(X)
        for k in (-7, 4, 12):
            same += bool(np.allclose(SymbolicQuantileRegressor(**kwargs).fit(X, y * 10.0**k).predict(X) / 10.0**k,
                                     base, rtol=1e-6))
    assert same >= 17


#: The law of :func:`law_data` as the search writes it, and its refit twin (its scale fitted to
#: the noise): 2 tokens apart in the search's units, as many tokens in any other units.
LAW = ["x0", "x1", "mul", 1.0, "x2", "add", "div"]
TWIN = ["x0", "x1", "mul", 0.99848, "mul", 1.0, "x2", "add", "div"]


def _searched(front_tokens, X, y):
    """A stand-in for the engine: ``front_tokens`` as the search's front, whatever the data (the
    search's data are the same in every units: :class:`Units`)."""
    def engine(Xs, ys, w, plan, previous=None):
        data = make_data(np.ascontiguousarray(Xs.T), ys, w, plan.losses[0])
        front = []
        for tokens in front_tokens:
            ops, feats, vals = from_tokens(tokens)
            loss = tree_loss(ops, feats, vals, len(ops), data, make_workspace(len(ops), len(ys)))
            front.append({"complexity": int(WEIGHTS[ops].sum()), "loss": loss, "ops": ops, "feats": feats,
                          "vals": vals})
        return EngineFit([front], ["completed"], 0, [None])
    return engine


@pytest.mark.parametrize("which", ["y", "X", "both"])
def test_a_twin_that_ties_the_law_in_other_units_does_not_take_its_place(which, monkeypatch):
    """The search's front holds the law and its refit twin, which fits the noise better; the
    user's units write both with as many tokens wherever they are not the search's. The law is
    the model at every scale, as in the search's units (by loss alone the twin took its place
    on the user's front in every other units, and was the model)."""
    X, y = law_data()
    base_units = Units.of(X, y, np.ones(len(y)))
    assert base_units.is_identity
    front = [[float(np.median(y))], ["x0", "x1", "mul"], LAW, TWIN]
    monkeypatch.setattr(regressor, "search_fronts", _searched(front, X, y))
    kwargs = dict(random_state=0, progress=False)
    base = SymbolicQuantileRegressor(**kwargs).fit(X, y)
    law, twin = (np.array(from_tokens(t)[0]) for t in (LAW, TWIN))
    assert list(base.equations_["complexity"].iloc[-2:]) == [WEIGHTS[law].sum(), WEIGHTS[twin].sum()]
    assert base.equations_["loss"].iloc[-1] < base.equations_["loss"].iloc[-2]  # the twin fits better
    assert base.equations_["equation"].iloc[base.best_index_] == "x0 * x1 / (1 + x2)"
    for k in (-12, -7, -3, 4, 9) if which != "both" else (-12, 6, 150):
        s = 10.0**k
        Xk, yk = (X * s if which != "y" else X), (y * s if which != "X" else y)
        model = SymbolicQuantileRegressor(**kwargs).fit(Xk, yk)
        pred = model.predict(Xk) / (s if which != "X" else 1.0)
        np.testing.assert_allclose(pred, X[:, 0] * X[:, 1] / (X[:, 2] + 1), rtol=1e-9, err_msg=f"k = {k}")
        # one row of the user's front for the two, the law's (X and y times one factor: the law
        # is x0*x1/(x2 + 1e6), as many tokens as in the search's units, and the twin keeps its row)
        assert len(model.equations_) == len(base.equations_) - (which != "both")


def test_selection_counts_fitted_constants_in_the_search_units(monkeypatch):
    """The law written ``1e-7*x0*x1/(1 + x2)`` for targets times 1e-7 has the search's count of
    fitted constants, 0 (as for the targets as given), not the user's 1: the 1e-7 is the units'."""
    X, y = law_data()
    front = [[float(np.median(y))], ["x0", "x1", "mul"], LAW, TWIN]
    monkeypatch.setattr(regressor, "search_fronts", _searched(front, X, y))
    seen, select = [], regressor.select_equation

    def recording(equations, *args, **kwargs):
        seen.append(list(kwargs["fitted_constants"]))
        return select(equations, *args, **kwargs)

    monkeypatch.setattr(regressor, "select_equation", recording)
    base = SymbolicQuantileRegressor(random_state=0, progress=False).fit(X, y)
    model = SymbolicQuantileRegressor(random_state=0, progress=False).fit(X, y * 1e-7)
    law = int(np.flatnonzero(model.equations_["equation"].str.contains("/"))[0])
    written = model._fronts[0][law]
    assert regressor.fitted_constants(written["ops"], written["vals"], len(y)) == 1  # the user's 1e-7
    assert seen[1][law] == 0  # the search's count
    assert model.best_index_ == base.best_index_


@pytest.mark.parametrize("tokens, extra", [
    (["x0", 2.0, "mul", "x1", 3.0, "mul", "add", 1.0, "add"], 0),    # 2 x0 + 3 x1 + 1: shifts into the 1
    (["x0", "x1", "add", 0.5, "mul", 1.0, "add"], 0),                # (x0 + x1)/2 + 1
    (["x0", "x1", "add", 0.5, "mul"], 2),                            # no constant term: one is written
    ([2.0, "x2", "mul", 1.0, "add", "sin", 3.0, "mul", 1.0, "add"], 0),  # 3 sin(2 x2 + 1) + 1: into the phase
    (["x0", "x1", "mul", 2.0, "mul", 1.0, "add"], 4),                # 2 x0 x1 + 1: a product keeps its shifts
])
def test_shifts_that_enter_linearly_fold_into_the_constants(tokens, extra):
    """A feature the search sees shifted (``x - m``) costs the user's formula tokens only where the
    shift cannot join a constant term (the search's formula predicts the same)."""
    ops, feats, vals = from_tokens(tokens)
    units = Units(np.ones(3), 1.0, np.array([-1.8, -1.7, -2.4]))
    new = to_user_units(ops, feats, vals, units, WEIGHTS)
    assert WEIGHTS[new[0]].sum() == WEIGHTS[ops].sum() + extra
    X = np.random.default_rng(0).uniform(0.0, 3.0, (50, 3))  # the search's features
    np.testing.assert_allclose(values(*new, X + units.x_shift), values(ops, feats, vals, X), rtol=1e-12, atol=1e-12)


def test_a_sum_takes_one_factor_not_one_per_term():
    # x0 + x1 + x2 searched in units ten times the user's: (x0 + x1 + x2) * 0.1, not 0.1 on each term
    ops, feats, vals = from_tokens(["x0", "x1", "add", "x2", "add"])
    units = Units(np.full(3, 10.0), 1.0)
    new = to_user_units(ops, feats, vals, units, WEIGHTS)
    assert WEIGHTS[new[0]].sum() == WEIGHTS[ops].sum() + 2
    X = np.random.default_rng(0).uniform(0.0, 3.0, (20, 3))
    np.testing.assert_allclose(values(*new, X * 10.0), values(ops, feats, vals, X), rtol=1e-12)


def test_a_signed_feature_is_searched_both_unshifted_and_shifted():
    rng = np.random.default_rng(0)
    X, w = np.column_stack([rng.uniform(-1, 1, 300), rng.uniform(0, 1, 300)]), np.ones(300)
    y = 2 * np.sin(X[:, 0]) * np.cos(X[:, 1])
    plain, shifted = regressor.search_units(X, y, w, True, "native")
    assert plain.x_shift is None and np.array_equal(plain.x_scale, Units.of(X, y, w, shift=False).x_scale)
    assert shifted.x_shift[0] < 0 and shifted.x_shift[1] == 0.0  # only the signed feature moves
    assert np.all(shifted.features(X)[:, 0] >= 0)
    # one search where there is nothing to choose: no signed feature, no shift asked, PySR, no units
    for args in ((np.abs(X), y, w, True, "native"), (X, y, w, "scale", "native"), (X, y, w, True, "julia")):
        (units,) = regressor.search_units(*args)
        assert units.x_shift is None
    (units,) = regressor.search_units(X * 1e6, y, w, False, "native")
    assert units.is_identity


def test_each_level_keeps_the_front_whose_pick_fits_best():
    a = EngineFit([["a0"], ["a1"]], ["completed", "completed"], 10, ["sa"], [5, 6])
    b = EngineFit([["b0"], ["b1"]], ["time_limit", "completed"], 7, ["sb"], None)
    fit = regressor.chosen_fit([a, b], [[0.3, 0.2], [0.1, 0.2]])  # level 0: b's pick fits better; 1: a tie
    assert fit.fronts == [["b0"], ["a1"]] and fit.certified_sizes == [0, 6]
    assert fit.statuses == ["time_limit", "completed"] and fit.n_evaluations == 17 and fit.states == [["sa"], ["sb"]]
    assert regressor.chosen_fit([b, b], [[0.1], [0.1]]).certified_sizes is None


def _criterion(model, k):
    """The Schwarz criterion of ``model``'s pick at level ``k`` (unit-free complexity, 200 rows)."""
    i = model.best_index_[k]
    row = model._fronts[k][i]
    c = unit_free_complexity(row["ops"], row["feats"], row["vals"], model.complexity_weights_)
    return np.log(model.equations_[k]["loss"].iloc[i]) + c * np.log(200) / 400


def test_signed_features_keep_the_units_whose_pick_is_best(monkeypatch):
    """``rescale=True`` on a signed feature searches it unshifted and shifted, from the same seeds,
    and keeps per level the front whose selected row is better by the Schwarz criterion: the
    fit's front is one of the two single-units searches' (each run here on its own), that one."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (200, 2))
    y = 2 * np.sin(X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 1] + rng.normal(0, 0.05, 200)
    kwargs = dict(niterations=2, populations=2, population_size=16, ncycles_per_iteration=20, random_state=0,
                  progress=False, quantile=[0.3, 0.8])
    both = SymbolicQuantileRegressor(**kwargs).fit(X, y)
    unshifted = SymbolicQuantileRegressor(rescale="scale", **kwargs).fit(X, y)
    choices = regressor.search_units(X, y, np.ones(len(y)), True, "native")
    monkeypatch.setattr(regressor, "search_units", lambda *args: choices[1:])
    shifted = SymbolicQuantileRegressor(**kwargs).fit(X, y)
    assert both.n_evaluations_ == unshifted.n_evaluations_ + shifted.n_evaluations_
    for k in range(2):
        kept = (unshifted, shifted)[int(_criterion(shifted, k) < _criterion(unshifted, k))]
        assert both.equations_[k]["equation"].tolist() == kept.equations_[k]["equation"].tolist()
        assert both.best_index_[k] == kept.best_index_[k]
        np.testing.assert_array_equal(both.predict(X)[:, k], kept.predict(X)[:, k])
