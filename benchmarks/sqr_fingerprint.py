"""Fingerprint of SymbolicQuantileRegressor's fronts, to check that a refactor changes no result.

Fits SQR on small synthetic data with fixed seeds over a spread of settings (quantile levels,
losses, sample weights, warm starts on the same and on new rows, ``n_jobs``, batching,
subsampling, and the search with its free offset, linear scaling or simplification off), and
writes every front row (complexity, loss, equation, and the postfix arrays with constants as
exact float hex), ``n_evaluations_``, the selected row and a digest of the searches' final
populations and halls of fame. Two runs on code that computes the same thing write the same file:

    python benchmarks/sqr_fingerprint.py before.txt      # on the old code
    python benchmarks/sqr_fingerprint.py after.txt       # on the new code
    diff before.txt after.txt

``--feynman 0 0.01 0.1`` fingerprints the recovery protocol instead (``sqr_recovery.py``'s data:
the 60 AI Feynman problems of ../shared, 1,000 rows, seed 0, tau .5, default settings, at each
noise level; ``--first N`` or ``--problems`` for a subset): every fit's front as above, and each
fit's CPU seconds on standard error with their median per level, so one run checks that a speed
change keeps every result and measures what it saves (CPU is per process: inflated, not
distorted, by other load).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time

import numpy as np

from parsimony.losses import Pinball
from parsimony.symbolic import SymbolicQuantileRegressor
from parsimony.symbolic._expressions import DEFAULT_OPERATORS, TOKEN_COMPLEXITY, complexity_weights, operator_codes
from parsimony.symbolic._search import SearchSettings, run_search

BUDGET = {"niterations": 4, "populations": 3, "population_size": 20, "ncycles_per_iteration": 30, "progress": False}


def _data(seed, n=150, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = X[:, 0] * X[:, 1] + np.cos(X[:, 2]) + 0.3 * rng.normal(size=n)
    return X, y


def _digest(arrays) -> str:
    h = hashlib.blake2b(digest_size=12)
    for a in arrays:
        h.update(np.ascontiguousarray(a).view(np.uint8))
    return h.hexdigest()


def _state_digest(states) -> str:
    arrays = []
    for s in states or ():
        if s is None:
            continue
        if isinstance(s, list):  # one entry per search (regressor.chosen_fit)
            arrays.append(np.frombuffer(bytes.fromhex(_state_digest(s)), dtype=np.uint8))
            continue
        p, h = s.populations, s.hall_of_fame
        arrays += [p.ops, p.feats, p.vals, p.length, p.loss, p.complexity, p.birth, *p.births,
                   h.ops, h.feats, h.vals, h.length, h.loss, s.freq_global]
    return _digest(arrays)


def _front_lines(front):
    for row in front:
        yield (f"  c={row['complexity']} loss={float(row['loss']).hex()} ops={list(map(int, row['ops']))} "
               f"feats={list(map(int, row['feats']))} vals={[float(v).hex() for v in row['vals']]}")


def _model_lines(name, model):
    yield (f"{name}: n_evaluations={model.n_evaluations_} best_index={model.best_index_} "
           f"status={model.status_} states={_state_digest(model._engine_states)}")
    frames = model.equations_ if isinstance(model.equations_, list) else [model.equations_]
    for k, (front, frame) in enumerate(zip(model._fronts, frames)):
        yield f" front {k}: " + " | ".join(frame["equation"])
        yield from _front_lines(front)


def cases():
    """``(name, callable returning a fitted model or a search result)`` of every case."""
    X, y = _data(0)
    X2, y2 = _data(1)
    w = np.random.default_rng(2).integers(1, 4, size=len(y)).astype(float)
    Xb, yb = _data(3, n=400)

    def fit(seed, *, X=X, y=y, sample_weight=None, **kw):
        return SymbolicQuantileRegressor(random_state=seed, **{**BUDGET, **kw}).fit(X, y, sample_weight=sample_weight)

    def warm(seed, new_rows):
        model = SymbolicQuantileRegressor(random_state=seed, warm_start=True, **BUDGET).fit(X, y)
        return model.fit(X2, y2) if new_rows else model.fit(X, y)

    def search(seed, **kw):
        settings = SearchSettings(**{**BUDGET, "maxsize": 20, **kw})
        binops, unops, _ = operator_codes(list(DEFAULT_OPERATORS))
        return run_search(X, y, w, Pinball(0.3), binops, unops, complexity_weights(dict(TOKEN_COMPLEXITY)), settings, seed)

    return [
        ("median", lambda: fit(0)),
        ("q0.9", lambda: fit(1, quantile=0.9)),
        ("q0.1,0.5,0.8", lambda: fit(2, quantile=[0.1, 0.5, 0.8])),
        ("squared", lambda: fit(3, loss="squared")),
        ("absolute", lambda: fit(4, loss="absolute")),
        ("weighted q0.7", lambda: fit(5, quantile=0.7, sample_weight=w)),
        ("weighted squared", lambda: fit(6, loss="squared", sample_weight=w)),
        ("warm same rows", lambda: warm(7, False)),
        ("warm new rows", lambda: warm(8, True)),
        ("n_jobs 2", lambda: fit(9, quantile=0.3, n_jobs=2)),
        ("batches", lambda: fit(10, X=Xb, y=yb, quantile=0.8, batch_size=64)),
        ("batches weighted warm", lambda: SymbolicQuantileRegressor(
            random_state=11, warm_start=True, batch_size=64, quantile=0.25, **BUDGET).fit(Xb, yb).fit(Xb, yb)),
        ("max_samples", lambda: fit(12, X=Xb, y=yb, max_samples=120, batch_size=None)),
        ("maxsize 9 operators", lambda: fit(13, maxsize=9, operators=("add", "mul", "sub", "exp"))),
        ("search no offset", lambda: search(14, free_offset=False)),
        ("search no scaling", lambda: search(15, linear_scaling=False)),
        ("search no simplify", lambda: search(16, should_simplify=False)),
    ]


def fingerprint(out):
    for name, run in cases():
        result = run()
        if isinstance(result, SymbolicQuantileRegressor):
            lines = _model_lines(name, result)
        else:
            head = f"{name}: evaluations={result.evaluations} iterations={result.iterations} "
            lines = [head + f"states={_state_digest([result.state])}", *_front_lines(result.front)]
        for line in lines:
            print(line, file=out)
        out.flush()


def feynman_fingerprint(out, noise, names=None, first=None):
    """Fit the recovery protocol's problems (``sqr_recovery.py``) at each level of ``noise``:
    fronts to ``out``, CPU seconds to standard error."""
    from sqr_recovery import load_set

    from parsimony.experiments import srbench

    problems = load_set("feynman")
    chosen = [n for n in problems if names is None or n in names][:first]
    X0 = np.random.default_rng(0).uniform(size=(50, 2))  # compile before timing, as sqr_recovery.py
    SymbolicQuantileRegressor(niterations=1, progress=False).fit(X0, X0[:, 0])
    for level in noise:
        cpu = []
        for name in chosen:
            X, y, _, _ = srbench.generate_data(problems[name], 1000, level, 0, 0)
            model = SymbolicQuantileRegressor(quantile=0.5, random_state=0, progress=False)
            start = time.process_time()
            model.fit(X, y)
            cpu.append(time.process_time() - start)
            print(f"{name} noise={level:g} cpu {cpu[-1]:.2f}s", file=sys.stderr, flush=True)
            for line in _model_lines(f"{name} noise={level:g}", model):
                print(line, file=out)
            out.flush()
        print(f"noise {level:g}: fit CPU median {statistics.median(cpu):.2f} s, mean {statistics.fmean(cpu):.2f} s "
              f"over {len(cpu)} fits", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", help="file to write (default: standard output)")
    parser.add_argument("--feynman", nargs="*", type=float, default=None, metavar="NOISE",
                        help="fingerprint the recovery protocol at these noise levels instead")
    parser.add_argument("--problems", nargs="*", default=None, help="with --feynman: only these problems")
    parser.add_argument("--first", type=int, default=None, help="with --feynman: only the first N problems")
    args = parser.parse_args(argv)
    out = sys.stdout if args.output is None else open(args.output, "w")
    try:
        if args.feynman is None:
            fingerprint(out)
        else:
            feynman_fingerprint(out, args.feynman or [0.0], args.problems, args.first)
    finally:
        if out is not sys.stdout:
            out.close()


if __name__ == "__main__":
    main()
