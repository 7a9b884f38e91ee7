"""The exhaustive seeder (``seeds/exhaustive.py``) against a brute force written independently:
every expression tree up to the certified size, each variant's constants by vertex enumeration."""

import itertools

import numpy as np
import pytest

from parsimony.losses import LOSS_PINBALL, LOSS_SQUARED
from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._evaluator import evaluate, make_workspace
from parsimony.symbolic._expressions import ADD, CONST, MUL, TOKEN_COMPLEXITY, complexity_weights, operator_codes
from parsimony.symbolic._parameters import search_settings, validated
from parsimony.symbolic.seeds import ExhaustiveSeeder, ExhaustiveSettings, Problem

OPERATORS = ("add", "sub", "mul", "square")
WEIGHTS = complexity_weights(TOKEN_COMPLEXITY)
NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _trees(d, size):
    """Every tree over ``d`` features and OPERATORS by complexity (the paper's weights), as values
    builders: ``{c: [callable X -> values]}``; no deduplication."""
    trees = {c: [] for c in range(1, size + 1)}
    trees[1] = [lambda X, j=j: X[:, j] for j in range(d)]
    for c in range(2, size + 1):
        if c - 2 >= 1:
            trees[c] += [lambda X, g=g: g(X) * g(X) for g in trees[c - 2]]
        for c1 in range(1, c - 1):
            for name, op in NUMPY.items():
                trees[c] += [lambda X, f=f, g=g, op=op: op(f(X), g(X))
                             for f, g in itertools.product(trees[c1], trees[c - 1 - c1])]
    return trees


def _pinball(r, w, tau):
    return np.sum(w * np.where(r >= 0, tau * r, (tau - 1) * r), axis=-1) / w.sum()


def _class_best(X, y, w, tau, size):
    """The lowest weighted mean pinball loss of the class at each complexity up to ``size`` + 4:
    ``g`` (c), ``g + a`` and ``a - g`` and ``b*g`` (c + 2), ``a + b*g`` (c + 4), each optimum
    found at a vertex (a line through one or two data points, or the origin and one)."""
    best = {}

    def offer(c, loss):
        best[c] = min(best.get(c, np.inf), loss)

    for c, builders in _trees(X.shape[1], size).items():
        for build in builders:
            with np.errstate(all="ignore"):
                g = build(X)
            if not np.all(np.isfinite(g)) or not np.ptp(g) > 0:
                continue
            offer(c, _pinball(y - g, w, tau))
            offer(c + 2, _pinball((y - g)[None, :] - (y - g)[:, None], w, tau).min())  # g + a
            offer(c + 2, _pinball((y + g)[None, :] - (y + g)[:, None], w, tau).min())  # a - g
            nz = g != 0
            slopes = y[nz] / g[nz]
            offer(c + 2, _pinball(y[None, :] - slopes[:, None] * g[None, :], w, tau).min())  # b*g
            i, j = np.triu_indices(len(y), 1)
            ok = g[i] != g[j]
            b = (y[i] - y[j])[ok] / (g[i] - g[j])[ok]
            a = y[i][ok] - b * g[i][ok]
            offer(c + 4, _pinball(y[None, :] - a[:, None] - b[:, None] * g[None, :], w, tau).min())  # a + b*g
    return best


def _data(seed, n=36):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = 1.5 * X[:, 0] * X[:, 1] - X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return X, y, rng.integers(1, 4, size=n).astype(float)


def _loss(model, X, y, w, tau):
    ops, feats, vals = model
    out = np.empty(len(y))
    evaluate(ops, feats, vals, len(ops), np.ascontiguousarray(X.T), make_workspace(len(ops), len(y)), out)
    return _pinball(y - out, w, tau)


def test_the_seeder_finds_the_optimum_of_every_complexity_up_to_its_size(tau=0.3):
    X, y, w = _data(1)
    binops, unops, _ = operator_codes(OPERATORS)
    problem = Problem(X, y, w, LOSS_PINBALL, tau, binops, unops, WEIGHTS, 30, np.full(2, 0.5))
    proposal = ExhaustiveSeeder(ExhaustiveSettings(budget=10**6, max_size=7)).propose(problem)
    size = proposal.report["size"]
    assert size == 7  # the budget allows the whole of max_size here
    brute = _class_best(X, y, w, tau, size)
    found = {}
    for model in proposal.models:
        c = int(WEIGHTS[model[0]].sum())
        found[c] = min(found.get(c, np.inf), _loss(model, X, y, w, tau))
    for c in range(1, size + 1):  # every complexity the certificate covers: the optimum, exactly
        assert (c in found) == (c in brute)
        if c in brute:
            assert found[c] == pytest.approx(brute[c], rel=1e-9, abs=1e-12), c


def test_the_size_is_the_last_complexity_the_budget_covers_whole():
    X, y, w = _data(2)
    binops, unops, _ = operator_codes(OPERATORS)
    problem = Problem(X, y, w, LOSS_PINBALL, 0.5, binops, unops, WEIGHTS, 30, np.full(2, 0.5))
    trees = _trees(2, 7)
    for budget in (len(y) * 2, len(y) * 20, len(y) * 200):
        seeder = ExhaustiveSeeder(ExhaustiveSettings(budget=budget, max_size=7))
        found, size = seeder.skeletons(problem)
        built = sum(len(v) for v in found.values.values())
        assert built * len(y) <= budget
        assert built <= sum(len(trees[c]) for c in range(1, size + 1))  # duplicates dropped, none added
    # the two features fill the budget; complexity 2 holds no expression (whole at once), 3 is past it
    assert ExhaustiveSeeder(ExhaustiveSettings(budget=len(y) * 2)).skeletons(problem)[1] == 2


def test_the_fitted_front_marks_exactly_the_rows_the_brute_force_certifies():
    X, y, w = _data(3)
    tau = 0.5
    model = SymbolicQuantileRegressor(tau, operators=OPERATORS, niterations=2, populations=2, population_size=12,
                                      ncycles_per_iteration=10, random_state=0, progress=False,
                                      rescale=False)  # a certificate holds in the data's own units
    model.fit(X, y, sample_weight=w)
    size = model.certified_size_
    assert size >= 7
    checked = 7  # the brute force's cost grows tenfold a size: the rows up to 7 are checked
    brute = _class_best(X, y, w, tau, checked)
    baseline = _pinball(y[None, :] - y[:, None], w, tau).min()  # the best constant: one of the targets
    eq = model.equations_
    for c, loss, certified in zip(eq["complexity"], eq["loss"], eq["certified"]):
        if c <= checked:
            bound = min([baseline] + [v for k, v in brute.items() if k <= c])
            assert certified == (loss <= bound + 1e-9 * baseline), c
        assert not certified or c <= size
    assert eq["certified"].any()
    off = SymbolicQuantileRegressor(tau, operators=OPERATORS, niterations=2, populations=2, population_size=12,
                                    ncycles_per_iteration=10, random_state=0, progress=False,
                                    stages=("additive", "rational")).fit(X, y, sample_weight=w)
    assert off.certified_size_ == 0 and not off.equations_["certified"].any()


def test_the_squared_loss_is_fitted_exactly_too():
    X, y, w = _data(4)
    binops, unops, _ = operator_codes(OPERATORS)
    problem = Problem(X, y, w, LOSS_SQUARED, 0.5, binops, unops, WEIGHTS, 30, np.full(2, 0.5))
    proposal = ExhaustiveSeeder(ExhaustiveSettings(budget=10**6, max_size=5)).propose(problem)
    lines = 0
    for ops, feats, vals in proposal.models:
        if len(ops) > 4 and list(ops[-4:]) == [CONST, MUL, CONST, ADD]:
            lines += 1
            g = np.empty(len(y))
            evaluate(ops[:-4], feats[:-4], vals[:-4], len(ops) - 4, np.ascontiguousarray(X.T),
                     make_workspace(len(ops), len(y)), g)
            design = np.c_[np.ones(len(y)), g] * np.sqrt(w)[:, None]
            a, b = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)[0]
            np.testing.assert_allclose([vals[-2], vals[-4]], [a, b], rtol=1e-8, atol=1e-10)
    assert lines > 0


def test_explicit_stages_are_refused_by_the_julia_engine():
    params = validated(SymbolicQuantileRegressor(stages=("exhaustive",)).get_params())
    with pytest.raises(ValueError, match=r"stages=.* is not supported by the Julia engine"):
        search_settings(params, "julia")
    assert search_settings(validated(SymbolicQuantileRegressor(stages=()).get_params()), "julia").stages == ()


@pytest.mark.parametrize("stages", ["exhaustive", ("exhaustive", "genetic"), 3])
def test_bad_stages_name_the_parameter(stages):
    with pytest.raises((TypeError, ValueError), match="stages"):
        SymbolicQuantileRegressor(stages=stages, progress=False).fit(np.ones((5, 1)), np.arange(5.0))
