"""The Binarizer's user thresholds and categorical columns."""

import numpy as np
import pandas as pd
import pytest

from parsimony.trees import Binarizer, OptimalSparseRegressionTree


def _frame():
    return pd.DataFrame({"age": [20.0, 30, 40, 50, 60, 70], "sex": ["m", "f", "m", "f", "m", "m"],
                         "smoker": pd.Categorical(["no", "yes", "no", "no", "yes", "no"])})


@pytest.mark.parametrize("thresholds, error, match", [
    ({"nosuchcol": [0]}, ValueError, "names no column: 'nosuchcol'"),
    ({3: [0]}, ValueError, r"names no column: 3; use indices 0..2"),
    ({-1: [0]}, ValueError, "names no column: -1"),
    (5, TypeError, "thresholds must be None or a dict"),
    ({0: ["a"]}, ValueError, "must be numbers"),
    ([[1.0], [2.0]], ValueError, "2 entries for 3 features"),
])
def test_bad_user_thresholds_raise(thresholds, error, match):
    X = np.random.default_rng(0).random((10, 3))
    with pytest.raises(error, match=match):
        Binarizer(thresholds=thresholds).fit(X)


def test_user_thresholds_by_name_and_index():
    X = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) * 2})
    b = Binarizer(thresholds={"a": [2.5], 1: [7.0, 11.0]}).fit(X)
    assert list(b.get_feature_names_out()) == ["a <= 2.5", "b <= 7", "b <= 11"]


def test_categorical_columns_get_one_indicator_per_level():
    X = _frame()
    b = Binarizer(n_thresholds=1).fit(X)
    assert list(b.get_feature_names_out()) == ["age <= 45", "sex == f", "sex == m", "smoker == no", "smoker == yes"]
    Z = b.transform(X)
    np.testing.assert_array_equal(Z[:, 1], (X["sex"] == "f").to_numpy())
    np.testing.assert_array_equal(Z[:, 1] + Z[:, 2], np.ones(6))  # exactly one level per row
    np.testing.assert_array_equal(Z[:, 4], (X["smoker"] == "yes").to_numpy())
    unseen = b.transform(X.assign(sex=["x"] * 6))  # a level not seen in fit sets no indicator
    assert unseen[:, 1:3].sum() == 0
    with pytest.raises(ValueError, match="'sex' has missing values"):
        Binarizer().fit(X.assign(sex=["m", None, "f", "m", "f", "m"]))
    with pytest.raises(ValueError, match="categorical"):
        Binarizer(thresholds={"sex": [0.5]}).fit(X)


def test_a_tree_on_categorical_data_through_the_binarizer():
    X = _frame()
    y = np.where(X["sex"] == "f", 10.0, 0.0)
    Xb = Binarizer(n_thresholds=1).fit_transform(X)
    tree = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(Xb, y)
    np.testing.assert_allclose(tree.predict(Xb), y)
