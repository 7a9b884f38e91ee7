"""OSRT against STreeD (the fastest published exact solver for sparse regression trees).

Every case of the anchors' grid: the OSRT paper's binarised CSVs (``../shared/datasets/osrt``),
depth limits 3 and 5, lambda 0.1, 0.05, 0.01, 0.005. STreeD is ``pystreed.STreeDRegressor(
optimization_task="cost-complex-regression", max_depth=d, cost_complexity=lambda)`` (the ``bench``
extra). Both objectives are computed the same way, SSE / TSS + lambda x leaves, on the training
data; times are the best of two fits in one process (after a warm-up). Printed side by side with
the issue's target: where STreeD needs more than 20 ms, ours <= 0.5x its time at an objective <=
its; below 20 ms, our fixed overhead <= 2 ms.

    python benchmarks/osrt_vs_streed.py [--data-dir ../shared/datasets/osrt] [--depths 3 5]
        [--lambdas 0.1 0.05 0.01 0.005] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from parsimony.losses import Squared
from parsimony.trees._driver import find_tree, warm_up


def best_time(fit, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fit()
        best = min(best, time.perf_counter() - start)
    return best, out


def objective(y, pred, leaves, lam):
    return float(np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2) + lam * leaves)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets", "osrt")
    parser.add_argument("--data-dir", default=os.environ.get("PARSIMONY_OSRT_DATA", default_dir))
    parser.add_argument("--depths", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.1, 0.05, 0.01, 0.005])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from pystreed import STreeDRegressor

    warm_up()
    rows = []
    for path in sorted(f for f in os.listdir(args.data_dir) if f.endswith(".csv")):
        frame = pd.read_csv(os.path.join(args.data_dir, path))
        X = frame.iloc[:, :-1].to_numpy(dtype=np.uint8)
        y = frame.iloc[:, -1].to_numpy(dtype=float)
        for depth in args.depths:
            for lam in args.lambdas:
                ours_s, ours = best_time(lambda: find_tree(X, y, Squared(), lam, depth), args.repeats)

                def fit_streed():
                    model = STreeDRegressor(optimization_task="cost-complex-regression", max_depth=depth,
                                            cost_complexity=lam)
                    return model.fit(X, y)

                fit_streed()  # its first fit loads and warms up the solver
                streed_s, streed = best_time(fit_streed, args.repeats)
                streed_obj = objective(y, streed.predict(X), streed.get_n_leaves(), lam)
                rows.append({"dataset": path[:-4], "depth": depth, "lambda": lam, "ours_obj": ours.objective,
                             "streed_obj": streed_obj, "ours_ms": 1e3 * ours_s, "streed_ms": 1e3 * streed_s})
                r = rows[-1]
                print(f"{r['dataset']:12s} d={depth} lam={lam:<6} obj ours {r['ours_obj']:.6f} streed "
                      f"{r['streed_obj']:.6f}   ms ours {r['ours_ms']:8.2f} streed {r['streed_ms']:8.2f}", flush=True)
    res = pd.DataFrame(rows)
    res["ratio"] = res["ours_ms"] / res["streed_ms"]
    res["obj_ok"] = res["ours_obj"] <= res["streed_obj"] + 1e-9
    hard = res["streed_ms"] > 20
    res["target"] = np.where(hard, res["ratio"] <= 0.5, res["ours_ms"] - res["streed_ms"] <= 2.0) & res["obj_ok"]
    print("\n" + res.round({"ours_obj": 6, "streed_obj": 6, "ours_ms": 2, "streed_ms": 2, "ratio": 2}).to_string(index=False))
    print(f"\nobjective: ours < STreeD's in {int((res.ours_obj < res.streed_obj - 1e-9).sum())}, equal in "
          f"{int((abs(res.ours_obj - res.streed_obj) <= 1e-9).sum())}, worse in {int((~res.obj_ok).sum())} of {len(res)}")
    print(f"time ratio ours/STreeD: median {res.ratio.median():.2f}; cases with STreeD > 20 ms: {int(hard.sum())}, "
          f"of which ours <= 0.5x: {int((hard & (res.ratio <= 0.5)).sum())}")
    print(f"target met (per case, objective <= STreeD's and the time rule): {int(res.target.sum())} of {len(res)}")


if __name__ == "__main__":
    main()
