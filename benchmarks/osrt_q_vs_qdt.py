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
        [--leaf-budget-evidence [--evidence-thresholds 16] [--evidence-time-limit 3]]

``--leaf-budget-evidence`` asks instead whether the goal is reachable at all. On the same outer folds
it fits the tuned QDT, takes the largest leaf count ``B`` whose ``2B - 1`` nodes are at most a tenth of
QDT's (at least one leaf), and finds with OSRT-Q the tree of least TRAINING pinball loss among all
trees of at most ``B`` leaves on a rich binarisation (``--evidence-thresholds`` per numeric feature):
such trees have depth at most ``B - 1``, so for ``B <= 2`` that is one exact fit at that depth and
``regularization=0``; for larger ``B`` a bisection over the penalty gives a feasible tree (an upper
bound) and, by Lagrangian duality (``opt(lam) - lam B`` for every ``lam``), a certified lower bound,
equal to it when some penalty's optimum has exactly ``B`` leaves (each of those fits stops after
``--evidence-time-limit`` seconds, keeping its certified bound, so the bound stays valid). When that
lower bound is above QDT's TEST loss, no tree within the node budget fits even the training data as
well as QDT predicts the test data: the goal is out of reach on that binarisation (per fold; per
case, the mean over folds of those lower bounds against the mean of QDT's test NQL, the means the
goal compares). It also reports, per case, the node ratio OSRT-Q needs (its benchmark settings:
``--n-thresholds``, ``--depth``, ``--tree-time-limit``) to come within 5% of QDT's test NQL: the
fewest nodes along a decreasing penalty path whose test NQL is within 5%, an oracle choice (the
least the ratio can be with penalties chosen this way), or "-" when no penalty on the path gets
there.
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
from parsimony.losses import Pinball
from parsimony.metrics import complexity, normalized_quantile_loss
from parsimony.trees import Binarizer, OptimalSparseRegressionTree


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


#: The decreasing penalties of the node-ratio path (``--leaf-budget-evidence``).
PATH_PENALTIES = (0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002, 0.001)


def _quantile_tree(quantile, regularization, depth, n_thresholds, time_limit=None):
    return OptimalSparseRegressionTree(regularization=regularization, depth_limit=depth, loss="quantile",
                                       quantile=quantile, time_limit=time_limit,
                                       binarizer=Binarizer(n_thresholds=n_thresholds))


def best_within_leaves(X, y, quantile, budget, n_thresholds, iterations=12, time_limit=3.0):
    """The least training loss of a tree with at most ``budget`` leaves, as OSRT-Q's normalised loss
    (pinball loss / that of the best constant): ``(upper, lower, tree)``, ``upper`` the loss of the
    feasible ``tree`` and ``lower`` a certified lower bound (equal when exact). For ``budget > 2`` each
    fit of the bisection has ``time_limit`` seconds (a stopped fit's certified bound keeps the lower
    bound valid)."""
    depth = max(budget - 1, 0)  # a tree of B leaves has depth <= B - 1
    if budget <= 2:  # every tree of that depth has at most B leaves: one exact fit without a penalty
        tree = _quantile_tree(quantile, 0.0, depth, n_thresholds).fit(X, y)
        assert tree.status_ == "optimal"
        return tree.loss_, tree.loss_, tree
    lo, hi = 1e-6, 2.0  # at 2.0 the single leaf is optimal (a split costs at least 2 lam)
    best, dual = None, 0.0
    for step in range(iterations + 2):
        lam = (lo, hi)[step] if step < 2 else float(np.sqrt(lo * hi))
        tree = _quantile_tree(quantile, lam, depth, n_thresholds, time_limit).fit(X, y)
        dual = max(dual, tree.lower_bound_ - lam * budget)  # opt(lam) - lam B <= any loss within the budget
        if tree.n_leaves_ <= budget:
            if best is None or tree.loss_ < best.loss_:
                best = tree
            if step >= 2:
                hi = lam
        elif step >= 2:
            lo = lam
        if tree.n_leaves_ == budget and tree.status_ == "optimal":
            dual = max(dual, tree.loss_)  # the optimum of its penalty with exactly B leaves: constrained optimum
        if best is not None and best.loss_ - dual <= 1e-9:
            break
    return best.loss_, min(dual, best.loss_), best


def leaf_budget_evidence(name, X, y, quantile, folds, trials, depth, tree_time_limit, n_thresholds,
                         evidence_thresholds, evidence_time_limit=3.0, seed=0):
    """Per fold: QDT's test NQL and nodes, the least training NQL of a tree within a tenth of its nodes
    (see the module docstring) and the nodes OSRT-Q needs to come within 5% of QDT's test NQL."""
    rows = []
    y_range = float(y.max() - y.min())
    for fold, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(X)):
        Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
        qdt = make_qdt(quantile, random_state=seed, n_trials=trials, cv=3).fit(Xtr, ytr)
        qdt_nodes = complexity(qdt)
        qdt_test = normalized_quantile_loss(yte, qdt.predict(Xte), quantile, y_range=y_range)
        budget = max(1, (qdt_nodes + 10) // 20)  # 2B - 1 <= nodes / 10
        start = time.perf_counter()
        upper, lower, tree = best_within_leaves(Xtr, ytr, quantile, budget, evidence_thresholds,
                                                time_limit=evidence_time_limit)
        evidence_seconds = time.perf_counter() - start
        loss = Pinball(quantile)
        per_unit = loss.total(ytr, loss.optimal_constant(ytr)) / len(ytr) / y_range  # normalised loss -> NQL
        needed = np.nan
        start = time.perf_counter()
        for lam in PATH_PENALTIES:
            fit = _quantile_tree(quantile, lam, depth, n_thresholds, tree_time_limit).fit(Xtr, ytr)
            if normalized_quantile_loss(yte, fit.predict(Xte), quantile, y_range=y_range) <= 1.05 * qdt_test:
                needed = fit.complexity_
                break
        rows.append({"dataset": name, "quantile": quantile, "fold": fold, "qdt_nodes": qdt_nodes,
                     "qdt_test_nql": qdt_test,
                     "qdt_train_nql": normalized_quantile_loss(ytr, qdt.predict(Xtr), quantile, y_range=y_range),
                     "budget_leaves": budget, "best_train_nql": upper * per_unit, "best_train_nql_lb": lower * per_unit,
                     "exact": upper - lower <= 1e-9, "best_leaves": tree.n_leaves_,
                     "best_test_nql": normalized_quantile_loss(yte, tree.predict(Xte), quantile, y_range=y_range),
                     "nodes_within_5pct": needed, "evidence_seconds": evidence_seconds,
                     "path_seconds": time.perf_counter() - start})
    return rows


def report_evidence(results):
    """Print the leaf-budget evidence per fold and per case, and the summary lines."""
    res = results.copy()
    res["out_of_reach"] = res["best_train_nql_lb"] > res["qdt_test_nql"]
    cols = ["qdt_nodes", "qdt_test_nql", "budget_leaves", "best_train_nql", "best_train_nql_lb", "exact",
            "best_test_nql", "out_of_reach", "nodes_within_5pct"]
    print("\nper fold: QDT (tuned) against the least-training-loss tree within a tenth of QDT's nodes")
    print(res[["dataset", "quantile", "fold"] + cols].round(4).to_string(index=False))
    per = res.groupby(["dataset", "quantile"]).agg(
        qdt_nodes=("qdt_nodes", "mean"), qdt_test_nql=("qdt_test_nql", "mean"), budget_leaves=("budget_leaves", "mean"),
        best_train_nql=("best_train_nql", "mean"), best_train_nql_lb=("best_train_nql_lb", "mean"),
        best_test_nql=("best_test_nql", "mean"), folds_out=("out_of_reach", "sum"), folds=("fold", "count"),
        reached=("nodes_within_5pct", "count"), nodes_5pct=("nodes_within_5pct", "mean"))
    per["out_of_reach"] = per["best_train_nql_lb"] > per["qdt_test_nql"]
    per["margin"] = per["best_train_nql_lb"] / per["qdt_test_nql"]
    # nodes needed within 5%: mean over folds, only when every fold got there
    per["ratio_5pct"] = np.where(per["reached"] == per["folds"], per["nodes_5pct"] / per["qdt_nodes"], np.nan)
    print("\nper dataset and quantile (means over folds): margin = best training NQL within the budget (lower "
          "bound) / QDT's test NQL; out_of_reach when > 1;\nratio_5pct = nodes OSRT-Q needs within 5% of QDT's "
          "test NQL / QDT's nodes (- : not reached in every fold)")
    shown = per[["qdt_nodes", "qdt_test_nql", "budget_leaves", "best_train_nql_lb", "best_test_nql", "margin",
                 "out_of_reach", "folds_out", "ratio_5pct"]]
    print(shown.round(4).to_string(na_rep="-"))
    n = len(per)
    print(f"\ngoal provably out of reach (the least training NQL of any tree within a tenth of QDT's nodes, on "
          f"{res.attrs.get('thresholds', '?')} thresholds per feature, above QDT's test NQL): "
          f"{int(per.out_of_reach.sum())} of {n} dataset-quantile cases (means over folds); "
          f"{int(res.out_of_reach.sum())} of {len(res)} folds; median margin {per.margin.median():.3f}")
    reached = per["ratio_5pct"].dropna()
    print(f"node ratio OSRT-Q needs to come within 5% of QDT's test NQL: median {reached.median():.3f} over the "
          f"{len(reached)} of {n} cases reached in every fold (quartiles {reached.quantile(0.25):.3f} / "
          f"{reached.quantile(0.75):.3f}); not reached on the penalty path in {n - len(reached)}")


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
    parser.add_argument("--leaf-budget-evidence", action="store_true",
                        help="whether the goal is reachable at all (see the module docstring)")
    parser.add_argument("--evidence-thresholds", type=int, default=16,
                        help="thresholds per numeric feature of the evidence's binarisation")
    parser.add_argument("--evidence-time-limit", type=float, default=3.0,
                        help="seconds per fit of the evidence's bisection (budgets of three leaves or more)")
    args = parser.parse_args()
    if args.leaf_budget_evidence:
        return evidence_main(args)

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

def evidence_main(args):
    """``--leaf-budget-evidence``: run (or with ``--report-only`` read ``--out``) and report."""
    if args.report_only:
        results = pd.read_csv(args.out)
    else:
        rows = []
        for name in _selected(args):
            X, y = load_dataset(name, data_dir=args.data_dir, download=False)
            X, y = X.to_numpy(dtype=float), y.to_numpy(dtype=float)
            for q in args.quantiles:
                rows.extend(leaf_budget_evidence(name, X, y, q, args.folds, args.trials, args.depth,
                                                 args.tree_time_limit, args.n_thresholds, args.evidence_thresholds,
                                                 args.evidence_time_limit))
                last = pd.DataFrame(rows[-args.folds:])
                print(f"{name:32s} tau={q}: QDT test nql {last.qdt_test_nql.mean():.4f} nodes "
                      f"{last.qdt_nodes.mean():.1f}  best within {last.budget_leaves.mean():.1f} leaves: train nql >= "
                      f"{last.best_train_nql_lb.mean():.4f} (test {last.best_test_nql.mean():.4f})", flush=True)
                if args.out:
                    pd.DataFrame(rows).to_csv(args.out, index=False)
        results = pd.DataFrame(rows)
    results.attrs["thresholds"] = args.evidence_thresholds
    report_evidence(results)


def _selected(args):
    table = list_datasets(args.data_dir)
    table = table[(table["n"] <= args.max_rows) & (table["d"] <= args.max_features)]
    if args.datasets:
        table = table[table["name"].isin(args.datasets)]
    return list(table["name"])


if __name__ == "__main__":
    main()
