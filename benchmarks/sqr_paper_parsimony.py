"""Can an expression of the SQR paper's parsimony reach its NQL? Exhaustive search over small formulas.

Issue 27 asks for mean parsimony <= the paper's + 1 at mean NQL <= the paper's (Table 11, non-Friedman
sets). Where the paper reports a parsimony of 4 or less, every expression of that size can be tried:
this script fits every expression of at most ``--nodes`` nodes (4 by default) over the paper's token
set (``+ - * /``, square, sqrt, exp, log, sin, cos, features, constants) on each training fold, keeps
the one of lowest training pinball loss, and prints its whole-range NQL on the test folds (5-fold,
the benchmark's folds) beside the paper's NQL and parsimony.

Nodes count as in the paper's PySR runs (Table 9: ``complexity_of_operators None``, every node 1).
Table 1's weights make unary operators and ``/`` costlier (``sqrt(x)`` is 5, not 2), so a bound in
nodes holds in the paper's weights a fortiori. Shapes of at most 4 nodes: ``l``, ``u(l)``,
``b(l, l)``, ``u(u(l))``, ``u(u(u(l)))``, ``u(b(l, l))``, ``b(u(l), l)`` (and mirrored), with ``l`` a
feature or a constant. A constant outside the unary operators (``g + c``, ``c - g``, ``c*g``,
``c/g``) is fitted exactly for the pinball loss (a weighted quantile); one inside (``u(x*c)``,
``u(x + c)``, ``u(c - x)``, ``u(c/x)``) on a grid of ``--grid`` values spanning the feature's scale, so the figure is a
(tight) upper bound on what the shape reaches.

    python benchmarks/sqr_paper_parsimony.py [--datasets 197_cpu_act 225_puma8NH ...] [--tau 0.5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_peers import benchmark_folds, load_xy  # noqa: E402
from sqr_srbench import paper_table  # noqa: E402

from parsimony.losses import Pinball  # noqa: E402
from parsimony.metrics import normalized_quantile_loss, pinball_loss  # noqa: E402
from parsimony.symbolic._scaling import _slope_through  # noqa: E402

UNARY = {"square": np.square, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos}
BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def best_offset(y, g, tau):
    """The pinball-optimal ``c`` of ``g + c``: the best constant for ``y - g``."""
    return Pinball(tau).optimal_constant(y - g)


def best_scale(y, g, tau):
    """The pinball-optimal ``c`` of ``c*g``: the slope of the best line through the origin, the
    exact scaling's own step (:func:`~parsimony.symbolic._scaling._slope_through` with the origin,
    appended as a last point, for pivot)."""
    n = len(y) + 1
    f, t = np.append(g, 0.0), np.append(y, 0.0)
    slope, _ = _slope_through(f, t, np.ones(n), tau, n - 1, np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))
    return slope


class Best:
    """The lowest training loss seen, the expression's text and its test predictions."""

    def __init__(self, y, tau):
        self.y, self.tau = y, tau
        self.loss, self.text, self.pred = np.inf, "", None

    def offer(self, g, gt, text):
        """``g`` (train) and ``gt`` (test) values of a shape; offers it bare and with a fitted outer
        constant (``+ c``, ``c - g``, ``c*g``, ``c/g``: two nodes more each)."""
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(g)):
                return
            offered = [(g, gt, text, 0)]
            c = best_offset(self.y, g, self.tau)
            offered.append((g + c, gt + c, f"{text} + c", 2))
            c = best_offset(self.y, -g, self.tau)
            offered.append((c - g, c - gt, f"c - {text}", 2))
            c = best_scale(self.y, g, self.tau)
            offered.append((c * g, c * gt, f"c*{text}", 2))
            inv, invt = 1 / g, 1 / gt
            if np.all(np.isfinite(inv)):
                c = best_scale(self.y, inv, self.tau)
                offered.append((c * inv, c * invt, f"c/{text}", 2))
        return offered

    def consider(self, candidates, budget, nodes):
        """Keep the candidate of lowest training loss among those finite on the training rows; its test
        predictions as ``SymbolicQuantileRegressor.predict`` makes them (NaN: the training median,
        infinities: clipped to the training range)."""
        for g, gt, text, extra in candidates or []:
            if nodes + extra <= budget and np.all(np.isfinite(g)):
                loss = pinball_loss(self.y, g, self.tau)
                if loss < self.loss:
                    with np.errstate(all="ignore"):
                        pred = np.where(np.isnan(gt), np.median(g), np.clip(gt, g.min(), g.max()))
                    self.loss, self.text, self.pred = loss, text, pred


def search(X, y, Xt, yt, tau, budget, grid):
    """The expression of at most ``budget`` nodes of lowest training loss: ``(text, test predictions)``."""
    best = Best(y, tau)
    d = X.shape[1]
    c = best_offset(y, np.zeros_like(y), tau)
    best.consider([(np.full_like(y, c), np.full_like(yt, c), "c", 0)], budget, 1)
    with np.errstate(all="ignore"):
        leaves = [(X[:, j], Xt[:, j], f"x{j}", 1) for j in range(d)]
        # one-node leaves and their unary chains (u, u(u), u(u(u)))
        chains = list(leaves)
        frontier = list(leaves)
        for _depth in range(3):
            grown = []
            for g, gt, text, n in frontier:
                for name, u in UNARY.items():
                    if n + 1 <= budget:
                        grown.append((u(g), u(gt), f"{name}({text})", n + 1))
            chains += grown
            frontier = grown
        for g, gt, text, n in chains:
            best.consider(best.offer(g, gt, text), budget, n)
        # b(l, l) of two features, and u of it / b(u(x), x')
        for i in range(d):
            for j in range(d):
                for op_name, op in BINARY.items():
                    g, gt = op(X[:, i], X[:, j]), op(Xt[:, i], Xt[:, j])
                    best.consider(best.offer(g, gt, f"x{i} {op_name} x{j}"), budget, 3)
                    if budget >= 4:
                        for name, u in UNARY.items():
                            best.consider([(u(g), u(gt), f"{name}(x{i} {op_name} x{j})", 0)], budget, 4)
                            ui, uti = u(X[:, i]), u(Xt[:, i])
                            for g2, gt2, text in ((op(ui, X[:, j]), op(uti, Xt[:, j]), f"{name}(x{i}) {op_name} x{j}"),
                                                  (op(X[:, j], ui), op(Xt[:, j], uti), f"x{j} {op_name} {name}(x{i})")):
                                best.consider([(g2, gt2, text, 0)], budget, 4)
        # u(x op c) and u(c op x): the inner constant on a grid
        if budget >= 4:
            for j in range(d):
                x, xt = X[:, j], Xt[:, j]
                scale = max(np.ptp(x), 1e-12)
                shifts = np.linspace(-np.max(x) - scale, -np.min(x) + scale, grid)
                factors = np.concatenate([-np.geomspace(1e-3, 1e3, grid // 2), np.geomspace(1e-3, 1e3, grid // 2)]) / scale
                for name, u in UNARY.items():
                    for k in shifts:
                        best.consider([(u(x + k), u(xt + k), f"{name}(x{j} + {k:.3g})", 0),
                                       (u(-x - k), u(-xt - k), f"{name}({-k:.3g} - x{j})", 0)], budget, 4)
                    for k in factors:
                        best.consider([(u(x * k), u(xt * k), f"{name}(x{j}*{k:.3g})", 0),
                                       (u(k / x), u(k / xt), f"{name}({k:.3g}/x{j})", 0)], budget, 4)
    return best.text, best.pred


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=["197_cpu_act", "225_puma8NH", "529_pollen"])
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--grid", type=int, default=200)
    args = parser.parse_args(argv)
    paper = paper_table()
    print(f"tau={args.tau}: best expression of <= {args.nodes} nodes (chosen on training loss per fold), "
          "5-fold whole-range NQL, beside the paper's SQR (Table 11)")
    for name in args.datasets:
        X, y = load_xy(name)
        span = float(np.ptp(y))
        nqls, texts = [], []
        for train, test in benchmark_folds(X):
            text, pred = search(X[train], y[train], X[test], y[test], args.tau, args.nodes, args.grid)
            nqls.append(normalized_quantile_loss(y[test], pred, args.tau, y_range=span))
            texts.append(text)
        ref = paper.get((args.tau, name), {})
        print(f"{name:24s} <= {args.nodes} nodes: NQL {np.mean(nqls):.4f} | paper: NQL {ref.get('nql', np.nan):.2f} "
              f"at parsimony {ref.get('parsimony', np.nan):.1f} | fold 0: {texts[0]}", flush=True)


if __name__ == "__main__":
    main()
