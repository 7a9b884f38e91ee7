"""The power seeder's forms: a power law times a power of a function of one monomial,

    ``y = c * prod_i x_i^e_i * g(a * U)^k``,

where ``U`` is a monomial of the most relevant features (exponents -2 to 2, at most ``degree``
factors), ``g`` one of :data:`FAMILIES` (``exp``, ``1 + u``, ``exp(u) - 1``, ``exp(u) + 1``,
``sin``, ``cos``) or none (the power law alone), and the exponents ``e_i``
and ``k`` multiples of one half. On one-signed data with positive features the log makes it
linear in ``(log|c|, e, k)`` for a given ``(g, a, U)``: ``log|y| = log|c| + e . log x + k
log|g(a U)|``, so the exponents come from least squares and only ``a`` is searched, on a grid
of ``a * max|U|`` (for ``exp`` not even that: ``log exp(a U) = a U`` is a column, and ``k = 1``).
Data that noise carried across 0 where the law is near it count as one-signed, and their log is
the power law's linearisation at its fit to ``y`` (:func:`_signed_rows`). A form that does not
reproduce the data is fitted again at its own linearisation (:func:`_relinearised`), where the
log's noise on small values and the power law's linearisation near a pole bend the first fit.
Where ``a U`` is small over most rows, ``k`` and ``a`` trade along a valley of the fit (``k log
sin(a U) = k log(a U) - k a^2 U^2/6 + ...``): noise moves the free ``k`` along it and its rounding
leaves the form off the data, so each power ``k`` is also held and ``a`` fitted with it
(:func:`_held`), at the linearisation of the form closest to the data, and the ranking's price of a
token chooses among powers the data cannot tell apart. The candidates whose powers are held are the
grid's best ranked again at that linearisation (:func:`_regridded`): under noise the first
ranking, on the log of ``y``, is the small values' noise's.
Every ``(g, U)`` on the grid is scored at once by projecting ``log|g|`` off the power law's
columns (the residual's share left by the best ``k``); the ``beam`` best have ``a`` refined
(a fine grid, then zooms into its best basins), their exponents rounded to halves, ``c`` refitted
(least squares on ``y``), and offered when they
explain ``min_r2`` of ``y``'s variance (or ``noisy_r2``, or leave at most ``noise_margin`` times the
share of it that is noise, and what they leave is as rough as noise,
:func:`~parsimony.symbolic._noise.white`: a factor that varies less than the noise is still the law's). A dimensionless group inside a transcendental
function times a power law is the common shape of physical laws (Boltzmann and Planck factors,
relativistic and binomial factors ``(1 - v^2/c^2)^(-1/2)``, ``sin(theta/2)^-4``) that neither a
sum of terms nor a ratio of monomials reaches. The settings are the fields of
:class:`~parsimony.symbolic.seeds.power.PowerSettings`, which says why each has its value.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ._expressions import ADD, CONST, COS, DIV, EXP, MUL, SIN, SQRT, SQUARE, SUB, VAR
from ._noise import nearest_rows, neighbour_variance, noise_deviation, white
from ._rational import _distinct_best, _Writer

#: The functions ``g`` of a form: their name, the unary operators that write them, and whether
#: the grid of ``t = a * max|U|`` is one-sided (``1 + u`` is positive for ``t > -1`` only).
FAMILIES = {"exp": (EXP,), "linear": (), "expm1": (EXP,), "expp1": (EXP,), "sin": (SIN,), "cos": (COS,)}
#: Points of the fine grid refining ``a`` over the spans' three decades (ten a decade: the share
#: left can have two minima a half-decade apart, ``exp(0.8*u) - 1`` to the power -1 and
#: ``exp(2.5*u) - 1`` to -0.25 on ``u`` in [1/3, 3]), then zooms between the best points'
#: neighbours: :data:`ZOOM_POINTS` points shrink the bracket 5 times, :data:`ZOOMS` times: 5^-10
#: is 1e-7 of it.
FINE_GRID = 31
ZOOM_POINTS = 11
ZOOMS = 10
#: Local minima of the fine grid refined (the best by the share they leave after refining): near
#: the law the share falls off steeply, so its basin can score worse on the grid than a broad one
#: (``1.3*x0^3/(exp(0.9*x1) + 1)`` on [1, 3]: 3e-8 at the grid point next to the law, 1e-7 at
#: ``a`` = 0.12, 4e-18 at the law).
BASINS = 3
#: The grid of ``|a| * max|U|``: half a decade apart from 0.03 to 30, both signs (the
#: fine grid of :func:`_refine` then looks between them).
SPANS = np.geomspace(0.03, 30.0, 7)
#: Gauss-Newton steps of the power law's fit to ``y`` where noise crosses 0 (:func:`_signed_rows`):
#: the exponents of hand-built monomials at noise 0.1 x RMS(y) settle (to 1e-3) within three.
GAUSS_NEWTON = 4
LINEAR_SPANS = np.array([0.03, 0.1, 0.3, 0.6, 0.9, 0.99])  # 1 - t stays positive
#: The powers ``k`` a form is fitted again at with ``k`` held (:func:`_held`): every half to the
#: fourth, the powers :func:`_form` offers.
HELD = np.array([h / 2 for h in range(-8, 9) if h], dtype=float)
#: Zooms of ``a`` with ``k`` held: 5^-5 of the bracket (two steps of the fine grid), a few 1e-4 of
#: ``a``, within what noise leaves of the law's constants (the search polishes them after).
HELD_ZOOMS = 5


@functools.lru_cache(maxsize=None)
def _groups(p, used):
    """Exponent vectors of ``U`` over ``p`` features: on one or two features each exponent -2 to
    2 (``v^2/c^2``), on three to ``used`` features each -1 or 1 (``h*omega/(k*T)``)."""
    out = []
    for e in itertools.product(range(-2, 3), repeat=p):
        n = sum(1 for v in e if v)
        if 1 <= n <= 2 or (n <= used and all(abs(v) == 1 for v in e if v)):
            out.append(e)
    return out


def _g(family, u):
    """``g(u)`` of one family (arrays of any shape)."""
    if family == "exp":
        return np.exp(u)
    if family == "linear":
        return 1.0 + u
    if family == "expm1":
        return np.expm1(u)
    if family == "expp1":
        return np.exp(u) + 1.0
    return np.sin(u) if family == "sin" else np.cos(u)


def _spans(family):
    if family == "linear":
        return np.r_[-LINEAR_SPANS, SPANS]
    if family == "expm1":
        return np.r_[-SPANS[SPANS <= 10.0], SPANS[SPANS <= 10.0]]
    return np.r_[-SPANS, SPANS] if family == "expp1" else SPANS


class _Basis:
    """The power law's columns ``[1, log x]`` on weights ``p``: an orthonormal basis ``Q`` (rows
    weighted by ``sqrt(p)``), and the weighted ``log|y|`` with its part off them."""

    def __init__(self, Z, ly, p):
        self.sw = np.sqrt(p)
        A = np.c_[np.ones(len(ly)), Z] * self.sw[:, None]
        self.Q = np.linalg.qr(A)[0]
        self.r = self.off(ly)
        self.total = float(ly @ (p * ly) - (ly @ p) ** 2)

    def off(self, v):
        """The weighted columns of ``v`` (rows x columns, or a vector) with the basis projected out."""
        v = v * (self.sw[:, None] if v.ndim > 1 else self.sw)
        return v - self.Q @ (self.Q.T @ v)

    def left(self, v):
        """The share of ``log|y|``'s variance left when ``k * v`` joins the power law, best ``k``
        (a column of ``v``; ``inf`` where it is not finite, nothing gained where it lies in the basis)."""
        rv = self.off(v)
        with np.errstate(all="ignore"):
            den = np.einsum("i...,i...->...", rv, rv)
            gain = np.where(den > 1e-12 * np.einsum("i...,i...->...", v, v) * self.sw.max() ** 2,
                            (self.r @ rv) ** 2 / den, 0.0)
        rss = self.r @ self.r - gain
        return np.where(np.isfinite(rss), rss / self.total, np.inf)

    def held(self, v, ks):
        """The share of ``log|y|``'s variance left when ``k * v`` joins the power law with ``k``
        held: ``ks`` broadcast against the columns of ``v``; ``inf`` where not finite."""
        rv = self.off(v)
        with np.errstate(all="ignore"):
            rss = self.r @ self.r - 2.0 * ks * (self.r @ rv) + ks * ks * np.einsum("i...,i...->...", rv, rv)
        return np.where(np.isfinite(rss), rss / self.total, np.inf)


def _scores(basis, family, U, spans):
    """For each column ``U`` (rows x monomials) and span on the grid, the share left: (monomials x spans)."""
    if family == "exp":
        return basis.left(U)[:, None], np.ones((U.shape[1], 1))
    top = np.abs(U).max(axis=0)
    out = np.empty((U.shape[1], len(spans)))
    for s, span in enumerate(spans):
        with np.errstate(all="ignore"):
            out[:, s] = basis.left(np.log(np.abs(_g(family, U * (span / top)))))
    return out, np.broadcast_to(spans / top[:, None], out.shape)


def _zoom(f, lo, hi, zooms=ZOOMS):
    """The minimisers of ``f`` on the brackets ``[lo_i, hi_i]``, all at once (``f`` of points
    (brackets x :data:`ZOOM_POINTS`) gives their values): :data:`ZOOM_POINTS` points, then the same
    between the best one's neighbours, ``zooms`` times."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    rows = np.arange(lo.size)
    for _ in range(zooms):
        grid = np.linspace(lo, hi, ZOOM_POINTS, axis=-1)
        i = np.argmin(f(grid), axis=1)
        lo, hi = grid[rows, np.maximum(i - 1, 0)], grid[rows, np.minimum(i + 1, ZOOM_POINTS - 1)]
    return (lo + hi) / 2


def _halves(values):
    """Each value rounded to the nearest multiple of one half."""
    return np.round(2.0 * np.asarray(values)) / 2.0


def _digits(v):
    """The signed digits ``d`` of ``v``'s odd powers at one level of :class:`_PowerWriter`: either
    sign for a power of 3 or more (``x^3`` is ``x * (x)^2`` or ``(x^2)^2 / x``), the power's own for
    a power of one (``x`` as ``x^2 / x`` writes ``x`` once more: never fewer tokens, and the choices
    of eight bases of odd powers would be 2^8 at each level)."""
    odd = [i for i, e in enumerate(v) if e % 2]
    for signs in itertools.product(*[(v[i],) if abs(v[i]) == 1 else (1, -1) for i in odd]):
        d = [0] * len(v)
        for i, sign in zip(odd, signs):
            d[i] = sign
        yield d


class _PowerWriter(_Writer):
    """Postfix ``(ops, feats, vals)`` of ``c * prod b^e`` (``b`` the features and ``g(a U)``, ``e``
    multiples of one half), the cheapest under the token weights of the writings by binary digits:
    each exponent in signed digits ``e = sum d_j 2^j`` (``j`` from -1, ``d_j`` -1, 0 or 1), the
    factors of one digit in one product (their ratio where digits differ in sign) and the digits
    nested (Horner): ``prod b^e = sqrt(H) * G_0 * (G_1 * (G_2)^2)^2``, each factor above or below
    its level's fraction bar. ``x^2 y^2`` is ``(x*y)^2`` (5 tokens, not 6), ``x^5`` is
    ``x*((x)^2)^2``, ``x^4 y^2 / z^2`` is ``(x^2 * y / z)^2``; the root is outermost (a square under
    it costs more than the factor outside) and holds only what has a half power (``g`` of a whole
    power, which may be negative, never goes under it). ``tests/symbolic/test_power.py`` proves the
    choice minimal against every tree of products, ratios, squares and roots of two bases with
    exponents -3 to 3 (the default operators and weights)."""

    def __init__(self, binops, unops, weights):
        super().__init__(binops, unops)
        self.weights = weights
        self.bases = []  # (write, cost) of each base of the monomial being written

    def _cost(self, write):
        """The token weight of what ``write()`` appends (appended, then taken back)."""
        n = len(self.ops)
        write()
        cost = sum(self.weights[op] for op in self.ops[n:])
        del self.ops[n:], self.feats[n:], self.vals[n:]
        return cost

    def _join(self, num, den, const):
        """``(cost, plan)`` of ``prod num / prod den`` of ``(cost, item)`` items, behind the
        constant when ``const``; a plan is ``("ratio", num items, den items)``."""
        w = self.weights
        num = ([(w[CONST], ("const",))] if const else []) + num
        cost = sum(c for c, _ in num) + sum(c for c, _ in den) + w[MUL] * (max(len(num) - 1, 0) + max(len(den) - 1, 0))
        if den:
            cost += w[DIV] + (0 if num else w[CONST])
        return cost, ("ratio", [i for _, i in num], [i for _, i in den])

    def _square(self, plan):
        """``(cost, item)`` of the square of a ``(cost, plan)``."""
        cost, inner = plan
        if SQUARE in self.unops:
            return cost + self.weights[SQUARE], ("square", inner)
        return 2 * cost + self.weights[MUL], ("twice", inner)

    def _level(self, v, num, den, const, memo):
        """The cheapest ``(cost, plan)`` of ``prod b^v`` (``v`` whole powers) times the items ``num``
        over ``den``: every signed digit of the odd powers at this level, the rest nested squared,
        above the bar or (its inverse) below it."""
        best = None
        for d in _digits(v):
            up = tuple((e - di) // 2 for e, di in zip(v, d))
            if any(up) and up == tuple(v):
                continue  # (1 = 2 - 1 = 4 - 2 - 1 ...: no end)
            top = num + [(self.bases[i][1], ("base", i)) for i in range(len(v)) if d[i] > 0]
            bottom = den + [(self.bases[i][1], ("base", i)) for i in range(len(v)) if d[i] < 0]
            options = []
            if any(up):
                options.append((top + [self._square(self._whole(up, memo))], bottom))
                options.append((top, bottom + [self._square(self._whole(tuple(-e for e in up), memo))]))
            else:
                options.append((top, bottom))
            for n, b in options:
                found = self._join(n, b, const)
                if best is None or found[0] < best[0]:
                    best = found
        return best

    def _whole(self, v, memo):
        if v not in memo:
            memo[v] = self._level(v, [], [], False, memo)
        return memo[v]

    def plan(self, v, const, roots):
        """The cheapest ``(cost, plan)`` of ``c * prod b^(v/2)`` (``v`` in halves; ``const``: with
        ``c``), None when a half power needs a root the operators lack; ``roots[i]`` False for a base
        that may be negative (it has no half power then)."""
        memo, best = {}, None
        odd = [i for i, e in enumerate(v) if e % 2]
        if odd and (SQRT not in self.unops or not all(roots[i] for i in odd)):
            return None
        for d in _digits(v):
            w = tuple((e - di) // 2 for e, di in zip(v, d))
            if not odd:
                options = [([], [])]
            else:
                options = [([self._root(d, 1)], []), ([], [self._root(d, -1)])]  # sqrt(H) or 1/sqrt(1/H)
            for n, b in options:
                found = self._level(w, n, b, const, memo)
                if best is None or found[0] < best[0]:
                    best = found
        return best

    def _root(self, d, side):
        """``(cost, item)`` of ``sqrt`` of the ratio of the bases of digits ``d`` (``side`` -1: its inverse)."""
        inside = self._join([(self.bases[i][1], ("base", i)) for i, di in enumerate(d) if di * side > 0],
                            [(self.bases[i][1], ("base", i)) for i, di in enumerate(d) if di * side < 0], False)
        return inside[0] + self.weights[SQRT], ("sqrt", inside[1])

    def emit(self, item, c):
        """Append the postfix of a plan's item (``c`` the value of its constant)."""
        kind = item[0]
        if kind == "const":
            self.node(CONST, 0, c)
        elif kind == "base":
            self.bases[item[1]][0]()
        elif kind in ("square", "twice", "sqrt"):
            self.emit(item[1], c)
            if kind == "twice":
                self.emit(item[1], c), self.node(MUL)
            else:
                self.node(SQUARE if kind == "square" else SQRT)
        else:
            _, num, den = item
            if not num:
                self.node(CONST, 0, 1.0)
            for j, part in enumerate(num):
                self.emit(part, c)
                if j:
                    self.node(MUL)
            for j, part in enumerate(den):
                self.emit(part, c)
                if j:
                    self.node(MUL)
            if den:
                self.node(DIV)

    def monomial(self, c, bases, halves, roots=None):
        """Append ``c * prod b^(h/2)`` for ``(write, h)`` of ``bases`` and ``halves`` (``c`` None: no
        constant); False (nothing appended) when the operators cannot write it."""
        keep = [(write, int(h)) for write, h in zip(bases, halves) if h]
        roots = [True] * len(keep) if roots is None else [r for r, h in zip(roots, halves) if h]
        saved = self.bases
        self.bases = [(write, self._cost(write)) for write, _ in keep]
        found = self.plan(tuple(h for _, h in keep), c is not None, roots)
        if found is not None:
            self.emit(found[1], c)
        self.bases = saved
        return found is not None

    def inner(self, family, a, U):
        """``g(a * U)``; ``U`` a dict ``{feature: whole exponent}``."""
        bases = [lambda f=int(f): self.feature(f) for f in U]
        halves = [2 * int(e) for e in U.values()]
        if family == "linear":
            self.node(CONST, 0, 1.0), self.monomial(abs(a), bases, halves), self.node(ADD if a > 0 else SUB)
            return
        self.monomial(a, bases, halves)
        self.node({"sin": SIN, "cos": COS}.get(family, EXP))
        if family in ("expm1", "expp1"):
            self.node(CONST, 0, 1.0), self.node(SUB if family == "expm1" else ADD)

    def form(self, c, exponents, features, family=None, a=0.0, U=None, k=0.0):
        """The tree of the form (exponents and ``k`` multiples of one half); None when the
        operators cannot write it."""
        self.ops, self.feats, self.vals = [], [], []
        bases = [lambda f=int(f): self.feature(f) for f in features]
        halves = [int(round(2 * e)) for e in exponents]
        roots = [True] * len(bases)
        if family is not None:
            bases.append(lambda: self.inner(family, a, U))
            halves.append(int(round(2 * k)))
            roots.append(k != round(k))  # (g of a whole power may be negative: no root of it)
        if not self.monomial(c, bases, halves, roots):
            return None
        return (np.array(self.ops, dtype=np.int64), np.array(self.feats, dtype=np.int64),
                np.array(self.vals, dtype=np.float64))


def _candidates(basis, Ucols, families, settings):
    """The ``beam`` best ``(share, family, monomial, a)`` of the grid, at most one per (family, monomial)."""
    found = []
    for family in families:
        left, a = _scores(basis, family, Ucols, _spans(family))
        best = np.argmin(left, axis=1)
        share = left[np.arange(len(best)), best]
        for j in np.flatnonzero(np.isfinite(share)):
            found.append((float(share[j]), family, int(j), float(a[j, best[j]])))
    found.sort(key=lambda item: item[0])
    return found[:settings.beam]


def _regridded(near, Z, y, p, at, Ucols, step, families, found, settings):
    """The grid ranked again on ``near``, the linearisation ``at`` of the form closest to the data
    (``(ly, q)``, :func:`_linearised`): the entries of ``found`` of its ``held_beam`` best ``(family,
    monomial)``, those not in it added (``a`` refined on ``near``, the form fitted at ``at``). The
    first grid ranks on the log of ``y`` (or the power law's linearisation where noise crosses 0),
    where under noise the small values' noise, or the power law's distance from the law, outweighs
    the law's factor: the law's ``(g, U)`` falls out of the beam although its form is closer to
    the data than those offered."""
    entries = {(entry[0], entry[1]): entry for entry in found[1:]}
    out = []
    for _, family, j, a in _candidates(near, Ucols[::step], families, settings)[:settings.held_beam]:
        if (family, j) not in entries:
            a = _refine(near, family, Ucols[::step, j], a)
            entries[family, j] = (family, j, a, [_form(Z, y, p, *at, family, Ucols[:, j], a)])
            found.append(entries[family, j])
        out.append(entries[family, j])
    return out


def _log_g(family, u, values):
    """``log|g(a U)|`` for each ``a`` of ``values`` (rows x values)."""
    with np.errstate(all="ignore"):
        return np.log(np.abs(_g(family, np.multiply.outer(u, values))))


def _fine(family, u, a):
    """The fine grid of ``a``: :data:`FINE_GRID` points over the family's whole range of spans on
    ``a``'s side."""
    spans = _spans(family)
    spans = np.abs(spans[spans * a > 0])
    return np.sign(a) * np.geomspace(spans.min(), spans.max(), FINE_GRID) / np.abs(u).max()


def _refine(basis, family, u, a):
    """``a`` refined (on the grid's rows): a fine grid over the family's whole range of spans on ``a``'s
    side (the share left can have several minima, and the coarse grid's best need not be in the
    law's basin), then :func:`_zoom` between the best points' neighbours."""
    if family == "exp":
        return a

    def shares(points):
        return basis.left(_log_g(family, u, points.ravel())).reshape(points.shape)

    grid = _fine(family, u, a)
    values = shares(grid)
    padded = np.r_[np.inf, values, np.inf]
    minima = np.flatnonzero((values <= padded[:-2]) & (values <= padded[2:]) & np.isfinite(values))
    best = minima[np.argsort(values[minima], kind="stable")][:BASINS]
    if not best.size:
        return a
    found = _zoom(shares, grid[np.maximum(best - 1, 0)], grid[np.minimum(best + 1, FINE_GRID - 1)])
    return float(found[np.argmin(shares(found))])


def _held(basis, family, u, a, slack):
    """``(a, k)`` for each power ``k`` of :data:`HELD` whose least share on :func:`_fine`'s grid
    with ``k`` held is within ``1 + slack`` times the least of them, ``a`` zoomed with ``k`` held.
    Near ``g``'s linear part ``k`` and ``a`` trade along a valley (``k * log sin(a U)`` is ``k
    log(a U) - k a^2 U^2 / 6 + ...``: ``k a^2`` is what the data fix first), where noise moves the
    free ``k``'s least squares far from the law's power, and rounding it leaves a form off the
    data; held at each power, ``a`` finds the law's value at the law's power."""
    if family == "exp":
        return []
    grid = _fine(family, u, a)
    values = basis.held(_log_g(family, u, grid), HELD[:, None])
    least = values.min(axis=1)
    if not np.any(np.isfinite(least)):
        return []
    side = np.sign(HELD[np.argmin(least)])  # (k a^2, or k a, has the data's sign: so has k)
    keep = np.flatnonzero(np.isfinite(least) & (least <= least.min() * (1.0 + slack)) & (np.sign(HELD) == side))
    ks, j = HELD[keep], np.argmin(values[keep], axis=1)

    def shares(points):
        return basis.held(_log_g(family, u, points.ravel()), np.repeat(ks, points.shape[1])).reshape(points.shape)

    found = _zoom(shares, grid[np.maximum(j - 1, 0)], grid[np.minimum(j + 1, FINE_GRID - 1)], HELD_ZOOMS)
    return [(float(b), float(k)) for b, k in zip(found, ks)]


def _fit(Z, ly, p, v):
    """Weighted least squares of ``log|y|`` on ``[1, log x, v]``: the coefficients."""
    sw = np.sqrt(p)
    A = np.c_[np.ones(len(ly)), Z] if v is None else np.c_[np.ones(len(ly)), Z, v]
    return np.linalg.lstsq(A * sw[:, None], ly * sw, rcond=None)[0]


class _Judge:
    """Whether a form qualifies (module docstring): it explains ``min_r2`` of ``y``'s variance, or
    ``noisy_r2`` of it or leaves at most ``noise_margin`` times the noise's share, and what it
    leaves is as rough as noise (the rows' nearest neighbours and the noise's share computed once,
    when first needed)."""

    def __init__(self, X, y, w, neighbours, settings):
        self.X, self.y, self.w, self.p = X, y, w, w / w.sum()
        self.neighbours, self.noise, self.s = neighbours, None, settings

    def __call__(self, form):
        share, residual, s, p, y = form[-1], form[-2], self.s, self.p, self.y
        if share <= 1 - s.min_r2:
            return True
        if self.neighbours is None:
            self.neighbours = nearest_rows(self.X)[:, 0]
        if self.noise is None:
            self.noise = neighbour_variance(y, p, self.neighbours) / float(p @ (y - p @ y) ** 2)
        if not (share <= 1 - s.noisy_r2 or share <= s.noise_margin * self.noise):
            return False
        return bool(white(residual, self.w, self.neighbours, s.white_z))


def power_forms(X, y, w, binops, unops, weights, maxsize, order, settings):
    """The forms of ``y`` on ``(X, w)`` that qualify (module docstring), within ``maxsize``, of
    distinct shapes: the ``settings.max_forms`` best (least variance of ``y`` left, at least
    ``settings.exact``, plus ``settings.token_price`` a token), as ``(ops, feats, vals)``; and the
    number of forms fitted."""
    writer = _PowerWriter(binops, unops, weights)
    s = settings
    positive = np.array([f for f in order if np.all(X[:, f] > 0)], dtype=np.int64)
    if not {MUL, DIV} <= writer.binops or positive.size == 0:
        return [], 0
    Z, p = np.log(X[:, positive]), w / w.sum()
    sign, q, ly, neighbours = _signed_rows(X[:, positive], Z, y, w, s.sign_z)
    if sign == 0.0:
        return [], 0
    families = [name for name, ops in FAMILIES.items() if set(ops) <= writer.unops
                and (name not in ("expm1", "expp1", "linear") or {ADD, SUB} <= writer.binops)]
    features = positive[:s.features]
    monomials = _groups(len(features), s.used)
    with np.errstate(all="ignore"):  # (a column that overflows scores inf)
        Ucols = np.exp(np.array([Z[:, :len(features)] @ np.array(e, dtype=float) for e in monomials]).T)
    step = -(-len(y) // min(s.search_rows, s.search_cells // max(len(monomials), 1)))
    basis = _Basis(Z, ly, q)
    sub = _Basis(Z[::step], ly[::step], q[::step] / q[::step].sum())  # the grid's and the refinement's rows
    candidates = [(0.0, None, None, 0.0)]  # the power law alone; the grid unless it is exact
    if families and len(monomials) and basis.r @ basis.r > s.exact * basis.total:
        candidates += _candidates(sub, Ucols[::step], families, s)
    found = []  # (family, monomial, a, forms) of each candidate
    for _, family, j, a in candidates:
        u = None if family is None else Ucols[:, j]
        if family is not None:
            a = _refine(sub, family, Ucols[::step, j], a)
        forms = [_form(Z, y, p, ly, q, family, u, a)]
        if family is not None and forms[0] is not None and not forms[0][-1] <= s.exact:
            forms.append(_relinearised(Z, y, w, sign, family, u, a, forms[0], step))
        found.append((family, j, a, forms))
    best = min((f for *_, forms in found for f in forms if f is not None), key=lambda f: f[-1], default=None)
    at = None if best is None or best[-1] <= s.exact else _linearised(y, w, sign, best)
    if at is not None:  # every power held, at the linearisation of the form closest to the data
        near = _Basis(Z[::step], at[0][::step], at[1][::step] / at[1][::step].sum())
        for family, j, a, forms in _regridded(near, Z, y, p, at, Ucols, step, families, found, s):
            forms += [_form(Z, y, p, *at, family, Ucols[:, j], b, k)
                      for b, k in _held(near, family, Ucols[::step, j], a, s.held_slack)]
    fitted = sum(form is not None for *_, forms in found for form in forms)
    items = [(form, family, None if family is None else {int(f): int(e) for f, e in zip(features, monomials[j]) if e})
             for family, j, _, forms in found for form in forms if form is not None]
    judge = _Judge(X[:, positive], y, w, neighbours, s)
    return _offered(items, writer, positive, judge, weights, maxsize, s), fitted


def _offered(items, writer, positive, qualifies, weights, maxsize, s):
    """The trees of the ``(form, family, U)`` items that qualify, within ``maxsize``: the
    ``s.max_forms`` best (:func:`_distinct_best`; ties: the first item). They are judged and written
    in order of the share they leave, and one whose score cannot beat the ``max_forms``-th best of
    distinct shapes so far even at its fewest tokens (the constant, each base once, one product or
    ratio a base) is neither (the writer's cost grows with the bases: held powers bring many)."""
    order = sorted(range(len(items)), key=lambda i: (items[i][0][-1], i))
    models, best = [], {}
    join = min(weights[MUL], weights[DIV])
    for i in order:
        (exponents, k, b, c, _, share), family, U = items[i]
        fewest = weights[CONST] + (weights[VAR] + join) * np.count_nonzero(exponents)
        if family is not None:
            fewest += join + writer._cost(lambda: writer.inner(family, b, U))
        score = math.log(max(share, s.exact)) + s.token_price * fewest
        if len(best) >= s.max_forms and score > sorted(best.values())[s.max_forms - 1]:
            continue
        if not qualifies(items[i][0]):
            continue
        tree = writer.form(c, exponents, positive, family, b, U, k)
        cplx = int(weights[tree[0]].sum()) if tree is not None else maxsize + 1
        if cplx <= maxsize:
            score = math.log(max(share, s.exact)) + s.token_price * cplx
            models.append((score, i, tree))
            key = (tree[0].tobytes(), tree[1].tobytes())
            best[key] = min(best.get(key, np.inf), score)
    return _distinct_best(models, s.max_forms)


def _form(Z, y, p, ly, q, family, u, a, k=None):
    """The form of ``(family, u, a)`` fitted on the log ``ly`` (weights ``q``), its exponents made
    halves and ``c`` refitted by least squares on ``y``: ``(exponents, k, a, c, residual, share of
    y's variance left, inf where the form changes sign)``, or None (a column not finite, or a
    power beyond the fourth). ``k`` given: held (not ``exp``'s), else fitted and made a half."""
    with np.errstate(all="ignore"):
        v = None if family is None else (a * u if family == "exp" else np.log(np.abs(_g(family, a * u))))
    if v is not None and not np.all(np.isfinite(v)):
        return None
    if k is not None:
        coef = _fit(Z, ly - k * v, q, None)
    else:
        coef = _fit(Z, ly, q, v)
        k = 1.0 if family == "exp" else (float(_halves(coef[-1])) if v is not None else 0.0)
        a = a * coef[-1] if family == "exp" else a  # (exp's column is a*U: its coefficient scales a)
    exponents = _halves(coef[1:1 + Z.shape[1]])
    if (v is not None and (k == 0.0 or abs(k) > 4)) or np.any(np.abs(exponents) > 4):
        return None  # (no power beyond the fourth is offered)
    with np.errstate(all="ignore"):
        shape = np.exp(Z @ exponents)
        if v is not None:
            g = _g(family, a * u)
            shape = shape * (g ** k if k == round(k) else np.where(g > 0, g, np.nan) ** k)
        one_signed = np.all(shape > 0) or np.all(shape < 0)
        # (least squares on y, not the log's fit: where y is near 0 the log is the noise's)
        c = float((p * shape) @ y / ((p * shape) @ shape)) if one_signed else np.nan
    residual = y - c * shape
    share = float(p @ (residual - p @ residual) ** 2 / (p @ (y - p @ y) ** 2)) if math.isfinite(c) else np.inf
    return exponents, k, a, c, residual, share


def _linearised(y, w, sign, form):
    """``(ly, q)``: the log's target ``log|f| + (y - f)/f`` and its weights ``w f^2`` (summing to 1)
    at a fitted form ``f`` (:func:`_form`'s tuple), where least squares on the log is least squares
    on ``y`` to first order; None where ``f`` is not of the law's sign on every row."""
    f = y - form[-2]
    with np.errstate(all="ignore"):
        q, ly = w * f * f, np.log(np.abs(f)) + (y - f) / f
    if not (np.all(np.isfinite(ly)) and np.all(sign * f > 0) and q.sum() > 0):
        return None
    return ly, q / q.sum()


def _relinearised(Z, y, w, sign, family, u, a, form, step):
    """The form of ``(family, u)`` fitted again at its own linearisation (:func:`_linearised`):
    :data:`GAUSS_NEWTON` steps, each at the form fitted last, ``a`` refined on each (every
    ``step``-th row); :func:`_form`'s tuple or None. Where ``y`` spans
    decades near a pole (``(1 - u)^-2``) noise on the small values bends the log's fit, and the
    power law's linearisation (:func:`_signed_rows`) is far from the form near the pole."""
    for _ in range(GAUSS_NEWTON):
        at = _linearised(y, w, sign, form)
        if at is None:
            return None
        ly, q = at
        if family != "exp":
            a = _refine(_Basis(Z[::step], ly[::step], q[::step] / q[::step].sum()), family, u[::step], a)
        form = _form(Z, y, w / w.sum(), ly, q, family, u, a)
        if form is None:
            return None
    return form


def _signed_rows(X, Z, y, w, z):
    """``(sign, q, ly, neighbours)``: the sign of the law's values, the weights and the target of the
    log's fit (on ``Z``, the log of the positive features ``X``), and each row's nearest other row
    in ``X`` (None until needed). One-signed ``y``: its sign, ``w / w.sum()`` and ``log|y|``.

    Where noise carries the law's values near 0 across it (a monomial of high powers spans
    decades: at noise 0.1 x RMS(y) a third of a Rydberg-like law's rows change sign), the sign of
    most rows, when every row of the other sign lies within ``z`` noise deviations of 0 (the
    noise's deviation estimated by :func:`~parsimony.symbolic._noise.noise_deviation` of ``y``,
    an upper estimate). The log is then the power law's linearisation at its least-squares fit to
    ``y`` (:data:`GAUSS_NEWTON` steps from the fit of ``log|y|`` on the rows of that sign, weighted
    by ``w y^2``): the target ``log|f| + (y - f)/f`` on every row, weighted by ``w f^2``, so that
    least squares on the log is least squares on ``y`` to first order (the log of ``y`` itself is
    the noise's where ``y`` is near 0: the exponent of a fourth power comes out 3.4 at noise 0.1).
    ``sign`` 0: no such sign."""
    if np.all(y > 0) or np.all(y < 0):
        with np.errstate(divide="ignore"):
            return (1.0 if y[0] > 0 else -1.0), w / w.sum(), np.log(np.abs(y)), None
    sign = 1.0 if w @ (y > 0) >= w @ (y < 0) else -1.0
    neighbours = nearest_rows(X)[:, 0]
    other = sign * y <= 0
    if not np.all(np.abs(y[other]) <= z * noise_deviation(y, w, neighbours)):
        return 0.0, None, None, neighbours
    q = np.where(other, 0.0, w * y * y)
    with np.errstate(divide="ignore"):
        ly = np.where(other, 0.0, np.log(np.abs(y)))
    A = np.c_[np.ones(len(y)), Z]
    for _ in range(GAUSS_NEWTON):
        coef = _fit(Z, ly, q / q.sum(), None)
        with np.errstate(all="ignore"):
            f = sign * np.exp(A @ coef)
            q, ly = w * f * f, np.log(np.abs(f)) + (y - f) / f
        if not (np.all(np.isfinite(ly)) and np.isfinite(q.sum()) and q.sum() > 0):
            return 0.0, None, None, neighbours
    return sign, q / q.sum(), ly, neighbours
