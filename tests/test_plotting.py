"""Plot helpers refuse what they cannot draw, and draw what they are given."""

import numpy as np
import pytest

from parsimony.symbolic import SymbolicQuantileRegressor


def test_plots_want_the_fitted_model_they_draw():
    import matplotlib
    from sklearn.exceptions import NotFittedError

    from parsimony.plotting import plot_osrt_tree, plot_pareto_front
    from parsimony.trees import OptimalSparseRegressionTree

    matplotlib.use("Agg")
    with pytest.raises(NotFittedError):
        plot_pareto_front(SymbolicQuantileRegressor())
    with pytest.raises(TypeError, match="estimator"):
        plot_osrt_tree([1, 2, 3])
    X = np.repeat(np.arange(4.0), 5)[:, None]
    tree = OptimalSparseRegressionTree(regularization=0.01).fit(X, (X[:, 0] > 1.5) * 3.0)
    with pytest.raises(TypeError, match="SymbolicQuantileRegressor"):
        plot_pareto_front(tree)
    ax = plot_osrt_tree(tree)
    boxes = [t.get_text() for t in ax.texts if "\n" in t.get_text()]
    assert len(boxes) == 3 and {"0.00\nn=10", "3.00\nn=10"} <= set(boxes)  # a split and its two leaves


def test_tree_labels_take_the_largest_font_that_fits():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from parsimony.trees import OptimalSparseRegressionTree

    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = np.floor(8 * X[:, 0]) + rng.normal(0, 0.01, 400)  # many levels: a wide tree
    tree = OptimalSparseRegressionTree(regularization=0.001, depth_limit=3).fit(X, y)
    assert tree.n_leaves_ >= 6
    for width, smallest in ((7.4, 7.0), (4.0, 3.0)):
        fig, ax = plt.subplots(figsize=(width, 4))
        tree.plot_tree(ax=ax)
        fig.canvas.draw()
        boxes = [t for t in ax.texts if "\n" in t.get_text()]
        sizes = {t.get_fontsize() for t in boxes}
        assert len(sizes) == 1 and smallest <= sizes.pop() <= 11
        extents = [t.get_bbox_patch().get_window_extent() for t in boxes]
        overlaps = [(a, b) for i, a in enumerate(extents) for b in extents[i + 1:] if a.overlaps(b)]
        assert not overlaps  # the boxes never cover each other
        plt.close(fig)
    ax = tree.plot_tree()  # a figure sized to the tree: the largest font
    assert {t.get_fontsize() for t in ax.texts if "\n" in t.get_text()} == {11}
    plt.close(ax.figure)


def test_forestprune_path_plot_starts_at_zero_nodes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import RandomForestRegressor

    from parsimony.ensembles import ForestPrune
    from parsimony.ensembles.pruning_baselines import random_removal_path
    from parsimony.plotting import plot_forestprune_path

    X, y = make_friedman1(n_samples=200, noise=1.0, random_state=0)
    forest = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X[:150], y[:150])
    path = ForestPrune(forest, random_state=0).path(X[:150], y[:150], X_val=X[150:], y_val=y[150:])
    fig, ax = plt.subplots()
    plot_forestprune_path(random_removal_path(forest, X[:150], y[:150], X_val=X[150:], y_val=y[150:]), ax=ax,
                          label="random removal", full=False)
    plot_forestprune_path(path, ax=ax)
    left, right = ax.get_xlim()
    assert left == 0 and right >= path["n_nodes"].max()  # no empty negative axis, every point shown
    assert ax.get_xscale() == "symlog" and ax.get_ylabel() == "validation MSE"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["random removal", "ForestPrune", "full ensemble"]
    with pytest.raises(ValueError, match="n_nodes"):
        plot_forestprune_path(path, x="depth")
    plt.close(fig)
