"""Baselines: the quantile tree's leaves and the tuner."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from parsimony.experiments.baselines import (
    PARAM_SPACES,
    QuantileDecisionTreeRegressor,
    TunedQuantileRegressor,
    make_lgbm,
    make_lqr,
    make_qdt,
)
from parsimony.metrics import pinball_loss


def _brute_quantile(values, tau, weights=None):
    """The smallest value minimising the weighted pinball loss over the values themselves."""
    w = np.ones_like(values) if weights is None else weights
    losses = [np.sum(w * np.where(values >= c, tau * (values - c), (1 - tau) * (c - values))) for c in values]
    best = np.min(losses)
    return np.min(values[np.isclose(losses, best, rtol=1e-12, atol=1e-12)])


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_qdt_leaves_predict_their_targets_quantile(tau):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 3))
    y = 3 * X[:, 0] + rng.standard_normal(200)
    model = QuantileDecisionTreeRegressor(quantile=tau, max_depth=3, min_samples_leaf=10).fit(X, y)
    leaves = model.estimator_.apply(X)
    pred = model.predict(X)
    assert len(np.unique(leaves)) > 1
    for leaf in np.unique(leaves):
        members = y[leaves == leaf]
        assert np.all(pred[leaves == leaf] == _brute_quantile(members, tau))
    # the tree structure is CART's: same splits as a plain regression tree
    from sklearn.tree import DecisionTreeRegressor

    plain = DecisionTreeRegressor(max_depth=3, min_samples_leaf=10).fit(X, y)
    assert np.array_equal(plain.apply(X), leaves)
    # tau-quantile leaves beat the leaf means on the training pinball loss
    assert pinball_loss(y, pred, tau) <= pinball_loss(y, plain.predict(X), tau)
    # score: share of the pinball loss explained over the best constant (the tau-quantile of y)
    constant = pinball_loss(y, np.full_like(y, _brute_quantile(y, tau)), tau)
    assert model.score(X, y) == pytest.approx(1 - pinball_loss(y, pred, tau) / constant)


def test_qdt_coverage_tracks_tau():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(2000, 2))
    y = X[:, 0] + rng.standard_normal(2000)
    model = QuantileDecisionTreeRegressor(quantile=0.9, min_samples_leaf=100).fit(X, y)
    assert abs(np.mean(y <= model.predict(X)) - 0.9) < 0.02


def test_qdt_rejects_bad_quantile():
    with pytest.raises(ValueError, match="quantile"):
        QuantileDecisionTreeRegressor(quantile=1.5).fit(np.ones((4, 1)), np.arange(4.0))


def _tiny_tuned():
    return TunedQuantileRegressor(QuantileDecisionTreeRegressor(quantile=0.7), PARAM_SPACES["QDT"], quantile=0.7,
                                  cv=2, n_trials=2, random_state=0)


@parametrize_with_checks([QuantileDecisionTreeRegressor(quantile=0.3, random_state=0), _tiny_tuned()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("search", ["optuna", "random"])
def test_tuner_is_reproducible_and_starts_at_the_defaults(search):
    if search == "optuna":
        pytest.importorskip("optuna")
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 3))
    y = X[:, 0] * 4 + rng.standard_normal(120)
    a = make_qdt(0.9, random_state=3, n_trials=5, cv=3, search=search).fit(X, y)
    b = make_qdt(0.9, random_state=3, n_trials=5, cv=3, search=search).fit(X, y)
    assert a.search_ == ("optuna-tpe" if search == "optuna" else "random")
    assert a.trials_.equals(b.trials_) and a.best_params_ == b.best_params_
    assert np.array_equal(a.predict(X), b.predict(X))
    assert len(a.trials_) == 5 and a.status_ == "complete"
    assert a.trials_.loc[0, "min_samples_leaf"] == 1  # the estimator's own value first
    assert a.best_score_ == a.trials_["pinball"].min()
    assert 1 <= a.best_params_["min_samples_leaf"] <= 50
    assert a.best_estimator_.min_samples_leaf == a.best_params_["min_samples_leaf"]


@pytest.mark.parametrize("where", ["objective", "bookkeeping"])
def test_a_ctrl_c_during_optuna_tuning_stays_a_ctrl_c(monkeypatch, where):
    """A KeyboardInterrupt while a trial runs or while optuna records it reaches the caller as
    itself (optuna 5.0's optimize turned one in its bookkeeping into an UnboundLocalError, which
    the benchmark runner stored as a failed task and ran on)."""
    pytest.importorskip("optuna")
    from optuna.study import _optimize, _tell, study

    calls = []

    def interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    if where == "objective":
        original = QuantileDecisionTreeRegressor.fit
        monkeypatch.setattr(QuantileDecisionTreeRegressor, "fit", interrupt)
    else:
        original = _tell._tell_with_warning
        for module in (_optimize, _tell, study):
            monkeypatch.setattr(module, "_tell_with_warning", interrupt, raising=False)
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 2))
    y = X[:, 0] + rng.standard_normal(60)
    with pytest.raises(KeyboardInterrupt):
        make_qdt(0.5, random_state=0, n_trials=4, cv=2, search="optuna").fit(X, y)
    assert len(calls) == 2


def test_tuner_scores_by_inner_cross_validation():
    from sklearn.base import clone
    from sklearn.model_selection import KFold
    from sklearn.utils import check_random_state

    rng = np.random.default_rng(2)
    X = rng.uniform(size=(90, 2))
    y = X[:, 1] + rng.standard_normal(90)
    tuned = make_qdt(0.5, random_state=7, n_trials=3, cv=3, search="random").fit(X, y)
    seed = int(check_random_state(7).randint(0, 2**31 - 1))
    for _, trial in tuned.trials_.iterrows():
        losses = []
        for tr, te in KFold(3, shuffle=True, random_state=seed).split(X):
            m = clone(tuned.estimator).set_params(min_samples_leaf=int(trial["min_samples_leaf"]), random_state=seed)
            losses.append(pinball_loss(y[te], m.fit(X[tr], y[tr]).predict(X[te]), 0.5))
        assert trial["pinball"] == pytest.approx(np.mean(losses), rel=1e-12)


def test_one_se_rule_picks_the_least_complex_trial_within_one_standard_error():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 2))
    y = 4 * X[:, 0] + rng.standard_normal(300)  # a smooth trend: more leaves help a little
    kw = dict(quantile=0.5, cv=4, n_trials=12, search="random", random_state=1)
    best = TunedQuantileRegressor(QuantileDecisionTreeRegressor(), PARAM_SPACES["QDT"], **kw).fit(X, y)
    sparse = TunedQuantileRegressor(QuantileDecisionTreeRegressor(), PARAM_SPACES["QDT"], selection="one_se",
                                    **kw).fit(X, y)
    trials = sparse.trials_
    assert trials.equals(best.trials_)  # the same trials, only the choice differs
    top = trials.loc[trials["pinball"].idxmin()]
    within = trials[trials["pinball"] <= top["pinball"] + top["pinball_se"]]
    chosen = trials[trials["min_samples_leaf"] == sparse.best_params_["min_samples_leaf"]].iloc[0]
    assert chosen["complexity"] == within["complexity"].min() < top["complexity"]
    assert sparse.best_score_ <= top["pinball"] + top["pinball_se"]
    assert sparse.complexity_ < best.complexity_
    assert (trials["pinball_se"] > 0).all() and (trials["complexity"] >= 1).all()


def test_tuner_time_limit_and_bad_space():
    X, y = np.random.default_rng(0).uniform(size=(60, 2)), np.arange(60.0)
    tuned = make_qdt(0.5, random_state=0, n_trials=10_000, time_limit=0.3, search="random").fit(X, y)
    assert tuned.status_ == "time_limit" and 1 <= len(tuned.trials_) < 10_000
    with pytest.raises(ValueError, match="param_space"):
        TunedQuantileRegressor(param_space={"min_samples_leaf": ("int", 5)}).fit(X, y)
    with pytest.raises(ValueError, match="search"):
        TunedQuantileRegressor(search="grid").fit(X, y)


def test_lqr_and_lgbm_baselines_fit():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(150, 3))
    y = 2 * X[:, 0] - X[:, 2] + 0.1 * rng.standard_normal(150)
    lqr = make_lqr(0.5, random_state=0, n_trials=2, cv=2).fit(X, y)
    coef = lqr.best_estimator_.steps[-1][1].coef_ / lqr.best_estimator_.steps[0][1].scale_
    assert coef[0] == pytest.approx(2, abs=0.15) and coef[2] == pytest.approx(-1, abs=0.15)
    pytest.importorskip("lightgbm")
    lgbm = make_lgbm(0.9, random_state=0, n_trials=2, cv=2, n_estimators=10).fit(X, y)
    assert 0.75 < np.mean(y <= lgbm.predict(X)) <= 1.0


def _collinear_spectra(seed=0):
    """Rows of six smooth curves' mixtures over 60 channels (condition number ~6e8, HiGHS fails here)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, 60)
    mix = rng.normal(size=(150, 6))
    X = 3 + 0.1 * mix @ np.stack([np.ones(60), t, t**2, t**3, np.sin(3 * t), np.exp(t)])
    return X + 1e-7 * rng.normal(size=X.shape), 10 * mix[:, 1] + rng.normal(size=150)


def _assert_optimal_lp_vertex(model, X, y, tau):
    """An optimal quantile regression through an LP vertex fits at least as many points exactly as it has
    free coefficients, and loses no more than least squares."""
    residual = y - model.predict(X)
    free = np.linalg.matrix_rank(X) + 1  # the intercept of LQR-U, or one spare
    assert np.sum(np.abs(residual) < 1e-6 * np.abs(y).max()) >= free - 1
    ols = np.linalg.lstsq(np.column_stack([X, np.ones(len(y))]), y, rcond=None)[0]
    assert pinball_loss(y, model.predict(X), tau) <= pinball_loss(y, np.column_stack([X, np.ones(len(y))]) @ ols, tau)


@pytest.mark.parametrize("intercept", [False, True])
def test_unpenalised_lqr_survives_ill_conditioned_features(intercept):
    import warnings

    from parsimony.experiments.baselines import _QuantileLP

    X, y = _collinear_spectra()
    rotated = _QuantileLP(quantile=0.9, alpha=0.0, fit_intercept=intercept, solver="highs-ipm")
    rotated._fit_rotated(X, y, None)  # the fallback itself, whether or not HiGHS fails on this machine
    _assert_optimal_lp_vertex(rotated, X, y, 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either (there were eight over the progress bar)
        model = make_lqr(0.9, tune=False, intercept=intercept).fit(X, y)
    _assert_optimal_lp_vertex(model, X, y, 0.9)
    np.testing.assert_allclose(model.predict(X), rotated.predict(X), atol=1e-5 * np.abs(y).max())


def test_lqr_nc_fits_505_tecator(pmlb_dir):
    import warnings

    from parsimony.datasets import load_dataset

    X, y = load_dataset(pmlb_dir / "505_tecator.tsv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = make_lqr(0.5, tune=False, intercept=False).fit(X.values[:192], y.values[:192])
    _assert_optimal_lp_vertex(model, X.values[:192], y.values[:192], 0.5)


def test_lgbm_missing_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "lightgbm", None)
    with pytest.raises(ImportError, match=r"bench"):
        make_lgbm(0.5)


def test_without_optuna_the_tuner_falls_back_to_seeded_random_search(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    X, y = np.random.default_rng(0).uniform(size=(40, 2)), np.arange(40.0)
    tuned = make_qdt(0.5, random_state=0, n_trials=3, cv=2).fit(X, y)
    assert tuned.search_ == "random" and len(tuned.trials_) == 3
    with pytest.raises(ImportError, match="bench"):
        make_qdt(0.5, random_state=0, n_trials=3, cv=2, search="optuna").fit(X, y)


@pytest.mark.parametrize("params, error, message", [
    ({"quantile": "0.5"}, TypeError, "quantile must be a real number"),
    ({"cv": 1}, ValueError, r"cv must be an integer >= 2, got 1"),
    ({"n_trials": 2.5}, TypeError, r"n_trials must be an integer >= 1"),
    ({"search": "grid"}, ValueError, r"search must be one of 'auto', 'optuna', 'random', got 'grid'"),
    ({"time_limit": 0}, ValueError, r"time_limit must be None or a number > 0"),
    ({"param_space": {"alpha": ("uniform", 0, 1)}}, ValueError, r"param_space\['alpha'\] must be a tuple"),
])
def test_tuned_parameters_are_checked_by_their_table(params, error, message):
    from parsimony.experiments.baselines import TunedQuantileRegressor

    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(error, match=message):
        TunedQuantileRegressor(**params).fit(X, X[:, 0])


def test_osrt_q_is_a_tuned_optimal_quantile_tree_with_tasks_at_every_level():
    from parsimony.experiments.baselines import make_osrt_q
    from parsimony.experiments.suites import METHODS, resolve_budget
    from parsimony.trees import OptimalSparseRegressionTree

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(150, 2))
    y = 2 * (X[:, 0] > 0.5) + rng.standard_exponential(150) * (1 + X[:, 1])
    model = make_osrt_q(0.9, random_state=0, n_trials=3, cv=2).fit(X, y)
    tree = model.best_estimator_
    assert isinstance(tree, OptimalSparseRegressionTree) and tree.loss == "quantile" and tree.quantile == 0.9
    assert tree.status_ == "optimal" and len(model.trials_) == 3
    assert model.trials_["regularization"].iloc[0] == 0.01  # the first trial is the default penalty
    assert 0.8 <= np.mean(y <= model.predict(X)) <= 1.0    # a 0.9-quantile model covers about 90%
    assert model.complexity_ == tree.tree_.node_count
    spec = METHODS["OSRT-Q"]
    assert spec.runs_at(0.9) and spec.runs_at(0.1)
    built = spec.build(0.1, 0, resolve_budget("tiny"))
    assert built.estimator.quantile == 0.1
