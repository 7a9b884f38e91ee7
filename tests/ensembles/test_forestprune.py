"""ForestPrune: depth-difference matrices, CBCD against brute force, estimator contract."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import ExtraTreesRegressor, GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from parsimony.ensembles import ForestPrune
from parsimony.ensembles import _cbcd
from parsimony.ensembles._depth_matrices import (
    depth_difference_matrices,
    ensemble_leaves,
    ensemble_offset,
    unpack_ensemble,
)
from parsimony.ensembles import forestprune as fp_module
from parsimony.ensembles.forestprune import build_problem, select_path_model, solve


def _data(n=120, seed=0):
    X, y = make_friedman1(n_samples=n, n_features=6, noise=1.0, random_state=seed)
    return X, (y - y.mean()) / y.std()


def _ensembles(X, y):
    return {
        "rf": RandomForestRegressor(n_estimators=7, max_depth=4, random_state=0).fit(X, y),
        "rf_deep": RandomForestRegressor(n_estimators=5, max_depth=None, random_state=1).fit(X[:50], y[:50]),
        "et": ExtraTreesRegressor(n_estimators=6, max_depth=5, random_state=0).fit(X, y),
        "gbr": GradientBoostingRegressor(n_estimators=9, max_depth=3, learning_rate=0.3, subsample=0.7,
                                         random_state=0).fit(X, y),
        "gbr_zero": GradientBoostingRegressor(n_estimators=4, max_depth=2, init="zero", random_state=0).fit(X, y),
    }


def _trees_and_gamma(est):
    if isinstance(est, GradientBoostingRegressor):
        return [e.tree_ for e in est.estimators_.ravel()], est.learning_rate
    return [e.tree_ for e in est.estimators_], 1.0 / len(est.estimators_)


def _walk_truncated(tree, X, layers):
    """Prediction of ``tree`` cut to ``layers`` layers, by walking each row (independent oracle)."""
    X32 = X.astype(np.float32)
    out = np.zeros(len(X))
    if layers == 0:
        return out
    for j, x in enumerate(X32):
        node, depth = 0, 0
        while tree.children_left[node] != -1 and depth < layers - 1:
            go_left = x[tree.feature[node]] <= tree.threshold[node]
            node = tree.children_left[node] if go_left else tree.children_right[node]
            depth += 1
        out[j] = tree.value[node, 0, 0]
    return out


def _node_depths(tree):
    depth = np.zeros(tree.node_count, dtype=int)
    stack = [0]
    while stack:
        node = stack.pop()
        for child in (tree.children_left[node], tree.children_right[node]):
            if child != -1:
                depth[child] = depth[node] + 1
                stack.append(child)
    return depth


@pytest.mark.parametrize("name", ["rf", "rf_deep", "et", "gbr", "gbr_zero"])
def test_depth_matrices_reproduce_truncated_and_full_predictions(name):
    X, y = _data()
    est = _ensembles(X, y)[name]
    tables = unpack_ensemble(est)
    Xq = _data(40, seed=3)[0]  # rows the trees were not fitted on
    D = depth_difference_matrices(tables, Xq)
    trees, gamma = _trees_and_gamma(est)
    assert tables.gamma == gamma
    offset = ensemble_offset(tables, Xq)
    full = offset + gamma * D.sum(axis=(0, 1))
    np.testing.assert_allclose(full, est.predict(Xq), rtol=0, atol=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(3):
        layers = np.array([rng.integers(0, t.max_depth + 2) for t in trees])
        expected = sum(_walk_truncated(t, Xq, k) for t, k in zip(trees, layers))
        got = sum(D[i, :k].sum(axis=0) for i, k in enumerate(layers))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    # node weights: nodes per layer, root included
    for i, t in enumerate(trees):
        counts = np.bincount(_node_depths(t), minlength=tables.max_layers)
        np.testing.assert_array_equal(tables.layer_nodes[i], counts)
        assert tables.n_layers[i] == t.max_depth + 1


def _dense(problem):
    """Dense D (n_trees, n_layers, m) rebuilt from the solver's factored form D_i = E_i T_i."""
    leaves, TT, leaf_offset = problem.factors
    np.testing.assert_array_equal(TT, problem.tables.leaf_table.T)
    return np.transpose(problem.tables.leaf_table[leaf_offset[:-1, None] + leaves], (0, 2, 1))


def test_factored_form_equals_dense_matrices():
    X, y = _data()
    for est in _ensembles(X, y).values():
        problem = build_problem(unpack_ensemble(est), X, y, "node")
        t = problem.tables
        nodes = ensemble_leaves(t, X)  # scikit-learn's Tree.apply
        np.testing.assert_array_equal(problem.leaves, t.leaf_of_node[t.node_offset[:-1, None] + nodes])
        D = depth_difference_matrices(problem.tables, X)
        np.testing.assert_array_equal(_dense(problem), D)
        gram = np.einsum("ilj,ikj->ilk", D, D)
        np.testing.assert_allclose(problem.gram, gram, rtol=1e-12, atol=1e-12)
        P = np.cumsum(D, axis=1)
        np.testing.assert_allclose(problem.prefix_norms[:, 1:], np.einsum("ilj,ilj->il", P, P), rtol=1e-12, atol=1e-12)


def _brute_objective(problem, layers, beta, alpha, alpha2=0.0, mode=_cbcd.PLAIN):
    D = _dense(problem)
    pred = np.zeros_like(problem.target)
    for i, k in enumerate(layers):
        if k:
            pred += problem.gamma * beta[i] * D[i, :k].sum(axis=0)
    loss = np.mean((problem.target - pred) ** 2)
    pen = alpha * problem.y_var / problem.K * sum(problem.wcum[i, k] for i, k in enumerate(layers))
    kept = np.asarray(layers) > 0
    if mode == _cbcd.RIDGE:
        pen += alpha2 * np.sum(np.asarray(beta)[kept] ** 2)
    elif mode == _cbcd.SUBSET:
        pen += alpha2 * np.count_nonzero(np.asarray(beta)[kept])
    return loss + pen


def _best_beta(problem, layers, beta, i, k, alpha2, mode):
    """Brute-force optimal beta_i for tree i cut to k layers, others fixed (least squares)."""
    if k == 0:
        return 0.0
    D = _dense(problem)
    others = [(j, layers[j], beta[j]) for j in range(len(layers)) if j != i]
    r = problem.target - sum(problem.gamma * b * D[j, :kk].sum(0) for j, kk, b in others if kk)
    q = problem.gamma * D[i, :k].sum(0)
    m = len(r)
    if mode == _cbcd.RIDGE:
        A = np.concatenate([q[:, None], [[np.sqrt(m * alpha2)]]])
        return float(np.linalg.lstsq(A, np.concatenate([r, [0.0]]), rcond=None)[0][0])
    return float(np.linalg.lstsq(q[:, None], r, rcond=None)[0][0]) if q @ q > 0 else 1.0


@pytest.mark.parametrize("mode", [_cbcd.PLAIN, _cbcd.RIDGE, _cbcd.SUBSET])
@pytest.mark.parametrize("weighting", ["node", "depth"])
def test_block_update_equals_brute_force(mode, weighting):
    X, y = _data()
    est = _ensembles(X, y)["rf_deep"] if weighting == "depth" else _ensembles(X, y)["gbr"]
    problem = build_problem(unpack_ensemble(est), X, y, weighting)
    rng = np.random.default_rng(1)
    alpha, alpha2 = 0.3, 0.01
    L = problem.tables.max_layers
    fac = problem.factors
    for trial in range(12):
        layers = np.array([rng.integers(0, k + 1) for k in problem.n_layers], dtype=np.int64)
        beta = np.ones(problem.n_trees)
        if mode != _cbcd.PLAIN:
            beta = np.where(layers > 0, rng.uniform(0.2, 2, problem.n_trees), 0.0)
        i = int(rng.integers(problem.n_trees))
        R = _cbcd.residual(*fac, problem.target, layers, beta, problem.gamma)
        cands = []
        for k in range(problem.n_layers[i] + 1):
            lay, bet = layers.copy(), beta.copy()
            lay[i] = k
            if mode != _cbcd.PLAIN:
                bet[i] = _best_beta(problem, layers, beta, i, k, alpha2, mode)  # k = 0 gives beta 0
            cands.append(_brute_objective(problem, lay, bet, alpha, alpha2, mode))
        before = _brute_objective(problem, layers, beta, alpha, alpha2, mode)
        _cbcd.block_update(i, *fac, problem.gram, problem.prefix_norms, problem.wcum, problem.n_layers, R, R @ R,
                           layers, beta, problem.gamma, alpha / problem.K, alpha2, mode, 0,
                           int(np.count_nonzero(layers)), np.empty(L), np.empty(L + 1), np.empty(200))
        after = _brute_objective(problem, layers, beta, alpha, alpha2, mode)
        assert after == pytest.approx(min(min(cands), before), abs=1e-10), trial
        np.testing.assert_allclose(R, _cbcd.residual(*fac, problem.target, layers, beta, problem.gamma),
                                   atol=1e-12)


@pytest.fixture(scope="module")
def small_problem():
    X, y = _data(150)
    rf = RandomForestRegressor(n_estimators=25, max_depth=5, random_state=0).fit(X, y)
    return X, y, rf, build_problem(unpack_ensemble(rf), X, y, "node")


@pytest.mark.parametrize("mode", [_cbcd.PLAIN, _cbcd.RIDGE, _cbcd.SUBSET])
def test_objective_never_increases_across_sweeps(small_problem, mode):
    problem = small_problem[3]
    for alpha in (0.05, 0.5, 2.0):
        sol = solve(problem, alpha, mode, 0.01, patience=0)
        assert sol.status == "converged" and len(sol.history) >= 2
        assert np.all(np.diff(sol.history) <= 1e-12 * abs(sol.history[0]))
        assert sol.objective == pytest.approx(sol.history[-1], abs=1e-12)


@pytest.mark.parametrize("joint", [False, True])
@pytest.mark.parametrize("alpha", [0.1, 1.0, 5.0])
def test_returned_point_is_blockwise_optimal(small_problem, alpha, joint):
    X, y, rf, problem = small_problem
    fp = ForestPrune(rf, alpha=alpha, joint=joint, polish="ridge" if joint else None, polish_alpha=0.01,
                     random_state=0).fit(X, y)
    mode = _cbcd.RIDGE if joint else _cbcd.PLAIN
    layers = fp.layers_
    beta = fp.coef_ if joint else np.ones(problem.n_trees)
    obj = _brute_objective(problem, layers, beta, alpha, 0.01, mode)
    assert fp.objective_ == pytest.approx(obj, abs=1e-10)
    for i in range(problem.n_trees):
        for k in range(problem.n_layers[i] + 1):
            lay, bet = layers.copy(), beta.copy()
            lay[i] = k
            if joint:
                bet[i] = _best_beta(problem, layers, beta, i, k, 0.01, mode)
            assert _brute_objective(problem, lay, bet, alpha, 0.01, mode) >= obj - 1e-10
    # the prediction comes from the truncated trees
    D = _dense(problem)
    pred = sum(problem.gamma * beta[i] * D[i, :k].sum(0) for i, k in enumerate(layers) if k)
    np.testing.assert_allclose(fp.predict(X), pred, atol=1e-10)
    assert fp.n_trees_ == np.count_nonzero(layers)
    assert fp.n_nodes_ == sum(problem.ncum[i, k] for i, k in enumerate(layers))


def test_local_search_only_improves_and_is_reproducible(small_problem):
    X, y, rf, _ = small_problem
    for alpha in (0.5, 3.0):
        plain = ForestPrune(rf, alpha=alpha, local_search=False).fit(X, y)
        a = ForestPrune(rf, alpha=alpha, local_search=10, random_state=3).fit(X, y)
        b = ForestPrune(rf, alpha=alpha, local_search=10, random_state=3).fit(X, y)
        assert a.objective_ <= plain.objective_ + 1e-12
        assert a.objective_ == b.objective_
        np.testing.assert_array_equal(a.layers_, b.layers_)
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
    fa = ForestPrune(alpha=1.0, n_estimators=6, max_depth=3, random_state=5).fit(X, y)
    fb = ForestPrune(alpha=1.0, n_estimators=6, max_depth=3, random_state=5).fit(X, y)
    np.testing.assert_array_equal(fa.predict(X), fb.predict(X))


@pytest.mark.parametrize("mode", [_cbcd.PLAIN, _cbcd.SUBSET])
def test_cbcd_under_a_deadline_resumes_exactly_and_stops_with_its_best_point(small_problem, monkeypatch, mode):
    import time

    problem = small_problem[3]
    whole = solve(problem, 0.3, mode, 0.01, patience=0)
    assert whole.n_sweeps > 2
    monkeypatch.setattr(fp_module, "_SWEEP_CHUNK", 1)  # a clock check after every sweep
    chunked = solve(problem, 0.3, mode, 0.01, patience=0, deadline=time.perf_counter() + 3600)
    assert chunked.status == "converged"
    np.testing.assert_array_equal(chunked.layers, whole.layers)
    assert chunked.objective == pytest.approx(whole.objective, rel=1e-12)
    np.testing.assert_allclose(chunked.history[: whole.history.size - 1], whole.history[:-1], rtol=1e-12)
    late = solve(problem, 0.3, mode, 0.01, patience=5, deadline=time.perf_counter() - 1)
    assert late.status == "time_limit" and late.n_sweeps == 1 and late.n_swaps == 0
    assert late.objective >= whole.objective - 1e-12
    assert late.objective == pytest.approx(_brute_objective(problem, late.layers, late.beta, 0.3, 0.01, mode),
                                           abs=1e-10)


def test_time_limit_keeps_the_best_point_with_a_status(small_problem):
    X, y, rf, _ = small_problem
    plain = ForestPrune(rf, alpha=3.0, local_search=False).fit(X, y)
    assert plain.status_ == "converged" and 0 < plain.n_trees_ < rf.n_estimators  # a swap is possible
    cut = ForestPrune(rf, alpha=3.0, local_search=20, random_state=0, time_limit=1e-9).fit(X, y)
    assert cut.status_ == "time_limit" and cut.n_swaps_ == 0  # CBCD ran to its fixed point, no swap did
    assert cut.objective_ == plain.objective_
    np.testing.assert_array_equal(cut.predict(X), plain.predict(X))
    df = ForestPrune(rf, time_limit=1e-9, random_state=0).path(X, y)
    # the path stops at the first alpha whose solve meets the clock (the largest empties the ensemble)
    assert df.attrs["status"] == "time_limit" and len(df) < 50
    assert df["status"].iloc[-1] == "time_limit" and (df["status"].iloc[:-1] == "converged").all()
    assert ForestPrune(rf, random_state=0).path(X, y, alphas=[1.0, 0.1]).attrs["status"] == "completed"
    with pytest.raises(ValueError, match="time_limit"):
        ForestPrune(rf, time_limit=-1.0).fit(X, y)


def test_alpha_limits_and_max_trees(small_problem):
    X, y, rf, problem = small_problem
    full = ForestPrune(rf, alpha=0.0, local_search=False).fit(X, y)
    assert full.objective_ <= np.mean((y - rf.predict(X)) ** 2) + 1e-12
    amax = _cbcd.alpha_max(*problem.factors, problem.prefix_norms, problem.wcum, problem.n_layers, problem.target,
                           problem.gamma, problem.K)
    assert ForestPrune(rf, alpha=amax * 1.001).fit(X, y).n_trees_ == 0
    assert ForestPrune(rf, alpha=amax * 0.99).fit(X, y).n_trees_ > 0
    capped = ForestPrune(rf, alpha=0.05, max_trees=3, random_state=0).fit(X, y)
    assert 0 < capped.n_trees_ <= 3


def test_depth_weighting_penalises_layers(small_problem):
    X, y, rf, problem = small_problem
    fp = ForestPrune(rf, alpha=2.0, weighting="depth", random_state=0).fit(X, y)
    dp = build_problem(unpack_ensemble(rf), X, y, "depth")
    assert dp.K == problem.n_layers.sum()
    assert fp.objective_ == pytest.approx(_brute_objective(dp, fp.layers_, np.ones(dp.n_trees), 2.0), abs=1e-10)


def test_path_and_selection(small_problem):
    X, y, rf, _ = small_problem
    Xv, yv = _data(80, seed=9)
    fp = ForestPrune(rf, random_state=0)
    df = fp.path(X, y, X_val=Xv, y_val=yv)
    assert len(df) == 50 and df["alpha"].is_monotonic_decreasing
    assert df["n_trees"].iloc[0] == 0
    assert (df["depth_hist"].apply(sum) == rf.n_estimators).all()
    assert df["n_nodes"].iloc[-1] > df["n_nodes"].iloc[0]
    # each path point is a CBCD fixed point with the objective it reports
    problem = build_problem(unpack_ensemble(rf), X, y, "node")
    assert fp.path_layers_.shape == fp.path_coef_.shape == (len(df), rf.n_estimators)
    for i, row in df.iloc[::10].iterrows():
        assert row["objective"] == pytest.approx(_brute_objective(
            problem, fp.path_layers_[i], np.ones(rf.n_estimators), row["alpha"]) / problem.y_var, abs=1e-10)
        assert row["n_trees"] == np.count_nonzero(fp.path_layers_[i])
    fp.fit_path(X, y, Xv, yv, tolerance=0.05)
    chosen_err = np.mean((fp.predict(Xv) - yv) ** 2)
    assert chosen_err <= 1.05 * df.attrs["full_val_error"] + 1e-12
    ok = df[df["val_error"] <= 1.05 * df.attrs["full_val_error"]]
    assert fp.n_nodes_ == ok["n_nodes"].min()


def test_path_selection_without_validation(small_problem):
    X, y, rf, _ = small_problem
    fp = ForestPrune(rf, random_state=0).fit_path(X, y, alphas=[5.0, 1.0, 0.1, 0.0], tolerance=0.5)
    df = fp.path_
    assert df["val_error"].isna().all()
    ok = df[df["train_error"] <= 1.5 * df.attrs["full_train_error"]]
    assert fp.n_nodes_ == ok["n_nodes"].min()
    assert np.mean((fp.predict(X) - y) ** 2) == pytest.approx(ok.sort_values("n_nodes")["train_error"].iloc[0])
    # no point within a tolerance of 0: fall back to the lowest error
    assert select_path_model(df.assign(train_error=df["train_error"] + 1.0), 0.0) == int(df["train_error"].idxmin())


def test_export_matches_predictions(small_problem):
    X, y, rf, _ = small_problem
    fp = ForestPrune(rf, alpha=3.0, random_state=0).fit(X, y)
    nodes = fp.export_trees()
    names = [f"x{j}" for j in range(X.shape[1])]
    pred = np.zeros(len(X))
    for _, tab in nodes.groupby("tree"):
        tab = tab.set_index("node")
        for j, x in enumerate(X.astype(np.float32)):
            node = 0
            while tab.loc[node, "left"] >= 0:
                f = names.index(tab.loc[node, "feature"])
                node = tab.loc[node, "left"] if x[f] <= tab.loc[node, "threshold"] else tab.loc[node, "right"]
            pred[j] += tab.loc[node, "weight"] * tab.loc[node, "value"]
    np.testing.assert_allclose(pred, fp.predict(X), atol=1e-10)
    assert len(nodes) == fp.n_nodes_
    assert "if x" in fp.export_text()


def test_bad_input():
    X, y = _data(60)
    rf = RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0)
    with pytest.raises(ValueError, match="not fitted"):
        ForestPrune(rf).fit(X, y)
    for bad in (LinearRegression().fit(X, y), DecisionTreeRegressor().fit(X, y)):
        with pytest.raises(ValueError, match="RandomForestRegressor, ExtraTreesRegressor"):
            ForestPrune(bad).fit(X, y)
    rf.fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        ForestPrune(rf, alpha=-1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        ForestPrune(rf).fit(X[:, :4], y)
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ForestPrune(rf).fit(Xn, y)
    yn = y.copy()
    yn[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ForestPrune(rf).fit(X, yn)
    fp = ForestPrune(rf, alpha=0.1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fp.predict(X[:, :5])
    with pytest.raises(ValueError, match="NaN"):
        fp.predict(Xn)
    with pytest.raises(ValueError, match="weighting"):
        ForestPrune(rf, weighting="leaf").fit(X, y)
    with pytest.raises(ValueError, match="polish"):
        ForestPrune(rf, polish="lasso").fit(X, y)
    with pytest.raises(ValueError, match="joint"):
        ForestPrune(rf, joint=True).fit(X, y)
    with pytest.raises(ValueError, match="alphas"):
        ForestPrune(rf).path(X, y, alphas=[1.0, -0.5])


def test_frozen_ensemble_survives_clone_and_cross_validation():
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator
    from sklearn.model_selection import cross_val_score

    X, y = _data(90)
    rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="FrozenEstimator"):
        clone(ForestPrune(rf, alpha=0.1)).fit(X, y)
    fp = clone(ForestPrune(FrozenEstimator(rf), alpha=0.1, random_state=0)).fit(X, y)
    np.testing.assert_array_equal(fp.predict(X), ForestPrune(rf, alpha=0.1, random_state=0).fit(X, y).predict(X))
    assert np.all(np.isfinite(cross_val_score(ForestPrune(FrozenEstimator(rf), alpha=0.1), X, y, cv=3)))


@parametrize_with_checks([ForestPrune(n_estimators=4, max_depth=3, alpha=0.1, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _eval_export_text(text, X, names):
    """Sum the pieces printed by ``export_text`` for each row of ``X`` (an independent reader)."""
    lines = text.splitlines()
    init = float(lines[0].split("=")[1].split("+")[0].split("(")[0])
    trees, i = [], 1
    while i < len(lines):
        weight = float(lines[i].split("weight ")[1].split(",")[0])
        body = []
        i += 1
        while i < len(lines) and lines[i].startswith("    "):
            body.append(lines[i])
            i += 1
        trees.append((weight, body))

    def walk(body, pos, x):
        line = body[pos].strip()
        if line.startswith("value "):
            return float(line.split()[1]), pos + 1
        name, threshold = line[3:-1].split(" <= ")
        left, after_left = walk(body, pos + 1, x)  # body[after_left] is "else:"
        right, after_right = walk(body, after_left + 1, x)
        return (left if x[names.index(name)] <= float(threshold) else right), after_right

    X32 = X.astype(np.float32)
    return np.array([init + sum(w * walk(body, 0, x)[0] for w, body in trees) for x in X32])


@pytest.mark.parametrize("kind", ["gbr", "rf"])
def test_export_text_pieces_sum_to_predict(kind):
    X, y = _data(100)
    y = y * 3.0 + 10.0  # boosting's initial value is far from 0
    est = (GradientBoostingRegressor(n_estimators=8, max_depth=2, random_state=0) if kind == "gbr"
           else RandomForestRegressor(n_estimators=6, max_depth=3, random_state=0)).fit(X, y)
    fp = ForestPrune(est, alpha=0.05, random_state=0).fit(X, y)
    assert fp.n_trees_ > 0
    names = [f"f{j}" for j in range(X.shape[1])]
    exact = _eval_export_text(fp.export_text(names, decimals=17), X, names)
    np.testing.assert_allclose(exact, fp.predict(X), rtol=1e-12, atol=1e-12)
    rounded = _eval_export_text(fp.export_text(names), X, names)  # 3 significant digits
    assert np.median(np.abs(rounded - fp.predict(X))) < 0.02 * np.std(y)  # a rounded threshold may flip a row
    # a model keeping no tree prints its constant
    empty = ForestPrune(est, alpha=1e6).fit(X, y)
    assert empty.n_trees_ == 0
    np.testing.assert_allclose(_eval_export_text(empty.export_text(decimals=17), X, names), empty.predict(X))


def test_export_feature_names_checked():
    X, y = _data(60)
    fp = ForestPrune(alpha=0.1, n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    for bad in (["a"], [f"c{j}" for j in range(X.shape[1] + 1)]):
        with pytest.raises(ValueError, match=f"feature_names must name the {X.shape[1]} input features, got {len(bad)}"):
            fp.export_text(feature_names=bad)
        with pytest.raises(ValueError, match="feature_names"):
            fp.export_trees(feature_names=bad)
    with pytest.raises(TypeError, match="feature_names"):
        fp.export_text(feature_names="abcdef")
    names = [f"col {j}" for j in range(X.shape[1])]
    assert set(fp.export_trees(names)["feature"].dropna()) <= set(names)


def test_alpha_is_relative_to_the_scale_of_y():
    X, y = _data(150)
    y = y + 3.0
    ref = ForestPrune(alpha=0.5, n_estimators=12, max_depth=4, random_state=0).fit(X, y)
    assert 0 < ref.n_nodes_ < ForestPrune(alpha=0.0, n_estimators=12, max_depth=4, random_state=0).fit(X, y).n_nodes_
    for c in (1000.0, 3.7e-5, 2.0**-20):
        scaled = ForestPrune(alpha=0.5, n_estimators=12, max_depth=4, random_state=0).fit(X, c * y)
        np.testing.assert_array_equal(scaled.layers_, ref.layers_)
        # the forest refitted on c * y may round its splits differently, not its pruning
        assert scaled.objective_ == pytest.approx(ref.objective_, rel=1e-2)
        assert np.mean(np.isclose(scaled.predict(X), c * ref.predict(X), rtol=1e-6, atol=0)) > 0.95
    # the path's alphas too
    a = ForestPrune(n_estimators=12, max_depth=4, random_state=0).path(X, y)
    b = ForestPrune(n_estimators=12, max_depth=4, random_state=0).path(X, 2.0**40 * y)
    np.testing.assert_allclose(a["alpha"], b["alpha"], rtol=1e-12)
    np.testing.assert_array_equal(a["n_nodes"], b["n_nodes"])


@pytest.mark.parametrize("case", ["constant_X", "one_row", "two_rows", "tiny_X", "huge_alpha"])
def test_empty_model_predicts_the_mean(case):
    X, y = _data(40)
    y = y + 0.3  # keeping root means gains less than the penalty: every tree is removed
    if case == "constant_X":
        X = np.ones_like(X)
    elif case == "one_row":
        X, y = X[:1], y[:1]
    elif case == "two_rows":  # one point twice, two targets
        X, y = np.repeat(X[:1], 2, axis=0), np.array([-0.2, 0.8])
    elif case == "tiny_X":
        X = X * 1e-310
    fp = ForestPrune(alpha=1e6 if case == "huge_alpha" else 3.0, n_estimators=5, random_state=0).fit(X, y)
    assert fp.n_trees_ == 0
    np.testing.assert_allclose(fp.predict(X), np.mean(y), rtol=1e-12)
    np.testing.assert_allclose(fp.predict(np.zeros((3, X.shape[1]))), np.mean(y), rtol=1e-12)


@pytest.mark.parametrize("ensemble", [None, "boosting", "forest_on_other_y"])
def test_a_constant_target_is_predicted_exactly(ensemble):
    X, other = _data(300)
    y = np.full(300, 3.0)
    estimator = {None: None,
                 "boosting": GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X, y),
                 "forest_on_other_y": RandomForestRegressor(20, max_depth=3, random_state=0).fit(X, other)}[ensemble]
    fp = ForestPrune(estimator, alpha=0.5, random_state=0).fit(X, y)
    assert fp.n_trees_ == 0 and fp.objective_ == 0.0  # was 97 of 100 root layers predicting 2.91
    np.testing.assert_allclose(fp.predict(X), 3.0, rtol=1e-12)
    path = ForestPrune(estimator, n_estimators=10, random_state=0).path(X, y, alphas=[1.0, 1e-3])
    assert path["n_trees"].tolist() == [0, 0] and np.allclose(path["train_error"], 0.0)


@pytest.mark.parametrize("scale", [2.0**1000, 1e300, 1e160, 2.0**-1000, 1e-300])
def test_extreme_scales_of_y(scale):
    X, y = _data(120)
    y = y + 2.0
    ref = ForestPrune(alpha=0.0, n_estimators=8, max_depth=4, random_state=0).fit(X, y)
    fp = ForestPrune(alpha=0.0, n_estimators=8, max_depth=4, random_state=0).fit(X, y * scale)
    assert np.isfinite(fp.objective_) and fp.n_trees_ > 0
    pred = fp.predict(X) / scale
    assert np.all(np.isfinite(pred))
    # the forest is fitted (and pruned) as on y: exactly for a power of two, else up to rounding
    if np.log2(scale) == int(np.log2(scale)):
        np.testing.assert_array_equal(fp.layers_, ref.layers_)
        np.testing.assert_allclose(pred, ref.predict(X), rtol=1e-12)
    else:
        assert np.corrcoef(pred, ref.predict(X))[0, 1] > 0.99
    boosted = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(X, y * scale)
    gb = ForestPrune(boosted, alpha=0.0, random_state=0).fit(X, y * scale)
    assert np.isfinite(gb.objective_) and np.all(np.isfinite(gb.predict(X)))


def test_path_rows_are_readable(small_problem):
    X, y, rf, _ = small_problem
    fp = ForestPrune(rf, random_state=0)
    df = fp.path(X, y, alphas=[1.0, 0.1])
    for col in df.columns.drop("depth_hist"):
        assert np.ndim(df[col].iloc[0]) == 0, col
    assert len(df["depth_hist"].iloc[0]) == rf.estimators_[0].get_depth() + 2
    assert len(str(df.iloc[0]).splitlines()) == len(df.columns) + 1
    refit = ForestPrune(rf, alpha=0.1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(fp.path_layers_[1], refit.layers_)
