"""What accuracy is reachable at a given parsimony on the Friedman-1 sets of the SQR benchmark.

The paper's Table 11 reports, for 564_fried and the ten fri_c sets (targets built from
Friedman's function ``10 sin(pi x0 x1) + 20 (x2 - 1/2)^2 + 10 x3 + 5 x4`` plus noise), NQL and
parsimony figures for SQR. This script fits fixed expression shapes of that family, from a
product term up to the whole function, with their constants optimised for the pinball loss on
each training fold (least-squares starts, then Nelder-Mead on the pinball loss), and prints
their test NQL (paper Eq. 7) beside their parsimony (Table 1 token weights), next to the paper's
SQR row. Any expression with the paper's parsimony that reached the paper's NQL would have to
beat the best shape of its size here; the whole function is the noise floor.

    python benchmarks/sqr_reachable.py [--datasets 564_fried 612_fri_c1_1000_5] [--tau 0.5]
        [--folds 5] [--max-rows 8000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import sympy
from scipy.optimize import least_squares, minimize
from sklearn.model_selection import KFold

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_srbench import SHARED, paper_table  # noqa: E402

from parsimony.datasets import load_dataset  # noqa: E402
from parsimony.metrics import expression_complexity, normalized_quantile_loss, pinball_loss  # noqa: E402

SHAPES = {  # constants are c0, c1, ...; features x0..x4 are Friedman's inputs
    "linear": "c0*x0 + c1*x1 + c2*x2 + c3*x3 + c4*x4 + c5",
    "product + x3": "c0*x0*x1 + c1*x3 + c2",
    "sin(product) + x3": "c0*sin(c1*x0*x1) + c2*x3 + c3",
    "sin(shifted product)": "c0*sin(c1*(x0 + c2)*(x1 + c3)) + c4",
    "sin(shifted product) + x3": "c0*sin(c1*(x0 + c2)*(x1 + c3)) + c4*x3 + c5",
    "sin(shifted product) + x3 + x4": "c0*sin(c1*(x0 + c2)*(x1 + c3)) + c4*x3 + c5*x4 + c6",
    "Friedman's function": "c0*sin(c1*(x0 + c2)*(x1 + c3)) + c4*x3 + c5*x4 + c6*(x2 + c7)**2 + c8",
}
STARTS = 30


def compile_shape(text):
    """``(function(params, X), number of constants, parsimony)`` of a shape."""
    expr = sympy.sympify(text)
    consts = sorted((s for s in expr.free_symbols if s.name.startswith("c")), key=lambda s: int(s.name[1:]))
    features = [sympy.Symbol(f"x{j}") for j in range(5)]
    f = sympy.lambdify([consts, features], expr, "numpy")
    generic = expr.subs({c: 1.2345 + k for k, c in enumerate(consts)})
    return (lambda p, X: f(p, [X[:, j] for j in range(5)])), len(consts), expression_complexity(generic)


def fit_constants(f, k, X, y, tau, rng):
    """Constants minimising the pinball loss: least-squares restarts on a subsample, the best
    refined on all rows, then Nelder-Mead on the pinball loss."""
    sub = rng.choice(len(y), size=min(len(y), 1000), replace=False)
    best = None
    for _ in range(STARTS):
        start = rng.normal(size=k) * rng.choice([1.0, 3.0])
        with np.errstate(all="ignore"):
            fit = least_squares(lambda p: f(p, X[sub]) - y[sub], start, max_nfev=2000)
        if best is None or fit.cost < best.cost:
            best = fit
    with np.errstate(all="ignore"):
        best = least_squares(lambda p: f(p, X) - y, best.x, max_nfev=2000)

    def loss(p):
        with np.errstate(all="ignore"):
            value = pinball_loss(y, f(p, X), tau)
        return value if np.isfinite(value) else np.inf

    result = minimize(loss, best.x, method="Nelder-Mead", options={"maxiter": 400 * k, "xatol": 1e-8,
                                                                     "fatol": 1e-10})
    return result.x


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--tau", type=float, default=0.5)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--max-rows", type=int, default=8000, help="training rows used per fold (subsampled)")
    args = parser.parse_args(argv)
    paper = paper_table()
    names = args.datasets or sorted(name for (tau, name) in paper if tau == args.tau and "fri" in name)
    shapes = {label: compile_shape(text) for label, text in SHAPES.items()}
    summary = {label: [] for label in SHAPES}
    paper_nql = []
    for name in names:
        path = SHARED / "pmlb" / f"{name}.tsv.gz"
        if not path.exists():
            print(f"{name}: not in {path.parent}, skipped")
            continue
        X, y = load_dataset(str(path))
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        rng = np.random.default_rng(0)
        scores = {label: [] for label in SHAPES}
        for train, test in KFold(args.folds, shuffle=True, random_state=0).split(X):
            if len(train) > args.max_rows:
                train = rng.choice(train, size=args.max_rows, replace=False)
            for label, (f, k, _) in shapes.items():
                p = fit_constants(f, k, X[train], y[train], args.tau, rng)
                scores[label].append(normalized_quantile_loss(y[test], f(p, X[test]), args.tau))
        ref = paper.get((args.tau, name), {})
        paper_nql.append(ref.get("nql", np.nan))
        print(f"\n{name} (tau={args.tau}): paper SQR NQL {ref.get('nql', np.nan):.2f} "
              f"at parsimony {ref.get('parsimony', np.nan):.1f}", flush=True)
        for label, (_, _, parsimony) in shapes.items():
            summary[label].append(np.mean(scores[label]))
            print(f"  {label:32s} parsimony {parsimony:3d}   NQL {np.mean(scores[label]):.4f}", flush=True)
    print(f"\nmean over {len(paper_nql)} datasets: paper SQR NQL {np.nanmean(paper_nql):.4f}")
    for label, (_, _, parsimony) in shapes.items():
        print(f"  {label:32s} parsimony {parsimony:3d}   NQL {np.mean(summary[label]):.4f}")


if __name__ == "__main__":
    main()
