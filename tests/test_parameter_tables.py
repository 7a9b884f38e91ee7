"""Every estimator's parameters are declared once, in its table, and checked at the start of fit.

For each declared parameter the test derives bad values from the table's own constraints (a value
of no accepted type, a string outside the options, a number just outside each interval) and asserts
that ``fit`` rejects each with a ValueError/TypeError whose message starts with the parameter's name.
"""

from __future__ import annotations

import numbers
import re

import numpy as np
import pytest

from parsimony._validation import Interval, Options
from parsimony.ensembles import ForestPrune, OrderedBaggingRegressor
from parsimony.ensembles.forestprune import FORESTPRUNE_PARAMETERS
from parsimony.ensembles.bagged_networks import BAGGED_NETWORKS_PARAMETERS, BaggedNetworks
from parsimony.ensembles.ordered_bagging import ORDERED_BAGGING_PARAMETERS
from parsimony.experiments.baselines import (
    QDT_PARAMETERS, TUNED_PARAMETERS, QuantileDecisionTreeRegressor, TunedQuantileRegressor,
)
from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._parameters import SQR_PARAMETERS
from parsimony.symbolic.conformal import CONFORMAL_PARAMETERS, ConformalQuantileInterval
from parsimony.trees import Binarizer, OptimalSparseRegressionTree
from parsimony.trees.binarizer import BINARIZER_PARAMETERS
from parsimony.trees.osrt import OSRT_PARAMETERS

# estimator, its table, and the parameters checked elsewhere (with the reason)
TABLES = {
    "OptimalSparseRegressionTree": (OptimalSparseRegressionTree, OSRT_PARAMETERS, {}),
    "ForestPrune": (ForestPrune, FORESTPRUNE_PARAMETERS, {"estimator": "check_ensemble: a fitted ensemble"}),
    "OrderedBaggingRegressor": (OrderedBaggingRegressor, ORDERED_BAGGING_PARAMETERS,
                                {"estimator": "needs fit and predict, or members"}),
    "BaggedNetworks": (BaggedNetworks, BAGGED_NETWORKS_PARAMETERS, {}),
    "SymbolicQuantileRegressor": (SymbolicQuantileRegressor, SQR_PARAMETERS, {}),
    "QuantileDecisionTreeRegressor": (
        QuantileDecisionTreeRegressor, QDT_PARAMETERS,
        dict.fromkeys(["criterion", "max_depth", "min_samples_split", "min_samples_leaf", "max_leaf_nodes",
                       "random_state"], "DecisionTreeRegressor's own checks")),
    "TunedQuantileRegressor": (TunedQuantileRegressor, TUNED_PARAMETERS, {"estimator": "any regressor"}),
    "ConformalQuantileInterval": (ConformalQuantileInterval, CONFORMAL_PARAMETERS,
                                  {"estimator": "must take two quantile levels"}),
    "Binarizer": (Binarizer, BINARIZER_PARAMETERS, {}),
}


class _Unfit:
    """A value of no type any table accepts."""

    def __repr__(self):
        return "<unfit>"


def _bad_values(allowed):
    """Values no constraint of ``allowed`` should accept, derived from the constraints."""
    out = [_Unfit()]
    for constraint in allowed:
        if isinstance(constraint, Options):
            out.append("not-an-option")
        if isinstance(constraint, Interval):
            step = 1 if constraint.kind is numbers.Integral else 0.5
            cast = int if constraint.kind is numbers.Integral else float
            left_open, right_open = constraint.closed in ("right", "neither"), constraint.closed in ("left", "neither")
            if constraint.left is not None:
                out.append(cast(constraint.left if left_open else constraint.left - step))
            if constraint.right is not None:
                out.append(cast(constraint.right if right_open else constraint.right + step))
    return out


CASES = [(name, param, bad) for name, (_, table, _) in TABLES.items() for param, allowed in table.items()
         for bad in _bad_values(allowed)]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_parameter_is_declared_in_the_table(name):
    cls, table, elsewhere = TABLES[name]
    assert set(table) | set(elsewhere) == set(cls().get_params(deep=False))
    assert not set(table) & set(elsewhere)


@pytest.mark.parametrize("name, param, bad", CASES, ids=[f"{n}-{p}-{b!r}" for n, p, b in CASES])
def test_a_bad_value_of_each_declared_parameter_is_named(name, param, bad):
    cls = TABLES[name][0]
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(30, 2)), rng.normal(size=30)
    with pytest.raises((ValueError, TypeError), match=rf"^{re.escape(param)}\b"):
        cls(**{param: bad}).fit(X, y)


def test_the_derived_bad_values_cover_each_kind_of_constraint():
    values = _bad_values([Interval(numbers.Integral, 1), Interval(numbers.Real, 0, 1, closed="right"),
                          Options("auto")])
    assert [v for v in values if not isinstance(v, _Unfit)] == [0, 0.0, 1.5, "not-an-option"]
