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
