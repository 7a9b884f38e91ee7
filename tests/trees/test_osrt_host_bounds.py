"""The k-Means bounds computed outside the search kernel (BOUND_HOST, the Julia engine's path),
checked here with the native clustering kernel called from Python as the twin: the search asks for
every bound it needs and runs exactly as the native one."""

from __future__ import annotations

import numpy as np
import pytest

from parsimony.losses import Absolute, Pinball, Squared
from parsimony.trees import OptimalSparseRegressionTree
from parsimony.trees._driver import find_tree
from parsimony.trees._host_bounds import subproblem_bound
from parsimony.trees._kmeans import cluster_costs


class _Counting:
    """``cluster_costs`` called from Python, counting its calls (a twin with the native contract)."""

    def __init__(self, scale=1.0):
        self.calls = 0
        self.scale = scale

    def __call__(self, kind, weights, values, max_clusters, lam, floor, tau=0.5):
        self.calls += 1
        best, costs = cluster_costs(kind, weights, values, max_clusters, lam, floor, tau)
        return self.scale * best, costs


def _data(seed, n=120, m=7):
    rng = np.random.default_rng(seed)
    Xb = (rng.random((n, m)) < 0.5).astype(np.uint8)
    y = 2.0 * Xb[:, 0] - Xb[:, 1] * Xb[:, 2] + Xb[:, 3] * Xb[:, 4] + rng.normal(scale=0.3, size=n)
    return Xb, y


@pytest.mark.parametrize("loss", [Squared(), Absolute(), Pinball(0.8)], ids=["squared", "absolute", "pinball"])
@pytest.mark.parametrize("depth", [None, 3, 4])
def test_bounds_from_a_twin_give_the_native_search(loss, depth):
    Xb, y = _data(1)
    native = find_tree(Xb, y, loss, 0.005, depth, keep_table=True)
    twin = _Counting()
    hosted = find_tree(Xb, y, loss, 0.005, depth, keep_table=True, cluster_costs=twin)
    assert hosted.status == native.status == "optimal"
    assert hosted.objective == native.objective and hosted.lower_bound == native.lower_bound
    for key in ("subproblems", "expansions", "bounds"):
        assert hosted.stats[key] == native.stats[key], key
    np.testing.assert_array_equal(hosted.tree.feature, native.tree.feature)
    np.testing.assert_array_equal(hosted.tree.value, native.tree.value)
    # the same table: every subproblem with the same bound (so every bound the search used came
    # from the twin, computed exactly as the kernel computes it)
    same = {(tuple(r), d): (lo, v) for r, d, lo, v in zip(*(native.table[k] for k in ("rows", "depth",
                                                                                       "lower_bound", "value")))}
    for r, d, lo, v in zip(*(hosted.table[k] for k in ("rows", "depth", "lower_bound", "value"))):
        assert same[(tuple(r), d)] == (lo, v)
    # (bounds of one class need no clustering; under the squared loss and depth three, every bound
    # is of one class or comes from the lookahead and the terminal solver)
    assert twin.calls <= native.stats["bounds"]
    if depth is None:
        assert twin.calls > 0


def test_the_search_uses_the_twins_bounds():
    """A twin whose bounds are weaker (still valid) makes the search work more for the same optimum."""
    Xb, y = _data(2)
    exact = find_tree(Xb, y, Squared(), 0.005, None, cluster_costs=_Counting())
    weak = find_tree(Xb, y, Squared(), 0.005, None, cluster_costs=_Counting(scale=0.5))
    assert weak.objective == exact.objective
    assert weak.stats["expansions"] > exact.stats["expansions"]


def test_subproblem_bound_is_the_kernels_lower_bound():
    from parsimony.trees._bounds import lower_bound
    from parsimony.trees._classes import _prepare
    from parsimony.trees._driver import BOUNDS

    Xb, y = _data(3, n=80)
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 2.0, size=80)
    for loss in (Squared(), Absolute(), Pinball(0.3)):
        centre, norm = loss.constant_total(y, w)
        prep = _prepare(Xb, y, w, np.arange(80), loss, BOUNDS["kmeans"], 0.01, 3, centre, norm)
        problem = prep.problem
        n_classes = problem.class_weight.shape[0]
        members, buf = np.zeros(n_classes, dtype=np.int64), np.zeros(200)
        for _ in range(20):
            inside = rng.random(n_classes) < 0.6
            words = np.packbits(np.concatenate([inside, np.zeros(64 * prep.root_words.shape[0] - n_classes, bool)]),
                                bitorder="little").view(np.uint64)
            for d in (1, 2, 5, 1 << 30):
                expected = lower_bound(problem, words, d, members, buf, buf.copy())
                assert subproblem_bound(problem, words, d, cluster_costs) == expected


def test_osrt_backend_native_and_auto_without_julia_agree():
    Xb, y = _data(4, n=60, m=5)
    native = OptimalSparseRegressionTree(regularization=0.01, binarizer=None, backend="native").fit(Xb, y)
    auto = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(Xb, y)
    assert native.backend_ == "native"
    assert auto.objective_ == native.objective_
    with pytest.raises(ValueError, match="backend"):
        OptimalSparseRegressionTree(backend="fortran").fit(Xb, y)
