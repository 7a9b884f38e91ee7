"""parsimony.losses: one definition per loss, one set of codes, the numba kernels agree."""

import numpy as np
import pytest

from parsimony import _loss_kernels as K
from parsimony.losses import (
    LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED, LOSSES, Absolute, Loss, Pinball, Squared, as_loss, loss_from_code,
    weighted_quantile,
    weighted_quantiles,
)
from parsimony.metrics import pinball_loss

LOSS_OBJECTS = [Squared(), Absolute(), Pinball(0.1), Pinball(0.5), Pinball(0.9)]


def test_codes_are_the_shared_named_values():
    assert (LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL) == (0, 1, 2)
    assert {cls().code for cls in LOSSES.values()} == {0, 1, 2}
    for loss in LOSS_OBJECTS:
        assert loss_from_code(loss.code, loss.tau) == loss


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=repr)
def test_numba_kernels_match_the_objects(loss):
    rng = np.random.default_rng(0)
    y, pred = rng.normal(size=103), rng.normal(size=103)
    w = rng.uniform(0.1, 3.0, size=103)
    total = K.loss_of_rows(pred, y, w, loss.code, loss.tau)
    assert total / w.sum() == pytest.approx(loss.value(y, pred, w), rel=1e-12)
    assert total == pytest.approx(loss.total(y, pred, w), rel=1e-12)
    assert loss.total(y, pred) == pytest.approx(loss.value(y, pred) * y.size, rel=1e-12)
    assert K.loss_of_scalar(0.3, y, w, loss.code, loss.tau) / w.sum() == pytest.approx(
        loss.value(y, np.full_like(y, 0.3), w), rel=1e-12)
    for r in (-1.5, 0.0, 2.0):
        assert K.pointwise_loss(r, loss.code, loss.tau) == pytest.approx(float(loss.pointwise(np.array(r))))


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=repr)
def test_optimal_constant_minimises_and_baseline_is_its_loss(loss):
    rng = np.random.default_rng(1)
    y = rng.exponential(size=57)
    w = rng.integers(1, 4, size=57).astype(float)
    c = loss.optimal_constant(y, w)
    grid = np.linspace(y.min(), y.max(), 2001)
    assert loss.value(y, np.full_like(y, c), w) <= min(loss.value(y, np.full_like(y, g), w) for g in grid) + 1e-12
    assert loss.baseline(y, w) == loss.value(y, np.full_like(y, c), w)


def test_pinball_object_is_the_metric_and_weighted_quantile_repeats_rows():
    rng = np.random.default_rng(2)
    y, pred = rng.normal(size=40), rng.normal(size=40)
    assert Pinball(0.8).value(y, pred) == pytest.approx(pinball_loss(y, pred, quantile=0.8), rel=1e-14)
    w = rng.integers(1, 4, size=40)
    assert weighted_quantile(y, w, 0.3) == np.quantile(np.repeat(y, w), 0.3, method="inverted_cdf")
    levels = [0.05, 0.3, 0.5, 0.95]
    np.testing.assert_array_equal(weighted_quantiles(y, w, levels),
                                  np.quantile(np.repeat(y, w), levels, method="inverted_cdf"))


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=repr)
def test_julia_source_is_the_same_function(loss):
    text = loss.julia_source()
    assert text.startswith("begin") and "parsimony_loss(prediction, target, weight)" in text
    if isinstance(loss, Pinball):
        assert repr(loss.tau) in text
    assert ("abs(r)" in text) == isinstance(loss, Absolute)
    assert ("r * r" in text) == isinstance(loss, Squared)


def _least_pinball_value(values, tau, weights=None):
    """The smallest of ``values`` whose constant prediction has the least weighted pinball loss."""
    totals = np.array([Pinball(tau).total(values, np.full_like(values, c), weights) for c in values])
    return values[np.isclose(totals, totals.min(), rtol=1e-12, atol=1e-12)].min()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9, 0.37])
def test_weighted_quantile_is_the_lower_pinball_minimiser(seed, tau):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 8, size=rng.integers(1, 15)).astype(float)
    assert weighted_quantile(values, None, tau) == np.quantile(values, tau, method="inverted_cdf")
    assert weighted_quantile(values, None, tau) == _least_pinball_value(values, tau)
    weights = rng.integers(1, 4, size=values.size).astype(float)
    assert weighted_quantile(values, weights, tau) == _least_pinball_value(values, tau, weights)
    # integer weights are repetitions
    assert weighted_quantile(values, weights, tau) == weighted_quantile(np.repeat(values, weights.astype(int)), None, tau)


def test_weighted_quantile_rejects_bad_input():
    with pytest.raises(ValueError, match="level"):
        weighted_quantile([1.0, 2.0], None, 1.0)
    with pytest.raises(ValueError, match="at least one"):
        weighted_quantile([], None, 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_quantile_position_is_the_python_quantile(seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.integers(0, 6, size=30).astype(float))
    weights = rng.integers(0, 4, size=30).astype(float)
    weights[0] = 1.0
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    for level in (0.1, 0.3, 0.5, 0.7, 0.9):
        for start, stop in ((0, 30), (4, 17), (9, 10)):
            if weights[start:stop].sum() == 0:
                continue
            pos = K.lower_quantile_position(cum, start, stop, level)
            assert start <= pos < stop
            assert values[pos] == weighted_quantile(values[start:stop], weights[start:stop], level)
    # 0.7 * 10 rounds above 7: the tolerance keeps the 7th of ten unit weights (inverted_cdf)
    ten = np.arange(11, dtype=float)
    assert K.lower_quantile_position(ten, 0, 10, 0.7) == 6
    assert weighted_quantile(np.arange(10.0), None, 0.7) == np.quantile(np.arange(10.0), 0.7, method="inverted_cdf") == 6.0


def test_as_loss_is_the_one_name_table():
    assert as_loss("squared") == Squared() and as_loss("absolute") == Absolute()
    assert as_loss("pinball", 0.8) == as_loss("quantile", 0.8) == Pinball(0.8)
    assert {type(as_loss(name)) for name in LOSSES} == {Squared, Absolute, Pinball}
    given = Pinball(0.3)
    assert as_loss(given, 0.8) is given  # an object keeps its own level
    with pytest.raises(ValueError, match="loss must be one of"):
        as_loss("huber")
    with pytest.raises(TypeError, match="kernels' losses"):
        as_loss(Loss())


@pytest.mark.parametrize("loss", LOSS_OBJECTS, ids=repr)
def test_constant_total_is_the_optimal_constant_and_its_total(loss):
    rng = np.random.default_rng(4)
    y, w = rng.normal(size=31), rng.integers(1, 4, size=31).astype(float)
    constant, total = loss.constant_total(y, w)
    assert constant == loss.optimal_constant(y, w)
    assert total == loss.total(y, np.full_like(y, constant), w)
