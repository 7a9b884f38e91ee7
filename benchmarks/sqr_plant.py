"""Diagnosis of SQR's search on Friedman #1: plant a shape in every population and watch it.

Issue 27 asks whether the search misses ``sin(pi x0 x1)`` and ``(x2 - 1/2)^2`` because selection and
parsimony pressure drop them (they would not survive when planted) or because variation never
builds them (they survive when planted but never appear otherwise). For each quick-suite fold of
Friedman #1 at ``--tau``: a fit of one iteration (``warm_start``), then ``--copies`` members of every
population replaced by the planted shape (postfix tokens, constants as numbers) plus its best
offset (the tau-quantile of its residuals, as the search offers every new candidate), then the
remaining iterations; printed are the members holding the shape's marker operator (``--marker``,
``sin`` by default) at the end, whether the front and the selected model hold it, and the test
NQL, beside the same fit without planting.

    python benchmarks/sqr_plant.py [--shape "10 3.14 x0 x1 mul mul sin mul 10 x3 mul add 5 x4 mul add"]
        [--copies 1] [--tau 0.5] [--set maxsize=30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_friedman1 import parse_settings, suite_seed  # noqa: E402

from parsimony.experiments.runner import fold_indices  # noqa: E402
from parsimony.experiments.suites import load_benchmark_dataset  # noqa: E402
from parsimony.losses import Pinball  # noqa: E402
from parsimony.metrics import normalized_quantile_loss  # noqa: E402
from parsimony.symbolic import SymbolicQuantileRegressor  # noqa: E402
from parsimony.symbolic._evaluator import evaluate, make_data, make_workspace, tree_loss  # noqa: E402
from parsimony.symbolic._expressions import ADD, CONST, OPCODE, from_tokens  # noqa: E402
from parsimony.symbolic._search import constant_baseline  # noqa: E402

SHAPES = {
    "sin+x3+x4": "10 3.14 x0 mul x1 mul sin mul 10 x3 mul add 5 x4 mul add",
    "sin": "x0 x1 mul sin",
    "square": "x2 0.5 sub square",
    "friedman": "10 3.14 x0 mul x1 mul sin mul 20 x2 0.5 sub square mul add 10 x3 mul add 5 x4 mul add",
}


def _tokens(text):
    out = []
    for tok in text.split():
        try:
            out.append(float(tok))
        except ValueError:
            out.append(tok)
    return out


def plant(model, X, y, tokens, copies, weights):
    """Replace the first ``copies`` members of every population of ``model``'s search state by the shape."""
    ops, feats, vals = from_tokens(tokens, X.shape[1])
    state = model._engine_states[0]
    pops = state.populations
    max_length = pops.ops.shape[2]
    if len(ops) > max_length:
        raise SystemExit(f"the shape has {len(ops)} nodes, more than maxsize allows ({max_length})")
    tau = float(model.quantiles_[0])
    data = make_data(np.ascontiguousarray(X.T), np.ascontiguousarray(y, dtype=float), np.ones(len(y)),
                     Pinball(tau))
    ws = make_workspace(max_length, len(y))
    values = np.empty(len(y))
    evaluate(ops, feats, vals, len(ops), data.Xt, ws, values)
    offset = float(np.quantile(y - values, tau))  # the shape planted at its best level, as the search offers it
    if len(ops) + 2 <= max_length:
        ops, feats, vals = np.r_[ops, CONST, ADD], np.r_[feats, 0, 0], np.r_[vals, offset, 0.0]
    loss = tree_loss(ops, feats, vals, len(ops), data, ws)
    complexity = int(sum(weights[o] for o in ops))
    for p in range(pops.ops.shape[0]):
        for i in range(copies):
            pops.ops[p, i, :len(ops)], pops.feats[p, i, :len(ops)], pops.vals[p, i, :len(ops)] = ops, feats, vals
            pops.length[p, i], pops.loss[p, i], pops.complexity[p, i] = len(ops), loss, complexity
    base = constant_baseline(data.y, data.w, Pinball(tau))
    return loss / base, complexity


def holders(model, marker):
    pops = model._engine_states[0].populations
    code = OPCODE[marker]
    count = 0
    for p in range(pops.ops.shape[0]):
        for i in range(pops.ops.shape[1]):
            count += bool(np.any(pops.ops[p, i, :pops.length[p, i]] == code))
    return count, pops.ops.shape[0] * pops.ops.shape[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="sin+x3+x4", help=f"postfix tokens or one of {sorted(SHAPES)}")
    parser.add_argument("--marker", default="sin")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--folds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    tokens = _tokens(SHAPES.get(args.shape, args.shape))
    settings = parse_settings(args.set)
    X, y, _ = load_benchmark_dataset("friedman1")
    whole = float(np.ptp(y))
    tau = args.tau
    print(f"planting {' '.join(map(str, tokens))} ({args.copies} per population), tau={tau}, settings {settings}")
    for fold in args.folds:
        train, test = fold_indices(len(y), 5, fold, 0)
        seed = suite_seed(tau, fold)
        total = settings.get("niterations", 40)
        results = {}
        for planted in (False, True):
            model = SymbolicQuantileRegressor(quantile=tau, random_state=seed, progress=False, warm_start=True,
                                              **{**settings, "niterations": 1})
            model.fit(X[train], y[train])
            note = ""
            if planted:
                rel, cplx = plant(model, X[train], y[train], tokens, args.copies, model.complexity_weights_)
                note = f" (planted: loss/constant {rel:.3f}, complexity {cplx})"
            model.set_params(niterations=total - 1)
            model.fit(X[train], y[train])
            count, size = holders(model, args.marker)
            front = model.equations_
            in_front = front["equation"].str.contains(args.marker).any()
            nql = normalized_quantile_loss(y[test], model.predict(X[test]), tau, y_range=whole)
            best_marker = front[front["equation"].str.contains(args.marker)]
            results[planted] = (f"NQL {nql:.4f}; {count}/{size} members hold {args.marker}; front holds it: "
                                f"{in_front}; selected [{model.complexity_}] {model.export_text(decimals=3)}{note}")
            if len(best_marker):
                row = best_marker.iloc[-1]
                results[planted] += (f"\n        front's last {args.marker} row: [{row['complexity']}] loss "
                                     f"{row['loss']:.4f} (selected's {front['loss'].iloc[model.best_index_]:.4f})"
                                     f" {row['equation']}")
        print(f"fold {fold}\n  plain:   {results[False]}\n  planted: {results[True]}", flush=True)


if __name__ == "__main__":
    main()
