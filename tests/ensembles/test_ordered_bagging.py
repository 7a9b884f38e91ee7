"""Tests for ordered bagging: the greedy ordering kernel against naive versions of Algorithm 1,
and the OrderedBaggingRegressor estimator."""

from __future__ import annotations

import numpy as np
import pytest

from parsimony.ensembles._ordering import error_covariance, greedy_order, order_members, subset_sums


def naive_algorithm1(c):
    """The paper's Algorithm 1 line by line: Eq. 6 recomputed from scratch at every step."""
    m = c.shape[0]
    s, values = [], []
    for u in range(1, m + 1):
        minimum, best = np.inf, None
        for k in range(m):
            if k in s:
                continue
            value = (sum(c[i, j] for i in s for j in s) + 2 * sum(c[i, k] for i in s) + c[k, k]) / u**2
            if value < minimum:
                best, minimum = k, value
        s.append(best)
        values.append(minimum)
    return np.array(s), np.array(values)


def naive_from_predictions(predictions, y):
    """Greedy by the training MSE of the averaged ensemble, recomputed from predictions."""
    m = predictions.shape[1]
    s, values = [], []
    for u in range(1, m + 1):
        minimum, best = np.inf, None
        for k in range(m):
            if k in s:
                continue
            total = predictions[:, s + [k]].sum(axis=1)
            value = np.mean((total - u * y) ** 2) / u**2  # = mean((average - y)^2)
            if value < minimum:
                best, minimum = k, value
        s.append(best)
        values.append(minimum)
    return np.array(s), np.array(values)


def random_problem(seed, n=40, m=12):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    # members share a bias and have correlated errors, as bagged regressors do
    predictions = y[:, None] + 0.3 * rng.normal(size=(n, 1)) + rng.normal(scale=rng.uniform(0.2, 1.0, m), size=(n, m))
    return predictions, y


@pytest.mark.parametrize("seed", range(8))
def test_fast_ordering_equals_naive_algorithm1_and_predictions(seed):
    predictions, y = random_problem(seed, m=5 + seed)
    order, errors = order_members(predictions, y)
    c = error_covariance(predictions, y)
    naive_order, naive_values = naive_algorithm1(c)
    np.testing.assert_array_equal(order, naive_order)
    np.testing.assert_allclose(errors, naive_values, rtol=1e-12, atol=1e-14)
    pred_order, pred_values = naive_from_predictions(predictions, y)
    np.testing.assert_array_equal(order, pred_order)
    np.testing.assert_allclose(errors, pred_values, rtol=1e-10)
    assert sorted(order.tolist()) == list(range(predictions.shape[1]))
    # the last value is the training error of the complete ensemble
    np.testing.assert_allclose(errors[-1], np.mean((predictions.mean(axis=1) - y) ** 2), rtol=1e-10)


def test_ties_are_broken_by_lowest_index_in_all_versions():
    # integer data on 16 rows: every sum is exact, so duplicated members give exact ties
    rng = np.random.default_rng(3)
    base = rng.integers(-3, 4, size=(16, 4)).astype(float)
    predictions = base[:, [0, 1, 0, 2, 1, 3, 3, 2]]  # each column appears twice
    y = np.zeros(16)
    order, errors = order_members(predictions, y)
    c = error_covariance(predictions, y)
    assert np.array_equal(order, naive_algorithm1(c)[0])
    assert np.array_equal(order, naive_from_predictions(predictions, y)[0])
    # identical members: the lower index always comes first
    for a, b in [(0, 2), (1, 4), (3, 7), (5, 6)]:
        assert list(order).index(a) < list(order).index(b)
    # all members equal: the order is the identity
    same = np.repeat(rng.normal(size=(16, 1)), 6, axis=1)
    np.testing.assert_array_equal(order_members(same, y)[0], np.arange(6))


def test_greedy_step_is_the_best_single_addition():
    predictions, y = random_problem(11, n=60, m=20)
    order, errors = order_members(predictions, y)
    for u in range(1, 20):
        prefix = list(order[: u - 1])
        rest = [k for k in range(20) if k not in prefix]
        mses = [np.mean((predictions[:, prefix + [k]].mean(axis=1) - y) ** 2) for k in rest]
        assert rest[int(np.argmin(mses))] == order[u - 1]
        assert errors[u - 1] == pytest.approx(min(mses), rel=1e-10)


def test_error_covariance_chunked_equals_direct():
    predictions, y = random_problem(5, n=1000, m=7)
    direct = (predictions - y[:, None]).T @ (predictions - y[:, None]) / 1000
    np.testing.assert_allclose(error_covariance(predictions, y, chunk_rows=64), direct, rtol=1e-12)
    np.testing.assert_allclose(error_covariance(predictions, y), direct, rtol=1e-12)


def test_subset_sums_match_brute_force():
    predictions, y = random_problem(2, m=9)
    c = error_covariance(predictions, y)
    order = np.random.default_rng(0).permutation(9)
    totals, diagonal = subset_sums(c, order)
    for u in range(1, 10):
        sub = c[np.ix_(order[:u], order[:u])]
        assert totals[u - 1] == pytest.approx(sub.sum(), rel=1e-12)
        assert diagonal[u - 1] == pytest.approx(np.trace(sub), rel=1e-12)


@pytest.mark.parametrize(
    "predictions, y, message",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), np.zeros(2), "NaN"),
        (np.ones((3, 2)), np.array([0.0, np.inf, 1.0]), "y contains"),
        (np.ones((3, 2)), np.zeros(4), "rows for"),
        (np.ones(3), np.zeros(3), "n_members"),
    ],
)
def test_ordering_rejects_bad_input(predictions, y, message):
    with pytest.raises(ValueError, match=message):
        order_members(predictions, y)


def test_greedy_order_rejects_bad_matrix():
    with pytest.raises(ValueError, match="square"):
        greedy_order(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        greedy_order(np.array([[1.0, np.nan], [np.nan, 1.0]]))
