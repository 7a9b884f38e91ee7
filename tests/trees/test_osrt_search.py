"""Exactness of the OSRT search against exhaustive search, and validity of every bound."""

from __future__ import annotations

import numpy as np
import pytest

from parsimony.losses import Squared, as_loss
from parsimony.trees import _lookahead, _memo, _records, _register, _stack, _terminal
from parsimony.trees._classes import _bitsets, _equivalence_classes
from parsimony.trees._driver import _new_memo, find_tree

from _osrt_brute import brute_force_objective, leaf_loss, kernel_lower_bound, random_problem, table_splits, tree_objective


def _weights(seed, n):
    """Row weights for a weighted variant of a random problem: real, integer or with zeros."""
    rng = np.random.default_rng(10_000 + seed)
    return (rng.uniform(0.1, 3.0, n), rng.integers(1, 4, n).astype(float))[seed % 2]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bound", ["kmeans", "equivalent", "none"])
def test_objective_equals_exhaustive_search(bound, weighted):
    seeds = range(240) if bound == "kmeans" and not weighted else range(0, 240, 3)
    for seed in seeds:
        Xb, y, lam, depth = random_problem(seed)
        loss = "absolute" if seed % 4 == 1 or (weighted and seed % 4 == 2) else "squared"
        w = _weights(seed, len(y)) if weighted else None
        result = find_tree(Xb, y, as_loss(loss), lam, depth, bound, sample_weight=w)
        expected = brute_force_objective(Xb, y, lam, depth, loss, sample_weight=w)
        assert result.status == "optimal"
        assert result.objective == pytest.approx(expected, abs=1e-9), (seed, bound)
        # the returned tree really has that objective and respects the depth limit
        assert tree_objective(table_splits(result.tree, Xb), y, lam, loss, w) == pytest.approx(expected, abs=1e-9), seed


def test_eight_features_depth_three():
    for seed in range(12):
        rng = np.random.default_rng(1000 + seed)
        Xb = (rng.random((24, 8)) < 0.5).astype(np.uint8)
        y = Xb[:, 0] * 2.0 + Xb[:, 1] * Xb[:, 2] + rng.normal(scale=0.3, size=24)
        lam = 0.01
        assert find_tree(Xb, y, Squared(), lam, 3).objective == pytest.approx(brute_force_objective(Xb, y, lam, 3), abs=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_lower_bounds_never_exceed_the_optimum(loss, weighted):
    """The bound of any subproblem (random subsets of classes, every depth) <= its optimum."""
    loss_kind = 0 if loss == "squared" else 1
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(40):
        Xb, y, lam, _ = random_problem(seed)
        w = _weights(seed, len(y)) if weighted else np.ones(len(y))
        scale = leaf_loss(y, loss, w)  # the search scales y so that one leaf has loss 1
        scale = np.sqrt(scale) if loss_kind == 0 else scale
        ys = y / scale
        uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, ys, w, as_loss(loss))
        order = np.argsort(ys, kind="stable")
        rows_class = row_class[order].astype(np.int64)
        rows_y = ys[order]
        n_classes = len(cw)
        for _ in range(4):
            subset = np.nonzero(rng.random(n_classes) < 0.6)[0]
            if subset.size == 0:
                continue
            words = _bitsets(np.isin(np.arange(n_classes), subset)[:, None], 1)[0]
            fbits = _bitsets(uniq.astype(bool), 1)
            rows = np.nonzero(np.isin(row_class, subset))[0]
            for d in (0, 1, 2, 3, _records.UNLIMITED):
                opt = brute_force_objective(Xb, y, lam, None if d == _records.UNLIMITED else d, loss, rows=rows,
                                            sample_weight=w)
                # the oracle normalises by the loss of all rows, as the search does
                for kind in (_records.BOUND_KMEANS, _records.BOUND_EQUIVALENT, _records.BOUND_NONE):
                    problem = _records.make_problem(loss_kind, kind, lam, d == _records.UNLIMITED, uniq, fbits, cw, cs,
                                                   cq, cmean, cwithin, rows_class, rows_y, w[order])
                    lb = kernel_lower_bound(problem, words, d)
                    assert lb <= opt + 1e-9, (seed, d, kind)
                    checked += 1
    assert checked > 500


def test_kmeans_bound_is_at_least_the_equivalent_points_bound():
    Xb, y, lam, _ = random_problem(11)
    result_k = find_tree(Xb, y, Squared(), lam, 3, bound="kmeans")
    result_e = find_tree(Xb, y, Squared(), lam, 3, bound="equivalent")
    assert result_k.objective == pytest.approx(result_e.objective)
    assert result_k.stats["expansions"] <= result_e.stats["expansions"]


def _hard_problem():
    rng = np.random.default_rng(5)
    Xb = (rng.random((150, 12)) < 0.5).astype(np.uint8)
    y = Xb[:, :6] @ rng.normal(size=6) + Xb[:, 6] * Xb[:, 7] + rng.normal(scale=0.5, size=150)
    return Xb, y


@pytest.mark.parametrize("loss, weighted", [("squared", False), ("squared", True), ("absolute", True)])
def test_time_limit_returns_best_tree_with_certified_gap(loss, weighted):
    Xb, y = _hard_problem()
    w = np.random.default_rng(5).uniform(0.2, 3.0, len(y)) if weighted else None
    full = find_tree(Xb, y, as_loss(loss), 0.001, None, sample_weight=w)
    assert full.status == "optimal"
    limited = find_tree(Xb, y, as_loss(loss), 0.001, None, time_limit=0.05, sample_weight=w)
    assert limited.status == "time_limit"
    assert limited.lower_bound <= full.objective + 1e-9
    assert limited.objective >= full.objective - 1e-9
    assert tree_objective(table_splits(limited.tree, Xb), y, 0.001, loss, w) == pytest.approx(limited.objective, abs=1e-9)


def test_memory_limit_stops_gracefully():
    Xb, y = _hard_problem()
    full = find_tree(Xb, y, Squared(), 0.001, None)
    limited = find_tree(Xb, y, Squared(), 0.001, None, memory_limit=0.5)
    assert limited.status == "memory_limit"
    assert limited.lower_bound <= full.objective + 1e-9 <= limited.objective + 2e-9


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_every_stored_bound_and_value_is_valid(loss):
    """After a search, every memoised lower bound <= that subproblem's optimum, every value == it."""
    checked = 0
    for seed in range(25):
        Xb, y, lam, depth = random_problem(3 * seed + 1)
        checked += _check_table(find_tree(Xb, y, as_loss(loss), lam, depth, keep_table=True), Xb, y, lam, loss, None, seed)
    assert checked > 100


def _check_table(result, Xb, y, lam, loss, w, seed):
    """Assert every memoised bound of a search is at most, every memoised value equal to, that
    subproblem's optimum by exhaustive search; returns how many entries were checked."""
    table = result.table
    for rows, d, lb, value in zip(table["rows"], table["depth"], table["lower_bound"], table["value"]):
        opt = brute_force_objective(Xb, y, lam, None if d == _records.UNLIMITED else int(d), loss, rows=rows,
                                    sample_weight=w)
        assert lb <= opt + 1e-9, (seed, d)
        if np.isfinite(value):
            assert value == pytest.approx(opt, abs=1e-9), (seed, d)
    return len(table["rows"])


def test_warm_up_compiles_every_kernel():
    from parsimony.trees._driver import warm_up

    warm_up()
    # the kernels called from Python (cluster_costs is compiled into search, and when search
    # comes from numba's disk cache its dispatcher stays empty)
    for kernel in (_stack.search, _memo.rehash, _memo.lookup, _stack.stack_lower_bound):
        assert kernel.signatures, kernel


def _terminal_case(seed):
    """Random binary data for the depth-two solver: ties in y, duplicated and constant columns, weights."""
    rng = np.random.default_rng(50_000 + seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(1, 9))
    Xb = (rng.random((n, m)) < rng.uniform(0.1, 0.9)).astype(np.uint8)
    if seed % 5 == 0 and m > 1:
        Xb[:, -1] = Xb[:, 0]                     # a duplicated column
    if seed % 7 == 0:
        Xb[:, 0] = 1                             # a column that splits nothing
    y = rng.integers(0, 3, n).astype(float) if seed % 3 == 0 else rng.normal(size=n) * 10.0 ** rng.uniform(-3, 3)
    if np.ptp(y) == 0:
        y[0] += 1.0
    w = (np.ones(n), rng.uniform(0.05, 5.0, n), rng.integers(1, 5, n).astype(float))[seed % 3]
    lam = [0.0, 0.001, 0.01, 0.05, 0.2][seed % 5]
    return Xb, y, w, lam


def _squared_problem(seed):
    """A random case, its kernel Problem (squared loss, depth limit), work buffers and a sampler of
    subproblems: ``subproblem(subset)`` gives the bitset and the rows of a subset of the classes."""
    Xb, y, w, lam = _terminal_case(seed)
    ys = y / np.sqrt(leaf_loss(y, "squared", w))  # scaled like the search: one leaf has loss 1
    uniq, row_class, cw, cs, cq, cmean, cwithin = _equivalence_classes(Xb, ys, w, Squared())
    n_words = (len(cw) + 63) // 64
    problem = _records.make_problem(0, _records.BOUND_KMEANS, lam, False, uniq, _bitsets(uniq.astype(bool), n_words),
                                   cw, cs, cq, cmean, cwithin)

    def subproblem(subset):
        words = _bitsets(np.isin(np.arange(len(cw)), subset)[:, None], n_words)[0]
        return words, np.nonzero(np.isin(row_class, subset))[0]

    return (Xb, y, w, lam), problem, _records.new_buffers(problem, _records.pair_width(problem)), subproblem


def test_depth_two_solver_is_exact():
    """The terminal solver's optimum of random subproblems equals exhaustive search at depth two, and
    the splits it returns (root, false child, true child) realise that optimum."""
    rng = np.random.default_rng(3)
    checked = 0
    for seed in range(150):
        (Xb, y, w, lam), problem, buffers, subproblem = _squared_problem(seed)
        n_classes = problem.class_weight.shape[0]
        for trial in range(3):
            subset = np.arange(n_classes) if trial == 0 else np.nonzero(rng.random(n_classes) < 0.6)[0]
            if subset.size == 0:
                continue
            words, rows = subproblem(subset)
            value, j, k0, k1 = _terminal._depth_two(problem, words, buffers.members, buffers.pairs, buffers.pair_within,
                                                  buffers.kept, buffers.slot, buffers.active, buffers.ones)
            expected = brute_force_objective(Xb, y, lam, 2, rows=rows, sample_weight=w)
            assert value == pytest.approx(expected, abs=1e-9), (seed, trial)
            tree = {"rows": rows}
            if j >= 0:
                children = []
                for side, k in ((0, k0), (1, k1)):
                    part = rows[Xb[rows, j] == side]
                    assert 0 < len(part) < len(rows), (seed, j)
                    if k < 0:
                        children.append({"rows": part})
                        continue
                    hit = Xb[part, k] == 1
                    assert 0 < hit.sum() < len(part), (seed, k)
                    children.append({"feature": k, "false": {"rows": part[~hit]}, "true": {"rows": part[hit]}})
                tree = {"feature": j, "false": children[0], "true": children[1]}
            # (tree_objective normalises by the loss of all rows, as the search does)
            assert tree_objective(tree, y, lam, "squared", w) == pytest.approx(expected, abs=1e-9), (seed, trial)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_terminal_solver_in_the_search_is_exact_with_weights(depth):
    """Whole searches whose depth-two subproblems go to the terminal solver, against exhaustive search."""
    for seed in range(60):
        Xb, y, w, lam = _terminal_case(seed)
        result = find_tree(Xb, y, Squared(), lam, depth, sample_weight=w, keep_table=True)
        expected = brute_force_objective(Xb, y, lam, depth, sample_weight=w)
        assert result.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_objective(table_splits(result.tree, Xb), y, lam, "squared", w) == pytest.approx(expected, abs=1e-9), seed


def _children(buffers, lam, j, n, tw, ts, tq, tv, leaves, active):
    """The search's values (or bounds) of split ``j``'s children, each a leaf or split once more."""
    cells = np.empty_like(buffers.pairs)
    _terminal._score_pairs(lam, buffers.pairs, buffers.pair_within, n, tw, ts, tq, tv, leaves, active, active.size, cells)
    leaf0, leaf1 = _terminal._leaves_of(buffers.pairs, j, tw, ts, tq, lam)
    return _terminal._split_children(cells, j, leaf0, leaf1, 0.0, active, active.size)


def test_lookahead_bounds_of_children_are_valid():
    """The pair-sum lookahead of every split's children (one more split, grandchildren bounded) is at
    most their optimum at any depth >= 1, and exact at depth one when the grandchildren are leaves."""
    rng = np.random.default_rng(4)
    checked = 0
    for seed in range(60):
        (Xb, y, w, lam), problem, buffers, subproblem = _squared_problem(seed)
        subset = np.nonzero(rng.random(problem.class_weight.shape[0]) < 0.7)[0]
        if subset.size < 2:
            continue
        words, rows = subproblem(subset)
        _terminal._index_features(words, problem.feature_bits, buffers.kept, buffers.slot)
        n, tw, ts, tq, tv = _terminal._pair_sums(problem, words, buffers.members, buffers.pairs, buffers.pair_within,
                                               True, buffers.slot, buffers.kept[0], buffers.ones)
        active = buffers.active[:_terminal._active_list(buffers.pairs, n, buffers.kept[0], buffers.active)].copy()
        for j in range(Xb.shape[1]):
            hit = Xb[rows, j] == 1
            if hit.all() or not hit.any():
                continue
            exact = _children(buffers, lam, buffers.slot[j], n, tw, ts, tq, tv, True, active)
            bound = _children(buffers, lam, buffers.slot[j], n, tw, ts, tq, tv, False, active)
            for side, part in ((0, rows[~hit]), (1, rows[hit])):
                assert exact[side] == pytest.approx(brute_force_objective(Xb, y, lam, 1, rows=part, sample_weight=w),
                                                    abs=1e-9), (seed, j)
                for d in (1, 2, 3):
                    opt = brute_force_objective(Xb, y, lam, d, rows=part, sample_weight=w)
                    assert bound[side] <= opt + 1e-9, (seed, j, d)
                checked += 1
    assert checked > 200


@pytest.mark.parametrize("depth", [4, 5])
def test_deep_limits_are_exact_and_store_valid_bounds(depth):
    """Depth limits four and five (the depth-four frames' lookahead bounds of their depth-three children,
    the pair sums kept for those children's expansions, terminal children solved larger first):
    exhaustive search agrees, and every stored bound is at most, every stored value equal to, the
    subproblem's optimum."""
    checked = 0
    for seed in range(40):
        Xb, y, w, lam = _terminal_case(seed)
        if seed % 4 == 3:  # duplicated rows with different targets: within-class losses
            Xb = np.vstack([Xb, Xb[: len(y) // 2]])
            y = np.concatenate([y, y[: len(y) // 2] + 1.0])
            w = np.concatenate([w, w[: len(w) // 2]])
        lam = max(lam, 0.002)
        result = find_tree(Xb, y, Squared(), lam, depth, sample_weight=w, keep_table=True)
        expected = brute_force_objective(Xb, y, lam, depth, sample_weight=w)
        assert result.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_objective(table_splits(result.tree, Xb), y, lam, "squared", w) == pytest.approx(expected, abs=1e-9), seed
        checked += _check_table(result, Xb, y, lam, "squared", w, seed)
    assert checked > 300


def test_lookahead_bound_of_a_subproblem_is_valid():
    """The two-level lookahead bound (leaf, or a split whose children are leaves or split once more,
    grandchildren bounded; raised by stored depth-two values) is at most the optimum at depths two
    to four, on random subsets."""
    rng = np.random.default_rng(5)
    checked = 0
    for seed in range(80):
        (Xb, y, w, lam), problem, buffers, subproblem = _squared_problem(seed)
        n_classes = problem.class_weight.shape[0]
        subset = np.nonzero(rng.random(n_classes) < 0.8)[0]
        if subset.size < 2:
            continue
        words, rows = subproblem(subset)
        memo = _new_memo(256, words.shape[0])
        for trial in range(6):  # store some solved depth-two subproblems (children and others)
            part = subset[rng.random(subset.size) < 0.5]
            if part.size == 0:
                continue
            sub, _ = subproblem(part)
            slot = _register._entry(problem, memo, buffers, sub, 2, 0.0)
            assert np.isfinite(memo.value[slot])
        _terminal._index_features(words, problem.feature_bits, buffers.kept, buffers.slot)
        n, tw, ts, tq, tv = _terminal._pair_sums(problem, words, buffers.members, buffers.pairs, buffers.pair_within,
                                               True, buffers.slot, buffers.kept[0], buffers.ones)
        bound = _lookahead._lookahead_bound(problem.lam, buffers.pairs, buffers.pair_within, n, tw, ts, tq, tv,
                                         buffers.kept, buffers.active, buffers.cells, memo, words, problem.feature_bits,
                                         buffers.other)
        for d in (2, 3, 4):
            assert bound <= brute_force_objective(Xb, y, lam, d, rows=rows, sample_weight=w) + 1e-9, (seed, d)
        checked += 1
    assert checked > 50


def test_deep_limit_without_room_for_kept_pair_sums(monkeypatch):
    """With too many features for the kept pair sums (a size cap), depth-three children go without the
    lookahead bound: the same optimum as with them."""
    from parsimony.trees import _driver

    for seed in range(0, 40, 3):
        Xb, y, w, lam = _terminal_case(seed)
        lam = max(lam, 0.002)
        with_sums = find_tree(Xb, y, Squared(), lam, 5, sample_weight=w)
        monkeypatch.setattr(_driver, "_KEPT_PAIR_BYTES", 0)
        without = find_tree(Xb, y, Squared(), lam, 5, sample_weight=w)
        monkeypatch.undo()
        assert without.objective == pytest.approx(with_sums.objective, abs=1e-12), seed
        assert without.objective == pytest.approx(brute_force_objective(Xb, y, lam, 5, sample_weight=w), abs=1e-9)


def test_rehash_keeps_every_entry_and_its_record():
    rng = np.random.default_rng(7)
    memo, grown = _new_memo(64, 2), _new_memo(128, 2)
    entries = {}
    while len(entries) < 30:  # distinct (bitset, depth) keys, some bitsets at two depths
        words, d = rng.integers(1, 2**62, size=2, dtype=np.uint64), int(rng.integers(0, 5))
        entries[(tuple(words), d)] = (float(rng.normal()), float(rng.normal()), int(rng.integers(0, 9)))
        if len(entries) % 7 == 0:
            entries[(tuple(words), d + 5)] = (1.0, 2.0, 3)
    for (words, d), (lower, value, feature) in entries.items():
        s = _memo._find(memo.keys, memo.depth, np.array(words, dtype=np.uint64), d)
        assert memo.depth[s] == -1
        memo.keys[s], memo.depth[s], memo.lower[s], memo.value[s], memo.feature[s] = words, d, lower, value, feature
    _memo.rehash(memo, grown)
    assert (grown.depth != -1).sum() == len(entries)
    for (words, d), record in entries.items():
        s = _memo.lookup(grown, np.array(words, dtype=np.uint64), d)
        assert s >= 0 and (grown.lower[s], grown.value[s], grown.feature[s]) == record
    assert _memo.lookup(grown, np.array([1, 1], dtype=np.uint64), 0) == -1
