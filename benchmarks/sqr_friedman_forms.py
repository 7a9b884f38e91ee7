"""What the Friedman family's own short forms score on the ``fri_c*`` sets, beside SQR's fronts (issue 40, must-hold 2).

Each fold of ``sqr_selection.py`` (same sets, levels and folds) is fitted with fixed forms built from
the terms of the generating function as the sets have it (standardised features; the wave's origin
is the features' low end): the wave ``sin((x0 + a) (x1 + b) c)``, ``x3``, ``x4`` and ``x2^2``, each
with its coefficient, plus an offset; also ``sin(x0 + x1 + a)`` for the wave, a linear form, and
terms under one shared coefficient (``x3+x3+x4+x2sq`` is ``(x3 + x3 + x4 + x2^2) * c``). The
wave's inner constants are fitted by Nelder-Mead (least squares, then the pinball loss, from three
starts), the coefficients and offset exactly by pinball regression. Complexity is the package's
token weights (:data:`parsimony.tokens.TOKEN_COMPLEXITY`) of the form as written. These are not
rules a fit could use (they name the generating function's features): they bound what rows of
the true family can buy at each complexity. Per level and form: mean test NQL beside the kept
front's row of the largest complexity at most the form's (the front's best training loss there),
then the oracle mix of ``sqr_selection.py`` (rows chosen on test NQL at mean complexity at most
20) on the fronts alone and on the fronts with the forms' rows added.

    python benchmarks/sqr_friedman_forms.py --fronts /tmp/sqr_fronts.csv --datasets <the fri_c* sets>
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_peers import benchmark_folds, load_xy  # noqa: E402
from sqr_selection import PARSIMONY_TARGET, budget_oracle  # noqa: E402

from parsimony.metrics import normalized_quantile_loss  # noqa: E402
from parsimony.symbolic._terms import pinball_regression  # noqa: E402
from parsimony.tokens import TOKEN_COMPLEXITY as W  # noqa: E402

#: Tokens of each term with its coefficient (``term * c``), as written.
TERM_TOKENS = {
    "wave": W["sin"] + 3 * W["mul"] + 2 * W["add"] + 2 * W["feature"] + 4 * W["constant"],
    "sinsum": W["sin"] + W["mul"] + 2 * W["add"] + 2 * W["feature"] + 2 * W["constant"],
    "x0": W["feature"] + W["mul"] + W["constant"], "x1": W["feature"] + W["mul"] + W["constant"],
    "x3": W["feature"] + W["mul"] + W["constant"], "x4": W["feature"] + W["mul"] + W["constant"],
    "x2sq": W["square"] + W["feature"] + W["mul"] + W["constant"],
}
FORMS = [("wave", "x3"), ("wave", "x3", "x4"), ("wave", "x3", "x2sq"), ("wave", "x3", "x4", "x2sq"),
         ("sinsum", "x3", "x4"), ("x0", "x1", "x3", "x4", "x2sq"),
         ("wave", "x3+x4"), ("wave", "x3+x3+x4"), ("wave", "x3+x2sq"), ("wave", "x3+x4+x2sq"),
         ("wave", "x3+x3+x4+x2sq")]
#: Starts of the wave's inner constants (shifts of x0 and x1, frequency): the low end of standardised
#: uniform features (sqrt 3) with pi/12 (fri_c0's scaling) and the fronts' typical (2.3, 1.7, 0.6).
WAVE_STARTS = [(1.8, 1.8, 0.55), (2.3, 1.7, 0.6), (1.7, 1.7, 0.27)]


def term_tokens(term) -> int:
    """Tokens of one term with its coefficient; ``"x3+x3+x4"`` is a sum of terms sharing one
    coefficient (``(x3 + x3 + x4) * c``: a repeated feature is a weight of 2), each part's own
    coefficient not written."""
    parts = term.split("+")
    own = W["mul"] + W["constant"]
    return sum(TERM_TOKENS[t] - own for t in parts) + (len(parts) - 1) * W["add"] + own


def tokens(form) -> int:
    """Complexity of ``sum_t c_t term_t + offset`` as written."""
    return sum(term_tokens(t) for t in form) + (len(form) - 1) * W["add"] + W["add"] + W["constant"]


def columns(form, X, p):
    """The form's term columns (k x n) at the wave's inner constants ``p``."""
    out = {"wave": lambda: np.sin((X[:, 0] + p[0]) * (X[:, 1] + p[1]) * p[2]),
           "sinsum": lambda: np.sin(X[:, 0] + X[:, 1] + p[0]), "x2sq": lambda: X[:, 2] ** 2}
    return np.array([sum(out[t]() if t in out else X[:, int(t[1])] for t in term.split("+")) for term in form])


def fit_form(form, X, y, tau):
    """``(p, offset, coefficients)`` of the form's lowest training pinball loss."""
    w = np.ones(len(y))

    def pinball(p):
        a, loss = pinball_regression(columns(form, X, p), y, w, tau, np.zeros(len(form)))
        return loss if np.isfinite(loss) else 1e300

    def squares(p):
        cols = np.vstack([np.ones(len(y)), columns(form, X, p)]).T
        if not np.all(np.isfinite(cols)):
            return 1e300
        return np.mean((y - cols @ np.linalg.lstsq(cols, y, rcond=None)[0]) ** 2)

    starts = WAVE_STARTS if "wave" in form else [(0.0,), (1.0,), (-1.0,)] if "sinsum" in form else [()]
    best = None
    for p in starts:
        if p:
            p = minimize(squares, p, method="Nelder-Mead", options={"maxiter": 2000}).x
            p = minimize(pinball, p, method="Nelder-Mead", options={"maxiter": 150}).x
        if best is None or pinball(p) < best[0]:
            best = (pinball(p), p)
    coef = np.zeros(len(form))
    offset, _ = pinball_regression(columns(form, X, best[1]), y, w, tau, coef)
    return best[1], offset, coef


def form_rows(names, quantiles, n_folds):
    """One row per set, level, fold and form: its tokens and test NQL (whole-range)."""
    rows = []
    for name in names:
        X, y = load_xy(name)
        for tau in quantiles:
            for fold, (train, test) in enumerate(benchmark_folds(X, n_folds)):
                for form in FORMS:
                    p, offset, coef = fit_form(form, X[train], y[train], tau)
                    pred = offset + coef @ columns(form, X[test], p)
                    nql = (normalized_quantile_loss(y[test], pred, tau, y_range=float(np.ptp(y)))
                           if np.all(np.isfinite(pred)) else np.nan)
                    rows.append({"dataset": name, "tau": tau, "fold": fold, "form": " + ".join(form),
                                 "complexity": tokens(form), "nql": nql})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fronts", required=True, help="a CSV of sqr_selection.py (--fronts) on the same sets")
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--quantiles", nargs="*", type=float, default=[0.5, 0.9])
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    fronts = pd.read_csv(args.fronts)
    fronts = fronts[fronts.dataset.isin(args.datasets) & fronts.tau.isin(args.quantiles) & (fronts.kept == 1)]
    forms = form_rows(args.datasets, args.quantiles, args.folds)
    keys = ["dataset", "tau", "fold"]
    front_at = [fronts[(fronts[keys] == r[keys]).all(axis=1) & (fronts.complexity <= r.complexity)].nlargest(
        1, "complexity").nql.iloc[0] for _, r in forms.iterrows()]
    forms["front_nql"] = front_at
    pd.set_option("display.width", 200)
    print("Mean test NQL of each form beside the kept front's row of at most its complexity:")
    print(forms.groupby(["tau", "form", "complexity"])[["nql", "front_nql"]].mean().round(4).to_string())
    both = pd.concat([fronts, forms.dropna(subset=["nql"]).assign(kept=1, row=-1)], ignore_index=True)
    print(f"\nOracle mix at mean complexity <= {PARSIMONY_TARGET}, the fronts alone, then with the forms:")
    print(budget_oracle(fronts).round(4).to_string(index=False))
    print(budget_oracle(both).round(4).to_string(index=False))


if __name__ == "__main__":
    main()
