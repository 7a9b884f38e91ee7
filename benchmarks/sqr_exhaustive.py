"""The exhaustive seeder's certified size and its CPU cost (issue 40, Must hold 4).

For uniform data of ``--features`` features and ``--rows`` rows (the default operators and token
weights, the pinball loss at tau .5), runs :class:`~parsimony.symbolic.seeds.ExhaustiveSeeder`
alone and prints the certified size k (every expression up to that complexity enumerated, its
outer constants exact), the distinct skeletons fitted and the CPU seconds; then, with
``--feynman``, the same on the 60 AI Feynman problems of ``benchmarks/sqr_recovery.py`` (1,000
rows, noise 0): the distribution of k and of the CPU, and how many fitted fronts have a certified
row beyond the constant.

    python benchmarks/sqr_exhaustive.py [--features 1 2 3 5 10] [--rows 100 1000 10000] [--feynman]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from parsimony.losses import LOSS_PINBALL  # noqa: E402
from parsimony.symbolic._expressions import (  # noqa: E402
    DEFAULT_OPERATORS, TOKEN_COMPLEXITY, complexity_weights, operator_codes,
)
from parsimony.symbolic.seeds import ExhaustiveSeeder, Problem  # noqa: E402


def run(X, y, maxsize=30):
    """``(k, skeletons, cpu seconds)`` of the seeder on ``(X, y)``."""
    binops, unops, _ = operator_codes(DEFAULT_OPERATORS)
    problem = Problem(X, y, np.ones(len(y)), LOSS_PINBALL, 0.5, binops, unops, complexity_weights(TOKEN_COMPLEXITY),
                      maxsize, np.full(X.shape[1], 1.0 / X.shape[1]))
    start = time.process_time()
    proposal = ExhaustiveSeeder().propose(problem)
    return proposal.report["size"], proposal.evaluations // 5, time.process_time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", nargs="*", type=int, default=[1, 2, 3, 5, 10])
    parser.add_argument("--rows", nargs="*", type=int, default=[100, 1000, 10000])
    parser.add_argument("--feynman", action="store_true")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    run(rng.uniform(1, 2, size=(20, 1)), rng.uniform(size=20))  # compile (or load) the kernels
    print(f"{'features':>8} {'rows':>6} {'k':>3} {'skeletons':>9} {'CPU s':>7}")
    for d in args.features:
        for n in args.rows:
            X = rng.uniform(1, 5, size=(n, d))
            y = X[:, 0] * X[:, -1] / (1 + X[:, 0]) + 0.01 * rng.normal(size=n)
            k, count, cpu = run(X, y)
            print(f"{d:8d} {n:6d} {k:3d} {count:9d} {cpu:7.3f}")
    if args.feynman:
        from sqr_recovery import METADATA

        from parsimony.experiments.srbench import generate_data, load_problems

        names = sorted(p.name for p in METADATA.iterdir() if (p / "metadata.yaml").is_file())
        sizes, cpus = [], []
        for problem in load_problems(names, data_dir=METADATA, fetch=False)[0].values():
            X, y, _, _ = generate_data(problem, 1000, 0.0, 0)
            k, _, cpu = run(X, y)
            sizes.append(k)
            cpus.append(cpu)
        print(f"\nthe 60 Feynman problems (1,000 rows): k median {statistics.median(sizes)} "
              f"(min {min(sizes)}, max {max(sizes)}); CPU median {statistics.median(cpus):.3f} s, "
              f"max {max(cpus):.3f} s")


if __name__ == "__main__":
    main()
