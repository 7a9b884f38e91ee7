"""SQR on Friedman #1 of the quick suite against linear QR, the true function and pyoperon (issue 27, criterion 1).

The quick suite's ``friedman1`` (300 rows, noise sd 1, seed 0: ``10 sin(pi x0 x1) + 20 (x2 - 1/2)^2
+ 10 x3 + 5 x4`` plus five irrelevant features), its 5 folds (``KFold(shuffle=True,
random_state=0)``) and its SQR seeds (:attr:`parsimony.experiments.runner.Task.random_state`), so
the default row reproduces the suite's SQR figures. For each level: mean test NQL (whole-range,
the suite's and the paper's convention), mean CPU seconds per fit, and the selected models of
SQR with its default settings (``--set name=value`` changes one, repeatable; ``--variant
label:name=value,name=value`` adds a row), beside unpenalised linear QR
(``benchmarks/sqr_peers.py``'s ``lqr``), the true function (its conditional quantile: ``f(x) +
z_tau``) and the issue's anchor for pyoperon (0.0234 at tau .5, squared loss with linear
scaling, ``max_length=30``, 6.8 s CPU a fit).

    python benchmarks/sqr_friedman1.py [--quantiles 0.5 0.9] [--set maxsize=30]
        [--variant big:maxsize=30 --variant long:niterations=160] [--folds 0 1 2 3 4] [--models]

``--features standardised`` (or ``shifted``) fits the same data with the features as PMLB's
``fri_c0`` sets have them, ``(X - 0.5) / 0.2887`` (or ``1e3`` times that plus 7; issue 40).

``--scaling 100000 1000000`` instead times one default fit (the first level of ``--quantiles``,
``--set`` applied) on that many rows of the same function (ten uniform features, noise sd 1,
seed 0) and prints CPU seconds, seconds per 100,000 rows and the selected model, beside the
issue's anchor (38 s at 1,000,000 rows, a linear model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_peers import fit_peer  # noqa: E402

from parsimony.experiments.runner import Task, fold_indices  # noqa: E402
from parsimony.experiments.suites import load_benchmark_dataset  # noqa: E402
from parsimony.metrics import normalized_quantile_loss  # noqa: E402
from parsimony.symbolic import SymbolicQuantileRegressor  # noqa: E402

ANCHORS = {0.5: ("pyoperon (issue 27: max_length=30, 6.8 s CPU)", 0.0234)}
SCALING_ANCHOR = (1_000_000, 38.0)  # issue 27: rows, CPU seconds of a default fit when it was filed


def friedman1(X):
    """The noiseless Friedman #1 function."""
    return 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]


def suite_seed(tau, fold) -> int:
    """The quick suite's SQR seed for ``friedman1`` at ``tau`` and ``fold`` (seed 0): it depends on
    those alone, not on the task's settings or data fingerprint (placeholders here)."""
    return Task("friedman1", "SQR", tau, fold, 0, 5, "", "").random_state


def parse_settings(text_pairs) -> dict:
    """``{"maxsize": 30}`` from ``["maxsize=30"]`` (values read as JSON when they parse)."""
    out = {}
    for pair in text_pairs:
        key, _, value = pair.partition("=")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def sqr_folds(X, y, tau, settings, folds, whole_range):
    """``(NQL per fold, CPU seconds per fit, models)`` of SQR with ``settings``."""
    nql, cpu, models = [], [], []
    for fold in folds:
        train, test = fold_indices(len(y), 5, fold, 0)
        seed = suite_seed(tau, fold)
        model = SymbolicQuantileRegressor(quantile=tau, random_state=seed, progress=False, **settings)
        start = time.process_time()
        model.fit(X[train], y[train])
        cpu.append(time.process_time() - start)
        nql.append(normalized_quantile_loss(y[test], model.predict(X[test]), tau, y_range=whole_range))
        models.append(f"[{model.complexity_}] {model.export_text(decimals=3)}")
    return np.array(nql), np.array(cpu), models


def scaling(sizes, tau, settings):
    """CPU seconds of one fit on each of ``sizes`` rows of Friedman #1 (noise sd 1, seed 0)."""
    print(f"\nfriedman1, {', '.join(map(str, sizes))} rows, tau={tau}: CPU seconds of one fit "
          f"(issue 27 anchor: {SCALING_ANCHOR[1]:.0f} s at {SCALING_ANCHOR[0]:,} rows)", flush=True)
    for n in sizes:
        rng = np.random.default_rng(0)
        X = rng.uniform(size=(n, 10))
        y = friedman1(X) + rng.normal(size=n)
        model = SymbolicQuantileRegressor(quantile=tau, random_state=0, progress=False, **settings)
        start = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - start
        print(f"  {n:>10,} rows  CPU {cpu:7.1f} s  ({cpu / n * 1e5:.2f} s per 100,000 rows)  "
              f"[{model.complexity_}] {model.export_text(decimals=3)}", flush=True)


#: The quick suite's features as given, as PMLB's fri_c0 sets have them, and shifted and scaled (issue 40).
FEATURES = {"unit": lambda X: X, "standardised": lambda X: (X - 0.5) / 0.2887,
            "shifted": lambda X: 1e3 * (X - 0.5) / 0.2887 + 7}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantiles", nargs="*", type=float, default=[0.5, 0.9])
    parser.add_argument("--folds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE", help="SQR settings of the main row")
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL:NAME=VALUE,...",
                        help="another SQR row with these settings (repeatable)")
    parser.add_argument("--models", action="store_true", help="print every selected model")
    parser.add_argument("--features", choices=sorted(FEATURES), default="unit",
                        help="the features as given (unit), standardised ((X - 0.5) / 0.2887, PMLB's fri_c0) or "
                             "shifted (1e3 * standardised + 7)")
    parser.add_argument("--scaling", nargs="*", type=int, default=None, metavar="ROWS",
                        help="time one fit on each of these many rows instead")
    args = parser.parse_args(argv)
    if args.scaling:
        SymbolicQuantileRegressor(niterations=1, progress=False, random_state=0).fit(  # compile / load
            np.random.default_rng(0).uniform(size=(50, 10)), np.arange(50.0))
        scaling(args.scaling, args.quantiles[0], parse_settings(args.set))
        return
    X0, y, _ = load_benchmark_dataset("friedman1")
    X = FEATURES[args.features](X0)
    whole_range = float(np.ptp(y))
    rows = [("SQR " + (" ".join(args.set) or "default"), parse_settings(args.set))]
    for text in args.variant:
        label, _, pairs = text.partition(":")
        rows.append((f"SQR {label}", parse_settings(p for p in pairs.split(",") if p)))
    SymbolicQuantileRegressor(niterations=1, progress=False, random_state=0).fit(X[:50], y[:50])  # compile / load
    for tau in args.quantiles:
        print(f"\nfriedman1 (quick suite, {args.features} features), tau={tau}, folds {args.folds}: mean test NQL "
              "(whole range)", flush=True)
        truth, lqr = [], []
        for fold in args.folds:
            train, test = fold_indices(len(y), 5, fold, 0)
            truth.append(normalized_quantile_loss(y[test], friedman1(X0[test]) + norm.ppf(tau), tau,
                                                  y_range=whole_range))
            predict, _, _ = fit_peer("lqr", X[train], y[train], tau)
            lqr.append(normalized_quantile_loss(y[test], predict(X[test]), tau, y_range=whole_range))
        print(f"  {'true function (f + z_tau)':44s} NQL {np.mean(truth):.4f}")
        print(f"  {'linear QR (unpenalised)':44s} NQL {np.mean(lqr):.4f}")
        if tau in ANCHORS:
            print(f"  {ANCHORS[tau][0]:44s} NQL {ANCHORS[tau][1]:.4f}")
        for label, settings in rows:
            nql, cpu, models = sqr_folds(X, y, tau, settings, args.folds, whole_range)
            print(f"  {label:44s} NQL {nql.mean():.4f}  CPU/fit {cpu.mean():.2f} s  "
                  f"(folds {' '.join(f'{v:.4f}' for v in nql)})", flush=True)
            for fold, text in zip(args.folds, models if args.models else models[:1]):
                print(f"      fold {fold}: {text}")


if __name__ == "__main__":
    main()
