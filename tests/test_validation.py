"""The shared input checks of ``parsimony._validation``."""

import numpy as np
import pytest

from parsimony._validation import seed_from


def test_seed_from_every_kind_of_random_state():
    assert seed_from(7) == 7 and seed_from(np.int64(7)) == 7
    assert seed_from(-1) == 2**63 - 1  # a valid seed, still a function of the int
    assert seed_from(np.random.RandomState(3)) == seed_from(np.random.RandomState(3))
    assert seed_from(np.random.default_rng(3)) == seed_from(np.random.default_rng(3))
    rng = np.random.default_rng(3)
    assert seed_from(rng) != seed_from(rng)  # a generator is drawn from, so it advances
    assert isinstance(seed_from(None), int)
    for bad in (True, 1.5, "0"):
        with pytest.raises(ValueError, match="random_state"):
            seed_from(bad)


def test_categorical_columns_finds_strings_and_categories_only():
    import pandas as pd

    from parsimony._validation import categorical_columns

    frame = pd.DataFrame({"a": [1.0, 2.0], "sex": ["m", "f"], "c": pd.Categorical(["x", "y"]), "b": [True, False],
                          "numbers_as_objects": pd.Series([1.0, 2.0], dtype=object), "s": ["1.5", "2"]})
    assert categorical_columns(frame) == [1, 2]
    assert categorical_columns(np.array([[1.0, "a"], [2.0, "b"]], dtype=object)) == [1]
    assert categorical_columns(np.array([["1", "2.5"]])) == []
    assert categorical_columns(np.array([[1.0, {"a": 1}]], dtype=object)) == []  # left to scikit-learn's check
