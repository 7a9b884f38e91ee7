"""parsimony.losses: one definition per loss, one set of codes, the numba kernels agree."""

import numpy as np
import pytest

from parsimony import _loss_kernels as K
from parsimony.losses import (
    LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED, LOSSES, Absolute, Pinball, Squared, loss_from_code, weighted_quantile,
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
