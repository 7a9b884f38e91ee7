"""The rational seeder's forms: sparse sums of monomials, under a transform of the target
and over a denominator, for data a closed formula (nearly) reproduces.

A form is ``T(y) = (c0 + sum_i a_i m_i) / (1 + sum_j b_j h_j)`` where ``T`` is the identity,
the square, the reciprocal or the log (each where the target allows it; where noise about a law
near zero makes a few values cross it, the square on every row and the log and the reciprocal on
the rows above the noise, :func:`_rows`), and ``m_i``, ``h_j``
are *monomials* of the ``features`` most relevant features (exponents -2 to 2, at most
``degree`` factors on at most three features: ``m1*r2/m2``, ``omega_0^2/c^2``), squared
differences ``(x_i - x_j)^2``, or the *phase* ``cos(x_i - x_j)`` of the pair of features that
correlates most with the target, alone or times a monomial of at most two factors (the law of
cosines, ``x1*x2*cos(t1 - t2)``). Multiplied out, ``T(y) = c0 + sum_i a_i m_i - b T(y) h`` is
linear in the coefficients (the linearisation of rational regression), so least squares finds
them; the supports (which columns) come from beam searches on the columns' Gram matrix
(:func:`_supports`), with one denominator column at most. ``omega_0/(1 - v/c)``,
``sqrt((x2 - x1)^2 + (y2 - y1)^2)``, ``mom*sqrt(Bx^2 + By^2 + Bz^2)`` (a squared factor is taken
out of the root) and ``rho/sqrt(1 - v^2/c^2)`` are found; forms whose parts explain little one
or two at a time, such as ``(m1*r1 + m2*r2)/(m1 + m2)`` and ``(u + v)/(1 + u*v/c^2)``, are
found by an exhaustive pass over every support of two numerator columns and one denominator
column (:func:`_best_triples`), where a numerator alone already explains most of ``T(y)``; it
ranks them by the linearisation's residual over the mean square of the form's denominator (the
linearisation's residual is the form's times the denominator: under noise a law whose denominator
is large would rank below forms fitting the noise with one near 1). A coefficient within
``snap`` of an integer is taken as the integer, and each form is also offered with the
coefficients within ``round`` of integers made integers.

A form is offered to the search (written back as ``T^-1`` of the ratio, within ``maxsize``) only
when it explains at least ``min_r2`` of ``T(y)``'s variance, or at least ``noisy_r2`` (or leaves at
most ``noise_margin`` times the noise estimated from the data, the
:func:`~parsimony.symbolic._noise.neighbour_variance` of what the best sum of numerator columns
leaves) and what it leaves is as rough as noise between neighbouring rows
(:func:`~parsimony.symbolic._noise.white`: a form that misses part
of the law leaves a residual that varies smoothly with the features); least squares on a
transformed target is not the fit's loss: the search's halls of fame judge the forms on the
loss. At most ``max_forms`` are offered, ranked by the share of ``y``'s own variance they leave
(:func:`_target_share`: a transform stretches the noise unevenly, the log where ``y`` is small,
so shares of different ``T(y)`` do not compare) against their fitted constants and tokens at a
price that falls with the rows (the Schwarz criterion, :func:`_score`). Under noise the linearisation's denominator columns
carry the noise and bias their coefficients, so the forms near the least residual are refitted
by their own least squares (:func:`_refined`), and a coefficient within ``integer_z`` standard
errors of zero or an integer is also offered as that number, and a form ``N/(1 + b h)`` whose ``1/b``
is as near an integer or a half ``s`` is also offered with ``b = 1/s``, its numerator refitted
(:func:`_monic_variant`), and written ``(s N)/(s + h)`` (:func:`_monic`: the law's ``(3 + 2h)/(3 - h)``
fits as ``(1 + 0.6696h)/(1 - 0.3320h)``, whose constants SRBench's 3 decimals do not take for
thirds); where the noise is what keeps the
numerator's sums from the triple search's gate, that search runs on denominator columns built
from the mean of ``T(y)`` over each row's neighbours, which carry none of its own noise. A
transform stretches ``y``'s noise unevenly (the log's ``e/y``), so the least squares on ``T(y)``
weigh each row by the inverse of its noise's variance there (:func:`_precision`). The
settings (``features``, ``degree``, ...) are the fields of
:class:`~parsimony.symbolic.seeds.rational.RationalSettings`, which says why each has its value.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .._numba import njit
from ._expressions import ADD, CONST, COS, DIV, EXP, MUL, SQRT, SQUARE, SUB, VAR, simple_multiples
from ._front import effective_rows
from ._noise import nearest_rows, neighbour_variance, noise_deviation, white

TRANSFORMS = ("identity", "square", "inverse", "log")
#: The relative distance of ``1/b`` from an integer or half within which it is that number when
#: the form is written (``(s N) / (s + h)``, :func:`_monic`): floating point's ``1/(1/3)``.
MONIC_ROUNDING = 1e-12
INVERSE_OP = {"square": SQRT, "log": EXP}  # the unary operator writing T^-1 (inverse: 1/...)


@functools.lru_cache(maxsize=None)
def _monomials(p, degree):
    """Exponent vectors over ``p`` features: 1 to ``degree`` factors on at most 3 features."""
    out = []
    for e in itertools.product(range(-2, 3), repeat=p):
        factors, used = sum(abs(v) for v in e), sum(1 for v in e if v)
        if 1 <= factors <= degree and used <= 3:
            out.append(e)
    return out


def _dictionary(X, features, degree, phase=None):
    """The candidate columns on ``X`` (rows x features) and their descriptions: ``("m", num,
    den)`` for a monomial (the features of its numerator and denominator, repeated by their
    powers), ``("d", i, j)`` for ``(x_i - x_j)^2``; with a ``phase`` ``(index, values)``, the
    phase and its products with monomials of at most two factors (``x1*x2*cos(t1 - t2)``);
    non-finite or constant columns dropped."""
    cols, terms = [], []
    sub = X[:, features]
    with np.errstate(all="ignore"):
        powers = {(k, v): sub[:, k] ** float(v) for k in range(len(features)) for v in (-2, -1, 1, 2)}

    def add(e, extra=()):  # the monomial of exponents ``e`` on ``features``, times the ``extra`` columns
        cols.append(np.prod([powers[k, v] for k, v in enumerate(e) if v] + list(extra), axis=0))
        return {int(features[k]): v for k, v in enumerate(e) if v}

    with np.errstate(all="ignore"):
        for e in _monomials(len(features), degree):
            terms.append(_term(add(e)))
        for a, b in itertools.combinations(features, 2):
            cols.append((X[:, a] - X[:, b]) ** 2)
            terms.append(("d", int(a), int(b)))
        if phase is not None:  # the phase alone and times a monomial of at most two factors
            for e in [(0,) * len(features)] + [e for e in _monomials(len(features), degree) if sum(map(abs, e)) <= 2]:
                terms.append(_term({**add(e, [phase[1]]), phase[0]: 1}))
    cols = np.array(cols)
    ok = np.all(np.isfinite(cols), axis=1) & (np.ptp(cols, axis=1) > 0)
    return cols[ok], [t for t, k in zip(terms, ok) if k]


def _rows(y, name, level, margin):
    """The rows ``T`` is fitted on: all (``slice(None)``) where ``y`` allows ``T`` everywhere;
    where ``y`` is of one sign but for values within ``margin`` of 0 (noise about a law near 0),
    all for the square (which squares them: the root of its form is still the law's), and for the
    log and the inverse the rows whose ``level`` (``y`` about the row, none of its own noise) lies
    beyond ``margin`` on the law's side (and ``y`` too): near 0 their ``T(y)`` is the noise's;
    None where ``y`` crosses 0 by more (or the log, below 0)."""
    if name == "identity" or np.all(y > 0) or (name == "inverse" and np.all(y < 0)):
        return slice(None)
    if name == "square":
        return slice(None) if np.all(y > -margin) else None
    sign = 1.0 if np.all(y > -margin) else -1.0 if name == "inverse" and np.all(y < margin) else 0.0
    return None if sign == 0.0 else np.flatnonzero((sign * level > margin) & (sign * y > 0))


def _transformed(y, name):
    """``T(y)`` (``y`` of one sign for the log and the inverse), or None where it is not finite
    or constant."""
    with np.errstate(all="ignore"):
        t = y ** 2 if name == "square" else 1.0 / y if name == "inverse" else np.log(y) if name == "log" else y
    return t if len(t) > 1 and np.all(np.isfinite(t)) and np.ptp(t) > 0 else None


def _precision(name, level):
    """Weights for the least squares on the log (``name``) or the inverse of ``y``, in proportion
    to the inverse of the variance of ``y``'s noise carried through them at the ``level`` about
    each row: the log's ``e/y`` and the inverse's ``e/y^2`` grow towards 0, and unweighted the
    rows nearest 0 would drive the ranking of supports."""
    v = level ** 2
    return v if name == "log" else v * v


def _beam(G, b, total, beams, allowed, settings):
    """Beam search over supports (sets of columns) by least squares on the Gram matrix ``G`` of
    the centred columns and their products ``b`` with the target: from each of the ``beam``
    best supports of one size, every ``allowed`` column is scored exactly as its addition; yields
    ``(support, residual sum of squares)`` for the best of each size up to ``max_columns``.
    The supports of one size are scored together (stacked arrays, one support a row)."""
    d = np.diag(G)
    usable = allowed & (d > 0)  # (a column that does not vary is zero: :func:`_standardised`)
    beam = settings.beam
    for size in range(len(beams[0][0]), settings.max_columns):
        S = np.array([support for support, _ in beams], dtype=np.int64).reshape(len(beams), size)
        rss = np.array([value for _, value in beams], dtype=np.float64)
        num, den = _scores(G, b, d, S)
        rows = np.arange(len(S))[:, None]
        ok = usable & (den > 1e-9 * d)
        ok[rows, S] = False
        gain = np.where(ok, num ** 2 / np.where(ok, den, 1.0), -1.0)
        if gain.shape[1] > beam:
            top = np.argpartition(-gain, beam, axis=1)[:, :beam]
        else:
            top = np.broadcast_to(np.arange(gain.shape[1]), gain.shape)
        top_gain = np.take_along_axis(gain, top, axis=1)
        which, col = np.nonzero(top_gain > 0)
        if which.size == 0:
            return
        keys = np.sort(np.c_[S[which], top[which, col]], axis=1)
        value = rss[which] - top_gain[which, col]
        if len(b) ** (size + 1) < 2 ** 62:  # a support as one number, in the same order
            code = keys @ len(b) ** np.arange(size, -1, -1, dtype=np.int64)
            order = np.lexsort([code, value])  # by residual, then by support
            code = code[order]
        else:
            order = np.lexsort([*keys.T[::-1], value])
            code = keys[order]
        keys, value = keys[order], value[order]
        _, first = np.unique(code, axis=0 if code.ndim > 1 else None, return_index=True)  # a support: its least residual
        first = np.sort(first)[:beam]
        beams = [(tuple(key), v) for key, v in zip(keys[first].tolist(), value[first])]
        yield from beams
        if beams[0][1] <= settings.exact * total:
            return


def _scores(G, b, d, S):
    """For each support (a row of ``S``), every column's addition to it: the numerator ``num``
    (the column's product with what the support leaves of the target) and the denominator
    ``den`` (what the support leaves of the column's sum of squares); rows of ``S`` by columns."""
    if S.shape[1] == 0:
        return np.tile(b, (len(S), 1)), np.tile(d, (len(S), 1))
    GS = np.ascontiguousarray(G[:, S].transpose(1, 0, 2))  # supports x columns x support's columns
    cross = GS @ np.linalg.pinv(G[S[:, :, None], S[:, None, :]])
    return b - (cross @ b[S][:, :, None])[:, :, 0], d - (cross * GS).sum(axis=2)


@njit(error_model="numpy")
def _best_triples(G, b, k, total, mean_h, mean_h2, left, pairs):
    """For each denominator column ``j >= k`` of the Gram matrix ``G`` (products ``b`` with the
    target, ``total`` its sum of squares), the two numerator columns ``i < l < k`` whose least
    squares with ``j`` leaves the least residual divided by the mean square of the form's
    denominator ``D = 1 + b_j h_j`` (``mean_h``, ``mean_h2``: the weighted mean and mean square
    of ``h_j``; zeros rank by the residual alone): ``left[j - k]``, and ``pairs[j - k] = (i, l)``;
    ``inf`` and ``-1`` where none is independent of ``j``. The linearisation's residual is the
    form's times ``D``, so a law with a large denominator would rank below forms fitting noise
    with a small one. Exhaustive: the forms whose parts explain little one or two at a time
    (``(m1*r1 + m2*r2)/(m1 + m2)``) too. (The loop over ``l`` runs on slices from 0, which lets
    it vectorise, then scans the scores.)"""
    m = b.shape[0]
    lim = np.empty(k)  # a column whose sum of squares falls below this with j projected out is dependent
    for i in range(k):
        lim[i] = 1e-9 * G[i, i]
    gj, gp, bp, dp = np.empty(k), np.empty(k), np.empty(k), np.empty(k)
    score, dets = np.empty(k), np.empty(k)
    for j in range(k, m):
        left[j - k] = np.inf
        pairs[j - k, 0] = -1
        pairs[j - k, 1] = -1
        djj = G[j, j]
        if not djj > 0.0:  # a column that does not vary (:func:`_standardised`)
            continue
        mh, mh2 = mean_h[j - k], mean_h2[j - k]
        for i in range(k):  # the numerator columns with column j projected out
            gj[i] = G[i, j]
        for i in range(k):
            gp[i] = gj[i] / djj
            bp[i] = b[i] - gp[i] * b[j]
            dp[i] = G[i, i] - gp[i] * gj[i]
        base = b[j] * b[j] / djj
        best = np.inf
        for i in range(k - 1):
            if dp[i] <= lim[i]:
                continue
            gi, bi, di, ci, n = gp[i], bp[i], dp[i], gj[i], k - i - 1
            Gs, gs, ds, bs, ls = G[i, i + 1:k], gj[i + 1:k], dp[i + 1:k], bp[i + 1:k], lim[i + 1:k]
            es, vs = dets[i + 1:k], score[i + 1:k]
            for l in range(n):  # column i + 1 + l
                gil = Gs[l] - gi * gs[l]
                det = di * ds[l] - gil * gil
                es[l] = det
                rss = total - base - (bi * bi * ds[l] - 2.0 * bi * bs[l] * gil + bs[l] * bs[l] * di) / det
                bj = (b[j] - ci * (bi * ds[l] - gil * bs[l]) / det - gs[l] * (di * bs[l] - gil * bi) / det) / djj
                vs[l] = max(rss, 0.0) / (1.0 + 2.0 * bj * mh + bj * bj * mh2)
            for l in range(n):
                if vs[l] < best and not ds[l] <= ls[l] and not es[l] <= 1e-9 * di * ds[l]:
                    best = vs[l]
                    pairs[j - k, 0] = i
                    pairs[j - k, 1] = i + 1 + l
        left[j - k] = best


def _supports(cols, t, w, k, settings, noise_of, smooth):
    """Candidate supports for ``t`` among the columns ``cols``, of which those from ``k`` on are a
    denominator's (``-t`` times a monomial): a list of ``(support, residual share, refit)``, and
    the share of ``t``'s variance that is noise (estimated by ``noise_of`` on what the best
    support of numerator columns leaves).

    Two beam searches (:func:`_beam`): over the numerator's columns alone, and over supports
    with exactly one denominator column, started from the ``beam`` best pairs of a numerator
    and a denominator column, all scored exactly. Denominators are kept to one column, and kept
    out of the first search, because ``1 + sum b_j h_j`` of a few columns can nearly vanish on
    the data, and ``t`` times one column (``y*omega_0``) can explain most of ``t``: either would
    crowd the beam with fits of the linearisation that are none of the form. Where a sum of
    numerator columns alone leaves at most ``triple_gate`` of the variance (data a formula
    nearly reproduces; the linearisation's residual, small also on noisy data, would not tell),
    the ``beam`` best supports of two numerator columns and one denominator column, each
    denominator's best pair (:func:`_best_triples`, exhaustive), follow. Where it leaves more,
    but at most ``noise_margin`` times the noise, the same search, and that of the pairs of a
    numerator and a denominator column, run with the denominators' columns ``-smooth*h``,
    ``smooth`` the mean of ``t`` over each row's neighbours: ``-t*h`` carries the noise of ``t``,
    which shrinks ``b`` and picks another numerator pair than the law's (``b`` a third of the
    law's in I.18.4 at noise 0.1 x RMS(y)), and ranks first the pairs whose ``-t*h`` fits that
    noise (``(c0 + a*u)/(1 + b*u)`` at noise 0.1 was in none of the 32 best pairs); their supports
    are ``refit`` (the linearisation's coefficients are biased: only the form's own fit judges them)."""
    p = w / w.sum()
    sw = np.sqrt(p)
    A, scale = _standardised(cols, p)
    r = (t - t @ p) * sw
    total = r @ r
    G, b = A @ A.T, A @ r
    numerator = np.arange(len(b)) < k
    h = cols[:k]  # the denominators' monomials (column j >= k is -t times h[j - k])
    closest, nearest = np.inf, []
    beam = settings.beam
    found = []
    for support, rss in _beam(G, b, total, [((), total)], numerator, settings):
        if rss < closest:
            closest, nearest = rss, list(support)
        found.append((list(support), max(rss, 0.0) / total, False))
    pairs = _pairs(G, b, k, total, beam)
    if pairs:
        found += [(list(support), max(rss, 0.0) / total, False) for support, rss in pairs]
        found += [(list(support), max(rss, 0.0) / total, False)
                  for support, rss in _beam(G, b, total, pairs, numerator, settings)]
    noise = min(noise_of(nearest), settings.max_noise) if nearest else 0.0
    if closest <= settings.exact * total:
        return found, noise
    if closest <= settings.triple_gate * total:
        found += _triples(G, b, k, total, h / scale[k:, None], p, beam, False)
    elif closest <= settings.noise_margin * noise * total:
        A[k:], scale[k:] = _standardised(-smooth() * h, p)
        G, b = A @ A.T, A @ r
        found += [(list(support), max(rss, 0.0) / total, True) for support, rss in _pairs(G, b, k, total, beam)]
        found += _triples(G, b, k, total, h / scale[k:, None], p, beam, True)
    return found, noise


def _pairs(G, b, k, total, beam):
    """The ``beam`` supports ``(i, j)`` of a numerator column ``i < k`` and a denominator's ``j``
    whose least squares on the Gram matrix ``G`` (products ``b`` with the target, ``total`` its
    sum of squares) leave the least, with that residual, least first."""
    d = np.diag(G)
    Gn, Gd, Gx = d[:k, None], d[None, k:], G[:k, k:]
    bn, bd = b[:k, None], b[None, k:]
    det = Gn * Gd - Gx ** 2
    with np.errstate(all="ignore"):
        gain = np.where(det > 1e-9 * Gn * Gd, (bn ** 2 * Gd - 2 * bn * bd * Gx + bd ** 2 * Gn) / det, -1.0)
    flat = gain.ravel()
    best = np.argpartition(-flat, beam)[:beam] if flat.size > beam else np.arange(flat.size)
    pairs = [((int(i), int(j) + k), total - flat[f]) for f in best for i, j in [np.unravel_index(f, gain.shape)]
             if flat[f] > 0]
    return sorted(pairs, key=lambda item: (item[1], item[0]))


def _standardised(cols, p):
    """The columns ``cols`` centred, weighted by the roots of the shares ``p`` and scaled to unit
    weighted variance, and their scales (the roots of those variances): residuals do not depend
    on a column's scale, but a test of which columns vary relative to the largest (or a least
    squares' cut-off on singular values) would drop a column of a few units beside one of 1e15
    (``x^-2 y^-2`` on features near 0). A column that does not vary relative to its own
    magnitude (within rounding) is zero, its scale 1."""
    centred = cols - (cols @ p)[:, None]
    variance = (centred * centred) @ p
    varies = variance > 1e-24 * ((cols * cols) @ p)  # a spread of 1e-12 of the column's own size
    scale = np.where(varies, np.sqrt(np.where(varies, variance, 1.0)), 1.0)
    return centred * np.sqrt(p) * (varies / scale)[:, None], scale


def _triples(G, b, k, total, h, p, beam, refit):
    """The ``beam`` best supports of two numerator columns and one denominator column
    (:func:`_best_triples`), as :func:`_supports` lists them (``h`` the denominators' monomials
    over their columns' scales: a coefficient on a scaled column is one on ``h`` times that)."""
    left, best = np.empty(len(b) - k), np.empty((len(b) - k, 2), dtype=np.int64)
    _best_triples(np.ascontiguousarray(G), np.ascontiguousarray(b), k, total, h @ p, (h * h) @ p, left, best)
    return [([int(best[j, 0]), int(best[j, 1]), int(j) + k], left[j] / total, refit)
            for j in np.argsort(left, kind="stable")[:beam] if np.isfinite(left[j])]


class _Target:
    """A transformed target ``t`` on weights ``w``, with what every fit on it shares: the weights'
    shares ``p`` and their roots, ``t``'s weighted mean, its centred and weighted values, its
    weighted sum of squares about the mean and the root of that (its scale)."""

    def __init__(self, t, w):
        self.t, self.p = t, w / w.sum()
        self.sw = np.sqrt(self.p)
        self.mean = t @ self.p
        self.centred = (t - self.mean) * self.sw
        self.variance = np.sum(self.p * (t - self.mean) ** 2)
        self.scale = np.sqrt(self.variance)


def _fit(design, target, snap):
    """The weighted least-squares coefficients and intercept of ``target`` on the rows of
    ``design`` (the support's columns), each within ``snap`` of an integer taken as the integer."""
    mean = design @ target.p
    A, scale = _standardised(design, target.p)
    coefs = np.linalg.lstsq(A.T, target.centred, rcond=None)[0] / scale
    intercept = float(target.mean - coefs @ mean)
    return _rounded(coefs, intercept, target, snap)


def _rounded(coefs, intercept, target, tolerance, errors=None, z=0.0):
    """The coefficients within ``tolerance`` (relative) of an integer made integers, and the
    intercept within ``tolerance`` of the scale of ``target`` (or of its own) too; with standard
    ``errors`` (the intercept's first), also those within ``z`` errors of zero made zero, else
    of an integer that integer (the data do not tell them apart)."""
    values = coefs.tolist()
    if all(map(math.isfinite, values)):  # (a few coefficients: as Python floats, numpy's rounding)
        coefs = np.array([r if abs(c - r) <= tolerance * max(1.0, abs(c)) else c
                          for c, r in zip(values, [math.copysign(float(round(c)), c) for c in values])])
    else:
        whole = np.round(coefs)
        coefs = np.where(np.abs(coefs - whole) <= tolerance * np.maximum(1.0, np.abs(coefs)), whole, coefs)
    if abs(intercept - round(intercept)) <= tolerance * max(1.0, abs(intercept), target.scale):
        intercept = float(round(intercept))
    if errors is None or not np.any(errors > 0):
        return coefs, intercept
    values = np.r_[intercept, coefs]
    margin = z * np.where(np.isfinite(errors), errors, 0.0)
    whole = np.round(values)
    values = np.where(np.abs(values - whole) <= margin, whole, values)
    values = np.where(np.abs(values) <= margin, 0.0, values)
    return values[1:], float(values[0])


def _refined(design, target, n_num, coefs, intercept, exact, steps=8):
    """The form's own least squares from the linearisation's coefficients (Gauss-Newton on
    ``t - N/D``, ``N = c0 + sum a_i m_i``, ``D = 1 + sum b_j h_j``, the rows of ``design`` from
    ``n_num`` on being ``-t h_j``): with noise in ``t`` the linearisation's denominator columns
    carry it, which biases ``b`` (4% for ``omega_0/(1 - v/c)`` at noise 0.1 x RMS(y)).
    ``(coefs, intercept, errors)``: the standard errors (the intercept's first) from the
    Jacobian and the residual variance; the coefficients as they are, and no errors, where the
    form leaves at most ``exact`` of the target's variance."""
    t, p = target.t, target.p
    with np.errstate(all="ignore"):
        h = np.vstack([design[:n_num], -design[n_num:] / t])  # numerator monomials, denominator terms

    def state(theta):
        with np.errstate(all="ignore"):
            d = 1.0 + theta[1 + n_num:] @ h[n_num:]
            g = (theta[0] + theta[1:1 + n_num] @ h[:n_num]) / d
            r = t - g
            jac = np.c_[1.0 / d, (np.vstack([h[:n_num], -g * h[n_num:]]) / d).T]
        return jac, r, float(p @ (r * r))

    theta = np.r_[intercept, coefs]
    jac, r, rss = state(theta)
    if not rss > exact * target.variance:
        return coefs, intercept, np.zeros(theta.size)
    for _ in range(steps if n_num < len(coefs) else 0):
        if not np.isfinite(rss) or rss <= 0.0 or not np.all(np.isfinite(jac)):
            break
        scale = _column_scales(jac)
        move = np.linalg.lstsq(jac * (target.sw[:, None] / scale), r * target.sw, rcond=None)[0] / scale
        trial = state(theta + move)
        if not trial[2] < rss:
            break
        theta, (jac, r, rss) = theta + move, trial
    if not (np.isfinite(rss) and np.all(np.isfinite(jac))):
        return coefs, intercept, np.zeros(theta.size)
    scale = _column_scales(jac)
    cov = np.linalg.pinv((jac / scale * p[:, None]).T @ (jac / scale)) / np.outer(scale, scale)
    cov *= rss / max(len(t) - theta.size, 1)
    return theta[1:], float(theta[0]), np.sqrt(np.maximum(np.diag(cov), 0.0))


def _column_scales(jac):
    """The root mean squares of the Jacobian's columns (1 for a zero column): a least squares on
    the columns over them is not cut where one column is 1e15 times another."""
    scale = np.sqrt(np.mean(jac * jac, axis=0))
    return np.where(scale > 0, scale, 1.0)


def _residual(design, target, n_num, coefs, intercept):
    """The target minus the form (the rows of ``design`` from ``n_num`` on are ``-t`` times a
    denominator's term): the form, not its linearisation, whose residual is also small where the
    denominator nearly vanishes."""
    with np.errstate(all="ignore"):
        fitted = intercept + coefs[:n_num] @ design[:n_num]
        if n_num < len(coefs):
            fitted = fitted / (1.0 - coefs[n_num:] @ design[n_num:] / target.t)
        return target.t - fitted


def _share(design, target, n_num, coefs, intercept):
    """The share of the target's variance the form leaves (:func:`_residual`)."""
    with np.errstate(all="ignore"):
        share = float(np.sum(target.p * _residual(design, target, n_num, coefs, intercept) ** 2) / target.variance)
    return share if np.isfinite(share) else np.inf


def _target_share(y, p, transform, fitted):
    """The share of ``y``'s variance (row shares ``p``) a form leaves on ``y`` itself (``T^-1`` of
    its ``fitted`` ``T(y)``): comparable between transforms, which stretch the noise unevenly (the
    log where ``y`` is small)."""
    with np.errstate(all="ignore"):
        if transform == "square":
            fitted = np.sqrt(fitted)
        elif transform == "inverse":
            fitted = 1.0 / fitted
        elif transform == "log":
            fitted = np.exp(fitted)
        variance = p @ (y - p @ y) ** 2
        share = float(p @ (y - fitted) ** 2 / variance)
    return share if np.isfinite(share) else np.inf


def _phase(X, y, features):
    """``((i, j), cos(x_i - x_j))`` for the pair of ``features`` whose phase correlates most with
    what a linear function of the ``features`` leaves of ``y`` (the angle between two directions,
    as in the law of cosines; ``y`` itself would favour a pair with a feature ``y`` grows with:
    ``cos(alpha - theta1)`` for ``d*(1 - alpha^2)/(1 + alpha*cos(theta1 - theta2))``), None when
    none varies."""
    design = np.c_[np.ones(len(y)), X[:, features]]
    left = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    if not np.ptp(left) > 0:
        return None
    best, found = 0.0, None
    for a, b in itertools.combinations(features, 2):
        col = np.cos(X[:, a] - X[:, b])
        if np.ptp(col) > 0:
            r = abs(np.corrcoef(col, left)[0, 1])
            if r > best:
                best, found = r, ((int(a), int(b)), col)
    return found


class _Writer:
    """Postfix ``(ops, feats, vals)`` lists of the forms, in the search's operators."""

    def __init__(self, binops, unops):
        self.binops, self.unops = set(int(o) for o in binops), set(int(o) for o in unops)
        self.ops, self.feats, self.vals = [], [], []
        self.phase = {}  # a pseudo-feature's index: the pair (i, j) of its cos(x_i - x_j)

    def feature(self, f):
        if f in self.phase:
            i, j = self.phase[f]
            self.node(VAR, i), self.node(VAR, j), self.node(SUB), self.node(COS)
        else:
            self.node(VAR, f)

    def node(self, op, feat=0, val=0.0):
        self.ops.append(op), self.feats.append(feat), self.vals.append(val)

    def power(self, factors):
        """The product of the features ``factors`` (a repeated one squared where possible)."""
        for k, f in enumerate(sorted(set(factors))):
            n = factors.count(f)
            self.feature(f)
            if n == 2 and SQUARE in self.unops:
                self.node(SQUARE)
            else:
                for _ in range(n - 1):
                    self.feature(f), self.node(MUL)
            if k > 0:
                self.node(MUL)

    def term(self, term, coef):
        """``coef * term`` (no factor when it is 1)."""
        if term[0] == "d":
            self.node(VAR, term[1]), self.node(VAR, term[2]), self.node(SUB), self.node(SQUARE)
            if coef != 1.0:
                self.node(CONST, 0, coef), self.node(MUL)
            return
        num, den = list(term[1]), list(term[2])
        if num:
            self.power(num)
            if coef != 1.0:
                self.node(CONST, 0, coef), self.node(MUL)
        else:
            self.node(CONST, 0, coef)
        if den:
            self.power(den)
            self.node(DIV)

    def sum(self, terms, coefs, constant):
        """``constant + sum coefs*terms``, a positive item first and the others added or subtracted."""
        items = [(c, t) for c, t in zip(coefs, terms) if c != 0.0]
        if constant != 0.0 or not items:
            items.append((constant, None))
        items.sort(key=lambda item: item[0] < 0)  # (stable) positives first
        for k, (c, t) in enumerate(items):
            c = c if k == 0 else abs(c)
            if t is None:
                self.node(CONST, 0, c)
            else:
                self.term(t, c)
            if k > 0:
                self.node(SUB if items[k][0] < 0 else ADD)

    def form(self, transform, num, num_coefs, constant, den, den_coefs, factor=None, den_constant=1.0):
        """``T^-1((constant + sum num_coefs*num) / (den_constant + sum den_coefs*den))``; with a
        ``factor`` (a monomial, square transform only) ``factor * sqrt(...)``, or
        ``factor*sqrt(constant) / sqrt(den_constant + ...)`` when the numerator is the constant alone."""
        self.ops, self.feats, self.vals = [], [], []
        if factor is not None and not num:
            self.term(factor, float(np.sqrt(constant)))
            self.sum(den, den_coefs, den_constant)
            self.node(SQRT), self.node(DIV)
        else:
            if factor is not None:
                self.term(factor, 1.0)
            if transform == "inverse":
                self.node(CONST, 0, 1.0)
            self.sum(num, num_coefs, constant)
            if den:
                self.sum(den, den_coefs, den_constant)
                self.node(DIV)
            if transform == "inverse":
                self.node(DIV)
            elif transform in INVERSE_OP:
                self.node(INVERSE_OP[transform])
            if factor is not None:
                self.node(MUL)
        return (np.array(self.ops, dtype=np.int64), np.array(self.feats, dtype=np.int64),
                np.array(self.vals, dtype=np.float64))


def _exponents(term):
    counts = {}
    for f in term[1]:
        counts[f] = counts.get(f, 0) + 1
    for f in term[2]:
        counts[f] = counts.get(f, 0) - 1
    return counts


def _term(exponents):
    return ("m", tuple(sorted(f for f, e in exponents.items() for _ in range(max(e, 0)))),
            tuple(sorted(f for f, e in exponents.items() for _ in range(max(-e, 0)))))


def _root_factor(num, constant, X):
    """Under the square transform, the monomial ``P`` whose square divides every numerator term
    (``sqrt(P^2 * S) = P * sqrt(S)``, ``P`` positive on ``X``), the terms divided by ``P^2`` and
    the constant they leave; None when there is no such ``P``."""
    if not num or constant != 0.0 or any(term[0] != "m" for term, _ in num):
        return None
    powers = [_exponents(term) for term, _ in num]
    pulled = {}
    for f in set().union(*powers):
        e = [p.get(f, 0) for p in powers]
        if min(e) >= 2 or max(e) <= -2:
            pulled[f] = int(np.sign(e[0])) * (min(abs(v) for v in e) // 2)
    if not pulled or not all(np.all(X[:, f] > 0) for f in pulled):
        return None
    rest, inner = [], 0.0
    for p, (_, c) in zip(powers, num):
        term = _term({f: p.get(f, 0) - 2 * pulled.get(f, 0) for f in set(p) | set(pulled)})
        if term == ("m", (), ()):
            inner += c
        else:
            rest.append((term, c))
    return _term(pulled), rest, inner


def _write(writer, transform, selected, coefs, constant, terms, k, X, weights):
    """The form of the columns ``selected`` (numerator's below ``k``) with these coefficients, in
    the fewer tokens (``weights``) of ``N / (1 + b h)`` and ``(s N) / (s + h)`` (:func:`_monic`;
    the latter on a tie: its constant is simple)."""
    num = [(terms[j], c) for j, c in zip(selected, coefs) if j < k and c != 0.0]
    den = [(terms[j - k], c) for j, c in zip(selected, coefs) if j >= k and c != 0.0]
    root = _root_factor(num, constant, X) if transform == "square" else None
    factor = None
    if root is not None and (root[1] or root[2] > 0):
        factor, num, constant = root
    tree = writer.form(transform, [a for a, _ in num], [c for _, c in num], constant, [a for a, _ in den],
                       [c for _, c in den], factor)
    if factor is None or num:  # (not ``factor*sqrt(constant) / sqrt(1 + b h)``)
        num, constant, den, den_constant = _monic(num, constant, den)
        if den_constant != 1.0:
            monic = writer.form(transform, [a for a, _ in num], [c for _, c in num], constant, [a for a, _ in den],
                                [c for _, c in den], factor, den_constant)
            if weights[monic[0]].sum() <= weights[tree[0]].sum():
                return monic
    return tree


def _monic(num, constant, den):
    """``N / (1 + b h)`` as ``(s N) / (s + h)`` when ``s = 1/b`` is an integer or a half and ``b`` is
    not an integer (``(3 + 2h) / (3 - h)``, not ``(1 + 0.6667h) / (1 - 0.3333h)``: the same
    function, two tokens fewer, and its constant simple): ``(num, constant, den, den_constant)``,
    as they were (``den_constant`` 1) otherwise."""
    if len(den) != 1 or den[0][1] == round(den[0][1]):
        return num, constant, den, 1.0
    simple = _simple_inverse(den[0][1], 0.0, math.inf)
    if simple is None:
        return num, constant, den, 1.0
    return [(a, c * simple) for a, c in num], constant * simple, [(den[0][0], 1.0)], simple


def _simple_inverse(b, tolerance, largest):
    """The integer or half ``s`` (the first of :func:`~parsimony.symbolic._expressions.simple_multiples`
    without pi) nearest ``1/b`` within ``tolerance`` (relative, at least rounding's: ``1/(1/3)``
    need not be 3 in floating point), ``|p| q`` at most ``largest``; None if there is none."""
    if not (math.isfinite(b) and b != 0.0):
        return None
    inverse = 1.0 / b
    for p, q, j, simple in simple_multiples(inverse):
        near = abs(simple - inverse) <= max(tolerance, MONIC_ROUNDING) * abs(inverse)
        if j == 0 and p != 0 and abs(p) * q <= largest and near:
            return simple
    return None


def rational_forms(X, y, w, binops, unops, weights, maxsize, order, settings):
    """The forms of ``y`` on ``(X, w)`` that explain at least ``settings.min_r2`` of ``T(y)``'s
    variance, within ``maxsize``, over the ``settings.features`` first features of ``order``: the
    ``settings.max_forms`` best (the Schwarz criterion on ``y``'s rows, :func:`_score`) of
    distinct shapes, a list of ``(ops, feats, vals)``; and the number of forms fitted."""
    writer = _Writer(binops, unops)
    if not {ADD, SUB, MUL, DIV} <= writer.binops:
        return [], 0
    s = settings
    features = np.sort(np.asarray(order[:s.features], dtype=np.int64))
    degree = s.degree if len(features) <= 4 else s.wide_degree
    phase = _phase(X, y, features) if COS in writer.unops else None
    if phase is not None:
        writer.phase = {X.shape[1]: phase[0]}
        X = np.c_[X, phase[1]]
        phase = (X.shape[1] - 1, phase[1])
    cols, terms = _dictionary(X, features, degree, phase)
    if len(terms) == 0:
        return [], 0
    if SQUARE not in writer.unops:  # (x_i - x_j)^2 is written with it
        keep = [j for j, term in enumerate(terms) if term[0] == "m"]
        cols, terms = cols[keep], [terms[j] for j in keep]
    models, fitted = [], 0
    k = len(terms)
    both = np.empty((2 * k, cols.shape[1]))  # the columns, then -t times them (a non-finite row: 0)
    both[:k] = cols
    largest = np.abs(cols).max(axis=1)
    neighbours = nearest_rows(X[:, features], s.neighbours)
    deviation = noise_deviation(y, w, neighbours[:, 0])
    level = y[neighbours].mean(axis=1)  # y about each row, none of its own noise
    for transform in TRANSFORMS:
        rows = _rows(y, transform, level, s.sign_z * deviation)
        if rows is None or (transform in INVERSE_OP and INVERSE_OP[transform] not in writer.unops):
            continue
        t = _transformed(y[rows], transform)
        if t is None or len(t) < s.min_rows:
            continue
        part, near = both, neighbours
        if not isinstance(rows, slice):  # the rows where T is defined and above the noise
            part, near = np.empty((2 * k, len(rows))), nearest_rows(X[rows][:, features], s.neighbours)
            part[:k] = cols[:, rows]
        with np.errstate(all="ignore"):
            np.multiply(-t, part[:k], out=part[k:])
            # (finite columns, finite t: a row is finite where the product of their largest is)
            suspect = np.flatnonzero(~np.isfinite(np.abs(t).max() * largest))
        bad = suspect[~np.all(np.isfinite(part[k + suspect]), axis=1)]
        part[k + bad] = 0.0
        precision = None if isinstance(rows, slice) else _precision(transform, level[rows])
        fitted += _transform_forms(models, writer, X, y[rows], w[rows], precision, t, transform, part, k, terms,
                                   near, weights, maxsize, s)
    return _distinct_best(models, s.max_forms), fitted


def _transform_forms(models, writer, X, y, w, precision, t, transform, both, k, terms, neighbours, weights, maxsize,
                     s):
    """Appends to ``models`` the forms of ``T(y) = t`` (:func:`rational_forms`) and returns the number
    of supports fitted. A form is offered when it explains ``min_r2``, or leaves at most
    ``noisy_r2``'s share or ``noise_margin`` times the noise (the ``neighbour_variance`` of what the
    best sum of numerator columns leaves) and what it leaves is white (:mod:`~parsimony.symbolic._noise`).
    The fits on ``t`` weigh each row's ``w`` by its ``precision`` (:func:`_precision`; None: 1)."""
    step = -(-len(t) // s.search_rows)
    p, rows = w / w.sum(), effective_rows(w)  # the rows' shares on y, and how many they count as
    w = w if precision is None else w * precision
    target = _Target(t, w)

    def noise_of(support):  # the noise's share, on what the numerator columns ``support`` leave
        coefs, constant = _fit(both[support], target, 0.0)
        share = neighbour_variance(t - constant - coefs @ both[support], target.p, neighbours[:, 0]) / target.variance
        return share if np.isfinite(share) else 0.0

    def smooth():  # T(y)'s mean over each row's neighbours, on the search's rows
        return t[neighbours].mean(axis=1)[::step]

    supports, noise = _supports(both[:, ::step], t[::step], w[::step], k, s, noise_of, smooth)
    noisy = max(1 - s.noisy_r2, s.noise_margin * noise)
    found = []
    for selected, share, refit in supports:
        if share <= max(s.linearised * (1 - s.min_r2), noisy):
            design, n_num = both[selected], sum(j < k for j in selected)  # (a support is sorted)
            coefs, constant = _fit(design, target, s.snap)
            found.append((_share(design, target, n_num, coefs, constant), refit, selected, design, n_num, coefs,
                          constant))
    floor = min((f[0] for f in found), default=np.inf)
    for share, refit, selected, design, n_num, coefs, constant in found:
        errors = None
        if refit or share <= s.refine_within * floor:  # near the least any support leaves: noise and the law
            coefs, constant, errors = _refined(design, target, n_num, coefs, constant, s.exact)
            coefs, constant = _rounded(coefs, constant, target, s.snap)
            share = _share(design, target, n_num, coefs, constant)
        variants = [(coefs, constant, share)]
        integral = _rounded(coefs, constant, target, s.round, errors, s.integer_z)
        if not np.array_equal(integral[0], coefs) or integral[1] != constant:
            variants.append((*integral, _share(design, target, n_num, *integral)))
        monic = _monic_variant(design, target, n_num, coefs, errors, rows, s)
        if monic is not None:
            variants.append((*monic, _share(design, target, n_num, *monic)))
        for coefs, constant, share in variants:
            if share > 1 - s.min_r2 and not (share <= noisy and white(
                    _residual(design, target, n_num, coefs, constant), w, neighbours[:, 0], s.white_z)):
                continue
            tree = _write(writer, transform, selected, coefs, constant, terms, k, X, weights)
            cplx = int(weights[tree[0]].sum())
            if cplx <= maxsize:
                left = _target_share(y, p, transform, t - _residual(design, target, n_num, coefs, constant))
                models.append((_score(left, tree, cplx, rows, s), len(models), tree))
    return len(found)


def _monic_variant(design, target, n_num, coefs, errors, rows, s):
    """The form with one denominator column ``N / (1 + b h)`` and ``1/b`` made the integer or half
    ``v`` it lies within ``integer_z`` standard ``errors`` of (``b``'s, ``errors``' last; without
    errors, within ``round``, relative), ``|p| q`` at most the root of the effective ``rows`` (as
    :func:`~parsimony.symbolic._search.snap_values` bounds a simple constant), the numerator
    refitted by the form's own least squares with ``b = 1/v``: ``(coefs, constant)``, or None.
    Written ``(v N) / (v + h)`` (:func:`_monic`), the law's ``(3 + 2h) / (3 - h)``, which fits as
    ``(1 + 0.6696h) / (1 - 0.3320h)`` under noise, gets its simple constant."""
    if n_num != len(coefs) - 1 or coefs[-1] == round(coefs[-1]) or not math.isfinite(coefs[-1]):
        return None
    b = float(coefs[-1])
    known = errors is not None and math.isfinite(errors[-1]) and errors[-1] > 0
    tolerance = s.integer_z * errors[-1] / abs(b) if known else s.round
    simple = _simple_inverse(b, tolerance, math.sqrt(rows))
    if simple is None or 1.0 / simple == b:
        return None
    with np.errstate(all="ignore"):
        d = 1.0 - design[n_num] / (simple * target.t)  # 1 + h/v (the column is -t h)
        if not np.all(np.isfinite(d)) or np.any(d == 0.0):
            return None
        columns = np.vstack([1.0 / d, design[:n_num] / d]).T * target.sw[:, None]
        scale = _column_scales(columns)
        theta = np.linalg.lstsq(columns / scale, target.t * target.sw, rcond=None)[0] / scale
    if not np.all(np.isfinite(theta)):
        return None
    return np.r_[theta[1:], 1.0 / simple], float(theta[0])


def _score(left, tree, tokens, rows, settings):
    """A form's Schwarz criterion per row, ``log(left) + log(n)/n * (fitted + token_price *
    tokens)``: ``left`` the share of ``y``'s variance it leaves (at least ``exact``: exact forms
    rank by their size alone), ``n`` the ``rows``, ``fitted`` its constants that are not integers
    (the seeder's integers are not fitted). The price of a constant falls with the rows: on 1,000
    rows a form leaving 0.3% less of the variance is worth one more fitted constant, which the
    noise cannot tell apart from a cheaper form leaving a few percent more on a hundred."""
    values = tree[2][tree[0] == CONST]
    fitted = int(np.count_nonzero(values != np.round(values)))
    price = math.log(rows) / rows if rows > 1 else 0.0
    return math.log(max(left, settings.exact)) + price * (fitted + settings.token_price * tokens)


def _distinct_best(models, max_forms):
    """The trees of ``(score, index, tree)`` models, best score first (ties: the first found), one
    of each shape (its constants aside), ``max_forms`` at most."""
    kept, seen = [], set()
    for *_, tree in sorted(models, key=lambda model: model[:2]):
        key = (tree[0].tobytes(), tree[1].tobytes())
        if key not in seen and len(kept) < max_forms:
            seen.add(key)
            kept.append(tree)
    return kept
