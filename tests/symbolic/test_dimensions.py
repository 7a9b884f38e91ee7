"""The dimensional prior: units read from strings and mappings, the consistency checker against hand
cases, against the numbers (the expression rescales as its dimensions say under a change of base
units, its fitted constants rescaled by the dimensions the checker gives them) and against a brute
force over the fitted constants' dimensions, and the estimator's parameters and selection."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._dimensions import constant_dimensions, is_consistent, parse_unit
from parsimony.symbolic.regressor import units_choice
from parsimony.symbolic._expressions import (
    ADD, ARITY, CONST, COS, DIV, EXP, LOG, MUL, SIN, SQRT, SQUARE, SUB, VAR, from_tokens,
)

KG, VELOCITY, LENGTH = {"kg": 1}, {"m": 1, "s": -1}, {"m": 1}
SIMPLE = (1.0, 2.0, 0.5, 3.0)  # what the search keeps exact: pure numbers


def fitted(value):
    return value not in SIMPLE and value != 0


@pytest.mark.parametrize("text, expected", [
    ("m^1 * s^(-1)", {"m": 1, "s": -1}), ("kg", {"kg": 1}), ("m/s^2", {"m": 1, "s": -2}),
    ("kg*m**2/s**2", {"kg": 1, "m": 2, "s": -2}), ("m**(1/2)", {"m": Fraction(1, 2)}), ("1/s", {"s": -1}),
    ("", {}), ("Dimensionless", {}), ("m * m^(-1)", {}), ({"m": 1, "s": -1.5}, {"m": 1, "s": Fraction(-3, 2)}),
])
def test_units_are_read_from_strings_and_mappings(text, expected):
    assert parse_unit(text) == expected


@pytest.mark.parametrize("bad", ["m^", "m s", "m^x", "m^(1", "*kg", "kg*", "m$"])
def test_unreadable_units_raise_naming_the_argument(bad):
    with pytest.raises(ValueError, match="^target_units"):
        parse_unit(bad, "target_units")


@pytest.mark.parametrize("tokens, features, target, expected", [
    # the relativistic law and its noisy approximations (m_0, v, c)
    (["x0", 1.0, "x1", "square", "x2", "square", "div", "sub", "sqrt", "div"], [KG, VELOCITY, VELOCITY], KG, True),
    (["x0", 1.0, "x1", "x2", "square", "div", "sub", "sqrt", "div"], [KG, VELOCITY, VELOCITY], KG, False),
    (["x0", 1.0, "x1", "x2", "square", "div", "sub", "div", 1.37, "mul"], [KG, VELOCITY, VELOCITY], KG, False),
    (["x0", 0.93, "x1", "x2", "square", "div", "sub", "div"], [KG, VELOCITY, VELOCITY], None, True),  # 0.93 is s/m
    (["x0", 0.93, "x1", "x2", "square", "div", "sub", "div"], [KG, VELOCITY, VELOCITY], KG, False),  # kg m/s
    (["x0", 1.04, "mul"], [KG, VELOCITY, VELOCITY], {"s": 1}, True),   # a fitted scale carries any unit
    (["x0", 2.0, "mul"], [KG, VELOCITY, VELOCITY], {"s": 1}, False),   # an integer does not
    ([0.0, "x0", "x1", "mul", "sub"], [KG, VELOCITY], {"kg": 1, "m": 1, "s": -1}, True),  # zero is any unit
    (["x1", "exp"], [KG, VELOCITY], None, False), (["x1", 1.3, "mul", "exp"], [KG, VELOCITY], None, True),
    (["x1", "x1", "square", "sub"], [KG, VELOCITY], None, False), (["x1", "x1", "square", 0.2, "mul", "sub"], [KG, VELOCITY], None, True),
    (["x0", "x1", "log", "mul"], [KG, {}], KG, True), (["x1", "x0", "sin", "mul"], [KG, VELOCITY], VELOCITY, False),
    (["x0", 0.5, "pow"], [LENGTH], {"m": Fraction(1, 2)}, True), (["x0", "x0", "pow"], [{}], {}, True),
    (["x0", "x0", "pow"], [LENGTH], None, False), (["x0", "cube", "x1", "sqrt", "div"], [LENGTH, {"m": 6}], {}, True),
])
def test_checker_on_hand_written_cases(tokens, features, target, expected):
    assert is_consistent(*from_tokens(tokens), features, target, fitted) is expected


UNARY, BINARY = (SQUARE, SQRT, EXP, LOG, SIN, COS), (ADD, SUB, MUL, DIV)


def random_expression(rng, n_features, depth=0):
    """Postfix (ops, feats, vals) of a random expression: features, simple and fitted constants."""
    leaf = depth >= 3 or rng.random() < 0.3
    if leaf:
        if rng.random() < 0.6:
            return [(VAR, int(rng.integers(n_features)), 0.0)]
        return [(CONST, 0, float(rng.choice(SIMPLE)) if rng.random() < 0.4 else float(rng.uniform(0.5, 2.0)))]
    if rng.random() < 0.3:
        return random_expression(rng, n_features, depth + 1) + [(int(rng.choice(UNARY)), 0, 0.0)]
    op = int(rng.choice(BINARY))
    return random_expression(rng, n_features, depth + 1) + random_expression(rng, n_features, depth + 1) + [(op, 0, 0.0)]


def evaluate(nodes, X):
    stack = []
    functions = {SQUARE: np.square, SQRT: np.sqrt, EXP: np.exp, LOG: np.log, SIN: np.sin, COS: np.cos}
    for op, feat, val in nodes:
        if op == CONST:
            stack.append(np.full(len(X), val))
        elif op == VAR:
            stack.append(X[:, feat])
        elif ARITY[op] == 1:
            stack.append(functions[op](stack.pop()))
        else:
            b, a = stack.pop(), stack.pop()
            stack.append({ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: np.divide}[op](a, b))
    return stack[-1]


def arrays(nodes):
    return (np.array([n[0] for n in nodes]), np.array([n[1] for n in nodes]), np.array([n[2] for n in nodes]))


def test_consistent_expressions_rescale_as_their_dimensions_say():
    """A change of base units (metres times a, seconds times b) rescales each feature by its
    dimension; a consistent expression, its fitted constants rescaled by the dimensions the checker
    gives them, is then the old value times the target's rescaling (without a target, one factor for
    every row). An expression the checker passed wrongly would not rescale so."""
    rng = np.random.default_rng(0)
    dims = [{"m": 1}, {"m": 1, "s": -1}, {"s": 1}, {}]
    X = rng.uniform(1.0, 2.0, size=(40, len(dims)))
    checked = 0
    for _ in range(600):
        nodes = random_expression(rng, len(dims))
        target = None if rng.random() < 0.5 else dims[int(rng.integers(len(dims)))]
        ops, feats, vals = arrays(nodes)
        with np.errstate(all="ignore"):
            y = evaluate(nodes, X)
        solution = constant_dimensions(ops, feats, vals, dims, target, fitted)
        if solution is None or not np.all(np.isfinite(y)) or np.min(np.abs(y)) < 1e-6:
            continue
        scale = {"m": 1.7, "s": 0.6}
        factor = lambda d: float(np.prod([scale[b] ** float(p) for b, p in d.items()]))  # noqa: E731
        Xs = X * np.array([factor(d) for d in dims])
        constants = iter(solution)
        moved = [(op, f, v * factor(next(constants)) if op == CONST and fitted(v) else v) for op, f, v in nodes]
        with np.errstate(all="ignore"):
            ratio = evaluate(moved, Xs) / y
        expected = factor(target) if target is not None else ratio[0]
        np.testing.assert_allclose(ratio, expected, rtol=1e-9)
        checked += 1
    assert checked > 100


def _brute_force(nodes, dims, target, lattice):
    """Whether some assignment of one-base dimensions in ``lattice`` to the fitted constants makes the
    expression consistent, evaluated directly (an implementation independent of the checker's)."""
    n_fitted = sum(op == CONST and fitted(v) for op, _, v in nodes)
    for assignment in np.array(np.meshgrid(*[lattice] * n_fitted)).reshape(n_fitted, -1).T if n_fitted else [()]:
        given, stack, ok = iter(assignment), [], True
        for op, feat, val in nodes:
            if op == CONST:
                stack.append(next(given) if fitted(val) else 0.0)
            elif op == VAR:
                stack.append(dims[feat])
            elif ARITY[op] == 1:
                a = stack.pop()
                if op in (EXP, LOG, SIN, COS):
                    ok &= abs(a) < 1e-12
                stack.append({SQUARE: 2 * a, SQRT: a / 2}.get(op, 0.0))
            else:
                b, a = stack.pop(), stack.pop()
                if op in (ADD, SUB):
                    ok &= abs(a - b) < 1e-12
                stack.append({ADD: a, SUB: a, MUL: a + b, DIV: a - b}[op])
        if ok and (target is None or abs(stack[-1] - target) < 1e-12):
            return True
    return False


def test_inconsistent_verdicts_have_no_solution_by_brute_force():
    """With one base unit and at most two fitted constants, no dimension of the constants on a lattice
    of quarters makes an expression the checker rejects consistent, and the lattice finds one for
    nearly every expression it accepts (the quarters hold every solution of these small systems)."""
    rng = np.random.default_rng(1)
    dims = [1.0, -1.0, 0.0]
    lattice = np.arange(-4.0, 4.25, 0.25)
    agree = total = 0
    for _ in range(400):
        nodes = random_expression(rng, len(dims))
        if sum(op == CONST and fitted(v) for op, _, v in nodes) > 2:
            continue
        target = None if rng.random() < 0.5 else float(rng.choice([-1.0, 0.0, 1.0, 2.0]))
        verdict = is_consistent(*arrays(nodes), [{"m": d} if d else {} for d in dims],
                                None if target is None else ({"m": target} if target else {}), fitted)
        found = _brute_force(nodes, dims, target, lattice)
        assert verdict or not found, nodes
        agree += verdict == found
        total += 1
    assert total > 200 and agree == total


def test_the_estimator_validates_units():
    X, y = np.random.default_rng(0).uniform(1, 2, size=(20, 2)), np.arange(20.0)
    with pytest.raises(ValueError, match="^feature_units must give one unit per feature"):
        SymbolicQuantileRegressor(feature_units=["m"]).fit(X, y)
    with pytest.raises(ValueError, match=r"^feature_units\[1\]"):
        SymbolicQuantileRegressor(feature_units=["m", "m^"]).fit(X, y)
    with pytest.raises(ValueError, match="^target_units needs feature_units"):
        SymbolicQuantileRegressor(target_units="m").fit(X, y)
    with pytest.raises(ValueError, match="^feature_units keyed by name"):
        SymbolicQuantileRegressor(feature_units={"x0": "m"}).fit(X, y)
    with pytest.raises(TypeError, match="^feature_units"):
        SymbolicQuantileRegressor(feature_units="m").fit(X, y)


def _front(losses, consistent):
    complexity = np.arange(1, 2 * len(losses), 2)
    return pd.DataFrame({"complexity": complexity, "loss": losses, "consistent": consistent})


@pytest.mark.parametrize("losses, consistent, choice, expected", [
    ([1.0, 0.5, 0.4], [True, True, False], 1, (1, "consistent")),  # the choice is consistent: kept
    # a consistent row of the same unit-free complexity, 0.09% more loss: within 1 / n (n = 1000)
    ([1.0, 0.40, 0.40035], [True, False, True], 1, (2, "consistent")),
    ([1.0, 0.40, 0.30], [True, False, True], 1, (2, "consistent")),               # better: taken
    ([1.0, 0.40, 0.41], [True, False, True], 1, (1, "inconsistent row better")),  # 2.5% worse: not
    ([1.0, 0.40, 0.39], [False, False, False], 1, (1, "none consistent")),
])
def test_the_prior_decides_only_where_the_data_cannot(losses, consistent, choice, expected):
    """A consistent row replaces an inconsistent choice only when its Schwarz criterion (log loss plus
    unit-free complexity log(n) / 2n) is within one unit of evidence / n of the choice's."""
    frame = _front(np.array(losses), consistent)
    pick = lambda rows: int(rows[np.argmin(frame["loss"].to_numpy()[rows])])  # noqa: E731 (the lowest loss)
    assert units_choice(frame, choice, pick, np.array([1, 11, 11]), 1000.0, False) == expected


def test_units_mark_the_front_without_changing_it():
    """The search is the same with units (same front, bit for bit); every row is marked, as the
    checker says, and the status tells how the prior acted; without units nothing is reported."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(1, 5, 300), rng.uniform(1, 2, 300), rng.uniform(3, 10, 300)])
    y = X[:, 0] / np.sqrt(1 - X[:, 1] ** 2 / X[:, 2] ** 2)
    y = y + rng.normal(0, 0.1 * np.sqrt(np.mean(y**2)), len(y))
    settings = dict(random_state=0, progress=False, niterations=3, populations=2, stages=("exhaustive",))
    plain = SymbolicQuantileRegressor(**settings).fit(X, y)
    assert "consistent" not in plain.equations_ and plain.units_status_ is None
    model = SymbolicQuantileRegressor(feature_units=["kg", "m/s", {"m": 1, "s": -1}], target_units="kg",
                                      **settings).fit(X, y)
    frame, dims = model.equations_, [{"kg": 1}, VELOCITY, VELOCITY]
    pd.testing.assert_frame_equal(frame.drop(columns="consistent"), plain.equations_)
    assert frame["consistent"].dtype == bool and frame["consistent"].any()
    assert model.units_status_ in ("consistent", "inconsistent row better")
    assert frame["consistent"].iloc[model.best_index_] == (model.units_status_ == "consistent")
    for row, consistent in zip(model._fronts[0], frame["consistent"]):  # (constants as the search wrote them)
        assert not consistent or is_consistent(row["ops"], row["feats"], row["vals"], dims, {"kg": 1},
                                               lambda v: True)


METADATA = """dataset: feynman_toy_units
description: |
    m = m_0/sqrt(1-v**2/c**2)

    m_0 in [1.0,5.0]
    v in [1.0,2.0]
    c in [3.0,10.0]
target:
  type: continuous
  description: m, Mass, kg^1
features:
  - name: m_0
    type: continuous
    description: Mass, kg^1
  - name: v
    type: continuous
    description: v, Velocity, m^1 * s^(-1)
  - name: c
    type: continuous
    description: Dimensionless
"""


def test_srbench_metadata_gives_the_units():
    """PMLB's descriptions (``Name, unit`` or ``symbol, Name, unit``) give each variable's unit, read
    by :func:`parse_unit`; a metadata without them gives none."""
    from parsimony.experiments import srbench

    problem = srbench.parse_metadata(METADATA)
    assert problem.units == ("kg^1", ("kg^1", "m^1 * s^(-1)", ""))
    assert [parse_unit(u) for u in problem.units[1]] == [{"kg": 1}, {"m": 1, "s": -1}, {}]
    assert srbench.parse_metadata(METADATA.replace("Mass, kg^1\nfeatures", "Mass\nfeatures")).units is None
