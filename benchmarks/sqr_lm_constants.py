"""The Levenberg-Marquardt refinement of a shifted-product wave alone: the instrument behind
``_stepwise``'s LM_DAMPING, LM_MIN_DAMPING, LM_SOFTER, LM_HARDER and LM_TRIES.

Hand-built laws ``A sin(a (x + b)(z + c) + phi) + d`` (none of the AI Feynman problems): each
feature uniform on a range drawn from [0, 1], [1, 5], [-1, 1], [-2, 3], [0.5, 2] and [-5, -1],
the shifts ``-b``, ``-c`` uniform inside the ranges, the frequency putting 0.5 to 3 periods on the
base's range, on 300 rows, with noise ``--noise`` times the wave's RMS. The stage's own start
(``_coarse_shifts``: shifts among the quartiles, the frequency on its grid) is refined by
``_refine_shifts``; a fit is recovered when its gain is within 1e-6 (relative) of the true
parameters' gain, or above it. ``--set`` patches a module constant of ``_stepwise`` before the
first compile, so it needs an empty numba cache (``NUMBA_CACHE_DIR=$(mktemp -d)``).

    NUMBA_CACHE_DIR=$(mktemp -d) python benchmarks/sqr_lm_constants.py [--set LM_TRIES=4]
        [--count 2000] [--noise 0 0.1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from parsimony.symbolic import _stepwise

RANGES = ((0.0, 1.0), (1.0, 5.0), (-1.0, 1.0), (-2.0, 3.0), (0.5, 2.0), (-5.0, -1.0))
ROWS, RECOVERED = 300, 1e-6


def law(rng):
    """Features, target and the true ``(b, c, a)`` of one random shifted-product wave."""
    (lo1, hi1), (lo2, hi2) = (RANGES[k] for k in rng.integers(len(RANGES), size=2))
    x, z = rng.uniform(lo1, hi1, ROWS), rng.uniform(lo2, hi2, ROWS)
    b, c = -rng.uniform(lo1, hi1), -rng.uniform(lo2, hi2)
    base = (x + b) * (z + c)
    a = 2 * np.pi * rng.uniform(0.5, 3.0) / max(np.ptp(base), 1e-12)
    y = rng.uniform(0.5, 2.0) * np.sin(a * base + rng.uniform(0, 2 * np.pi)) + rng.normal()
    return x, z, y, np.array([b, c, a])


def run(count: int, noise: float) -> tuple[int, int, int, float]:
    """Laws fitted, recovered, evaluations used and CPU seconds (the first fit left out)."""
    rng = np.random.default_rng(0)
    w = np.ones(ROWS)
    base, s, c = np.empty(ROWS), np.empty(ROWS), np.empty(ROWS)
    grid = np.empty(_stepwise.GRID_ROOM)
    fitted = recovered = evaluations = 0
    cpu = 0.0
    for _ in range(count):
        x, z, y, truth = law(rng)
        wave = y - y.mean()
        y = y + noise * np.sqrt(np.mean(wave**2)) * rng.normal(size=ROWS)
        rc = y - y.mean()
        best = _stepwise._shifted_gain(x, z, truth, rc, w, base, s, c)
        qx, qz = _stepwise._quartiles(x), _stepwise._quartiles(z)
        p = np.empty(3)
        gain, used = _stepwise._coarse_shifts(x, z, qx, qz, rc, w, grid, base, s, c, p)
        if not gain > 0:
            continue
        t = time.process_time()
        gain, used = _stepwise._refine_shifts(x, z, p, gain, rc, w, base, s, c)
        cpu += (time.process_time() - t) if fitted else 0.0
        recovered += gain >= best * (1 - RECOVERED)
        evaluations += used
        fitted += 1
    return fitted, recovered, evaluations, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--count", type=int, default=2000, help="laws drawn")
    parser.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.1], help="noise, times the wave's RMS")
    args = parser.parse_args()
    for item in args.set:
        name, value = item.split("=")
        if not name.startswith("LM_") or not hasattr(_stepwise, name):
            parser.error(f"_stepwise has no constant {name}")
        setattr(_stepwise, name, type(getattr(_stepwise, name))(float(value)))
    for noise in args.noise:
        fitted, recovered, evaluations, cpu = run(args.count, noise)
        print(" ".join(args.set) or "defaults", f"noise {noise}: {recovered} of {fitted} recovered, "
              f"{evaluations / max(fitted, 1):.1f} evaluations and {1e6 * cpu / max(fitted - 1, 1):.0f} us CPU a fit")


if __name__ == "__main__":
    main()
