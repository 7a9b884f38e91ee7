"""One model protocol: every estimator sets an integer ``complexity_`` in ``fit`` (what
``metrics.complexity`` reports), and the model-printing ones share
``export_text(feature_names=None, decimals=...)``."""

import inspect

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.tree import DecisionTreeRegressor

from parsimony import OptimalSparseRegressionTree
from parsimony.ensembles import BaggedNetworks, ForestPrune, OrderedBaggingRegressor
from parsimony.experiments.baselines import QuantileDecisionTreeRegressor, make_lqr, make_qdt
from parsimony.metrics import complexity
from parsimony.symbolic import SymbolicQuantileRegressor

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(120, 3))
y = X[:, 0] + 2 * X[:, 1] ** 2 + 0.1 * rng.normal(size=120)
NAMES = ["age", "dose", "weight"]

SQR = dict(niterations=2, populations=2, population_size=12, progress=False, random_state=0)


def _fitted():
    """(estimator, the complexity by the paper's conventions, computed here from its fitted parts)."""
    sqr = SymbolicQuantileRegressor(**SQR).fit(X, y)
    yield sqr, int(sqr.equations_["complexity"].iloc[sqr.best_index_])
    sqr3 = SymbolicQuantileRegressor(quantile=[0.1, 0.5, 0.9], **SQR).fit(X, y)
    yield sqr3, sum(int(f["complexity"].iloc[i]) for f, i in zip(sqr3.equations_, sqr3.best_index_))
    tree = OptimalSparseRegressionTree(regularization=0.05, depth_limit=2).fit(X, y)
    yield tree, int(np.sum(tree.tree_.feature >= 0) * 2 + 1)  # a binary tree: splits * 2 + 1 nodes
    pruned = ForestPrune(alpha=0.1, n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    yield pruned, pruned.n_nodes_
    bag = OrderedBaggingRegressor(DecisionTreeRegressor(max_depth=2), n_estimators=10, random_state=0).fit(X, y)
    yield bag, sum(bag.estimators_[i].tree_.node_count for i in bag.order_[:bag.n_kept_])
    nets = BaggedNetworks(n_estimators=3, hidden_units=2, max_iter=5, random_state=0).fit(X, y)
    yield nets, sum(np.count_nonzero(a) for m in nets.estimators_ for a in (m.w1, m.b1, m.w2, m.b2))
    qdt = QuantileDecisionTreeRegressor(quantile=0.7, max_depth=3).fit(X, y)
    yield qdt, qdt.tree_.node_count
    lqr = make_lqr(0.5, random_state=0, n_trials=2, cv=2).fit(X, y)
    linear = lqr.best_estimator_.steps[-1][1]
    yield lqr, int(np.count_nonzero(linear.coef_) + np.count_nonzero(linear.intercept_))


FITTED = list(_fitted())


@pytest.mark.parametrize("model, expected", FITTED, ids=lambda v: type(v).__name__ if hasattr(v, "fit") else "")
def test_fit_sets_an_integer_complexity_that_metrics_reads(model, expected):
    assert isinstance(model.complexity_, int) and model.complexity_ == expected > 0
    assert complexity(model) == model.complexity_


@pytest.mark.parametrize("model", [SymbolicQuantileRegressor(), OptimalSparseRegressionTree(), ForestPrune(),
                                   OrderedBaggingRegressor(), BaggedNetworks(), QuantileDecisionTreeRegressor(),
                                   make_qdt(0.5)], ids=lambda m: type(m).__name__)
def test_complexity_of_an_unfitted_model_says_not_fitted(model):
    with pytest.raises(NotFittedError, match="not fitted"):
        complexity(model)


@pytest.mark.parametrize("model", [m for m, _ in FITTED if hasattr(m, "export_text")],
                         ids=lambda m: type(m).__name__)
def test_printing_models_share_export_text(model):
    params = list(inspect.signature(model.export_text).parameters)
    assert params[:2] == ["feature_names", "decimals"]
    assert inspect.signature(model.export_text).parameters["feature_names"].default is None
    default, named = model.export_text(), model.export_text(feature_names=NAMES)
    assert isinstance(default, str) and default
    if "x0" in default or "x1" in default or "x2" in default:
        assert "age" in named or "dose" in named or "weight" in named
    with pytest.raises(ValueError, match="feature_names must name the 3 input features"):
        model.export_text(feature_names=NAMES[:2])


def test_sqr_export_text_is_the_selected_equation():
    sqr, _ = FITTED[0]
    assert sqr.export_text() == sqr.equations_["equation"].iloc[sqr.best_index_]
    sqr3, _ = FITTED[1]
    lines = sqr3.export_text(decimals=3).splitlines()
    assert [line.split(":")[0] for line in lines] == ["tau=0.1", "tau=0.5", "tau=0.9"]


def test_osrt_export_text_renames_features():
    tree = OptimalSparseRegressionTree(regularization=0.01, depth_limit=2).fit(X, y)
    assert "x1 <=" in tree.export_text() and "dose <=" in tree.export_text(feature_names=NAMES)
    assert tree.export_text(feature_names=["x0", "x1", "x2"]) == tree.export_text()
