"""Reproduce the ordered-bagging paper's Tables II and IV on the synthetic problems.

Hernández-Lobato, Martínez-Muñoz & Suárez (2006): Friedman #1-#3 (noise sd 1, 150, 0.1) and
Breiman's Peak (20-d), 200 training and 2000 test points per realization, 100 bagged networks
(one hidden layer of logistic units, linear output, weight decay), ordered greedily on the
training data, pruned to the first 20%. Prints complete vs pruned train/test MSE (mean +- sd over
realizations) with the paired t-test p-value of the test errors, beside the paper's figures.

Differences from the paper (for feasibility on 2 cores): the paper picks hidden units (2, 3, 5, 7)
and weight decay (12 values in [0, 1]) by 10-fold CV for every ensemble; here they are picked once
per problem by 5-fold CV of a single network (scikit-learn MLPRegressor, L-BFGS) on an independent
pilot sample of 200 points, with inputs and target standardised; the bagged networks are then
fitted by full-batch iRprop- for --max-iter epochs (``BaggedNetworks``, same architecture and
objective, one numba kernel per realization) instead of R's nnet BFGS; ``--trainer sklearn``
bags MLPRegressor fits instead (about 10x slower).

    python benchmarks/ordered_bagging_paper.py                     # 100 realizations (long)
    python benchmarks/ordered_bagging_paper.py --quick             # a few minutes
    python benchmarks/ordered_bagging_paper.py --realizations 30 --out results.csv   # resumable
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny networks: BLAS threads only add overhead
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from parsimony import datasets  # noqa: E402
from parsimony.ensembles import OrderedBaggingRegressor  # noqa: E402
from parsimony.ensembles.bagged_networks import BaggedNetworks, make_network  # noqa: E402
from parsimony.stats import paired_t  # noqa: E402

PROBLEMS = {
    "Friedman1": (datasets.make_friedman1, 1.0),
    "Friedman2": (datasets.make_friedman2, 1e-3),
    "Friedman3": (datasets.make_friedman3, 1e3),
    "Peak": (datasets.make_peak, 1.0),
}
# the paper's Table II (test MSE, shown scaled as in the paper) and Table IV (p-values, 100 members)
PAPER = {
    "Friedman1": ("2.99 +- 0.38", "2.64 +- 0.37", "2.9e-35"),
    "Friedman2": ("23.01 +- 4.52", "19.56 +- 1.27", "2.7e-12"),
    "Friedman3": ("18.27 +- 3.08", "17.55 +- 2.47", "7.2e-4"),
    "Peak": ("25.79 +- 1.06", "23.55 +- 1.01", "2.6e-54"),
}
# what select_network picks with --seed 0 (hidden units, weight decay); --quick reuses it
SELECTED = {"Friedman1": (7, 4 / 11), "Friedman2": (2, 0.0), "Friedman3": (5, 2 / 11), "Peak": (7, 2 / 11)}
HIDDEN_UNITS = (2, 3, 5, 7)
WEIGHT_DECAYS = tuple(np.linspace(0.0, 1.0, 12))


def sample(problem: str, n: int, seed: int):
    X, y = PROBLEMS[problem][0](n_samples=n, random_state=seed)
    return X.to_numpy(), y.to_numpy()


def select_network(problem: str, seed: int, max_iter: int, n_jobs: int, folds: int = 5):
    """Hidden units and weight decay with the lowest CV error on a pilot sample (one per problem)."""
    from sklearn.model_selection import KFold, cross_val_score

    X, y = sample(problem, 200, seed)
    grid = list(itertools.product(HIDDEN_UNITS, WEIGHT_DECAYS))
    cv = KFold(folds, shuffle=True, random_state=seed)

    def score(hidden, decay):
        warnings.simplefilter("ignore", ConvergenceWarning)
        network = make_network(hidden, decay, max_iter=max_iter, random_state=seed)
        return -cross_val_score(network, X, y, cv=cv, scoring="neg_mean_squared_error").mean()

    scores = Parallel(n_jobs=n_jobs)(delayed(score)(h, d) for h, d in grid)
    return grid[int(np.argmin(scores))]


def realization(problem, index, seed, hidden, decay, members, max_iter, keep, trainer):
    X, y = sample(problem, 200, seed)
    X_test, y_test = sample(problem, 2000, seed + 1)
    if trainer == "rprop":  # all networks of the realization in one numba kernel
        pool = BaggedNetworks(members, hidden, decay, max_iter=max_iter, random_state=seed)
        model = OrderedBaggingRegressor(pool, keep=keep, random_state=seed).fit(X, y)
    else:  # one scikit-learn MLPRegressor (L-BFGS) fit per member
        network = make_network(hidden, decay, max_iter=max_iter)
        model = OrderedBaggingRegressor(network, n_estimators=members, keep=keep, random_state=seed).fit(X, y)
    train = model.error_curve(X, y)
    test = model.error_curve(X_test, y_test)
    return {
        "problem": problem, "realization": index,
        "train_complete": train["ordered"].iloc[-1], "train_pruned": train.loc[model.n_kept_, "ordered"],
        "test_complete": test["ordered"].iloc[-1], "test_pruned": test.loc[model.n_kept_, "ordered"],
    }


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for problem, group in results.groupby("problem", sort=False):
        scale = PROBLEMS[problem][1]
        long = pd.concat(
            [pd.DataFrame({"realization": group["realization"], "ensemble": name, "mse": group[f"test_{name}"]})
             for name in ("complete", "pruned")]
        )
        test = paired_t(long, block="realization", group="ensemble", value="mse", pairs=[("complete", "pruned")])
        row = {"problem": problem, "n": len(group)}
        for col in ("train_complete", "train_pruned", "test_complete", "test_pruned"):
            row[col] = f"{group[col].mean() * scale:.2f} +- {group[col].std() * scale:.2f}"
        row["p_value"] = f"{test['p_value'].iloc[0]:.1e}"
        row["pruned_wins"] = f"{int((group['test_pruned'] < group['test_complete']).sum())}/{len(group)}"
        paper = PAPER[problem]
        row["paper_test_complete"], row["paper_test_pruned"], row["paper_p"] = paper
        rows.append(row)
    return pd.DataFrame(rows).set_index("problem")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realizations", type=int, help="default 100 (8 with --quick)")
    parser.add_argument("--members", type=int, help="networks per ensemble; default 100 (40 with --quick)")
    parser.add_argument("--max-iter", type=int, help="L-BFGS iterations per network; default 1000 (300 with --quick)")
    parser.add_argument("--keep", type=float, default=0.2)
    parser.add_argument("--trainer", choices=("rprop", "sklearn"), default="rprop",
                        help="rprop: BaggedNetworks (numba, fast); sklearn: MLPRegressor L-BFGS per member (slow)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="8 realizations of 40 networks, 300 epochs, networks chosen by an earlier CV run")
    parser.add_argument("--network", nargs=2, type=float, metavar=("HIDDEN", "DECAY"),
                        help="skip the CV selection and use this network for every problem")
    parser.add_argument("--out", type=Path, help="CSV of per-realization results; rows already there are reused")
    args = parser.parse_args(argv)
    defaults = (8, 40, 300) if args.quick else (100, 100, 1000)
    for name, value in zip(("realizations", "members", "max_iter"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, value)

    done = pd.read_csv(args.out) if args.out is not None and args.out.exists() else pd.DataFrame()
    results = [done] if len(done) else []
    start = time.perf_counter()
    networks, todo = {}, []
    for p, problem in enumerate(args.problems):
        if args.network is not None:
            networks[problem] = int(args.network[0]), args.network[1]
        elif args.quick and args.seed == 0:
            networks[problem] = SELECTED[problem]
        else:
            networks[problem] = select_network(problem, 10_000 + args.seed + p, args.max_iter, args.n_jobs)
        print(f"{problem}: {networks[problem][0]} hidden units, weight decay {networks[problem][1]:.3f} "
              f"(selected at {time.perf_counter() - start:.0f} s)", flush=True)
        have = set(done.loc[done["problem"] == problem, "realization"]) if len(done) else set()
        seed = 1_000_003 * (list(PROBLEMS).index(problem) + 1) + args.seed * 7919
        todo += [(r, problem, seed + 2 * r) for r in range(args.realizations) if r not in have]
    todo.sort()  # realization-major: every problem advances together, so a cut-short run stays balanced
    batch = max(args.n_jobs, 1) * 2
    for i in range(0, len(todo), batch):
        rows = Parallel(n_jobs=args.n_jobs)(
            delayed(realization)(problem, r, seed, *networks[problem], args.members, args.max_iter, args.keep,
                                 args.trainer)
            for r, problem, seed in todo[i: i + batch]
        )
        frame = pd.DataFrame(rows)
        results.append(frame)
        if args.out is not None:
            frame.to_csv(args.out, mode="a", header=not args.out.exists(), index=False)
        print(f"  {min(i + batch, len(todo))}/{len(todo)} realizations, {time.perf_counter() - start:.0f} s", flush=True)
    results = pd.concat(results, ignore_index=True).drop_duplicates(["problem", "realization"])
    results = results[results["problem"].isin(args.problems) & (results["realization"] < args.realizations)]
    table = summarize(results)
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print("\nTest/train MSE, complete vs pruned (first "
              f"{args.keep:.0%}) of {args.members} networks; Friedman2 x 1e-3, Friedman3 x 1e3 as in the paper")
        print(table.to_string())
    print(f"total time {time.perf_counter() - start:.0f} s")
    return table


if __name__ == "__main__":
    main()
