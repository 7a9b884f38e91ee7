"""How much fitting error ``canonical()`` tolerates: the instrument behind ``_sympy_names``' constants.

Ratio: the law ``a*x/(b*y + 1)`` or ``a*x/(y + b)`` (a, b of 1-2 significant digits) as a search
writes it, every constant times one scale k (log-uniform on [0.1, 10]) and ``1 + eps * N(0, 1)``;
recovered when :func:`canonical` scales it back to constants within 1e-3 of their 3-digit text.
Shift: ``cos(u + q pi/2 (1 + d))`` for q in 1, 2, 3, -1, -2, counted when it is written without
the shift (a rewrite that changes the function when d != 0).

    python benchmarks/sqr_canonical_constants.py [--tolerance 1e-6] [--max-digits 8]
"""

from __future__ import annotations

import argparse

import numpy as np
import sympy

from parsimony.symbolic import _sympy_names

EPS = (0.0, 1e-10, 1e-8, 1e-7, 1e-6, 1e-5)
SHIFTS = (1e-9, 1e-7, 1e-6, 1e-5, 1e-4)
QUARTERS = (1, 2, 3, -1, -2)


def _short(values) -> bool:
    return all(abs(float(f"{v:.3g}") - v) <= 1e-3 * abs(v) for v in values)


def ratios(count: int) -> dict:
    """Laws recovered at each fitting error ``eps`` (the same laws and scales at every eps)."""
    rng = np.random.default_rng(0)
    x, y = sympy.symbols("x y")
    cases = []
    for _ in range(count):
        a, b = (float(rng.integers(1, 100)) * 10.0 ** int(rng.integers(-2, 2)) * rng.choice([-1, 1]) for _ in "ab")
        cases.append((a, b, bool(rng.integers(2)), 10 ** rng.uniform(-1, 1)))
    recovered = {}
    for eps in EPS:
        ok = 0
        for a, b, unit_last, k in cases:
            e = k * (1 + eps * rng.normal(size=3))
            slope, intercept = (b * e[1], e[2]) if unit_last else (e[1], b * e[2])
            den = sympy.Float(slope) * y + sympy.Float(intercept)
            out = _sympy_names.canonical(sympy.Float(a * e[0]) * x / den)
            ok += _short([float(f) for f in out.atoms(sympy.Float)])
        recovered[eps] = ok
    return recovered


def shifts() -> dict:
    """Shifts written away at each relative distance ``d`` from a multiple of pi/2."""
    u = sympy.Symbol("u")
    return {d: sum(_sympy_names._unshifted(sympy.cos, u + sympy.Float(q * np.pi / 2 * (1 + d))) is not None
                   for q in QUARTERS) for d in SHIFTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tolerance", type=float, default=_sympy_names.SHORT_TOLERANCE)
    parser.add_argument("--max-digits", type=int, default=_sympy_names.MAX_DIGITS)
    parser.add_argument("--count", type=int, default=400)
    args = parser.parse_args()
    _sympy_names.SHORT_TOLERANCE, _sympy_names.MAX_DIGITS = args.tolerance, args.max_digits
    print(f"SHORT_TOLERANCE {args.tolerance:g}, MAX_DIGITS {args.max_digits}")
    print("  ratio laws recovered:", ", ".join(f"eps {e:g} {k}/{args.count}" for e, k in ratios(args.count).items()))
    print("  cos shifts dropped:", ", ".join(f"d {d:g} {k}/{len(QUARTERS)}" for d, k in shifts().items()))


if __name__ == "__main__":
    main()
