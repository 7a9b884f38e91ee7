"""The final front's snapping (``_search._Evolution.snap_constants``): a fitted constant is made
the simplest value (an integer, else a half, else a multiple of pi) that the data cannot tell from it."""

import math

import numpy as np

from parsimony.losses import as_loss
from parsimony.symbolic._engine import Grammar, Search
from parsimony.symbolic._evaluator import make_data, tree_loss
from parsimony.symbolic._expressions import (
    CONST, DEFAULT_OPERATORS, TOKEN_COMPLEXITY, complexity_weights, from_tokens, operator_codes, to_sympy,
)
from parsimony.symbolic._search import (
    SNAP_PRICE, HallsOfFame, SearchSettings, _Evolution, _final_front, _fresh_state, _mutation_vector, constant_baseline,
    simpler_wins, search_kernel_settings, snap_allowance, snap_values,
)


def _run(X, y):
    """An evolution over ``(X, y)`` (median loss) as :func:`run_search` builds it, and its baseline."""
    settings = SearchSettings(populations=1, population_size=10)
    binops, unops, _ = operator_codes(DEFAULT_OPERATORS)
    weights = complexity_weights(TOKEN_COMPLEXITY)
    w, loss = np.ones(len(y)), as_loss("pinball", 0.5)
    data = make_data(np.ascontiguousarray(X.T), y, w, loss, None)
    baseline = constant_baseline(y, w, loss)
    search = Search(Grammar(binops, unops, weights, np.cumsum(np.full(X.shape[1], 1.0 / X.shape[1]))),
                    _mutation_vector(settings.mutation_weights), search_kernel_settings(settings, baseline),
                    np.zeros(settings.maxsize + 1))
    return _Evolution(_fresh_state(None, "", 0, settings, None), data, search, settings, None), baseline


def _gaussian(rng, n, noise):  # exp(-x0^2 / (2 x1^2)) / x1, Feynman I.6.2's shape
    X = np.column_stack([rng.uniform(-3, 3, n), rng.uniform(1, 3, n)])
    y = np.exp(-X[:, 0] ** 2 / (2 * X[:, 1] ** 2)) / X[:, 1]
    return X, y + rng.normal(0, noise * np.sqrt(np.mean(y ** 2)), n)


def _model(inner, outer, X, y):
    """``outer * exp(inner * x0^2 / x1^2) / x1 + a``, ``a`` the median residual (a calibrated median)."""
    f = outer * np.exp(inner * X[:, 0] ** 2 / X[:, 1] ** 2) / X[:, 1]
    return from_tokens([outer, inner, "x0", "square", "mul", "x1", "square", "div", "exp", "mul", "x1", "div",
                        float(np.median(y - f)), "add"])


def test_snap_values_are_an_integer_then_a_half_then_multiples_of_pi():
    pi = math.pi
    assert snap_values(-0.5014, 1000) == [-1.0, -0.5, -2 / pi, -3 / 2 / pi, -5 / pi**2]
    assert snap_values(2.98, 1000) == [3.0, pi, pi**2 / 2]
    assert snap_values(0.2, 1000) == [0.0, 1 / pi, 1 / 2 / pi, 2 / pi**2]  # each value once, 0 an integer
    assert snap_values(1.26, 1000)[:2] == [1.0, 1.5]
    # only values cheaper to write than to fit (|p| q at most sqrt(rows), p's trailing zeros dropped)
    assert snap_values(40.3, 1000) == [40.0, 4 * pi**2] and snap_values(40.3, 10) == []
    assert snap_values(-4441.3, 1000) == [] and snap_values(-4441.3, 2e7) == [-4441.0]  # not 1414 pi
    assert snap_values(12.5, 1000)[:2] == [12.0, 4 * pi]
    assert 13 * pi not in snap_values(40.8, 1e6)  # a multiple of pi at most SNAP_PI_MULTIPLE


def test_a_multiple_of_pi_is_made_exact_on_exact_data():
    # 2 pi sqrt(x0) - 3 fitted to exact data to 1e-12: the scale is 2 pi, printed so
    X = np.random.default_rng(6).uniform(1, 5, (1000, 1))
    run, baseline = _run(X, 2 * math.pi * np.sqrt(X[:, 0]) - 3)
    ops, feats, vals = from_tokens([2 * math.pi * (1 + 1e-12), "x0", "sqrt", "mul", -3.0, "add"])
    _, new_vals = run.snap_constants(ops, feats, vals, _loss(run, (ops, feats, vals)), SNAP_PRICE * baseline)
    assert new_vals.tolist()[::4] == [2 * math.pi, -3.0]


def test_multiples_of_pi_print_exactly():
    import sympy

    t = sympy.Symbol("t")
    for value, exact in [(1 / 2 / math.pi, 1 / (2 * sympy.pi)), (4 * math.pi, 4 * sympy.pi), (math.pi**2, sympy.pi**2),
                         (-3 / 2, sympy.Rational(-3, 2)), (0.1, sympy.Float(0.1))]:
        ops, feats, vals = from_tokens([value, "x0", "mul", "exp"], n_features=1)
        assert to_sympy(ops, feats, vals, len(ops), [t]) == sympy.exp(exact * t)


def _hyperbola(X, offset):
    """``6 / (x0 + 2) + offset``."""
    return from_tokens([6.0, "x0", 2.0, "add", "div", offset, "add"])


def test_the_offset_of_a_law_is_snapped_and_a_fits_stays_loss_optimal():
    # 6/(x0 + 2) - 3 under 1% noise: fitted, the offset is -3 give or take the noise; with every
    # other constant simple the expression is the law but for its offset, which is made -3
    rng = np.random.default_rng(4)
    X = rng.uniform(1, 5, (1000, 1))
    f = 6 / (X[:, 0] + 2) - 3
    y = f + rng.normal(0, 0.01 * np.sqrt(np.mean(f ** 2)), 1000)
    run, baseline = _run(X, y)
    median = float(np.median(y - 6 / (X[:, 0] + 2)))
    assert median != -3.0
    ops, feats, vals = _hyperbola(X, median)
    loss, new_vals = run.snap_constants(ops, feats, vals, _loss(run, (ops, feats, vals)), SNAP_PRICE * baseline)
    assert new_vals[-2] == -3.0 and loss == _loss(run, (ops, feats, new_vals))
    # 6.3 sqrt(x0) - 3: a fitted scale besides it (not 2 pi: multiples of pi only on exact data),
    # the offset calibrates a fit and stays as fitted
    y = 6.3 * np.sqrt(X[:, 0]) - 3 + (y - f)
    run, baseline = _run(X, y)
    median = float(np.median(y - 6.3 * np.sqrt(X[:, 0])))
    ops, feats, vals = from_tokens([6.3, "x0", "sqrt", "mul", median, "add"])
    _, new_vals = run.snap_constants(ops, feats, vals, _loss(run, (ops, feats, vals)), SNAP_PRICE * baseline)
    assert new_vals.tolist() == vals.tolist()


def test_a_large_constant_is_not_made_an_integer():
    # 4441.3 x0 + 7: an integer 4441 costs next to nothing, but writing it costs more than fitting it
    rng = np.random.default_rng(5)
    X = rng.uniform(1, 5, (1000, 1))
    y = 4441.3 * X[:, 0] + 7 + rng.normal(0, 1, 1000)
    run, baseline = _run(X, y)
    ops, feats, vals = from_tokens([4441.3, "x0", "mul", 7.0, "add"])
    _, new_vals = run.snap_constants(ops, feats, vals, _loss(run, (ops, feats, vals)), SNAP_PRICE * baseline)
    assert new_vals[0] == 4441.3


def test_a_half_within_the_noise_is_snapped():
    rng = np.random.default_rng(0)
    X, y = _gaussian(rng, 1000, 0.01)
    run, baseline = _run(X, y)
    ops, feats, vals = _model(-0.5014, 0.998, X, y)
    loss = tree_loss(ops, feats, vals, len(ops), run.data, run.full_ws)
    new_loss, new_vals = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
    assert new_vals[1] == -0.5  # the exponent's half, exactly
    assert new_loss <= loss + SNAP_PRICE * baseline
    # the integer is tried first: a 1 in the place of a fitted 0.998 is taken, the half stays
    assert new_vals[0] == 1.0


def test_a_constant_the_data_tells_from_a_half_stays():
    rng = np.random.default_rng(1)
    X, y = _gaussian(rng, 1000, 0.0)
    y = np.exp(-0.45 * X[:, 0] ** 2 / X[:, 1] ** 2) / X[:, 1]  # 0.45: neither 0 nor 1/2
    run, baseline = _run(X, y)
    ops, feats, vals = _model(-0.45, 1.0, X, y)
    loss = tree_loss(ops, feats, vals, len(ops), run.data, run.full_ws)
    _, new_vals = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
    assert new_vals[1] == -0.45


def _line(X, y, slope):
    """``slope * x0 + a``, ``a`` the median residual (the loss-optimal offset of that slope)."""
    return from_tokens([slope, "x0", "mul", float(np.median(y - slope * X[:, 0])), "add"])


def _loss(run, tree):
    ops, feats, vals = tree
    return tree_loss(ops, feats, vals, len(ops), run.data, run.full_ws)


def test_under_noise_a_snap_within_the_schwarz_allowance_is_taken():
    # y = k x0 + noise as large as the signal: the line's loss is most of the constant's, so what
    # one constant is worth (Schwarz: log(n)/(2n) of the loss) is more than SNAP_PRICE of the
    # constant's loss. The fitted slope (the grid's loss-optimal) is made 2 when that costs
    # between the two (k = 2.2), and stays when it costs more than the Schwarz allowance (k = 2.3)
    rng = np.random.default_rng(2)
    X = rng.uniform(1, 3, (1000, 1))
    noise = rng.normal(0, 1, 1000)
    for k, made in ((2.2, True), (2.3, False)):
        y = k * X[:, 0] + noise
        run, baseline = _run(X, y)
        slopes = np.linspace(1.8, 2.6, 801)
        losses = [_loss(run, _line(X, y, s)) for s in slopes]
        fitted, base = slopes[int(np.argmin(losses))], min(losses)
        cost = _loss(run, _line(X, y, 2.0)) - base
        schwarz = snap_allowance(base, 0.0, 1000, 1)
        # (what makes the case: the old fixed price alone would keep the slope in both)
        assert SNAP_PRICE * baseline < cost and (cost < 0.8 * schwarz if made else cost > 1.2 * schwarz)
        ops, feats, vals = _line(X, y, fitted)
        _, new_vals = run.snap_constants(ops, feats, vals, base, SNAP_PRICE * baseline)
        assert (new_vals[0] == 2.0) == made


def test_snap_allowance_is_the_price_on_exact_data_and_grows_with_the_loss():
    assert snap_allowance(0.0, 1e-3, 1000, 1) == 1e-3
    one, two = snap_allowance(0.5, 0.0, 1000, 1), snap_allowance(0.5, 0.0, 1000, 2)
    assert np.isclose(one, 0.5 * np.expm1(np.log(1000) / 2000)) and np.isclose(two, 0.5 * np.expm1(np.log(1000) / 1000))
    assert snap_allowance(1.0, 0.0, 1000, 1) > one  # in units of the loss: the noise's spread
    assert snap_allowance(0.5, 0.0, 1000, 1, squared=True) > one  # log(loss) / 2 for a squared loss


def test_of_one_complexity_the_entry_with_fewer_fitted_constants_wins_when_the_data_cannot_tell():
    # 0.5*x0 + a beside 0.4966*x0 + a (one complexity; the offset ``a`` is fitted in both): the
    # simple slope wins while its loss exceeds the other's by at most one constant's allowance
    rng = np.random.default_rng(0)
    X, y = _gaussian(rng, 1000, 0.1)
    run, _ = _run(X, y)
    simple, fitted = (from_tokens([k, "x0", "mul", 0.123, "add"]) for k in (0.5, 0.4966))
    one = snap_allowance(1.0, 0.0, 1000, 1)  # of a loss of 1, on 1,000 equally weighted rows
    assert simpler_wins((1.0 + 0.9 * one, *simple), (1.0, *fitted), 0.0, run.data)
    assert not simpler_wins((1.0 + 1.1 * one, *simple), (1.0, *fitted), 0.0, run.data)
    # the other way round: the fitted entry must beat the simple one by more than the allowance
    assert not simpler_wins((1.0 - 0.9 * one, *fitted), (1.0, *simple), 0.0, run.data)
    assert simpler_wins((1.0 - 1.1 * one, *fitted), (1.0, *simple), 0.0, run.data)
    # as many fitted constants: the lower loss
    assert simpler_wins((0.99, *fitted), (1.0, *fitted), 0.0, run.data)
    assert not simpler_wins((1.0, *simple), (0.99, *simple), 0.0, run.data)


def test_the_constant_the_data_let_go_most_cheaply_is_snapped_first():
    # 10/sqrt(2 pi) exp(-x0^2 / (2 x1^2)) / x1 under 1% noise, fitted 3.985 and -0.503: 4 is as
    # simple as -1/2 and costs little with the exponent refitted (to -0.499), but then the
    # exponent's half costs more than the allowance. The half costs less: it goes first
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-3, 3, 1000), rng.uniform(1, 3, 1000)])
    f = 10 / np.sqrt(2 * np.pi) * np.exp(-X[:, 0] ** 2 / (2 * X[:, 1] ** 2)) / X[:, 1]
    y = f + rng.normal(0, 0.01 * np.sqrt(np.mean(f ** 2)), 1000)
    run, baseline = _run(X, y)
    ops, feats, vals = _model(-0.503, 3.985, X, y)
    loss, new_vals = run.snap_constants(ops, feats, vals, _loss(run, (ops, feats, vals)), SNAP_PRICE * baseline)
    assert new_vals[1] == -0.5
    assert loss == _loss(run, (ops, feats, new_vals))


def test_an_entry_passed_over_for_one_that_snapping_makes_worse_is_on_the_final_front():
    # the halls of fame hold 0.5913*x0 (3 tokens, loss 1.0) and sqrt(x0) (5 tokens, loss 1.005):
    # the longer one is dominated before snapping, but 0.5913 made 0.5 raises the shorter to 1.01,
    # above it: dominance is decided on the snapped losses, so both make the front
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (200, 1))
    run, baseline = _run(X, X[:, 0] + rng.normal(0, 0.1, 200))
    weights = complexity_weights(TOKEN_COMPLEXITY)
    short, law = from_tokens([0.5913, "x0", "mul"]), from_tokens(["x0", "sqrt"])
    hof = HallsOfFame.empty(1, 8, 4)
    for (ops, feats, vals), loss in ((short, 1.0), (law, 1.005)):
        c, n = int(weights[ops].sum()), len(ops)
        hof.ops[0, c, :n], hof.feats[0, c, :n], hof.vals[0, c, :n], hof.length[0, c], hof.loss[0, c] = (
            ops, feats, vals, n, loss)

    def candidates(ops, feats, vals, loss, polish=True):  # each entry as it is; the constant at 2
        yield (loss if polish else 2.0), int(weights[ops].sum()), ops, feats, vals

    def snap(ops, feats, vals, loss, price, firsts=None):  # 0.5913 -> 0.5 at 1% of the loss
        return (1.01 * loss, np.where(vals == 0.5913, 0.5, vals)) if 0.5913 in vals else (loss, vals)

    run.front_candidates, run.snap_constants = candidates, snap
    front = _final_front(run, hof, run.data, as_loss("pinball", 0.5), weights, 8, 0, baseline)
    assert [(row["complexity"], row["loss"]) for row in front] == [(1, 2.0), (3, 1.01), (5, 1.005)]


def _fitted(run, tokens, rng, move=0.1):
    """The expression ``tokens`` with each constant moved by up to ``move`` (a share), then every constant
    fitted to the run's rows (the final front's refit, until the loss stops falling): an entry
    of the final front as polished, on any point of a redundant scale's line."""
    ops, feats, vals = from_tokens(tokens)
    consts = np.flatnonzero(ops == CONST)
    vals[consts] *= 1 + rng.uniform(-move, move, consts.size)
    loss = _loss(run, (ops, feats, vals))
    for _ in range(30):
        new, fit = run._refit(ops, feats, vals, consts, loss)
        if not new < loss * (1 - 1e-9):
            break
        loss, vals = new, fit
    return ops, feats, vals, loss


def _noisy(rng, X, f, level):
    return f + rng.normal(0, level * np.sqrt(np.mean(f ** 2)), len(f))


def test_a_constant_a_snap_moved_is_tried_again():
    # 90/(x0 - 3) - 2 written 0.72 * (125/(x0 - 3)) - 2.1 (a redundant factor), tried in the
    # order scale, factor, pole, offset: the scale has no simple value near; the factor made 1
    # (or 1/2) moves it to 90.0x (or 180.0x), whose 90 (or 180) is then taken
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = rng.uniform(4, 8, (1000, 1))
        run, baseline = _run(X, _noisy(rng, X, 90 / (X[:, 0] - 3) - 2, 0.01))
        ops, feats, vals, loss = _fitted(run, [0.72, 125.0, "x0", 3.0, "sub", "div", "mul", -2.1, "add"], rng, 0.0)
        assert not snap_values(vals[1], 1000, pi=False)

        def limit(k, base=loss):
            return base + snap_allowance(base, SNAP_PRICE * baseline, 1000, k)

        new, _, made, free, _ = run._snap_in_turn(ops, feats, vals, loss, [1, 0, 3, 7], 7, 1000, False, limit)
        assert new[0] * new[1] == 90.0 and new[3] == 3.0 and made >= 3


def test_of_a_redundant_scale_the_constant_that_lets_the_others_be_simple_goes():
    # e/(p - q x0^2/x1^2)^2 (p = q = 1): any one of e, p, q goes free (the others refitted); made
    # first, e's nearest simple value (3, 2.5) leaves p and q at 1.05 or so. The law keeps e fitted
    law = [math.e, 1.0, 1.0, "x0", "x1", "div", "square", "mul", "sub", "square", "div"]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = np.column_stack([rng.uniform(0.3, 1, 1000), rng.uniform(1.5, 3, 1000)])
        run, baseline = _run(X, _noisy(rng, X, math.e / (1 - X[:, 0] ** 2 / X[:, 1] ** 2) ** 2, 0.01))
        ops, feats, vals, loss = _fitted(run, law, rng)
        _, new = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
        assert new[1] == new[2] == 1.0 and abs(new[0] - math.e) < 0.01


def test_beside_a_fitted_scale_the_exponent_is_made_simple_and_the_offset_calibrates():
    # e exp(-x0) + 3: the scale stays fitted, the exponent's -1 is the law's, the offset stays
    # loss-optimal (made simple beside fitted constants, offsets of real data look like laws')
    law = [math.e, -1.0, "x0", "mul", "exp", "mul", 3.0, "add"]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = rng.uniform(0, 3, (1000, 1))
        run, baseline = _run(X, _noisy(rng, X, math.e * np.exp(-X[:, 0]) + 3, 0.01))
        ops, feats, vals, loss = _fitted(run, law, rng)
        _, new = run.snap_constants(ops, feats, vals, loss, SNAP_PRICE * baseline)
        assert new[1] == -1.0 and abs(new[0] - math.e) < 0.02 and new[0] not in snap_values(new[0], 1000)
