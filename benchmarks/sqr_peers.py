"""The SQR benchmark's peers on its folds: eggp, unpenalised linear QR and the best constant quantile.

Every (dataset, tau, fold, peer) result goes to a CSV cache outside the repository
(``~/.cache/parsimony-bench/peers.csv`` by default, ``$PARSIMONY_BENCH_CACHE`` to move it), keyed by
the peer's name, package version and settings, so ``benchmarks/sqr_srbench.py`` reuses it and an
interrupted run resumes where it stopped. The folds are the benchmark's own: 5-fold
``KFold(shuffle=True, random_state=0)`` on the whole dataset, datasets smallest first.

- ``eggp``: e-graph genetic programming (PyPI ``eggp``) with its pinball loss, the settings of
  ../shared/anchors.md; it predicts with its most accurate front member and has no seed.
- ``lqr``: scikit-learn ``QuantileRegressor(alpha=0, solver="highs")``, the paper's LQR.
- ``constant``: the tau-quantile of the training fold's target, the best constant under the loss.

Columns: NQL over the whole dataset's range (primary, the paper's convention) and over the test
fold's range, mean pinball loss, coverage (share of test ``y <= prediction``), ACE, parsimony
(token weights of the SQR paper, :func:`parsimony.metrics.complexity`), fit seconds, expression.

    nice -n 19 python benchmarks/sqr_peers.py [--peers constant lqr eggp] [--datasets ...]
        [--quantiles 0.5 0.9] [--folds 5] [--cache ~/.cache/parsimony-bench/peers.csv]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import re
import time
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
from sklearn.model_selection import KFold

from parsimony.datasets import load_dataset
from parsimony.losses import weighted_quantile
from parsimony.metrics import (
    absolute_coverage_error, coverage, expression_complexity, normalized_quantile_loss, pinball_loss,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PARSIMONY_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
CACHE = Path(os.environ.get("PARSIMONY_BENCH_CACHE", Path.home() / ".cache" / "parsimony-bench" / "peers.csv"))
KEY = ["dataset", "tau", "fold", "peer", "version", "settings"]
FIELDS = KEY + ["nql", "nql_fold", "pinball", "coverage", "ace", "parsimony", "seconds", "equation"]
EGGP_SETTINGS = dict(gen=100, nPop=100, maxSize=20, loss="Pinball",
                     nonterminals="add,sub,mul,div,square,sqrt,exp,log,sin,cos", max_time=60)
PEERS = ("constant", "lqr", "eggp")


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "missing"


def peer_identity(peer: str) -> tuple[str, str]:
    """``(version, settings)`` of a peer: the cache key's part that changes when the peer does."""
    if peer == "eggp":
        return _package_version("eggp"), ";".join(f"{k}={v}" for k, v in EGGP_SETTINGS.items())
    if peer == "lqr":
        return _package_version("scikit-learn"), "QuantileRegressor(alpha=0,solver=highs) on standardised X, presolve off if it fails"
    if peer == "constant":
        return "1", "training-fold tau-quantile"
    raise ValueError(f"unknown peer {peer!r}; valid: {', '.join(PEERS)}")


def dataset_path(name: str) -> Path:
    return SHARED / "pmlb" / f"{name}.tsv.gz"


def load_xy(name: str) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_dataset(str(dataset_path(name)))
    return np.asarray(X, dtype=float), np.asarray(y, dtype=float)


def benchmark_folds(X, n_folds: int = 5):
    """The benchmark's folds: ``KFold(n_folds, shuffle=True, random_state=0)``."""
    return list(KFold(n_folds, shuffle=True, random_state=0).split(X))


def eggp_parsimony(expression: str) -> float:
    """Paper-token complexity of an eggp expression as printed (not simplified), NaN if unreadable."""
    import sympy

    text = expression.replace("^", "**")
    names = {name: sympy.Symbol(name) for name in set(re.findall(r"\bx\d+\b", text))}
    functions = dict(square=lambda a: a ** 2, cube=lambda a: a ** 3, log=sympy.log, exp=sympy.exp,
                     sqrt=sympy.sqrt, sin=sympy.sin, cos=sympy.cos, abs=sympy.Abs,
                     recip=lambda a: sympy.Integer(1) / a)
    names.update(functions)
    names.update({key.capitalize(): value for key, value in functions.items()})  # eggp prints Sin, Log...
    try:
        return float(expression_complexity(sympy.sympify(text, locals=names, evaluate=False)))
    except (sympy.SympifyError, ValueError, TypeError):
        return float("nan")


def fit_peer(peer: str, X, y, tau: float):
    """Fit ``peer`` on ``(X, y)``; returns ``(predict function, parsimony, expression)``."""
    if peer == "constant":
        value = weighted_quantile(y, None, tau)
        return (lambda Z: np.full(len(Z), value)), 1.0, repr(float(value))
    if peer == "lqr":
        from sklearn.linear_model import QuantileRegressor

        # unpenalised QR is affine-equivariant in X: solving on standardised columns is the same
        # model and keeps HiGHS from failing on badly scaled sets (505_tecator)
        center, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale == 0] = 1.0
        for options in (None, {"presolve": False}):  # HiGHS' presolve gives up on 505_tecator
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    model = QuantileRegressor(quantile=tau, alpha=0.0, solver="highs", solver_options=options)
                    model.fit((X - center) / scale, y)
                    break
                except TypeError:  # scikit-learn's error when the LP solver returns no solution
                    continue
        else:
            raise RuntimeError("no HiGHS solver found the linear QR solution")
        coef = model.coef_ / scale
        intercept = float(model.intercept_ - coef @ center)
        terms = " + ".join(f"{float(c)!r}*x{j}" for j, c in enumerate(coef) if c != 0)
        parsimony = float(np.count_nonzero(coef) + (intercept != 0))
        return (lambda Z: Z @ coef + intercept), parsimony, f"{intercept!r} + {terms}"
    if peer == "eggp":
        from eggp import EGGP

        model = EGGP(pinball_tau=tau, **EGGP_SETTINGS).fit(X, y)
        row = model._best_row()  # the member it predicts with: lowest training loss
        expression = str(row["Expression"])
        return model.predict, eggp_parsimony(expression), expression
    raise ValueError(f"unknown peer {peer!r}; valid: {', '.join(PEERS)}")


def score_peer(peer, X, y, train, test, tau, whole_range):
    """One fold of one peer: the cache row's measured fields."""
    start = time.perf_counter()
    predict, parsimony, expression = fit_peer(peer, X[train], y[train], tau)
    seconds = time.perf_counter() - start
    pred = np.asarray(predict(X[test]), dtype=float).ravel()
    fold_range = float(np.ptp(y[test]))
    return {
        "nql": normalized_quantile_loss(y[test], pred, tau, y_range=whole_range),
        "nql_fold": normalized_quantile_loss(y[test], pred, tau) if fold_range > 0 else float("nan"),
        "pinball": pinball_loss(y[test], pred, tau), "coverage": coverage(y[test], pred), "ace": absolute_coverage_error(y[test], pred, tau),
        "parsimony": parsimony, "seconds": seconds, "equation": expression,
    }


def read_cache(path: Path = CACHE) -> list[dict]:
    if not Path(path).exists():
        return []
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def cache_key(row) -> tuple:
    return (row["dataset"], float(row["tau"]), int(row["fold"]), row["peer"], row["version"], row["settings"])


def run_peers(names, peers, quantiles, n_folds=5, cache: Path = CACHE, log=print):
    """Compute the missing (dataset, tau, fold, peer) rows into ``cache``; cheap peers first."""
    cache = Path(cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = {cache_key(r) for r in read_cache(cache)}
    new_file = not cache.exists()
    with open(cache, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        for peer in peers:
            ident = peer_identity(peer)
            for name in names:
                if not dataset_path(name).exists():
                    log(f"{name}: not in {dataset_path(name).parent}, skipped")
                    continue
                X, y = load_xy(name)
                whole_range = float(np.ptp(y))
                for tau in quantiles:
                    for fold, (train, test) in enumerate(benchmark_folds(X, n_folds)):
                        if (name, float(tau), fold, peer, *ident) in done:
                            continue
                        try:
                            row = score_peer(peer, X, y, train, test, tau, whole_range)
                        except Exception as error:  # recorded, so a resumed run does not retry it
                            row = {"equation": f"FAILED: {type(error).__name__}: {error}"}
                        writer.writerow({"dataset": name, "tau": tau, "fold": fold, "peer": peer,
                                         "version": ident[0], "settings": ident[1], **row})
                        fh.flush()
                    log(f"{peer} {name} tau={tau}: done")


def datasets_by_size(shared: Path = SHARED) -> list[str]:
    """The PMLB sets in ``shared/pmlb``, fewest cells (rows x columns) first."""
    sizes = {}
    for path in sorted((shared / "pmlb").glob("*.tsv.gz")):
        name = re.sub(r"\.tsv\.gz$", "", path.name)
        with gzip.open(path, "rt") as fh:
            columns = len(fh.readline().split("\t"))
            rows = sum(1 for _ in fh)
        sizes[name] = rows * columns
    return sorted(sizes, key=sizes.get)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--quantiles", nargs="*", type=float, default=[0.5, 0.9])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--cache", default=str(CACHE))
    args = parser.parse_args(argv)
    names = args.datasets or datasets_by_size()
    run_peers(names, args.peers, args.quantiles, args.folds, Path(args.cache), log=lambda m: print(m, flush=True))


if __name__ == "__main__":
    main()
