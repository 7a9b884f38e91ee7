"""Engine kernels: mutations keep valid trees, simplification preserves values, RNG, evolution."""

import numpy as np
import pytest

from parsimony.losses import (
    LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED, Absolute, Pinball, loss_from_code, weighted_quantile,
)
from parsimony.symbolic import _engine as G
from parsimony.symbolic import _expressions as E
from parsimony.symbolic._evaluator import make_data, make_workspace, tree_loss
from parsimony.symbolic._random import new_state, normal, randint, uniform

from ._helpers import ALL_BINARY, ALL_UNARY, WEIGHTS, reference_eval

UNIFORM_2, UNIFORM_3 = np.arange(1.0, 3), np.arange(1.0, 4)  # running sums of even feature weights


def _is_valid(ops, n_features, feats):
    depth = 0
    for op, f in zip(ops, feats):
        depth -= E.ARITY[op] - 1
        if depth < 1:
            return False
        if op == E.VAR and not 0 <= f < n_features:
            return False
    return depth == 1


def test_rng_is_reproducible_and_uniform():
    a, b = new_state(7), new_state(7)
    xs = np.array([uniform(a) for _ in range(20000)])
    assert xs.tolist() == [uniform(b) for _ in range(20000)]
    assert 0 <= xs.min() and xs.max() < 1 and abs(xs.mean() - 0.5) < 0.01
    ks = np.array([randint(a, 5) for _ in range(20000)])
    assert set(ks) == {0, 1, 2, 3, 4} and abs(np.bincount(ks).std() / 4000) < 0.05
    zs = np.array([normal(a) for _ in range(20000)])
    assert abs(zs.mean()) < 0.03 and abs(zs.std() - 1) < 0.03


def test_sample_feature_follows_the_weights():
    state = new_state(5)
    probs = np.array([0.1, 0.0, 0.6, 0.3])
    draws = np.array([G.sample_feature(state, np.cumsum(probs)) for _ in range(40000)])
    freq = np.bincount(draws, minlength=4) / draws.size
    assert freq[1] == 0 and np.abs(freq - probs).max() < 0.01


def test_feature_mutation_repoints_exactly_one_leaf():
    ops, feats, vals = E.from_tokens(["x0", "x1", "mul", 2.0, "add"])
    state = new_state(2)
    out = (np.zeros(16, np.int64), np.zeros(16, np.int64), np.zeros(16))
    grammar = G.Grammar(ALL_BINARY, ALL_UNARY, WEIGHTS, np.arange(1.0, 5))
    seen = set()
    for _ in range(200):
        n = G._mutate_feature((ops, feats, vals), len(ops), out, state, grammar)
        if n < 0:  # drew the feature already there
            continue
        assert n == len(ops) and np.array_equal(out[0][:n], ops) and np.array_equal(out[2][:n], vals)
        changed = np.flatnonzero(out[1][:n] != feats)
        assert len(changed) == 1 and ops[changed[0]] == E.VAR
        seen.add((int(changed[0]), int(out[1][changed[0]])))
    assert seen == {(i, j) for i in (0, 1) for j in range(4) if j != feats[i]}


def test_subtree_start():
    ops, _, _ = E.from_tokens(["x1", "x2", "mul", "x3", "cos", "add"])
    assert [G.subtree_start(ops, i) for i in range(6)] == [0, 1, 0, 3, 3, 0]


@pytest.mark.parametrize("kind", range(len(G.MUTATION_NAMES)))
def test_every_mutation_yields_valid_trees(kind):
    state = new_state(11)
    cap = 64
    search = G.Search(G.Grammar(ALL_BINARY, ALL_UNARY, WEIGHTS, UNIFORM_3), np.ones(len(G.MUTATION_NAMES)),
                      G.kernel_settings(20, 1.0, perturbation_factor=0.076), np.zeros(21))
    out = (np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap))
    tmp = (np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap))
    changed = 0
    for ops, feats, vals in G.random_expressions(200, 3, seed=kind):
        n = G._mutate(kind, (ops, feats, vals), len(ops), out, tmp, cap, state, search)
        if n < 0:  # not applicable (e.g. no constant to mutate)
            continue
        assert _is_valid(out[0][:n], 3, out[1][:n])
        changed += n != len(ops) or any(not np.array_equal(new[:n], old) for new, old in zip(out, (ops, feats, vals)))
    if kind != G.M_NOTHING:
        assert changed > 50


def test_crossover_swaps_subtrees():
    state = new_state(5)
    exprs = G.random_expressions(100, 2, seed=9)
    out = (np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64))
    for (a, af, av), (b, bf, bv) in zip(exprs[::2], exprs[1::2]):
        n = G._crossover((a, af, av), len(a), (b, bf, bv), len(b), out, 64, state)
        assert n > 0 and _is_valid(out[0][:n], 2, out[1][:n])


def test_simplify_preserves_values_and_never_grows():
    X = np.random.default_rng(0).normal(scale=1.5, size=(40, 3))
    out = (np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64))
    shrunk = 0
    for ops, feats, vals in G.random_expressions(500, 3, seed=2):
        n = G.simplify_tree(ops, feats, vals, len(ops), *out)
        assert 1 <= n <= len(ops) and _is_valid(out[0][:n], 3, out[1][:n])
        before, tame = reference_eval(ops, feats, vals, X, return_tame=True)
        after = reference_eval(out[0][:n], out[1][:n], out[2][:n], X)
        np.testing.assert_allclose(after[tame], before[tame], rtol=1e-8, atol=1e-10)
        shrunk += n < len(ops)
    assert shrunk > 50


@pytest.mark.parametrize("tokens, expected", [
    ([2.0, 3.0, "mul", "x0", "add"], ["constant", "feature", "add"]),  # folding
    (["x0", 0.0, "add"], ["feature"]),
    (["x0", 1.0, "mul"], ["feature"]),
    (["x0", "x0", "sub"], ["constant"]),
    (["x0", "neg", "neg"], ["feature"]),
    ([1.5, "x0", 2.0, "add", "add"], ["feature", "constant", "add"]),  # c1 + (x + c2)
    (["x0", 2.0, "mul", 3.0, "mul"], ["feature", "constant", "mul"]),  # (x * 2) * 3 -> x * 6
])
def test_simplify_rules(tokens, expected):
    ops, feats, vals = E.from_tokens(tokens)
    out = (np.zeros(16, np.int64), np.zeros(16, np.int64), np.zeros(16))
    n = G.simplify_tree(ops, feats, vals, len(ops), *out)
    assert [E.OP_NAMES[o] for o in out[0][:n]] == expected
    X = np.linspace(-2, 2, 9)[:, None]
    np.testing.assert_allclose(reference_eval(*(a[:n] for a in out), X), reference_eval(ops, feats, vals, X))


@pytest.mark.parametrize("free_offset", [False, True])
def test_evolution_keeps_population_valid_and_hof_consistent(free_offset):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = X[:, 0] * 2 + 1
    size, L, maxsize = 12, 10, 10
    settings = G.kernel_settings(
        maxsize, 1.0, ncycles_per_iteration=20, tournament_selection_n=5, tournament_selection_p=0.86,
        crossover_probability=0.1, parsimony=0.003, adaptive_parsimony_scaling=20, optimize_probability=0.3,
        optimizer_evaluations=30, optimizer_nrestarts=1, perturbation_factor=0.076, should_simplify=True,
        free_offset=free_offset)
    hof = G.HallOfFame(np.zeros((maxsize + 1, L), np.int64), np.zeros((maxsize + 1, L), np.int64),
                       np.zeros((maxsize + 1, L)), np.zeros(maxsize + 1, np.int64), np.full(maxsize + 1, np.inf))
    freq_local = np.zeros(maxsize + 1)
    pop = G.Population(np.zeros((size, L), np.int64), np.zeros((size, L), np.int64), np.zeros((size, L)),
                       np.zeros(size, np.int64), np.zeros(size), np.zeros(size, np.int64), np.zeros(size, np.int64),
                       np.zeros(1, np.int64), new_state(3), freq_local, hof)
    ws = make_workspace(L, 60)
    data = make_data(np.ascontiguousarray(X.T), y, np.ones(60), Pinball(0.5))
    binops, unops = np.array([E.ADD, E.MUL], np.int64), np.array([E.COS], np.int64)
    search = G.Search(G.Grammar(binops, unops, WEIGHTS, UNIFORM_2), np.ones(len(G.MUTATION_NAMES)), settings,
                      np.zeros(maxsize + 1))
    G.init_population(pop, data, ws, search)
    evals = G.evolve_population(pop, data, ws, search)
    assert evals > 20 * 2 and freq_local.sum() > 0
    pop_ops, pop_feats, pop_vals, pop_len, pop_loss, pop_cplx = pop[:6]
    for i in range(size):
        n = pop_len[i]
        assert _is_valid(pop_ops[i, :n], 2, pop_feats[i, :n])
        assert pop_cplx[i] == n <= maxsize
        assert pop_loss[i] == pytest.approx(tree_loss(pop_ops[i], pop_feats[i], pop_vals[i], n, data, ws), rel=1e-12)
    finite = np.isfinite(hof.loss)
    assert finite.any() and hof.loss[finite].min() <= pop_loss.min()
    for c in np.flatnonzero(finite):
        n = hof.length[c]
        assert n == c and hof.loss[c] == pytest.approx(tree_loss(hof.ops[c], hof.feats[c], hof.vals[c], n, data, ws))


def test_select_kth_matches_sorting():
    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        a = rng.integers(0, 4, size=n).astype(float) if trial % 2 else rng.normal(size=n)
        k = int(rng.integers(0, n))
        assert G.select_kth(a.copy(), n, k) == np.sort(a)[k]


@pytest.mark.parametrize("weighted", [False, True])
def test_optimal_offset_is_the_lower_weighted_quantile(weighted):
    """The offset of the pinball and absolute losses is losses.weighted_quantile of the residuals,
    also where level * total weight is an integer up to rounding (0.7 * 10)."""
    rng = np.random.default_rng(3)
    for n, tau in [(10, 0.7), (10, 0.3), (7, 0.5), (40, 0.9), (1, 0.2)]:
        resid = rng.normal(size=n)
        w = rng.integers(1, 4, size=n).astype(float) if weighted else np.ones(n)
        data = make_data(np.zeros((1, n)), np.zeros(n), w, Pinball(tau))
        ranks = make_workspace(1, n).ranks
        assert G.optimal_offset(resid.copy(), data, ranks) == weighted_quantile(resid, w, tau)
        absolute = make_data(np.zeros((1, n)), np.zeros(n), w, Absolute())
        assert G.optimal_offset(resid.copy(), absolute, ranks) == weighted_quantile(resid, w, 0.5)


@pytest.mark.parametrize("loss_kind, tau", [(LOSS_PINBALL, 0.1), (LOSS_PINBALL, 0.5), (LOSS_PINBALL, 0.9),
                                            (LOSS_ABSOLUTE, 0.5), (LOSS_SQUARED, 0.5)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scaling", [False, True])
def test_free_offset_gives_the_optimal_constant_and_an_exact_loss(loss_kind, tau, weighted, scaling):
    rng = np.random.default_rng(int(tau * 10) + weighted + 7 * loss_kind)
    n, maxsize = 50, 15
    X = rng.normal(size=(n, 2))
    y = X[:, 0] ** 2 + 3.0 + rng.normal(size=n)
    w = rng.uniform(0.2, 2.0, n) if weighted else np.ones(n)
    data = make_data(np.ascontiguousarray(X.T), y, w, loss_from_code(loss_kind, tau))
    ws = make_workspace(2 * maxsize + 4, n)
    settings = G.kernel_settings(maxsize, 1.0, linear_scaling=scaling)
    if loss_kind == LOSS_PINBALL:
        def loss_of(r):
            return np.sum(w * r * (tau - (r < 0))) / w.sum()
    elif loss_kind == LOSS_ABSOLUTE:
        def loss_of(r):
            return np.sum(w * np.abs(r)) / w.sum()
    else:
        def loss_of(r):
            return np.sum(w * r * r) / w.sum()
    changed = 0
    for ops, feats, vals in G.random_expressions(200, 2, max_complexity=maxsize - 2, seed=1):
        length = len(ops)
        cap = 2 * maxsize + 4
        o = [np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap)]
        for buf, src in zip(o, (ops, feats, vals)):
            buf[:length] = src
        loss = tree_loss(*o, length, data, ws)
        if not np.isfinite(loss):
            continue
        pred = reference_eval(ops, feats, vals, X)
        cplx = int(WEIGHTS[ops].sum())
        new_len, new_loss, new_cplx = G.free_offset(tuple(o), length, loss, cplx, cap, data, ws, np.empty(n),
                                                    WEIGHTS, settings)
        assert new_loss <= loss
        assert new_cplx == int(WEIGHTS[o[0][:new_len]].sum()) <= maxsize
        assert new_loss == pytest.approx(tree_loss(*o, new_len, data, ws), rel=1e-12, abs=1e-12)
        if new_loss < loss and np.all(np.abs(pred) < 1e6):  # well-conditioned: brute force applies
            changed += 1
            # no constant shift of the original expression does better: the optimum is at a residual
            # (pinball, absolute) or the weighted mean of the residuals (squared)
            resid = y - pred
            shifts = [np.average(resid, weights=w)] if loss_kind == LOSS_SQUARED else resid
            brute = min(loss_of(resid - b) for b in shifts)
            if scaling:  # a + b f, b the least-squares slope, when it beats the best shift
                assert new_loss <= brute * (1 + 1e-9) + 1e-12
            else:
                assert new_loss == pytest.approx(brute, rel=1e-9, abs=1e-12)
    assert changed > 20


@pytest.mark.parametrize("form", ["x", "c*x", "x*c", "x+k", "k+x", "x-k", "k-x", "c*x+k", "k-x*c", "x*c-k"])
@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_linear_scaling_reaches_an_exact_line_and_counts_its_tokens(form, tau):
    """y = 3 - 2 x exactly: a + b f with f any line in x reaches loss 0; constants already in
    place absorb a and b, missing ones are added as tokens and counted."""
    rng = np.random.default_rng(0)
    n, maxsize = 64, 20
    x = rng.normal(size=n)
    y = 3.0 - 2.0 * x
    data = make_data(np.ascontiguousarray(x[None, :]), y, np.ones(n), Pinball(tau))
    ws = make_workspace(2 * maxsize + 4, n)
    settings = G.kernel_settings(maxsize, 1.0, parsimony=0.001, linear_scaling=True)
    C, V = E.CONST, E.VAR
    postfix = {"x": [(V, 0)], "c*x": [(C, 0.7), (V, 0), (E.MUL, 0)], "x*c": [(V, 0), (C, 0.7), (E.MUL, 0)],
               "x+k": [(V, 0), (C, 5.0), (E.ADD, 0)], "k+x": [(C, 5.0), (V, 0), (E.ADD, 0)],
               "x-k": [(V, 0), (C, 5.0), (E.SUB, 0)], "k-x": [(C, 5.0), (V, 0), (E.SUB, 0)],
               "c*x+k": [(C, 0.7), (V, 0), (E.MUL, 0), (C, 5.0), (E.ADD, 0)],
               "k-x*c": [(C, 5.0), (V, 0), (C, 0.7), (E.MUL, 0), (E.SUB, 0)],
               "x*c-k": [(V, 0), (C, 0.7), (E.MUL, 0), (C, 5.0), (E.SUB, 0)]}[form]
    cap = 2 * maxsize + 4
    ops, feats, vals = np.zeros(cap, np.int64), np.zeros(cap, np.int64), np.zeros(cap)
    for i, (op, v) in enumerate(postfix):
        ops[i], vals[i] = op, (v if op == C else 0.0)
    length = len(postfix)
    cplx = int(WEIGHTS[ops[:length]].sum())
    loss = tree_loss(ops, feats, vals, length, data, ws)
    assert loss > 0.1
    new_len, new_loss, new_cplx = G.free_offset((ops, feats, vals), length, loss, cplx, cap, data, ws, np.empty(n),
                                                WEIGHTS, settings)
    assert new_loss == pytest.approx(0.0, abs=1e-12)
    assert new_loss == pytest.approx(tree_loss(ops, feats, vals, new_len, data, ws), abs=1e-12)
    has_scale = "c" in form
    has_offset = "k" in form
    assert new_len == length + 2 * (not has_scale) + 2 * (not has_offset)
    assert new_cplx == int(WEIGHTS[ops[:new_len]].sum()) == cplx + new_len - length
    settings = settings._replace(linear_scaling=False)  # the offset alone cannot fit a slope of -2
    ops[:length] = [op for op, _ in postfix]
    vals[:length] = [v if op == C else 0.0 for op, v in postfix]
    loss = tree_loss(ops, feats, vals, length, data, ws)
    _, offset_loss, _ = G.free_offset((ops, feats, vals), length, loss, cplx, cap, data, ws, np.empty(n), WEIGHTS,
                                      settings)
    assert offset_loss > 0.1


@pytest.mark.parametrize("outer", ["add", "sub"])
@pytest.mark.parametrize("inner", ["add", "sub"])
@pytest.mark.parametrize("shape", ["(A . c) . k", "(c . B) . k", "k . (A . c)", "k . (c . B)"])
def test_simplify_folds_the_constants_of_a_sum(outer, inner, shape):
    A, B = ["x0", "x1", "mul"], ["x0", "sin"]
    inner_tokens = {"(A . c) . k": A + [1.7, inner], "(c . B) . k": [1.7] + B + [inner],
                    "k . (A . c)": A + [1.7, inner], "k . (c . B)": [1.7] + B + [inner]}[shape]
    tokens = inner_tokens + [-0.4, outer] if shape.endswith("k") else [-0.4] + inner_tokens + [outer]
    ops, feats, vals = E.from_tokens(tokens)
    out = (np.zeros(16, np.int64), np.zeros(16, np.int64), np.zeros(16))
    n = G.simplify_tree(ops, feats, vals, len(ops), *out)
    assert n == len(ops) - 2 and list(out[0][:n]).count(E.CONST) == 1
    X = np.random.default_rng(0).normal(size=(9, 2))
    np.testing.assert_allclose(reference_eval(*(a[:n] for a in out), X), reference_eval(ops, feats, vals, X))


@pytest.mark.parametrize("tokens", [
    [-5.0, "x0", "sub", "x0", "x1", "mul", "sub", "x1", "sub", 446.3, "add"],  # ((c - x0) - x0 x1) - x1 + k
    ["x0", 1.9, "sub", "x1", "add", "x1", "x0", "mul", "sub", 820.0, "add"],  # ((x0 - c) + x1) - x0 x1 + k
    [3.0, "x0", 0.5, "add", "x1", "sub", "add"],                                # k + ((x0 + c) - x1)
    ["x0", "x1", "mul", 2.0, "add", "x0", "sin", "sub", 7.0, "sub"],            # ((x0 x1 + c) - sin x0) - k
    ["x1", "square", "sqrt", "x0", 1.5, "mul", 0.13, "add", "add", -0.0004, "sub"],  # c inside the right term
    ["x0", 2.0, "x1", "sub", "sub", 5.0, "add"],                                # x0 - (c - x1) + k
])
def test_simplify_folds_constants_along_a_chain_of_sums(tokens):
    ops, feats, vals = E.from_tokens(tokens)
    out = (np.zeros(24, np.int64), np.zeros(24, np.int64), np.zeros(24))
    n = G.simplify_tree(ops, feats, vals, len(ops), *out)
    assert n == len(ops) - 2 and list(out[0][:n]).count(E.CONST) == list(ops).count(E.CONST) - 1
    X = np.random.default_rng(1).normal(size=(9, 2))
    np.testing.assert_allclose(reference_eval(*(a[:n] for a in out), X), reference_eval(ops, feats, vals, X))



def test_equation_strings_quote_feature_names_that_are_not_identifiers():
    ops, feats, vals = E.from_tokens(["x0", "x1", "mul", "x2", "sub"])
    text = E.to_string(ops, feats, vals, len(ops), ["dose mg", "age", "x-1"])
    assert text == "`dose mg` * age - `x-1`"


@pytest.mark.parametrize("tokens, expected", [
    (["x0", -0.035, "neg", "add"], "x0 + 0.035"),          # printed "x0 - -0.035" before
    (["x0", "x1", "neg", "neg", "sub"], "x0 + (-x1)"),
    (["x0", "neg", "neg"], "-(-x0)"),
    (["x0", -2.0, "x1", "mul", "neg", "sub"], "x0 + (-2 * x1)"),
])
def test_negations_print_without_a_double_minus(tokens, expected):
    import sympy

    ops, feats, vals = E.from_tokens(tokens)
    text = E.to_string(ops, feats, vals, len(ops), ["x0", "x1"])
    assert text == expected and "--" not in text.replace(" ", "")
    X = np.random.default_rng(0).normal(size=(5, 2))
    read_back = sympy.lambdify(sympy.symbols("x0 x1"), sympy.sympify(text))(*X.T)
    np.testing.assert_allclose(read_back, reference_eval(ops, feats, vals, X))


def test_equation_strings_read_back_as_the_expression():
    import sympy

    X = np.random.default_rng(2).uniform(0.5, 2.0, size=(7, 3))
    names = sympy.symbols("x0 x1 x2")
    checked = 0
    for ops, feats, vals in G.random_expressions(300, 3, max_complexity=14, seed=5):
        text = E.to_string(ops, feats, vals, len(ops), ["x0", "x1", "x2"], precision=17)
        assert "+ -" not in text and "- -" not in text, text
        expression = sympy.sympify(text.replace("^", "**"), locals={"abs": sympy.Abs})
        with np.errstate(all="ignore"):
            expected, tame = reference_eval(ops, feats, vals, X, return_tame=True)
        ok = np.isfinite(expected) & tame  # elsewhere a rounding upstream can change the value wholly
        if expression.has(sympy.zoo, sympy.nan):  # e.g. x0/(x1 - x1): undefined, and so is the tree
            assert not ok.any(), text
            continue
        with np.errstate(all="ignore"):
            got = np.broadcast_to(np.asarray(sympy.lambdify(names, expression)(*X.T), dtype=complex), expected.shape)
        np.testing.assert_allclose(got[ok].real, expected[ok], rtol=1e-9, atol=1e-9, err_msg=text)
        checked += int(ok.any())
    assert checked > 200, checked
