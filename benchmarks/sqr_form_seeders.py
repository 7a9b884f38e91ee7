"""The rational, power and additive seeders alone on hand-built laws: the instrument behind the fields of
``RationalSettings``, ``PowerSettings`` and ``AdditiveSettings`` that are a cost/quality trade-off.

Laws (none of the AI Feynman problems), on 1,000 rows uniform in [1, 5]^4 (one feature unused),
noise ``level x RMS(y)``, seed 0:

- rational: ``(a m1 + b m2 + c) / (1 + d h)`` or ``a m1 / (m2 + d)``, monomials of one or two
  features with exponents 1 or 2 (``h`` of one), coefficients of one or two digits;
- power: ``c * x^e * g(a U)^k`` with ``g`` among exp, ``1 + u``, ``exp(u) - 1``, ``exp(u) + 1``,
  sin, cos, ``U`` a monomial of one or two features with exponents +-1, ``e`` and ``k`` halves in
  [-2, 2] (``k`` not 0), ``a max|U|`` in [0.2, 2] (sin and cos: their argument in (0, 1.5));
- moebius (the rational seeder's pairs of a numerator and a denominator column): ``(c + a h) / (1 + d h)``,
  ``h`` a monomial as above (of one or two features, exponents 1 or 2), ``d h`` spanning 0.3 to 0.7
  of 1 in either sign (a bend the noise of 0.1 x RMS(y) nearly hides), ``a`` and ``c`` of one or
  two digits and either sign of ``a`` (on a915eaa, ``--count 30 --noise 0 0.01 0.1``: 30 / 29 / 26
  of 30 at 530 / 758 / 814 ms CPU a law, load 6 on 2 cores);
- transformed (the rational seeder's transforms): ``exp(c - a m1 - b m2)`` (a Gaussian where the
  monomials are squares: ``exp(c - a x^2 - b z^2)``), ``1/(c + a m1 + b m2)`` and ``m0/sqrt(1 - d h)``
  (a relativistic-like factor: ``d h`` up to 0.3 to 0.7), ``m`` and ``h`` monomials as above (``m0``
  of one feature), ``a m1 + b m2`` spanning 3 to 6 over the rows for the exponential and 3 to 30
  times ``c`` for the inverse: both fall towards 0, where noise of 0.1 x RMS(y) carries some
  values across it;
- valley (the power seeder's): ``c * x^e * g(a U)^k`` with ``g`` among ``exp(u) - 1`` (``k`` -1 or -2:
  Bose and Planck factors), sin (``k`` -4 to 4 but 0, whole) and ``1 - u`` (``k`` -1/2 to -2:
  relativistic and binomial factors), ``a`` a simple number (0.01 to 2) with ``a max|U|`` from
  0.2 to the family's limit (4, 1.5, 0.9): where ``a U`` is small over most rows ``k`` and ``a``
  trade along a valley of the log's fit (``k * log sin(a U)`` is ``k log(a U) - k a^2 U^2/6 + ...``);
- physics (the power seeder's): the shapes of physical laws times a scale feature ``M``: Planck
  ``c M x^p / (exp(a x/T) - 1)`` (``p`` 0 to 3, ``a max(x/T)`` 1 to 5), relativistic
  ``c M / sqrt(1 - a u^2/v^2)`` (``a max(u^2/v^2)`` 0.3 to 0.9) and Rutherford ``c M / sin(a t)^4``
  (``a`` a simple 0.2, 0.25, 0.5 or drawn from 0.15 to 0.6, so ``a t`` stays below 3);
- monomial (the power seeder's): ``c * prod x^e`` over three features, each ``e`` a whole power
  -4 to 4 but 0, ``c`` of either sign: spanning decades, most rows lie near 0, where noise of
  0.1 x RMS(y) carries a fifth to a third of them across it;
- wave (the additive seeder's modulated waves): ``c0 + c1 f (cos(a u v) + b cos(a u v)^2)``,
  ``c0 + c1 f cos(a u)^2`` and ``c1 f sin(a u + b v)``, ``f``, ``u``, ``v`` distinct features each
  uniform on a range like the AI Feynman ones (``WAVE_RANGES``), ``a`` a simple number (0.5, 1, 2,
  3) with the argument spanning 2 to 12 radians, ``b`` 0.5, 1 or 2, ``c0`` 0 or of one or two
  digits, ``c1`` of one or two digits and either sign.

The seeder runs as the search calls it (:meth:`propose` on the search's Problem: default operators
and token weights, maxsize 30, relevance ordering); a law is recovered when one of its forms
predicts 1,000 fresh noise-free rows within ``RECOVERED`` of RMS(y) (1e-6 at noise 0, 1e-2 at
noise 0.01: a correct form refitted on noisy rows errs by a few 1e-3; 3e-2 at noise 0.1). ``--set field=value``
changes one field of the seeder's settings.

    python benchmarks/sqr_form_seeders.py --seeder rational|moebius|transformed|power|valley|monomial|wave|physics
        [--set beam=16] [--count 150]
        [--noise 0 0.01 0.1]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from parsimony.symbolic import _expressions as E
from parsimony.symbolic._evaluator import evaluate, make_workspace
from parsimony.symbolic._search import feature_probabilities
from parsimony.symbolic.seeds import AdditiveSeeder, PowerSeeder, Problem, RationalSeeder
from parsimony.tokens import TOKEN_COMPLEXITY

ROWS, FEATURES, MAXSIZE = 1000, 4, 30
RECOVERED = {0.0: 1e-6, 0.01: 1e-2, 0.1: 3e-2}
FAMILIES = {"exp": np.exp, "linear": lambda u: 1 + u, "expm1": np.expm1, "expp1": lambda u: np.exp(u) + 1,
            "sin": np.sin, "cos": np.cos}


def _monomial(rng, exponents=(1, 2)):
    f = rng.choice(FEATURES - 1, size=rng.integers(1, 3), replace=False)
    e = rng.choice(exponents, size=len(f))
    return lambda Z: np.prod(Z[:, f] ** e, axis=1)


def _digits(rng):
    return float(rng.integers(1, 100)) / (10.0 if rng.random() < 0.5 else 1.0)


def rational_law(rng, X):
    m1, m2, h = _monomial(rng), _monomial(rng), _monomial(rng, (1,))
    a, b, c, d = (_digits(rng) for _ in range(4))
    if rng.random() < 0.5:
        return lambda Z: (a * m1(Z) + b * m2(Z) + c) / (1 + d * h(Z))
    return lambda Z: a * m1(Z) / (m2(Z) + d)


def moebius_law(rng, X):
    h = _monomial(rng)
    d = rng.uniform(0.3, 0.7) / h(X).max() * rng.choice([-1.0, 1.0])
    a, c = _digits(rng) * rng.choice([-1.0, 1.0]), _digits(rng)
    return lambda Z: (c + a * h(Z)) / (1 + d * h(Z))


def power_law(rng, X):
    name = list(FAMILIES)[rng.integers(len(FAMILIES))]
    U, x = _monomial(rng, (-1, 1)), int(rng.integers(FEATURES - 1))
    top = np.abs(U(X)).max()
    a = rng.uniform(0.2, 2.0 if name not in ("sin", "cos") else 1.5) / top
    c, e = _digits(rng), rng.integers(-4, 5) / 2
    k = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4]) / 2
    return lambda Z: c * Z[:, x] ** e * FAMILIES[name](a * U(Z)) ** k


#: The valley laws' scales ``a``, their families' powers ``k`` and largest ``a max|U|``.
SIMPLE = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0)
VALLEY = {"expm1": ((-1, -2), 4.0), "sin": ((-4, -3, -2, -1, 1, 2, 3, 4), 1.5), "linear": ((-0.5, -1, -1.5, -2), 0.9)}


def valley_law(rng, X):
    name = list(VALLEY)[rng.integers(len(VALLEY))]
    powers, limit = VALLEY[name]
    U, x = _monomial(rng, (-1, 1)), int(rng.integers(FEATURES - 1))
    top = np.abs(U(X)).max()
    scales = [v for v in SIMPLE if 0.2 <= v * top <= limit]
    a = float(rng.choice(scales)) * (-1.0 if name == "linear" else 1.0)
    c, e, k = _digits(rng), rng.integers(-4, 5) / 2, float(rng.choice(powers))
    return lambda Z: c * Z[:, x] ** e * FAMILIES[name](a * U(Z)) ** k


#: The physics laws' shapes: Planck ``x^p / (exp(a x/T) - 1)`` (``p`` 0 to 3), relativistic
#: ``1/sqrt(1 - a u^2/v^2)`` and Rutherford ``1/sin(a t)^4``, each times a scale feature ``M``.
PHYSICS = ("planck", "relativistic", "rutherford")


def physics_law(rng, X):
    name = PHYSICS[rng.integers(len(PHYSICS))]
    m, u, v = (int(f) for f in rng.choice(FEATURES - 1, size=3, replace=False))
    c = _digits(rng)
    if name == "planck":  # a max(x/T) from 1 to 5: the Bose factor bends over the rows
        p = int(rng.integers(0, 4))
        a = rng.uniform(1.0, 5.0) / (X[:, u] / X[:, v]).max()
        return lambda Z: c * Z[:, m] * Z[:, u] ** p / np.expm1(a * Z[:, u] / Z[:, v])
    if name == "relativistic":  # a max(u^2/v^2) from 0.3 to 0.9
        a = rng.uniform(0.3, 0.9) / (X[:, u] ** 2 / X[:, v] ** 2).max()
        return lambda Z: c * Z[:, m] / np.sqrt(1 - a * Z[:, u] ** 2 / Z[:, v] ** 2)
    a = float(rng.choice([0.2, 0.25, 0.5])) if rng.random() < 0.5 else rng.uniform(0.15, 0.6)  # a max(t) <= 3
    return lambda Z: c * Z[:, m] / np.sin(a * Z[:, u]) ** 4


def transformed_law(rng, X):
    m1, m2, h = _monomial(rng), _monomial(rng), _monomial(rng, (1,))
    kind, share = rng.integers(3), rng.uniform(0.2, 0.8)
    if kind == 0:  # exp(c - a m1 - b m2): a m1 + b m2 spans 3 to 6
        span, c = rng.uniform(3, 6), rng.uniform(-1, 1)
        a, b = share * span / m1(X).max(), (1 - share) * span / m2(X).max()
        return lambda Z: np.exp(c - a * m1(Z) - b * m2(Z))
    if kind == 1:  # 1/(c + a m1 + b m2): a m1 + b m2 up to 3 to 30 times c
        span, c = rng.uniform(3, 30), _digits(rng)
        a, b = share * span * c / m1(X).max(), (1 - share) * span * c / m2(X).max()
        return lambda Z: 1.0 / (c + a * m1(Z) + b * m2(Z))
    f, d = int(rng.integers(FEATURES - 1)), rng.uniform(0.3, 0.7) / h(X).max()
    return lambda Z: Z[:, f] / np.sqrt(1 - d * h(Z))


def monomial_law(rng, X):
    f = rng.choice(FEATURES, size=3, replace=False)
    e = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4], size=3)
    c = _digits(rng) * rng.choice([-1.0, 1.0])
    return lambda Z: c * np.prod(Z[:, f] ** e, axis=1)


#: The wave laws' feature ranges (those of the AI Feynman problems).
WAVE_RANGES = ((1.0, 5.0), (1.0, 3.0), (1.0, 2.0), (3.0, 10.0), (0.0, 6.0), (4.0, 6.0))


def wave_law(rng, X):
    f, u, v = rng.choice(FEATURES, size=3, replace=False)
    kind = rng.integers(3)
    arg = (lambda Z: Z[:, u] * Z[:, v]) if kind == 0 else (lambda Z: Z[:, u])
    span = np.ptp(arg(X))
    scales = [s for s in (0.5, 1.0, 2.0, 3.0) if 2.0 <= s * span <= 12.0] or [2.0 / span]
    a, b = float(rng.choice(scales)), float(rng.choice([0.5, 1.0, 2.0]))
    c0 = 0.0 if rng.random() < 0.5 else _digits(rng)
    c1 = _digits(rng) * rng.choice([-1.0, 1.0])
    if kind == 0:
        return lambda Z: c0 + c1 * Z[:, f] * (np.cos(a * arg(Z)) + b * np.cos(a * arg(Z)) ** 2)
    if kind == 1:
        return lambda Z: c0 + c1 * Z[:, f] * np.cos(a * arg(Z)) ** 2
    return lambda Z: c1 * Z[:, f] * np.sin(a * Z[:, u] + b * Z[:, v])


def _rows(rng, ranges):
    """``ROWS`` rows uniform in [1, 5]^FEATURES, or each feature on a range drawn from ``ranges``."""
    if ranges is None:
        return rng.uniform(1, 5, size=(ROWS, FEATURES)), rng.uniform(1, 5, size=(ROWS, FEATURES))
    lo, hi = np.array([ranges[i] for i in rng.integers(len(ranges), size=FEATURES)]).T
    return rng.uniform(lo, hi, size=(ROWS, FEATURES)), rng.uniform(lo, hi, size=(ROWS, FEATURES))


def run(seeder, make_law, count: int, noise: float, ranges=None) -> tuple[int, int, float]:
    """Laws, laws recovered, seeder CPU seconds."""
    rng = np.random.default_rng(0)
    weights = E.complexity_weights(TOKEN_COMPLEXITY)
    binops, unops, _ = E.operator_codes(E.DEFAULT_OPERATORS)
    recovered, cpu = 0, 0.0
    for _ in range(count):
        X, Xtest = _rows(rng, ranges)
        law = make_law(rng, X)
        truth, y = law(Xtest), law(X)
        y = y + noise * np.sqrt(np.mean(y**2)) * rng.normal(size=ROWS)
        w = np.ones(ROWS)
        problem = Problem(X, y, w, 0, 0.5, binops, unops, weights, MAXSIZE, feature_probabilities(X, y, w, 1.0))
        t = time.process_time()
        models = seeder.propose(problem).models if seeder.applies(problem) else []
        cpu += time.process_time() - t
        scale = np.sqrt(np.mean(truth**2))
        Xt = np.ascontiguousarray(Xtest.T)
        for ops, feats, vals in models:
            out = np.empty(ROWS)
            evaluate(ops, feats, vals, len(ops), Xt, make_workspace(len(ops), ROWS), out)
            if np.sqrt(np.mean((out - truth) ** 2)) <= RECOVERED[noise] * scale:
                recovered += 1
                break
    return count, recovered, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeder", choices=["rational", "moebius", "transformed", "power", "valley", "monomial", "wave",
                                             "physics"],
                        required=True)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--count", type=int, default=150, help="laws drawn")
    parser.add_argument("--noise", type=float, nargs="+", default=[0.0, 0.01], choices=sorted(RECOVERED))
    args = parser.parse_args()
    kind, make_law = {"rational": (RationalSeeder, rational_law), "moebius": (RationalSeeder, moebius_law),
                      "transformed": (RationalSeeder, transformed_law),
                      "power": (PowerSeeder, power_law), "valley": (PowerSeeder, valley_law),
                      "monomial": (PowerSeeder, monomial_law), "wave": (AdditiveSeeder, wave_law),
                      "physics": (PowerSeeder, physics_law)}[args.seeder]
    settings = kind.settings_type()
    for item in args.set:
        name, value = item.split("=")
        settings = dataclasses.replace(settings, **{name: type(getattr(settings, name))(float(value))})
    for noise in args.noise:
        count, recovered, cpu = run(kind(settings), make_law, args.count, noise,
                                    WAVE_RANGES if args.seeder == "wave" else None)
        print(args.seeder, " ".join(args.set) or "defaults", f"noise {noise}: {recovered} of {count} recovered, "
              f"{1e3 * cpu / count:.0f} ms CPU a law", flush=True)


if __name__ == "__main__":
    main()
