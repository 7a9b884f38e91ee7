"""ForestPrune polishing (problems 2 and 5) and the baselines, against closed forms and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Lasso, Ridge
from sklearn.tree import DecisionTreeRegressor

from parsimony.ensembles import ForestPrune, _cbcd
from parsimony.ensembles._depth_matrices import depth_difference_matrices, unpack_ensemble
from parsimony.ensembles.pruning_baselines import (
    ccp_prune_tree,
    cost_complexity_path,
    lasso_tree_weights,
    random_removal_path,
)
from parsimony.ensembles.forestprune import best_subset_polish, build_problem, ridge_polish


def _data(n=150, seed=0):
    X, y = make_friedman1(n_samples=n, n_features=6, noise=1.0, random_state=seed)
    return X, (y - y.mean()) / y.std()


@pytest.fixture(scope="module")
def forest():
    X, y = _data()
    return X, y, RandomForestRegressor(n_estimators=20, max_depth=5, random_state=0).fit(X, y)


def _l0_objective(Q, t, gamma, alpha2, beta):
    return np.mean((t - gamma * Q @ beta) ** 2) + alpha2 * np.count_nonzero(beta)


def test_ridge_polish_matches_sklearn_ridge():
    rng = np.random.default_rng(0)
    m, s, gamma, alpha2 = 40, 6, 0.2, 0.03
    Q, t = rng.normal(size=(m, s)), rng.normal(size=m)
    # (1/m)||t - gamma Q b||^2 + a2 ||b||^2  ==  (1/m) * (||t - (gamma Q) b||^2 + m a2 ||b||^2)
    ref = Ridge(alpha=m * alpha2, fit_intercept=False, solver="cholesky").fit(gamma * Q, t).coef_
    np.testing.assert_allclose(ridge_polish(Q, t, gamma, alpha2), ref, rtol=1e-9, atol=1e-12)


def test_ridge_polished_forest(forest):
    X, y, rf = forest
    fp = ForestPrune(rf, alpha=0.5, polish="ridge", polish_alpha=0.02, random_state=0).fit(X, y)
    plain = ForestPrune(rf, alpha=0.5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(fp.layers_ > 0, plain.layers_ > 0)
    D = depth_difference_matrices(unpack_ensemble(rf), X)
    kept = np.flatnonzero(plain.layers_)
    Q = np.stack([D[i, : plain.layers_[i]].sum(0) for i in kept], axis=1)
    m = len(y)
    ref = Ridge(alpha=m * 0.02, fit_intercept=False, solver="cholesky").fit(rf.n_estimators ** -1 * Q, y).coef_
    np.testing.assert_allclose(fp.coef_[kept], ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fp.predict(X), Q @ ref / rf.n_estimators, atol=1e-10)
    # polishing re-fits the kept trees, so the training error cannot be worse than the ridge at beta = 1
    ones = np.mean((y - Q @ np.ones(len(kept)) / rf.n_estimators) ** 2) + 0.02 * len(kept)
    assert np.mean((y - fp.predict(X)) ** 2) + 0.02 * np.sum(fp.coef_[kept] ** 2) <= ones + 1e-12


def test_best_subset_exact_on_orthogonal_design():
    rng = np.random.default_rng(1)
    m, s, gamma = 30, 6, 0.5
    Qo, _ = np.linalg.qr(rng.normal(size=(m, s)))
    Q = Qo * rng.uniform(0.5, 3.0, size=s)  # orthogonal columns, different norms
    t = Q @ rng.normal(size=s) * 0.7 + 0.3 * rng.normal(size=m)
    for alpha2 in (0.001, 0.01, 0.05, 0.2):
        best = np.inf
        for r in range(s + 1):
            for S in itertools.combinations(range(s), r):
                b = np.zeros(s)
                if S:
                    b[list(S)] = np.linalg.lstsq(gamma * Q[:, S], t, rcond=None)[0]
                best = min(best, _l0_objective(Q, t, gamma, alpha2, b))
        got = best_subset_polish(Q, t, gamma, alpha2)
        assert _l0_objective(Q, t, gamma, alpha2, got) == pytest.approx(best, abs=1e-12)


def test_best_subset_is_coordinatewise_optimal_and_descends():
    rng = np.random.default_rng(2)
    m, s, gamma, alpha2 = 25, 7, 0.3, 0.02
    Q = rng.normal(size=(m, s)) + 0.5 * rng.normal(size=(m, 1))  # correlated columns
    t = rng.normal(size=m)
    b = best_subset_polish(Q, t, gamma, alpha2)
    val = _l0_objective(Q, t, gamma, alpha2, b)
    assert val <= _l0_objective(Q, t, gamma, alpha2, np.ones(s)) + 1e-12
    assert val <= _l0_objective(Q, t, gamma, alpha2, np.zeros(s)) + 1e-12
    for j in range(s):  # no single coefficient (free or zero) improves
        r = t - gamma * (Q @ b - Q[:, j] * b[j])
        q = gamma * Q[:, j]
        for cand in (0.0, (q @ r) / (q @ q)):
            bb = b.copy()
            bb[j] = cand
            assert _l0_objective(Q, t, gamma, alpha2, bb) >= val - 1e-12


def test_best_subset_polish_drops_trees(forest):
    X, y, rf = forest
    fp = ForestPrune(rf, alpha=0.2, polish="best_subset", polish_alpha=0.02, random_state=0).fit(X, y)
    plain = ForestPrune(rf, alpha=0.2, random_state=0).fit(X, y)
    assert 0 < fp.n_trees_ < plain.n_trees_
    assert np.all(fp.layers_[fp.coef_ == 0] == 0)
    assert fp.n_nodes_ < plain.n_nodes_
    assert len(fp.export_trees()) == fp.n_nodes_


def _brute_joint(problem, D, layers, beta, alpha, alpha2, mode):
    pred = sum(problem.gamma * beta[i] * D[i, :k].sum(0) for i, k in enumerate(layers) if k)
    kept = layers > 0
    pen = alpha2 * (np.sum(beta[kept] ** 2) if mode == _cbcd.RIDGE else np.count_nonzero(beta[kept]))
    return np.mean((problem.target - pred) ** 2) + alpha / problem.K * sum(
        problem.wcum[i, k] for i, k in enumerate(layers)) + pen


@pytest.mark.parametrize("polish", ["ridge", "best_subset"])
def test_joint_solution_is_blockwise_optimal(forest, polish):
    X, y, rf = forest
    alpha, alpha2 = 0.5, 0.005
    fp = ForestPrune(rf, alpha=alpha, polish=polish, polish_alpha=alpha2, joint=True, random_state=0).fit(X, y)
    mode = _cbcd.RIDGE if polish == "ridge" else _cbcd.SUBSET
    problem = build_problem(unpack_ensemble(rf), X, y)
    D = depth_difference_matrices(problem.tables, X)
    layers, beta = fp.layers_, fp.coef_
    obj = _brute_joint(problem, D, layers, beta, alpha, alpha2, mode)
    assert fp.objective_ == pytest.approx(obj, abs=1e-10)
    assert fp.n_trees_ > 0
    m = len(y)
    for i in range(problem.n_trees):
        r = problem.target - sum(problem.gamma * beta[j] * D[j, :k].sum(0)
                                 for j, k in enumerate(layers) if k and j != i)
        for k in range(problem.n_layers[i] + 1):
            lay, bet = layers.copy(), beta.copy()
            lay[i] = k
            q = problem.gamma * D[i, :k].sum(0)
            if k == 0:
                bet[i] = 0.0
            elif mode == _cbcd.RIDGE:
                bet[i] = (q @ r) / (q @ q + m * alpha2)
            else:
                bet[i] = (q @ r) / (q @ q)
            assert _brute_joint(problem, D, lay, bet, alpha, alpha2, mode) >= obj - 1e-10
    np.testing.assert_allclose(
        fp.predict(X), sum(problem.gamma * beta[i] * D[i, :k].sum(0) for i, k in enumerate(layers) if k),
        atol=1e-10)


def test_max_trees_with_polish(forest):
    X, y, rf = forest
    fp = ForestPrune(rf, alpha=0.05, max_trees=4, polish="ridge", random_state=0).fit(X, y)
    assert 0 < fp.n_trees_ <= 4


# -- baselines ------------------------------------------------------------------------------------
def test_ccp_matches_sklearn_pruning():
    X, y = _data(200, seed=4)
    full = DecisionTreeRegressor(random_state=0, min_samples_leaf=2).fit(X, y)
    for a in (0.0, 1e-3, 5e-3, 2e-2, 0.1):
        ref = DecisionTreeRegressor(random_state=0, min_samples_leaf=2, ccp_alpha=a).fit(X, y)
        rep = ccp_prune_tree(full.tree_, a)
        pred = full.tree_.value[:, 0, 0][rep][full.apply(X.astype(np.float32))]
        np.testing.assert_allclose(pred, ref.predict(X), atol=1e-12)
        assert np.count_nonzero(rep == np.arange(full.tree_.node_count)) == ref.tree_.node_count


def test_baseline_paths(forest):
    X, y, rf = forest
    Xv, yv = _data(60, seed=5)
    lasso = lasso_tree_weights(rf, X, y, X_val=Xv, y_val=yv)
    assert lasso["n_trees"].iloc[0] == 0 and lasso["n_trees"].iloc[-1] > 0
    lam = lasso["param"].iloc[20]
    T = np.stack([e.predict(X) for e in rf.estimators_], axis=1) / rf.n_estimators
    ref = Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-10, max_iter=100000).fit(T, y).coef_
    np.testing.assert_allclose(lasso["coef"].iloc[20], ref, atol=1e-5)
    ccp = cost_complexity_path(rf, X, y, X_val=Xv, y_val=yv)
    assert ccp["n_nodes"].iloc[0] == sum(e.tree_.node_count for e in rf.estimators_)
    assert ccp["train_error"].iloc[0] == pytest.approx(np.mean((rf.predict(X) - y) ** 2))
    assert ccp["n_nodes"].is_monotonic_decreasing
    rr = random_removal_path(rf, X, y, X_val=Xv, y_val=yv, random_state=0)
    assert list(rr["n_trees"]) == list(range(rf.n_estimators, 0, -1))
    assert rr["val_error"].iloc[0] == pytest.approx(np.mean((rf.predict(Xv) - yv) ** 2))
    gbr = GradientBoostingRegressor(n_estimators=15, max_depth=2, random_state=0).fit(X, y)
    tr = random_removal_path(gbr, X, y)
    staged = list(gbr.staged_predict(X))
    for _, row in tr.iloc[::4].iterrows():
        assert row["train_error"] == pytest.approx(np.mean((staged[row["n_trees"] - 1] - y) ** 2), abs=1e-12)
    with pytest.raises(ValueError, match="fitted"):
        lasso_tree_weights(RandomForestRegressor(), X, y)
