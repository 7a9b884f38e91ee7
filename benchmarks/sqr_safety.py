"""Are SQR's selected formulas safe to deploy, and the same model in any units? (issue 39)

``--tables N``: N random targets of discrete features (half lookup tables of one feature with 3-8
levels, half tables of two features with 2-5 levels each; 300 rows, values uniform in [0.9, 8.2])
fitted with the default settings (``--set`` changes one); the selected formula is evaluated on a
dense grid of the training box (20,001 points, or 401 x 401) and counted as **unsafe** when a value
is not finite or lies more than ``ENCLOSURE_SPANS`` (20) target ranges beyond the targets, the bound
certification enforces; the count beyond ten ranges is printed beside it. Printed for
``certify=True`` (the default) and, with ``--raw``, ``certify=False``.

``--pmlb``: the same check of the formula selected on each PMLB set of ../shared/datasets/pmlb
(every row, tau .5, seed 0): a grid over the features it uses (two at most; others at 200,000
uniform points of the box, the unused features drawn too).

``--scale``: the issue's example, ``y = x0 x1 / (1 + x2)`` with 2% noise (300 rows, features
uniform in [1, 5], seed 0), fitted with y times ``10**k`` and with X times ``10**k`` for every
``k`` in ``--ks`` (-12..12), and with both times 1e150: whether the model is k = 0's in the new
units (its predictions k = 0's scaled, to a relative 1e-6: the same structure and constants), the
relative loss, and any overflow warning.

    python benchmarks/sqr_safety.py [--tables 200] [--raw] [--pmlb] [--scale] [--set name=value]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_friedman1 import parse_settings  # noqa: E402

from parsimony.symbolic import SymbolicQuantileRegressor  # noqa: E402
from parsimony.symbolic.regressor import ENCLOSURE_SPANS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PMLB = ROOT.parent / "shared" / "datasets" / "pmlb"
SPANS = ENCLOSURE_SPANS  # a value farther than this many target ranges beyond the targets is unbounded


def excursion(model, X, y, points=200_000, seed=0) -> float:
    """How many target ranges the selected formula reaches beyond the targets on a dense sample of
    the box (inf where a value is not finite; 0 within the targets' range)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    row = model._fronts[0][model.best_index_]
    used = sorted({int(f) for o, f in zip(row["ops"], row["feats"]) if o == 1})
    rng = np.random.default_rng(seed)
    if 0 < len(used) <= 2:
        per_axis = 20_001 if len(used) == 1 else 401
        axes = [np.linspace(lo[j], hi[j], per_axis) for j in used]
        mesh = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
        dense = rng.uniform(lo, hi, (mesh.shape[0], X.shape[1]))
        dense[:, used] = mesh
    else:
        dense = rng.uniform(lo, hi, (points, X.shape[1]))
    with np.errstate(all="ignore"):
        raw = model._evaluate(dense, 0, model.best_index_)
    if not np.all(np.isfinite(raw)):
        return np.inf
    span = max(np.ptp(y), 1e-300)
    return float(max(0.0, (y.min() - raw.min()) / span, (raw.max() - y.max()) / span))


def table_target(rng, k, rows=300):
    if k % 2 == 0:
        levels = int(rng.integers(3, 9))
        x = rng.integers(0, levels, rows)
        return x[:, None].astype(float), rng.uniform(0.9, 8.2, levels)[x]
    a, b = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    X = np.column_stack([rng.integers(0, a, rows), rng.integers(0, b, rows)])
    return X.astype(float), rng.uniform(0.9, 8.2, (a, b))[X[:, 0], X[:, 1]]


def run_tables(n, settings, raw):
    variants = [("certify=True", {})] + ([("certify=False", {"certify": False})] if raw else [])
    for label, extra in variants:
        bad, beyond_ten, seconds, examples = 0, 0, [], []
        for k in range(n):
            X, y = table_target(np.random.default_rng(k), k)
            model = SymbolicQuantileRegressor(random_state=0, progress=False, **{**settings, **extra})
            start = time.process_time()
            model.fit(X, y)
            seconds.append(time.process_time() - start)
            reach = excursion(model, X, y)
            beyond_ten += reach > 10
            if reach > SPANS:
                bad += 1
                examples.append(f"  target {k}: {model.export_text()}")
        print(f"{label}: {bad} of {n} selected formulas unsafe on the dense grid (non-finite or beyond {SPANS:g} "
              f"target ranges; {beyond_ten} beyond 10); median fit {np.median(seconds):.2f} s CPU")
        print("\n".join(examples[:10]))


def run_pmlb(settings):
    import pandas as pd

    bad = beyond_ten = 0
    files = sorted(PMLB.glob("*.tsv.gz"))
    for path in files:
        frame = pd.read_csv(path, sep="\t")
        X, y = frame.drop(columns="target").to_numpy(float), frame["target"].to_numpy(float)
        model = SymbolicQuantileRegressor(random_state=0, progress=False, **settings)
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        reach = excursion(model, X, y)
        bad += reach > SPANS
        beyond_ten += reach > 10
        print(f"{path.name.split('.')[0]:28s} {'UNSAFE' if reach > SPANS else 'ok':6s} reach {reach:6.2f} ranges "
              f"{time.process_time() - start:6.2f} s  {model.export_text()}", flush=True)
    print(f"{bad} of {len(files)} selected formulas unsafe on the dense sample of the training box (non-finite or "
          f"beyond {SPANS:g} target ranges; {beyond_ten} beyond 10)")


def run_scale(settings, ks):
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, (300, 3))
    f = X[:, 0] * X[:, 1] / (1 + X[:, 2])
    y = f + rng.normal(0, 0.02 * np.sqrt(np.mean(f * f)), 300)

    def fit(Xk, yk):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SymbolicQuantileRegressor(random_state=0, progress=False, **settings).fit(Xk, yk)
        overflow = any("overflow" in str(w.message) for w in caught)
        return model, overflow

    base, _ = fit(X, y)
    base_pred = base.predict(X)
    base_loss = np.mean(np.abs(y - base_pred)) / np.mean(np.abs(y))
    print(f"k = 0: {base.export_text()}   relative loss {base_loss:.4f}")
    same = {"y": 0, "X": 0}
    for which in ("y", "X"):
        for k in ks:
            s = 10.0 ** k
            Xk, yk = (X, y * s) if which == "y" else (X * s, y)
            model, overflow = fit(Xk, yk)
            pred = model.predict(Xk)
            scaled = pred / s if which == "y" else pred
            diff = float(np.max(np.abs(scaled - base_pred)) / np.max(np.abs(base_pred)))
            rel = np.mean(np.abs(yk - pred)) / np.mean(np.abs(yk))
            agree = diff < 1e-6
            same[which] += agree
            print(f"{which} * 1e{k:+d}: {'same' if agree else 'DIFFERENT'}  relative loss {rel:.4f}  prediction "
                  f"difference {diff:.1e}{'  OVERFLOW' if overflow else ''}  {model.export_text()}", flush=True)
    model, overflow = fit(X * 1e150, y * 1e150)
    rel = np.mean(np.abs(y * 1e150 - model.predict(X * 1e150))) / np.mean(np.abs(y * 1e150))
    print(f"X and y * 1e150: relative loss {rel:.4f}{'  OVERFLOW warnings' if overflow else ', no overflow warning'}"
          f"  {model.export_text()}")
    print(f"the same model at every k: y {same['y']}/{len(ks)}, X {same['X']}/{len(ks)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=0)
    parser.add_argument("--raw", action="store_true", help="also certify=False")
    parser.add_argument("--pmlb", action="store_true")
    parser.add_argument("--scale", action="store_true")
    parser.add_argument("--ks", nargs="*", type=int, default=list(range(-12, 13)))
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    settings = parse_settings(args.set)
    if args.tables:
        run_tables(args.tables, settings, args.raw)
    if args.pmlb:
        run_pmlb(settings)
    if args.scale:
        run_scale(settings, args.ks)


if __name__ == "__main__":
    main()
