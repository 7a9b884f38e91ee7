"""OSRT-Q (optimal sparse quantile tree) against QDT (CART quantile tree) on the PMLB sets.

Both tuned by inner cross-validation of the pinball loss (OSRT-Q over its per-leaf penalty, QDT
over ``min_samples_leaf``, the same trial count), on the same outer folds. Each refits its lowest-loss
trial; from the same OSRT-Q trials, the column "OSRT-Q 1se" refits the sparsest within one
standard error of the lowest loss (Breiman et al.'s rule, ``selection="one_se"``). Prints per dataset
and quantile the NQL (mean pinball loss over the whole dataset's target range, the SQR paper's
Eq. 7) and the number of tree nodes, then the medians and the issue's goal: QDT's accuracy at a
tenth of its nodes.

    python benchmarks/osrt_q_vs_qdt.py [--data-dir ../shared/datasets/pmlb] [--max-rows 1000]
        [--max-features 30] [--datasets NAME ...] [--folds 3] [--trials 8] [--quantiles 0.1 0.5 0.9]
        [--n-thresholds 4] [--out results.csv]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import KFold

from parsimony.datasets import list_datasets, load_dataset
from parsimony.experiments.baselines import make_osrt_q, make_qdt, select_trial
from parsimony.metrics import complexity, normalized_quantile_loss


def run(name, X, y, quantile, folds, trials, depth, tree_time_limit, n_thresholds=4, seed=0):
    rows = []
    y_range = float(y.max() - y.min())
    for fold, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(X)):
        for method, model in (
            ("QDT", make_qdt(quantile, random_state=seed, n_trials=trials, cv=3)),
            ("OSRT-Q", make_osrt_q(quantile, random_state=seed, n_trials=trials, cv=3, depth_limit=depth,
                                   tree_time_limit=tree_time_limit, n_thresholds=n_thresholds)),
        ):
            start = time.perf_counter()
            model.fit(X[train], y[train])
            seconds = time.perf_counter() - start
            fitted = [(method, model)]
            if method == "OSRT-Q":  # the one-standard-error choice among the same trials, refitted
                sparse = select_trial(model.trials_.to_dict("records"), "one_se")
                fitted.append(("OSRT-Q 1se", clone(model.estimator).set_params(
                    regularization=float(sparse["regularization"])).fit(X[train], y[train])))
            for label, fit in fitted:
                rows.append({"dataset": name, "quantile": quantile, "fold": fold, "method": label,
                             "nql": normalized_quantile_loss(y[test], fit.predict(X[test]), quantile,
                                                             y_range=y_range),
                             "nodes": complexity(fit), "seconds": seconds})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets", "pmlb")
    parser.add_argument("--data-dir", default=os.environ.get("PARSIMONY_PMLB", default_dir))
    parser.add_argument("--max-rows", type=int, default=1000)
    parser.add_argument("--max-features", type=int, default=30)
    parser.add_argument("--datasets", nargs="+", default=None, help="only these (default: all within the limits)")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--tree-time-limit", type=float, default=10.0)
    parser.add_argument("--n-thresholds", type=int, default=4, help="OSRT-Q's thresholds per numeric feature")
    parser.add_argument("--quantiles", type=float, nargs="+", default=[0.1, 0.5, 0.9])
    parser.add_argument("--out", default=None, help="CSV of every fold (also read back with --report-only)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()

    if args.report_only:
        results = pd.read_csv(args.out)
    else:
        table = list_datasets(args.data_dir)
        table = table[(table["n"] <= args.max_rows) & (table["d"] <= args.max_features)]
        if args.datasets:
            table = table[table["name"].isin(args.datasets)]
        rows = []
        for name in table["name"]:
            X, y = load_dataset(name, data_dir=args.data_dir, download=False)
            X, y = X.to_numpy(dtype=float), y.to_numpy(dtype=float)
            for q in args.quantiles:
                rows.extend(run(name, X, y, q, args.folds, args.trials, args.depth, args.tree_time_limit,
                                args.n_thresholds))
                done = pd.DataFrame(rows)
                last = done[(done.dataset == name) & (done["quantile"] == q)].groupby("method")[["nql", "nodes"]].mean()
                print(f"{name:32s} tau={q}: " + "  ".join(f"{m} nql {r.nql:.4f} nodes {r.nodes:.0f}"
                                                          for m, r in last.iterrows()), flush=True)
                if args.out:
                    done.to_csv(args.out, index=False)
        results = pd.DataFrame(rows)
    per = results.groupby(["dataset", "quantile", "method"])[["nql", "nodes"]].mean().unstack("method")
    print("\nper dataset and quantile (mean over folds; lower NQL is better)")
    print(per.round(4).to_string())
    print("\nmedian NQL: " + "  ".join(f"{m} {per[('nql', m)].median():.4f}" for m in per["nql"].columns)
          + "   median nodes: " + "  ".join(f"{m} {per[('nodes', m)].median():.0f}" for m in per["nodes"].columns))
    for method in [m for m in per["nql"].columns if m.startswith("OSRT-Q")]:
        ratio_nql = per[("nql", method)] / per[("nql", "QDT")]
        ratio_nodes = per[("nodes", method)] / per[("nodes", "QDT")]
        print(f"\n{method} / QDT: median ratio NQL {ratio_nql.median():.3f}, nodes {ratio_nodes.median():.3f}")
        for q in sorted(per.index.get_level_values("quantile").unique()):
            at = per.index.get_level_values("quantile") == q
            print(f"  tau={q}: median NQL ratio {ratio_nql[at].median():.3f}, "
                  f"median node ratio {ratio_nodes[at].median():.3f}")
        goal = (ratio_nql <= 1.0) & (ratio_nodes <= 0.1)
        print(f"  goal (NQL <= QDT's at <= 1/10 of its nodes) met in {int(goal.sum())} of {len(goal)} dataset-quantile "
              f"cases; NQL within 5% of QDT's in {int((ratio_nql <= 1.05).sum())}, nodes <= 1/10 in "
              f"{int((ratio_nodes <= 0.1).sum())}")

if __name__ == "__main__":
    main()
