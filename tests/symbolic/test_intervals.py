"""Interval enclosures of expressions (parsimony.symbolic._intervals) and SQR's certified fronts."""

import numpy as np
import pytest

from parsimony.losses import Pinball
from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._evaluator import evaluate, make_data, make_workspace, tree_loss
from parsimony.symbolic._expressions import ARITY, CONST, OPCODE, VAR, from_tokens
from parsimony.symbolic._intervals import (
    REFINE_BUDGET, admissible, enclosure, make_box, refined_enclosure, tight_enclosure,
)
from parsimony.symbolic.regressor import ENCLOSURE_SPANS, certified_box

UNARY = ["square", "cube", "sqrt", "exp", "log", "sin", "cos", "abs", "neg"]
BINARY = ["add", "sub", "mul", "div", "pow"]


def random_expression(rng, d, size):
    """A random postfix expression of about ``size`` nodes over ``d`` features."""
    tokens, depth = [], 0
    while len(tokens) < size or depth != 1:
        if depth >= 2 and (rng.random() < 0.4 or len(tokens) >= size):
            tokens.append(BINARY[rng.integers(len(BINARY))] if rng.random() < 0.9 else "mul")
            depth -= 1
        elif depth >= 1 and rng.random() < 0.25 and len(tokens) < size:
            tokens.append(UNARY[rng.integers(len(UNARY))])
        elif len(tokens) < size:
            if rng.random() < 0.6:
                tokens.append(f"x{rng.integers(d)}")
            else:
                tokens.append(float(np.round(rng.normal(0, 2), 3)))
            depth += 1
        else:
            tokens.append("add")
            depth -= 1
    return from_tokens(tokens, d)


def random_cases(rng, n, max_features, max_size):
    """``n`` random ``(d, ops, feats, vals)``: expressions of 3 to ``max_size`` nodes over up to
    ``max_features`` features."""
    for _ in range(n):
        d = int(rng.integers(1, max_features + 1))
        yield (d, *random_expression(rng, d, int(rng.integers(3, max_size + 1))))


def grid(lo, hi, per_axis):
    axes = [np.linspace(a, b, per_axis) for a, b in zip(lo, hi)]
    return np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)


def values(ops, feats, vals, X):
    out = np.empty(X.shape[0])
    with np.errstate(all="ignore"):
        evaluate(ops, feats, vals, len(ops), np.ascontiguousarray(X.T), make_workspace(len(ops), X.shape[0]), out)
    return out


def test_enclosures_hold_every_grid_value_of_random_expressions():
    rng = np.random.default_rng(0)
    defined = 0
    for d, ops, feats, vals in random_cases(rng, 400, 2, 11):
        lo = rng.normal(0, 2, d)
        hi = lo + rng.exponential(2, d)
        X = grid(lo, hi, 41 if d == 2 else 400)
        v = values(ops, feats, vals, X)
        scratch = np.empty(len(ops)), np.empty(len(ops))
        a, b = enclosure(ops, feats, vals, len(ops), lo, hi, *scratch)
        c, e, ok = refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, 64)
        t = tight_enclosure(ops, feats, vals, len(ops), lo, hi, 64)
        for low, high in ((a, b), (c, e), t):
            if np.isnan(low):
                continue
            defined += 1
            assert np.all(np.isfinite(v)), (ops, feats, vals, lo, hi)
            assert np.all((low <= v) & (v <= high)), (ops, feats, vals, lo, hi, low, high, v.min(), v.max())
        assert ok == (not np.isnan(c))
        if not np.isnan(a):  # bisection never loses what one walk certifies, and only tightens
            assert ok and a <= t[0] and t[1] <= b
    assert defined > 300  # the test is not vacuous


@pytest.mark.parametrize("tokens, lo, hi, defined", [
    ([1.0, "x0", 0.5, "sub", "div"], 0.0, 1.0, False),        # a pole inside the box
    ([1.0, "x0", 0.5, "sub", "div"], 0.6, 1.0, True),         # the same away from it
    (["x0", "log"], 0.0, 1.0, False),                          # log reaching 0
    (["x0", 0.25, "sub", "sqrt"], 0.0, 1.0, False),           # sqrt of a negative
    (["x0", 0.0, "sub", "sqrt"], 0.0, 1.0, True),             # sqrt reaching exactly 0
    (["x0", 800.0, "mul", "exp"], 0.0, 1.0, False),            # exp past overflow
    (["x0", 800.0, "mul", "exp"], -1.0, 0.0, True),
    (["x0", -0.5, "pow"], 0.0, 1.0, False),                   # a negative power of 0
    (["x0", 1.5, "pow"], -1.0, 1.0, False),                   # a fractional power of a negative
    (["x0", 2.0, "pow"], -1.0, 1.0, True),
])
def test_undefined_operations_make_the_enclosure_undefined(tokens, lo, hi, defined):
    ops, feats, vals = from_tokens(tokens)
    a, b, ok = refined_enclosure(ops, feats, vals, len(ops), np.array([lo]), np.array([hi]), -np.inf, np.inf, 64)
    assert ok == defined
    if defined:
        v = values(ops, feats, vals, np.linspace(lo, hi, 1001)[:, None])
        assert a <= v.min() and v.max() <= b


def test_sine_and_cosine_enclosures_find_their_extrema():
    for op, lo, hi, low, high in (("sin", 1.0, 2.0, np.sin(1.0), 1.0), ("sin", 4.0, 5.0, -1.0, np.sin(4.0)),
                                  ("cos", -0.5, 0.5, np.cos(0.5), 1.0), ("cos", 3.0, 3.5, -1.0, np.cos(3.5)),
                                  ("sin", 0.0, 7.0, -1.0, 1.0)):
        ops, feats, vals = from_tokens(["x0", op])
        a, b = enclosure(ops, feats, vals, 2, np.array([lo]), np.array([hi]), np.empty(2), np.empty(2))
        assert a == pytest.approx(low, abs=1e-12) and b == pytest.approx(high, abs=1e-12)


def test_bisection_certifies_what_one_walk_overestimates():
    # 1 / (x^2 - 2x + 2) = 1 / ((x - 1)^2 + 1) on [0, 3]: one walk gives the divisor [-4, 11]
    ops, feats, vals = from_tokens([1.0, "x0", "square", 2.0, "x0", "mul", "sub", 2.0, "add", "div"])
    lo, hi = np.array([0.0]), np.array([3.0])
    assert np.isnan(enclosure(ops, feats, vals, len(ops), lo, hi, np.empty(10), np.empty(10))[0])
    a, b, ok = refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, 64)
    assert ok and a <= 0.2 and b >= 1.0 and b < 10
    assert not refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, 1)[2]  # no budget to split


def test_the_bounds_reject_a_huge_but_finite_expression():
    ops, feats, vals = from_tokens([4.0, "x0", "sub", 15.0, "mul", "exp", 1e-20, "mul"])  # 1028_SWD's
    lo, hi = np.array([0.0]), np.array([5.0])
    assert refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, 32)[2]
    assert not refined_enclosure(ops, feats, vals, len(ops), lo, hi, -50.0, 50.0, 32)[2]


# Laws of the AI Feynman set on their sampling boxes (the postfix of each formula as written)
FEYNMAN_LAWS = [
    # (x - u t) / sqrt(1 - u^2/c^2): a divisor and a square root argument bounded away from 0
    (["x0", "x1", "x3", "mul", "sub", 1.0, "x1", "square", "x2", "square", "div", "sub", "sqrt", "div"],
     [5.0, 1.0, 3.0, 1.0], [10.0, 2.0, 20.0, 2.0]),
    # 1 + n a / (1 - n a / 3): n a occurs twice
    ([1.0, "x0", "x1", "mul", 1.0, "x0", "x1", "mul", 3.0, "div", "sub", "div", "add"], [0.0, 0.0], [1.0, 1.0]),
    # -m q^4 / (8 eps^2 h^2 n^2): spans five orders of magnitude on the box
    (["x0", "x1", 4.0, "pow", "mul", 8.0, "x4", "square", "mul", "x2", "square", "mul", "x3", "square", "mul",
      "div", -1.0, "mul"], [1.0] * 5, [5.0] * 5),
    # sqrt((x1 - x2)^2 + 2 x1 x2 (1 - cos(t1 - t2))): a square root argument reaching exactly 0
    (["x0", "x1", "sub", "square", 2.0, "x0", "mul", "x1", "mul", 1.0, "x2", "x3", "sub", "cos", "sub", "mul", "add",
      "sqrt"], [1.0] * 4, [5.0] * 4),
]


@pytest.mark.parametrize("tokens, lo, hi", FEYNMAN_LAWS)
def test_physical_laws_are_certified_on_their_sampling_box(tokens, lo, hi):
    """Each law is admitted within the bounds its own sampled targets give (1,000 rows uniform in
    the box, as the recovery benchmark draws them), and its enclosure holds every sampled value."""
    ops, feats, vals = from_tokens(tokens)
    lo, hi = np.array(lo), np.array(hi)
    X = np.random.default_rng(0).uniform(lo, hi, (1000, len(lo)))
    box = certified_box(lo, hi, values(ops, feats, vals, X))
    a, b, ok = refined_enclosure(ops, feats, vals, len(ops), lo, hi, box.low, box.high, REFINE_BUDGET)
    assert ok and admissible(ops, feats, vals, len(ops), box)
    dense = np.random.default_rng(1).uniform(lo, hi, (100_000, len(lo)))
    v = values(ops, feats, vals, np.vstack([dense, lo, hi]))
    assert np.all(np.isfinite(v)) and a <= v.min() and v.max() <= b


def test_a_square_root_argument_that_rounding_makes_negative_stays_rejected():
    """sqrt(x1^2 + x2^2 - 2 x1 x2 cos(t1 - t2)) is real on [1, 5]^4 (its argument is 0 where x1 = x2
    and t1 = t2), but float64 rounds the argument below 0 next to that set, where the evaluator
    returns NaN: no budget certifies it, while the same law written with (x1 - x2)^2 is certified."""
    ops, feats, vals = from_tokens(["x0", "square", "x1", "square", "add", 2.0, "x0", "mul", "x1", "mul", "x2", "x3",
                                    "sub", "cos", "mul", "sub", "sqrt"])
    lo, hi = np.ones(4), np.full(4, 5.0)
    for budget in (REFINE_BUDGET, 4096):
        assert not refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, budget)[2]
    x0 = np.random.default_rng(0).uniform(1.0, 4.0, 2000)
    X = np.column_stack([x0, x0 * (1 + 1e-9), np.full(2000, 2.0), np.full(2000, 2.0)])  # cos(0) = 1 exactly
    assert np.isnan(values(ops, feats, vals, X)).any()  # basic IEEE operations only: the same on every CPU
    safe = from_tokens(FEYNMAN_LAWS[3][0])
    assert refined_enclosure(*safe, len(safe[0]), lo, hi, -np.inf, np.inf, REFINE_BUDGET)[2]
    assert np.all(np.isfinite(values(*safe, X)))


@pytest.mark.parametrize("tokens, lo, hi", [
    (["x0", "x0", "x1", "sub", "div"], [1.0, 1.0], [2.0, 2.0]),                     # a pole on the diagonal
    (["x0", "x1", "sub", 0.5, "add", "log"], [0.0, 0.0], [1.0, 1.0]),              # log of <= 0 in a corner
    (["x0", "x1", "mul", 0.01, "sub", "sqrt"], [0.0, 0.0], [1.0, 1.0]),            # sqrt of < 0 near the axes
    ([1.0, "x0", "x0", "mul", "x1", "sub", 0.3, "add", "div"], [0.0, 0.0], [1.0, 1.0]),  # a curved pole
    ([1.0, "x0", 2.0, "x0", "mul", "sub", 1e-6, "sub", "div"], [-1.0], [1.0]),     # a pole 1e-6 from 0
])
def test_true_poles_and_domain_errors_are_rejected_at_any_budget(tokens, lo, hi):
    """The refinement admits nothing that is undefined somewhere on the box, however many pieces it may
    split it into (a dense grid finds the non-finite values the rejection stands for)."""
    ops, feats, vals = from_tokens(tokens)
    lo, hi = np.array(lo), np.array(hi)
    for budget in (REFINE_BUDGET, 4096):
        assert not refined_enclosure(ops, feats, vals, len(ops), lo, hi, -np.inf, np.inf, budget)[2]
    v = values(ops, feats, vals, grid(lo, hi, 2001 if len(lo) == 1 else 301))
    assert not np.all(np.isfinite(v)) or np.abs(v).max() > 1e3


def test_tree_loss_is_inf_for_an_expression_not_certified_on_the_box():
    x = np.array([0.0, 1.0, 2.0, 3.0])  # the rows miss the pole at 1.5
    ops, feats, vals = from_tokens([1.0, "x0", 1.5, "sub", "div"])
    Xt, y, w = x[None, :].copy(), np.ones(4), np.ones(4)
    ws = make_workspace(len(ops), 4)
    assert np.isfinite(tree_loss(ops, feats, vals, len(ops), make_data(Xt, y, w, Pinball(0.5)), ws))
    box = make_box([0.0], [3.0], -100.0, 100.0)
    assert not admissible(ops, feats, vals, len(ops), box)
    assert tree_loss(ops, feats, vals, len(ops), make_data(Xt, y, w, Pinball(0.5), box), ws) == np.inf
    assert np.isfinite(tree_loss(ops, feats, vals, len(ops),
                                 make_data(Xt, y, w, Pinball(0.5), make_box([0.0], [3.0], active=False)), ws))


def lookup_targets(rng, n_levels, rows=300):
    x = rng.integers(0, n_levels, rows).astype(float)
    return x[:, None], rng.uniform(0.9, 8.2, n_levels)[x.astype(int)]


def test_no_front_row_has_a_pole_or_a_huge_value_on_lookup_tables():
    """Lookup tables of a discrete feature invite ``c/(x - a)`` with ``a`` between two levels:
    no row of a certified front reaches past ENCLOSURE_SPANS target ranges anywhere on the dense grid."""
    rng = np.random.default_rng(1)
    for _ in range(6):
        X, y = lookup_targets(rng, int(rng.integers(3, 6)))
        model = SymbolicQuantileRegressor(niterations=3, populations=3, random_state=0, progress=False).fit(X, y)
        span = np.ptp(y)
        dense = np.linspace(X.min(), X.max(), 20_001)[:, None]
        frame = model.equations_
        for i in range(len(frame)):
            pred = model.predict(dense, index=i)
            raw = model._evaluate(dense, 0, i)  # predict clips non-finite values: look at the raw ones
            assert np.all(np.isfinite(raw)), frame["equation"].iloc[i]
            assert np.all(np.abs(pred - y.mean()) <= (ENCLOSURE_SPANS + 1) * span), frame["equation"].iloc[i]
            assert frame["lower"].iloc[i] <= raw.min() and raw.max() <= frame["upper"].iloc[i]


def test_certify_false_keeps_the_raw_search_and_reports_nan_where_uncertified():
    X, y = lookup_targets(np.random.default_rng(2), 4)
    model = SymbolicQuantileRegressor(niterations=2, populations=2, random_state=0, progress=False, certify=False)
    frame = model.fit(X, y).equations_
    assert {"lower", "upper"} <= set(frame.columns)
    assert np.all(np.isnan(frame["lower"]) == np.isnan(frame["upper"]))


def test_domain_is_validated_and_used():
    X, y = lookup_targets(np.random.default_rng(3), 4)
    model = SymbolicQuantileRegressor(niterations=2, populations=2, random_state=0, progress=False,
                                      domain=[[-1.0, 10.0]]).fit(X, y)
    assert np.array_equal(model.domain_, [[-1.0, 10.0]])
    dense = np.linspace(-1.0, 10.0, 5001)[:, None]
    for i in range(len(model.equations_)):
        raw = model._evaluate(dense, 0, i)
        assert model.equations_["lower"].iloc[i] <= raw.min() and raw.max() <= model.equations_["upper"].iloc[i]
    for bad, err in (([[1.0, 0.0]], ValueError), ([[0.0, 1.0], [0.0, 1.0]], ValueError), ([0.0, 1.0], ValueError),
                     ([[0.0, np.inf]], ValueError), ("wide", TypeError)):
        with pytest.raises(err, match="domain"):
            SymbolicQuantileRegressor(niterations=1, domain=bad, progress=False).fit(X, y)


def test_opcode_tables_cover_every_operator():
    assert set(UNARY) | set(BINARY) == {name for name, code in OPCODE.items()
                                        if code not in (CONST, VAR) and ARITY[code] > 0}
