"""The search's units alone: the instrument behind ``_units``' SEARCH_BITS, FEATURE_OFFSET and TARGET_BAND.

Bits: random expressions of the default operators (up to 15 tokens) on 1,000 rows of [1, 5]^3 give
targets ``y``; per number of bits, how many of the values ``(y * 10^k) / 10^k`` (k = -6..6, not 0)
round to another value than ``y`` does (the data the search of ``y * 10^k`` sees differs), how many
of those data sets differ in a row, and how many laws evaluated on the rounded features still
reproduce their own rounded targets "exactly" by the additive stage's test (pinball loss at tau .5
at most ``_stepwise.EXACT`` of the best constant's).

Offset and band: the features and target of the 60 AI Feynman problems of ../shared and of the 59
others (``benchmarks/feynman_other.txt``), 1,000 rows of seed 0 at noise 0 as
``benchmarks/sqr_recovery.py`` draws them, and of the PMLB sets of ../shared: per value, how many
are searched with their features (plain and shifted units) or their target as given, and the
problems whose units differ from the value in use (to run ``sqr_recovery.py --problems`` on).

    python benchmarks/sqr_units_constants.py [--bits 32 36 40 44] [--offsets 0.25 0.35 0.5]
        [--bands 0,3 0,4 0,5 " -1,4"]  (a leading space: argparse reads "-1,4" as an option)

The search with one of them set (the constants are read at each call; ``--jobs 1`` runs in-process):

    python -c "import sys; sys.path.insert(0, 'benchmarks'); from parsimony.symbolic import _units;
        _units.TARGET_BAND = (-1, 4); import sqr_recovery; sqr_recovery.main(['--noise', '0', '--jobs', '1',
        '--problems', 'feynman_II_10_9', ...])"
"""

from __future__ import annotations

import argparse
import gzip

import numpy as np
import pandas as pd

from parsimony.experiments import srbench
from parsimony.symbolic import _expressions as E
from parsimony.symbolic import _stepwise, _units
from parsimony.symbolic._engine import random_expressions
from parsimony.symbolic._evaluator import evaluate, make_workspace
from sqr_recovery import SHARED, load_set

BINARY = np.array([E.ADD, E.SUB, E.MUL, E.DIV], dtype=np.int64)
UNARY = np.array([E.SQUARE, E.SQRT, E.EXP, E.LOG, E.SIN, E.COS], dtype=np.int64)
ROWS, POWERS = 1000, [k for k in range(-6, 7) if k]


def laws(count: int, bits_list) -> list:
    """Per random expression on ``ROWS`` rows of [1, 5]^3 (finite, not constant): its values and,
    per number of bits, its values on the features rounded to that many bits."""
    X = np.random.default_rng(0).uniform(1, 5, size=(ROWS, 3))
    grids = [np.ascontiguousarray(X.T)] + [np.ascontiguousarray(_units.rounded(X, b).T) for b in bits_list]
    out = []
    for ops, feats, vals in random_expressions(count, 3, max_complexity=15, seed=1, binops=BINARY, unops=UNARY):
        values = [np.empty(ROWS) for _ in grids]
        for Xt, y in zip(grids, values):
            evaluate(ops, feats, vals, len(ops), Xt, make_workspace(len(ops), ROWS), y)
        y = values[0]
        if np.isfinite(y).all() and np.ptp(y) > 1e-9 * np.abs(y).max() and np.abs(y).max() < 1e100:
            out.append((y, dict(zip(bits_list, values[1:]))))
    return out


def bits_table(targets, bits_list) -> None:
    print(f"bits: {len(targets)} laws x {len(POWERS)} powers of ten, {ROWS} rows (SEARCH_BITS = {_units.SEARCH_BITS})")
    for bits in bits_list:
        values = sets = exact = 0
        for y, on_rounded in targets:
            r = _units.rounded(y, bits)
            for k in POWERS:
                differ = np.count_nonzero(_units.rounded((y * 10.0**k) / 10.0**k, bits) != r)
                values += differ
                sets += differ > 0
            fit = on_rounded[bits]  # the law on the search's features, against the search's targets
            exact += np.mean(np.abs(r - fit)) <= _stepwise.EXACT * np.mean(np.abs(r - np.median(r)))
        n = len(targets) * len(POWERS)
        print(f"  {bits} bits (relative {2.0 ** -(bits + 1):.1e}): 1 value in {n * ROWS / max(values, 1):,.0f} "
              f"differs, {sets} of {n} data sets; {exact} of {len(targets)} laws exact")


def data_sets() -> dict:
    """``{suite: {name: (X, y)}}``: the Feynman problems as sqr_recovery.py draws them, the PMLB sets."""
    out = {}
    for suite in ("feynman", "other"):
        out[suite] = {name: srbench.generate_data(p, ROWS)[:2] for name, p in load_set(suite).items()}
    out["pmlb"] = {}
    for path in sorted((SHARED / "pmlb").glob("*.tsv.gz")):
        with gzip.open(path, "rt") as f:
            table = pd.read_csv(f, sep="\t")
        out["pmlb"][path.name.split(".")[0]] = (table.drop(columns="target").to_numpy(float),
                                                table["target"].to_numpy(float))
    return out


def units_table(sets, name, values, current_value, setter, of) -> None:
    """Per value of one constant (``setter`` sets it, ``current_value`` in use), how many data sets
    ``of`` keeps as given (scale 1)."""
    setter(current_value)
    current = {suite: {k: of(*xy) for k, xy in items.items()} for suite, items in sets.items()}
    for value in values:
        setter(value)
        line = []
        for suite, items in sets.items():
            got = {k: of(*xy) for k, xy in items.items()}
            kept = sum(g == 1.0 for g in got.values())
            changed = sorted(k for k in items if got[k] != current[suite][k])
            line.append(f"{suite} {kept}/{len(items)} as given" + (f" ({len(changed)} changed: {' '.join(changed)})"
                                                                     if changed and len(changed) <= 20 else
                                                                     f" ({len(changed)} changed)" if changed else ""))
        print(f"  {name} {value}: " + "; ".join(line))
    setter(current_value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[32, 36, 40, 44])
    parser.add_argument("--offsets", type=float, nargs="+", default=[0.25, 0.35, 0.5])
    parser.add_argument("--bands", nargs="+", default=["0,3", "0,4", "0,5", "-1,4"])
    parser.add_argument("--count", type=int, default=2000, help="random expressions drawn")
    args = parser.parse_args()
    bits_table(laws(args.count, args.bits), args.bits)
    sets = data_sets()
    offset, band = _units.FEATURE_OFFSET, _units.TARGET_BAND
    print(f"feature scale (FEATURE_OFFSET = {offset}; 'changed': units other than the value in use gives)")
    for shift in (False, True):
        units_table(sets, "plain" if not shift else "shifted", args.offsets, offset,
                    lambda v: setattr(_units, "FEATURE_OFFSET", v),
                    lambda X, y, s=shift: float(_units.Units.of(X, y, np.ones(len(y)), shift=s).x_scale[0]))
    print(f"target scale (TARGET_BAND = {band})")
    units_table(sets, "band", [tuple(int(b) for b in text.split(",")) for text in args.bands], band,
                lambda v: setattr(_units, "TARGET_BAND", v),
                lambda X, y: float(_units.Units.of(X, y, np.ones(len(y))).y_scale))


if __name__ == "__main__":
    main()
