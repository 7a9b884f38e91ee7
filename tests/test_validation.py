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
