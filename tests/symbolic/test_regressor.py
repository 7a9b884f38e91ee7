"""SymbolicQuantileRegressor: recovery, coverage, reproducibility, exports, bad input, sklearn checks."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from parsimony.backend import JuliaUnavailableError, julia_status
from parsimony.losses import Squared
from parsimony.metrics import coverage, pinball_loss
from parsimony.symbolic import SymbolicQuantileRegressor, select_equation
from parsimony.symbolic._search import feature_probabilities, pareto_complexities

TINY = dict(niterations=2, populations=2, population_size=10, ncycles_per_iteration=5, progress=False)


def _quadratic(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    return X, 2.5 * X[:, 0] ** 2 + np.cos(X[:, 1])


@pytest.fixture(scope="module")
def quadratic_model():
    X, y = _quadratic()
    # (a law simple in signed features: shifting them, rescale=True, makes cos(x1) a fitted phase)
    model = SymbolicQuantileRegressor(random_state=0, progress=False, rescale="scale").fit(X, y)
    return model, X, y


def test_noiseless_recovery(quadratic_model):
    model, X, y = quadratic_model
    eq = model.equations_
    assert list(eq.columns) == ["complexity", "loss", "score", "equation", "sympy", "lower", "upper", "coverage",
                                "certified"]
    assert eq["loss"].min() < 1e-6
    assert np.all(np.diff(eq["complexity"]) > 0) and np.all(np.diff(eq["loss"]) < 0)  # a Pareto front
    # losses are the exact training pinball losses of the listed expressions
    for i in range(len(eq)):
        assert eq["loss"].iloc[i] == pytest.approx(pinball_loss(y, model.predict(X, index=i), 0.5), rel=1e-9,
                                                   abs=1e-12)
    # the selected expression is the exact one, printed readably
    assert model.equations_["loss"].iloc[model.best_index_] < 1e-6
    import sympy

    x0, x1 = sympy.symbols("x0 x1")
    assert (sympy.simplify(model.sympy() - (2.5 * x0**2 + sympy.cos(x1))).equals(0)
            or abs(float((model.sympy() - 2.5 * x0**2 - sympy.cos(x1)).subs({x0: 1.3, x1: 0.4}))) < 1e-6)
    assert "cos" in model.latex() and model.complexity_ == eq["complexity"].iloc[model.best_index_]


def test_heteroskedastic_quantile_coverage():
    from parsimony.datasets import make_heteroskedastic

    X, y = make_heteroskedastic(n_samples=1000, random_state=1)
    Xt, yt = make_heteroskedastic(n_samples=4000, random_state=2)
    model = SymbolicQuantileRegressor(quantile=0.9, random_state=0, progress=False).fit(X, y)
    assert abs(coverage(yt, model.predict(Xt)) - 0.9) < 0.03


def test_same_seed_same_equations_for_any_n_jobs():
    X, y = _quadratic(100, seed=1)
    kw = dict(niterations=4, populations=4, ncycles_per_iteration=20, progress=False, random_state=3)
    a = SymbolicQuantileRegressor(n_jobs=1, **kw).fit(X, y)
    b = SymbolicQuantileRegressor(n_jobs=2, **kw).fit(X, y)
    c = SymbolicQuantileRegressor(n_jobs=1, **{**kw, "random_state": 4}).fit(X, y)
    assert a.equations_["equation"].tolist() == b.equations_["equation"].tolist()
    np.testing.assert_array_equal(a.equations_["loss"], b.equations_["loss"])
    assert a.n_evaluations_ == b.n_evaluations_
    # another seed takes another path (its front may still be the same: both find the law here)
    assert (a.n_evaluations_ != c.n_evaluations_
            or a.equations_["equation"].tolist() != c.equations_["equation"].tolist())


def test_search_runs_on_one_blas_thread_and_restores_the_callers(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    from parsimony.symbolic import _search

    inside, run_search = [], _search.run_search

    def recording(*args, **kwargs):
        inside.extend(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")
        return run_search(*args, **kwargs)

    monkeypatch.setattr(_search, "run_search", recording)
    X, y = _quadratic(100)
    with threadpool_limits(2, user_api="blas"):
        SymbolicQuantileRegressor(random_state=0, **TINY).fit(X, y)
        after = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert inside and set(inside) == {1}
    assert set(after) == {2}


def test_pickle_roundtrip(quadratic_model):
    model, X, _ = quadratic_model
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    assert clone.equations_["equation"].tolist() == model.equations_["equation"].tolist()


@pytest.mark.parametrize("batch_size, offset", [(None, 0.0), (64, 0.0), (None, 3.0)])
def test_warm_start_goes_on_where_the_last_fit_stopped(batch_size, offset):
    X, y = _quadratic(200)
    X = X + offset  # signed features: two searches (rescale=True); offset 3: one
    kw = dict(populations=3, population_size=12, ncycles_per_iteration=8, progress=False, random_state=3,
              batch_size=batch_size, quantile=[0.2, 0.8])
    whole = SymbolicQuantileRegressor(niterations=5, **kw).fit(X, y)
    split = SymbolicQuantileRegressor(niterations=3, warm_start=True, **kw).fit(X, y)
    split = pickle.loads(pickle.dumps(split))  # the search state travels with the model
    split.set_params(niterations=2).fit(X, y)
    for a, b in zip(whole.equations_, split.equations_):
        assert a["equation"].tolist() == b["equation"].tolist()
        np.testing.assert_array_equal(a["loss"], b["loss"])
    assert split.n_evaluations_ < whole.n_evaluations_
    # without warm_start, or when the search changes shape, fit starts afresh
    again = SymbolicQuantileRegressor(niterations=5, **kw).fit(X, y).fit(X, y)
    assert again.equations_[0]["equation"].tolist() == whole.equations_[0]["equation"].tolist()
    other = split.set_params(niterations=5, population_size=11).fit(X, y)
    fresh = SymbolicQuantileRegressor(niterations=5, **{**kw, "population_size": 11}).fit(X, y)
    assert other.equations_[1]["equation"].tolist() == fresh.equations_[1]["equation"].tolist()


def test_warm_start_on_new_data_scores_the_front_on_it():
    X, y = _quadratic(200)
    model = SymbolicQuantileRegressor(niterations=3, warm_start=True, random_state=0, **{
        k: v for k, v in TINY.items() if k != "niterations"}).fit(X, y)
    y_new = -3.0 * y + 50.0
    model.fit(X, y_new)
    for i, loss in enumerate(model.equations_["loss"]):
        assert loss == pytest.approx(pinball_loss(y_new, model.predict(X, index=i), 0.5), rel=1e-9)


def test_several_quantiles_and_rearrangement():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 2, size=(300, 1))
    y = X[:, 0] + X[:, 0] ** 2 * rng.normal(size=300)
    taus = [0.9, 0.1, 0.5]
    model = SymbolicQuantileRegressor(quantile=taus, random_state=0, progress=False, niterations=5,
                                      rearrange=True).fit(X, y)
    assert isinstance(model.equations_, list) and len(model.equations_) == 3
    pred = model.predict(X)
    assert pred.shape == (300, 3)
    assert np.all(pred[:, 1] <= pred[:, 2]) and np.all(pred[:, 2] <= pred[:, 0])  # tau order 0.1 <= 0.5 <= 0.9
    raw = SymbolicQuantileRegressor(quantile=taus, random_state=0, progress=False, niterations=5).fit(X, y)
    # rearrangement only sorts: the multiset of the row's predictions is unchanged
    np.testing.assert_allclose(np.sort(raw.predict(X), axis=1), np.sort(pred, axis=1))
    assert len(model.sympy()) == 3 and len(model.latex()) == 3


def test_score_is_the_pinball_share_explained_at_each_level():
    from sklearn.metrics import d2_pinball_score, r2_score

    X, y = _quadratic(120)
    taus = [0.2, 0.7]
    model = SymbolicQuantileRegressor(quantile=taus, random_state=0, **TINY).fit(X, y)
    pred = model.predict(X)
    expected = np.mean([d2_pinball_score(y, pred[:, j], alpha=t) for j, t in enumerate(taus)])
    assert model.score(X, y) == pytest.approx(expected)
    squared = SymbolicQuantileRegressor(loss="squared", random_state=0, **TINY).fit(X, y)
    assert squared.score(X, y) == pytest.approx(r2_score(y, squared.predict(X)))
    absolute = SymbolicQuantileRegressor(loss="absolute", random_state=0, **TINY).fit(X, y)
    assert absolute.score(X, y) == pytest.approx(d2_pinball_score(y, absolute.predict(X), alpha=0.5))


def test_predict_and_score_use_the_fitted_levels_not_the_current_parameters():
    from sklearn.metrics import d2_pinball_score

    X, y = _quadratic(120)
    model = SymbolicQuantileRegressor(quantile=0.3, random_state=0, **TINY).fit(X, y)
    pred = model.predict(X)
    model.set_params(quantile=[0.1, 0.9], loss="squared")  # not refitted: the fitted model is unchanged
    assert model.predict(X).shape == (len(y),)
    np.testing.assert_array_equal(model.predict(X), pred)
    assert model.score(X, y) == pytest.approx(d2_pinball_score(y, pred, alpha=0.3))
    several = SymbolicQuantileRegressor(quantile=[0.2, 0.8], random_state=0, **TINY).fit(X, y)
    assert several.set_params(quantile=0.5).predict(X).shape == (len(y), 2)


def test_front_rows_lower_the_loss_beyond_a_negligible_fraction():
    # 5: a 1e-8 gain (an offset of 1e-7); 6: worse; 9: a real gain; 13: no gain below an exact fit
    losses = {1: 2.0, 3: 1.0, 5: 1.0 - 1e-8, 6: 1.2, 7: 0.5, 9: 0.5 * (1 - 1e-3), 11: 0.0, 13: 0.0}
    assert pareto_complexities(losses, baseline=2.0) == [1, 3, 7, 9, 11]


def test_time_limit_returns_the_current_front():
    X, y = _quadratic(200)
    model = SymbolicQuantileRegressor(niterations=10_000, time_limit=0.5, progress=False, random_state=0).fit(X, y)
    assert model.status_ == "time_limit" and len(model.equations_) >= 1
    assert np.isfinite(model.predict(X)).all()


def test_time_limit_does_not_count_steps_that_compiled_kernels(monkeypatch):
    # a first fit in a fresh process spends its first steps compiling: that time is not search time
    import time

    from parsimony.symbolic import _search

    calls = iter(range(10**9))
    monkeypatch.setattr(_search, "compiled_kernels", lambda: next(calls))  # every step "compiles"
    real_step = _search._Evolution.sync

    def slow_sync(self, *args):
        time.sleep(0.02)
        return real_step(self, *args)

    monkeypatch.setattr(_search._Evolution, "sync", slow_sync)
    real_make_data = _search.make_data

    def slow_make_data(*args):  # set-up before the first step that compiled kernels (or a loaded machine)
        time.sleep(0.05)
        return real_make_data(*args)

    monkeypatch.setattr(_search, "make_data", slow_make_data)
    X, y = _quadratic(100)
    model = SymbolicQuantileRegressor(niterations=5, time_limit=0.01, progress=False, random_state=0).fit(X, y)
    assert model.status_ == "completed"


def test_predictions_stay_finite_outside_the_training_domain():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, size=(150, 1))
    y = np.log(X[:, 0]) * 2
    model = SymbolicQuantileRegressor(operators=["add", "mul", "log"], random_state=0, progress=False,
                                      niterations=5).fit(X, y)
    assert model.equations_["loss"].min() < 1e-6
    X_new = np.array([[-1.0], [0.0], [2.0]])
    pred = model.predict(X_new)
    assert np.isfinite(pred).all()


def test_feature_names_and_index():
    X, y = _quadratic(100)
    frame = pd.DataFrame(X, columns=["speed", "angle"])
    model = SymbolicQuantileRegressor(random_state=0, **{**TINY, "niterations": 3}).fit(frame, y)
    assert any("speed" in e or "angle" in e for e in model.equations_["equation"])
    assert model.predict(frame, index=0).shape == (100,)
    with pytest.raises(ValueError, match="out of range"):
        model.predict(frame, index=99)


@pytest.mark.parametrize("method", ["best", "score", "accuracy", "elbow"])
def test_select_equation(method):
    frame = pd.DataFrame({"complexity": [1, 3, 5, 9, 15], "loss": [10.0, 4.0, 1.0, 0.9, 0.8]})
    frame["score"] = np.r_[0, -np.diff(np.log(frame["loss"])) / np.diff(frame["complexity"])]
    # "best" for the pinball loss: highest score within sqrt(1.5) x the lowest loss (0.9 and 0.8 qualify)
    expected = {"accuracy": 4, "score": 2, "best": 3, "elbow": 2}[method]
    assert select_equation(frame, method) == expected
    # PySR's factor 1.5 for a squared loss also admits the loss 1.0 with the steepest score
    assert select_equation(frame, method, squared_loss=True) == (2 if method == "best" else expected)
    # calibration: among admissible rows only calibrated ones compete
    frame["coverage"] = [0.5, 0.5, 0.5, 0.7, 0.52]
    if method == "best":
        assert select_equation(frame, method, quantile=0.5, tolerance=0.05) == 4


def test_select_equation_cost_weighs_every_row_against_every_other():
    from parsimony.symbolic.regressor import SELECTION_PARSIMONY

    frame = pd.DataFrame({"complexity": [1, 3, 5, 9, 15], "loss": [10.0, 4.0, 1.0, 0.9, 0.8]})
    frame["score"] = np.r_[0, -np.diff(np.log(frame["loss"])) / np.diff(frame["complexity"])]
    for baseline in (10.0, 1.0, 0.1, 0.01):  # brute force of the cost
        cost = frame["loss"] / baseline + SELECTION_PARSIMONY * frame["complexity"]
        assert select_equation(frame, "cost", baseline=baseline) == int(np.argmin(cost))
    # a token must buy 1.6% of the constant's loss: from complexity 5 to 15 the loss falls by 0.2, 2% of a
    # constant's 10 (less than 10 tokens' 16%) but 20% of a constant's 1
    assert select_equation(frame, "cost", baseline=10.0) == 2
    assert select_equation(frame, "cost", baseline=1.0) == 4
    with pytest.raises(ValueError, match="baseline"):
        select_equation(frame, "cost")
    # a dearer token buys less: at 0.03 a token from complexity 5 to 15 the loss at baseline 1 must fall by 0.3
    assert select_equation(frame, "cost", baseline=1.0, token_price=0.03) == 2
    assert select_equation(frame, "cost", baseline=1.0, token_price=0.0) == 4
    with pytest.raises(ValueError, match="token_price must be a number >= 0"):
        select_equation(frame, "cost", baseline=1.0, token_price=-0.1)
    # calibration is worth up to CALIBRATION_TOKENS tokens: the cheapest calibrated row wins when it costs at
    # most that much more than the cheapest row (complexity 15, cost 1.04 at baseline 1), else not
    frame["coverage"] = [0.5, 0.5, 0.5, 0.5, 0.7]
    assert select_equation(frame, "cost", quantile=0.5, tolerance=0.05, baseline=1.0) == 3  # 1.044 <= 1.04 + 0.064
    frame["coverage"] = [0.5, 0.5, 0.5, 0.7, 0.7]
    assert select_equation(frame, "cost", quantile=0.5, tolerance=0.05, baseline=1.0) == 2  # 1.08 <= 1.04 + 0.064
    frame["coverage"] = [0.5, 0.5, 0.7, 0.7, 0.7]
    assert select_equation(frame, "cost", quantile=0.5, tolerance=0.05, baseline=1.0) == 4  # 4.048 > 1.04 + 0.064
    frame["coverage"] = [0.7] * 5
    assert select_equation(frame, "cost", quantile=0.5, tolerance=0.05, baseline=1.0) == 4


def test_select_equation_cost_takes_the_simplest_exact_row_given_the_rows():
    from parsimony.symbolic.regressor import EXACT_LOSS, ROWS_PER_TOKEN

    frame = pd.DataFrame({"complexity": [1, 5, 17, 20], "loss": [10.0, 0.5, 1e-12, 0.0]})
    frame["score"] = 0.0
    # the cost alone prefers complexity 5 (0.05 + 0.08 < 0.272); the row at 17 reproduces the targets
    assert select_equation(frame, "cost", baseline=10.0) == 1
    assert select_equation(frame, "cost", baseline=10.0, n_samples=ROWS_PER_TOKEN * 17) == 2
    # too few rows per token: an interpolation, not a law
    assert select_equation(frame, "cost", baseline=10.0, n_samples=ROWS_PER_TOKEN * 17 - 1) == 1
    frame.loc[2, "loss"] = 10.0 * EXACT_LOSS * 2  # not exact: the next exact row (20) is
    assert select_equation(frame, "cost", baseline=10.0, n_samples=1000) == 3


def test_select_equation_sic_buys_complexity_with_rows():
    frame = pd.DataFrame({"complexity": [1, 3, 5, 9, 15], "loss": [10.0, 4.0, 1.0, 0.9, 0.8]})
    frame["score"] = np.r_[0, -np.diff(np.log(frame["loss"])) / np.diff(frame["complexity"])]
    # the rows "best" admits are 0.9 (complexity 9) and 0.8 (15); log(0.9 / 0.8) = 0.118 is worth
    # 6 more tokens only when log(n) / (2 n) < 0.0196, i.e. from about n = 125 rows on
    assert select_equation(frame, "sic", n_samples=100) == 3
    assert select_equation(frame, "sic", n_samples=200) == 4
    assert select_equation(frame, "sic", n_samples=1e6) == 4
    with pytest.raises(ValueError, match="n_samples"):
        select_equation(frame, "sic")
    X = np.random.default_rng(0).uniform(-2, 2, (80, 2))
    model = SymbolicQuantileRegressor(0.5, model_selection="sic", niterations=3, random_state=0, progress=False)
    model.fit(X, X[:, 0] ** 2 + X[:, 1])
    assert 0 <= model.best_index_ < len(model.equations_)


@pytest.mark.parametrize("params, message", [
    ({"quantile": 1.2}, "quantile"),
    ({"quantile": 0.0}, "quantile"),
    ({"operators": ["add", "tanh"]}, "unknown operator"),
    ({"operators": ["sin"]}, "binary operator"),
    ({"maxsize": 0}, "maxsize"),
    ({"model_selection": "median"}, "model_selection"),
    ({"complexity_of_operators": {"add": 0}}, "complexity_of_operators"),
    ({"parsimony": -1.0}, "parsimony"),
    ({"niterations": 0}, "niterations"),
    ({"time_limit": 0}, "time_limit"),
    ({"feature_relevance": 1.5}, "feature_relevance"),
    ({"feature_relevance": -0.1}, "feature_relevance"),
    ({"additive_stage": "yes"}, "additive_stage"),
    ({"backend": "rust"}, "backend"),
])
def test_bad_parameters(params, message):
    X, y = _quadratic(20)
    with pytest.raises(ValueError, match=message):
        SymbolicQuantileRegressor(**{**TINY, **params}).fit(X, y)


@pytest.mark.parametrize("params, error, message", [
    ({"quantile": "0.5"}, TypeError, r"quantile must be a number in \(0, 1\) or a sequence of them, got the string"),
    ({"operators": None}, TypeError, r"operators must be a sequence of operator names"),
    ({"complexity_of_operators": [1, 2]}, TypeError, r"complexity_of_operators must be a dict"),
    ({"complexity_of_operators": {"sin": 2.5}}, ValueError, r"complexity_of_operators\['sin'\] must be an integer"),
    ({"maxsize": 2.5}, TypeError, r"maxsize must be 'auto' or an integer >= 1, got 2.5"),
    ({"batch_size": "big"}, ValueError, r"batch_size must be None or 'auto' or an integer >= 16"),
    ({"loss": "huber"}, ValueError, r"loss must be None or one of 'pinball', 'quantile', 'squared', 'absolute'"),
    ({"progress": "yes"}, TypeError, r"progress must be True or False"),
    ({"random_state": "seed"}, TypeError, r"random_state must be None, an int or a numpy"),
    ({"n_jobs": 0}, ValueError, r"n_jobs must be a positive integer, -1 \(all cores\) or None"),
])
def test_bad_parameters_name_the_parameter_and_what_is_valid(params, error, message):
    X, y = _quadratic(20)
    with pytest.raises(error, match=message):
        SymbolicQuantileRegressor(**{**TINY, **params}).fit(X, y)


def test_latex_precision_must_be_a_positive_integer():
    X, y = _quadratic(30)
    model = SymbolicQuantileRegressor(**TINY).fit(X, y)
    with pytest.raises(ValueError, match="precision must be >= 1, got -1"):
        model.latex(precision=-1)
    with pytest.raises(TypeError, match="precision must be an integer"):
        model.latex(precision=2.5)
    assert model.latex(precision=2)


def test_bad_data():
    X, y = _quadratic(20)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SymbolicQuantileRegressor(**TINY).fit(Xn, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        SymbolicQuantileRegressor(**TINY).fit(X, np.r_[y[:-1], np.inf])
    with pytest.raises(ValueError, match="sample_weight"):
        SymbolicQuantileRegressor(**TINY).fit(X, y, sample_weight=-np.ones(20))


def test_feature_probabilities_mix_even_and_rank_correlation_shares():
    y = np.arange(10.0)
    X = np.c_[y ** 3, np.ones(10), -y, np.r_[y[:5], y[:5]]]
    w = np.ones(10)
    probs = feature_probabilities(X, y, w, 0.5)
    r2 = np.array([1.0, 0.0, 1.0, np.corrcoef(np.r_[np.arange(5), np.arange(5)], y)[0, 1] ** 2])
    assert probs == pytest.approx(0.5 / 4 + 0.5 * r2 / r2.sum())
    assert feature_probabilities(X, y, w, 0.0) == pytest.approx(np.full(4, 0.25))
    w[5:] = 0  # rows of weight 0 do not count: the last column then matches y exactly
    assert feature_probabilities(X, y, w, 1.0) == pytest.approx(np.array([1, 0, 1, 1]) / 3)


def test_feature_relevance_finds_the_relevant_columns_of_wide_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(200, 60))
    y = 2 * X[:, 7] - X[:, 31]

    def recovered(relevance, seeds, stage=False):
        return sum(SymbolicQuantileRegressor(niterations=4, populations=3, feature_relevance=relevance,
                                             additive_stage=stage, random_state=seed, progress=False
                                             ).fit(X, y).equations_.loss.min() < 1e-6 for seed in seeds)

    # which seeds a short search recovers the formula on depends on its path (and so on the CPU):
    # a rate, 22 and 8 of seeds 0-23 (linear scaling helps both); a gap under 3 of 16 has a chance
    # of 0.2% at those rates
    assert recovered(0.5, range(16)) - recovered(0.0, range(16)) >= 3
    assert recovered(0.0, range(4), stage=True) == 4  # the deterministic stage's second step is the formula


def test_julia_backend_reports_clearly():
    X, y = _quadratic(20)
    if julia_status()[0]:
        pytest.skip("Julia is available here")
    with pytest.raises(JuliaUnavailableError, match="backend='julia'"):
        SymbolicQuantileRegressor(backend="julia", **TINY).fit(X, y)
    assert SymbolicQuantileRegressor(backend="auto", **TINY).fit(X, y).backend_ == "native"


def test_sample_weight_losses_are_weighted():
    X, y = _quadratic(60)
    w = np.random.default_rng(0).uniform(0.1, 3, size=60)
    model = SymbolicQuantileRegressor(quantile=0.7, random_state=0, **TINY).fit(X, y, sample_weight=w)
    for i in range(len(model.equations_)):
        assert model.equations_["loss"].iloc[i] == pytest.approx(
            pinball_loss(y, model.predict(X, index=i), 0.7, w), rel=1e-9, abs=1e-12)


# Integer weights are repeated rows for every loss the search computes (test_sample_weight_losses_are_weighted,
# and the stage's sums: test_stepwise's test_integer_weights_are_repeated_rows), but the two sum the
# same losses in another order, and a last bit of difference moves a stochastic search's path: the
# fronts differed for 13 of 30 such data sets (sklearn's RandomState(42) one agrees on some CPUs only)
_PATH_DEPENDENT = {"check_sample_weight_equivalence_on_dense_data":
                   "a weighted and a repeated fit agree up to rounding, which moves the search's path"}


@parametrize_with_checks([SymbolicQuantileRegressor(random_state=0, **TINY)],
                         expected_failed_checks=lambda estimator: _PATH_DEPENDENT)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_max_samples_fits_on_a_seeded_subsample():
    X, y = _quadratic(300)
    kw = dict(random_state=0, **{**TINY, "niterations": 3})
    a = SymbolicQuantileRegressor(max_samples=60, **kw).fit(X, y)
    b = SymbolicQuantileRegressor(max_samples=60, **kw).fit(X, y)
    assert a.equations_["equation"].tolist() == b.equations_["equation"].tolist()
    # the listed losses are those of the subsample, not of the full data
    losses = [pinball_loss(y, a.predict(X, index=i)) for i in range(len(a.equations_))]
    assert not np.allclose(losses, a.equations_["loss"])
    with pytest.raises(ValueError, match="max_samples"):
        SymbolicQuantileRegressor(max_samples=0, **kw).fit(X, y)


def test_batching_is_reproducible_and_scores_on_all_rows():
    X, y = _quadratic(400, seed=2)
    kw = dict(batch_size=64, niterations=4, populations=3, ncycles_per_iteration=20, progress=False, random_state=1)
    a = SymbolicQuantileRegressor(n_jobs=1, **kw).fit(X, y)
    b = SymbolicQuantileRegressor(n_jobs=2, **kw).fit(X, y)
    assert a.equations_["equation"].tolist() == b.equations_["equation"].tolist()
    for i in range(len(a.equations_)):  # the front's losses are full-data losses
        assert a.equations_["loss"].iloc[i] == pytest.approx(pinball_loss(y, a.predict(X, index=i)), rel=1e-9,
                                                             abs=1e-12)
    with pytest.raises(ValueError, match="batch_size"):
        SymbolicQuantileRegressor(batch_size=4, **{**TINY, "random_state": 0}).fit(X, y)


def test_polish_rows_are_every_kth_weighted_row_past_the_threshold():
    from parsimony.symbolic._evaluator import make_data, make_workspace
    from parsimony.symbolic._polish import POLISH_ROWS
    from parsimony.symbolic._search import _polish_rows

    small = make_data(np.zeros((2, POLISH_ROWS)), np.zeros(POLISH_ROWS), np.ones(POLISH_ROWS), Squared())
    ws = make_workspace(5, POLISH_ROWS)
    assert _polish_rows(small, ws, 5) == (small, ws)  # up to the threshold: the data itself
    n = 3 * POLISH_ROWS + 7
    w = np.ones(n)
    w[::2] = 0.0
    big = make_data(np.tile(np.arange(n, dtype=float), (2, 1)), np.arange(n, dtype=float), w, Squared())
    sub, sub_ws = _polish_rows(big, make_workspace(5, n), 5)
    rows = sub.y.astype(int)
    assert 0 < rows.size <= POLISH_ROWS and np.all(w[rows] > 0) and sub_ws.buf.shape[1] == rows.size
    assert np.unique(np.diff(rows)).size == 1 and rows[0] == 1  # every k-th row of positive weight
    np.testing.assert_array_equal(sub.Xt, big.Xt[:, rows])


def test_front_losses_are_exact_on_all_rows_past_the_polish_threshold():
    """Above POLISH_ROWS the front's constants are polished on a subsample, yet every row's loss
    is the weighted pinball loss of its expression on all rows, an offset is loss-optimal on all
    rows (the weighted shares of rows above and below within 1 - tau and tau), and the fit stays
    reproducible."""
    from parsimony.symbolic import _expressions as E
    from parsimony.symbolic._polish import POLISH_ROWS

    from ._helpers import reference_eval

    n, tau = 2 * POLISH_ROWS + 500, 0.7
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(n, 3))
    y = 1.7 * X[:, 0] * X[:, 1] + 0.4 * X[:, 2] + 0.3 + 0.5 * rng.normal(size=n)
    w = rng.integers(0, 3, size=n).astype(float)

    def fit(n_jobs):
        model = SymbolicQuantileRegressor(quantile=tau, random_state=4, n_jobs=n_jobs, **TINY)
        return model.fit(X, y, sample_weight=w)

    model = fit(1)
    front = model._fronts[0]
    assert len(front) > 2
    offsets = 0
    for row in front:
        r = y - reference_eval(row["ops"], row["feats"], row["vals"], X)
        expected = np.sum(w * np.where(r >= 0, tau * r, (tau - 1) * r)) / w.sum()
        assert row["loss"] == pytest.approx(expected, rel=1e-9)
        if row["ops"][-1] == E.ADD and row["ops"][-2] == E.CONST:  # an offset: loss-optimal on all rows
            slack = 2 * w.max() / w.sum()
            assert w[r > 0].sum() / w.sum() <= 1 - tau + slack and w[r < 0].sum() / w.sum() <= tau + slack
            offsets += 1
    assert offsets > 0
    again = fit(2)
    for a, b in zip(front, again._fronts[0], strict=True):
        assert a["loss"] == b["loss"] and a["vals"].tolist() == b["vals"].tolist()


def _distinct_rows(n_distinct, repeats=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n_distinct, 2))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n_distinct)
    return np.repeat(X, repeats, axis=0), np.repeat(y, repeats)


@pytest.mark.parametrize("n_distinct, repeats, stage, expected", [
    (100, 1, "auto", 30),  # the additive stage runs: room for its sums
    (99, 1, "auto", 20),  # too few distinct rows for the stage: the paper's maxsize
    (60, 3, "auto", 20),  # 180 rows, 60 distinct: repeated rows are not new evidence
    (300, 1, False, 20),  # no stage
])
def test_auto_maxsize_is_30_only_where_the_additive_stage_runs(n_distinct, repeats, stage, expected):
    X, y = _distinct_rows(n_distinct, repeats)
    params = dict(TINY, random_state=0, additive_stage=stage)
    auto = SymbolicQuantileRegressor(**params).fit(X, y)
    fixed = SymbolicQuantileRegressor(**params, maxsize=expected).fit(X, y)
    assert auto.maxsize_ == fixed.maxsize_ == expected
    assert auto.equations_["equation"].tolist() == fixed.equations_["equation"].tolist()
    assert SymbolicQuantileRegressor(**params, maxsize=25).fit(X, y).maxsize_ == 25  # an integer is kept


def test_auto_maxsize_sees_the_subsample():
    X, y = _distinct_rows(300)
    model = SymbolicQuantileRegressor(**TINY, random_state=0, max_samples=80).fit(X, y)
    assert model.maxsize_ == 20


def test_a_fit_precompiles_only_the_kernels_of_the_seeders_that_apply(monkeypatch):
    from parsimony.symbolic import _search
    from parsimony.symbolic._stepwise import additive_models
    from parsimony.symbolic.seeds.exhaustive import fit_variants

    planned, original = set(), _search.precompile
    monkeypatch.setattr(_search, "precompile", lambda steps: (planned.update(k for k, _, _ in steps), original(steps)))
    fits = []
    for n_distinct in (30, 120):  # the additive seeder needs 50 distinct rows, the exhaustive one two
        X, y = _distinct_rows(n_distinct)
        SymbolicQuantileRegressor(**TINY, random_state=0, additive_stage=True).fit(X, y)
        fits.append(set(planned))
        planned.clear()
    few, many = fits
    assert fit_variants in few and additive_models not in few
    assert {fit_variants, additive_models} <= many
