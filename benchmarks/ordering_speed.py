"""Speed of the greedy ordering against the one matrix product that forms C.

Target (issue 5): ordering M = 1000 members on N = 100,000 rows from their predictions takes at
most 2x the time of the single product ``E^T E`` that forms the error covariance, measured in
the same run. The ordering time includes everything from the predictions: forming the errors
(in row blocks), the products, the O(M^2) greedy pass.

    python benchmarks/ordering_speed.py                  # M = 1000, N = 100,000 (~1.6 GB)
    python benchmarks/ordering_speed.py --rows 20000     # smaller
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from parsimony.ensembles._ordering import error_covariance, greedy_order, order_members


def naive_greedy(c):
    """Algorithm 1 of the paper, Eq. 6 recomputed from the chosen set each step (O(M^3)), vectorised."""
    m = c.shape[0]
    chosen = []
    remaining = np.ones(m, dtype=bool)
    for u in range(1, m + 1):
        block = c[np.ix_(chosen, chosen)].sum() if chosen else 0.0
        cross = c[chosen].sum(axis=0) if chosen else np.zeros(m)
        values = (block + 2 * cross + np.diag(c)) / u**2
        values[~remaining] = np.inf
        k = int(np.argmin(values))
        chosen.append(k)
        remaining[k] = False
    return np.array(chosen)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    n, m = args.rows, args.members
    y = rng.normal(size=n)
    # bagged-like members: shared and individual error components
    predictions = y[:, None] + 0.3 * rng.normal(size=(n, 1)) + rng.normal(size=(n, m)) * rng.uniform(0.2, 1.0, m)
    order_members(predictions[:100, :5], y[:100])  # compile the kernel (cached on disk after the first run)

    errors = predictions - y[:, None]
    product_times, ordering_times, greedy_times = [], [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine load
        t = time.perf_counter()
        c_product = errors.T @ errors
        product_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        order, _ = order_members(predictions, y)
        ordering_times.append(time.perf_counter() - t)
        c = error_covariance(predictions, y)
        t = time.perf_counter()
        greedy_order(c)
        greedy_times.append(time.perf_counter() - t)
    del errors
    np.testing.assert_allclose(c, c_product / n, rtol=1e-9, atol=1e-12)
    naive_start = time.perf_counter()
    same = np.array_equal(order, naive_greedy(c))
    naive_time = time.perf_counter() - naive_start

    product, ordering, greedy = min(product_times), min(ordering_times), min(greedy_times)
    print(f"M = {m} members, N = {n} rows (best of {args.repeats}; all runs: "
          f"product {np.round(product_times, 3).tolist()}, ordering {np.round(ordering_times, 3).tolist()})")
    print(f"  matrix product E^T E        : {product:8.3f} s")
    print(f"  ordering from predictions   : {ordering:8.3f} s   ratio {ordering / product:.2f} (target <= 2)")
    print(f"    of which the greedy pass  : {greedy * 1e3:8.1f} ms")
    print(f"  naive O(M^3) Algorithm 1    : {naive_time:8.3f} s   (same order: {same})")


if __name__ == "__main__":
    main()
