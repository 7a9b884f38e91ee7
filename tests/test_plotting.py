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
    boxes = [t.get_text() for t in ax.texts if t.get_bbox_patch() is not None]
    assert len(boxes) == 3 and {"0.00\nn=10", "3.00\nn=10"} <= set(boxes)  # a split and its two leaves


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
