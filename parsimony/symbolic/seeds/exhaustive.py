"""The exhaustive seeder: every small formula, its outer constants exact, so the front is certified
optimal up to a size (the idea of Exhaustive Symbolic Regression, Bartlett et al. 2023).

The class it covers: every expression ``g`` over the features and the search's operators, no
constant inside, and ``g`` with an exact outer scale and offset: ``g``, ``g + a``, ``a - g``,
``b*g`` and ``a + b*g`` (the constants fitted exactly for the fit's loss: a weighted quantile,
the slope of the best line through the origin, or the exact linear scaling
:func:`~parsimony.symbolic._scaling.pinball_line`; least squares for the squared loss). The
skeletons ``g`` are built by complexity (the search's token weights), one complexity after the
other, from the values of smaller ones, with the evaluator's own kernels (so their values are
the evaluator's, bit for bit); skeletons whose values repeat one of lower complexity
(``x0*x0`` and ``square(x0)``, ``x0 + x1`` and ``x1 + x0``), are constant or are not finite on
every training row are dropped. A complexity is enumerated whole or not at all: the seeder
stops before the first complexity whose skeletons would pass its budget of fits times rows; the
last complete one is the *certified size* ``k``. Every variant within ``maxsize`` is kept, the
best of each complexity merged into the final front (the search does not see them: its path,
and every front row they do not beat, is the same with or without the seeder).

After the search, a front row of complexity ``c <= k`` is *certified* when its training loss is
at most the best loss of the class at complexity ``c`` or less (to ``1e-9`` of the best
constant's loss): no formula of the class of at most its complexity fits the training data
better (``equations_["certified"]``). A row the search beat by an inner constant is certified
too: the certificate is a bound, not a claim that the row is in the class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._loss_kernels import pointwise_loss
from ..._numba import argsort, assign, njit
from ...losses import LOSS_ABSOLUTE, LOSS_PINBALL, LOSS_SQUARED
from .._evaluator import _binary_aa, _unary_array
from .._expressions import ADD, CONST, MUL, SUB, VAR
from .._scaling import _slope_through, pinball_line
from ._base import Problem, Proposal

BARE, OFFSET, NEGATED, SCALED, LINE = range(5)  # the variants of a skeleton g: g, g + a, a - g, b*g, a + b*g
COMMUTATIVE = (ADD, MUL)


@dataclass(frozen=True)
class ExhaustiveSettings:
    """The exhaustive seeder's choices."""

    budget: int = 500_000
    """Fits times rows at most (each distinct skeleton is fitted five ways on every row): on 1,000
    rows 1,000 skeletons, about 0.3 s of CPU; with the default operators that is complexity 4
    to 6 on one to ten features (``benchmarks/sqr_exhaustive.py`` prints k and the cost)."""
    max_size: int = 12
    """Complexity enumerated at most, whatever the budget (a guard on tiny data)."""


@njit(error_model="numpy")
def _mean_loss(pred_a, pred_b, g, y, w, wsum, loss_kind, tau):
    """Weighted mean loss of the predictions ``pred_a + pred_b * g``."""
    total = 0.0
    for i in range(y.shape[0]):
        total += w[i] * pointwise_loss(y[i] - (pred_a + pred_b * g[i]), loss_kind, tau)
    return total / wsum


@njit(error_model="numpy")
def _quantile_shift(g, sign, y, w, tau, loss_kind, resid):
    """The loss-optimal ``a`` of ``a + sign*g``: a weighted ``tau``-quantile of ``y - sign*g``
    (the weighted mean for the squared loss)."""
    n, wsum, mean = y.shape[0], 0.0, 0.0
    for i in range(n):
        resid[i] = y[i] - sign * g[i]
        wsum += w[i]
        mean += w[i] * resid[i]
    if loss_kind == LOSS_SQUARED:
        return mean / wsum
    order = argsort(resid)
    acc = 0.0
    for t in range(n):
        acc += w[order[t]]
        if acc >= tau * wsum and w[order[t]] > 0:
            return resid[order[t]]
    return resid[order[n - 1]]


@njit(error_model="numpy")
def _origin_slope(g, y, w, tau, loss_kind, f, t, v, slopes, mass, rows):
    """The loss-optimal ``b`` of ``b*g``: the best line through the origin (the exact scaling's own
    step, the origin appended as the last point and pivot); least squares for the squared loss."""
    n = y.shape[0]
    if loss_kind == LOSS_SQUARED:
        num, den = 0.0, 0.0
        for i in range(n):
            num += w[i] * g[i] * y[i]
            den += w[i] * g[i] * g[i]
        return num / den if den > 0 else 0.0
    assign(f[:n], g)  # (not f[:n] = g: a slice assignment compiles numba's shape-mismatch message)
    assign(t[:n], y)
    assign(v[:n], w)
    f[n], t[n], v[n] = 0.0, 0.0, 1.0
    return _slope_through(f, t, v, tau, n, slopes, mass, rows)[0]


@njit(error_model="numpy")
def _least_squares_line(g, y, w):
    """``(a, b)`` of the weighted least-squares line ``a + b*g``."""
    sw = swg = swy = 0.0
    for i in range(y.shape[0]):
        sw += w[i]
        swg += w[i] * g[i]
        swy += w[i] * y[i]
    mg, my = swg / sw, swy / sw
    sgg = sgy = 0.0
    for i in range(y.shape[0]):
        sgg += w[i] * (g[i] - mg) * (g[i] - mg)
        sgy += w[i] * (g[i] - mg) * (y[i] - my)
    b = sgy / sgg if sgg > 0 else 0.0
    return my - b * mg, b


@njit(error_model="numpy")
def fit_variants(G, y, w, loss_kind, tau, losses, consts):
    """For each skeleton's values ``G[m]``: the weighted mean loss (``losses[m, v]``) and the
    constants ``(a, b)`` (``consts[m, v]``) of its five variants, each fitted exactly."""
    n = y.shape[0]
    level = 0.5 if loss_kind == LOSS_ABSOLUTE else tau
    wsum = 0.0
    for i in range(n):
        wsum += w[i]
    resid = np.empty(n)
    f, t, v = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1)
    slopes, mass, rows = np.empty(n + 1), np.empty(n + 1), np.empty(n + 1, dtype=np.int64)
    for m in range(G.shape[0]):
        g = G[m]
        a = _quantile_shift(g, 1.0, y, w, level, loss_kind, resid)
        c = _quantile_shift(g, -1.0, y, w, level, loss_kind, resid)
        b = _origin_slope(g, y, w, level, loss_kind, f, t, v, slopes, mass, rows)
        if loss_kind == LOSS_SQUARED:
            la, lb = _least_squares_line(g, y, w)
        else:
            la, lb, _ = pinball_line(g, y, w, level, n + 1)
        consts[m, BARE, 0], consts[m, BARE, 1] = 0.0, 1.0
        consts[m, OFFSET, 0], consts[m, OFFSET, 1] = a, 1.0
        consts[m, NEGATED, 0], consts[m, NEGATED, 1] = c, -1.0
        consts[m, SCALED, 0], consts[m, SCALED, 1] = 0.0, b
        consts[m, LINE, 0], consts[m, LINE, 1] = la, lb
        for k in range(5):
            losses[m, k] = _mean_loss(consts[m, k, 0], consts[m, k, 1], g, y, w, wsum, loss_kind, tau)


class _Skeletons:
    """The distinct skeletons by complexity: ``values[c]`` (rows of values), ``trees[c]``
    (postfix ``(ops, feats)`` lists); ``seen`` the value bytes already met."""

    def __init__(self, Xt, weights):
        self.Xt, self.weights = Xt, weights
        self.values, self.trees, self.seen = {}, {}, set()

    def add(self, c, vals, ops, feats):
        if not np.all(np.isfinite(vals)) or not np.ptp(vals) > 0:
            return
        key = vals.tobytes()
        if key in self.seen:
            return
        self.seen.add(key)
        self.values.setdefault(c, []).append(vals)
        self.trees.setdefault(c, []).append((ops, feats))

    def raw_count(self, c, binops, unops) -> int:
        """Skeletons of complexity ``c`` to build (before duplicates are dropped)."""
        size = {k: len(v) for k, v in self.values.items()}
        count = self.Xt.shape[0] if c == self.weights[VAR] else 0
        count += sum(size.get(c - int(self.weights[u]), 0) for u in unops)
        for b in binops:
            rest = c - int(self.weights[b])
            for c1 in range(1, rest):
                left, right = size.get(c1, 0), size.get(rest - c1, 0)
                if b not in COMMUTATIVE or c1 < rest - c1:
                    count += left * right
                elif c1 == rest - c1:
                    count += left * (left + 1) // 2
        return count

    def build(self, c, binops, unops):
        n = self.Xt.shape[1]
        if c == self.weights[VAR]:
            for j in range(self.Xt.shape[0]):
                self.add(c, self.Xt[j].copy(), [VAR], [j])
        for u in unops:
            for vals, (ops, feats) in zip(self.values.get(c - int(self.weights[u]), []),
                                          self.trees.get(c - int(self.weights[u]), [])):
                out = np.empty(n)
                with np.errstate(all="ignore"):
                    _unary_array(int(u), vals, out)
                self.add(c, out, ops + [int(u)], feats + [0])
        for b in binops:
            rest = c - int(self.weights[b])
            for c1 in range(1, rest):
                left, right = self.values.get(c1, []), self.values.get(rest - c1, [])
                if b in COMMUTATIVE and c1 > rest - c1:
                    continue
                for i, u in enumerate(left):
                    for j in range(i if b in COMMUTATIVE and c1 == rest - c1 else 0, len(right)):
                        out = np.empty(n)
                        with np.errstate(all="ignore"):
                            _binary_aa(int(b), u, right[j], out)
                        (o1, f1), (o2, f2) = self.trees[c1][i], self.trees[rest - c1][j]
                        self.add(c, out, o1 + o2 + [int(b)], f1 + f2 + [0])


def _written(ops, feats, variant, a, b):
    """The postfix ``(ops, feats, vals)`` of a variant of the skeleton ``(ops, feats)``."""
    ops, feats, vals = list(ops), list(feats), [0.0] * len(ops)
    if variant == NEGATED:
        ops, feats, vals = [CONST] + ops + [SUB], [0] + feats + [0], [a] + vals + [0.0]
    else:
        if variant in (SCALED, LINE):
            ops, feats, vals = ops + [CONST, MUL], feats + [0, 0], vals + [b, 0.0]
        if variant in (OFFSET, LINE):
            ops, feats, vals = ops + [CONST, ADD], feats + [0, 0], vals + [a, 0.0]
    return np.array(ops, dtype=np.int64), np.array(feats, dtype=np.int64), np.array(vals)


class ExhaustiveSeeder:
    """Every skeleton up to the certified size, with its exact outer constants."""

    name = "exhaustive"

    def __init__(self, settings: ExhaustiveSettings = ExhaustiveSettings()):
        self.settings = settings

    def applies(self, problem: Problem) -> bool:
        """It needs a loss it fits exactly, the operators its variants use, and rows."""
        binops = {int(b) for b in problem.binops}
        return (problem.loss_kind in (LOSS_SQUARED, LOSS_ABSOLUTE, LOSS_PINBALL) and {ADD, MUL} <= binops
                and problem.y.shape[0] > 1 and problem.maxsize >= problem.weights[VAR])

    def kernels(self, binops, unops, weights, maxsize) -> list:
        """``fit_variants`` with arguments of the types :meth:`propose` passes it (a helper step),
        and the skeletons' operators (spare steps)."""
        column = np.zeros(2)
        return [(fit_variants, (np.zeros((1, 2)), column, np.ones(2), 0, 0.5, np.zeros((1, 5)),
                                np.zeros((1, 5, 2))), "helper"),
                (_unary_array, (0, column, column), "spare"),
                (_binary_aa, (0, column, column, column), "spare")]

    def skeletons(self, problem: Problem):
        """The distinct skeletons up to the certified size and that size: ``(skeletons, k)``."""
        Xt = np.ascontiguousarray(problem.X.T, dtype=np.float64)
        binops = [int(b) for b in problem.binops]
        unops = [int(u) for u in problem.unops]
        found = _Skeletons(Xt, np.asarray(problem.weights))
        k, total = 0, 0
        for c in range(1, min(self.settings.max_size, problem.maxsize) + 1):
            raw = found.raw_count(c, binops, unops)
            if (total + raw) * Xt.shape[1] > self.settings.budget:
                break
            found.build(c, binops, unops)
            total += len(found.values.get(c, []))
            k = c
        return found, k

    def propose(self, problem: Problem) -> Proposal:
        """The best variant of each complexity, offered to the halls of fame; the report holds
        the certified size ``size`` (every complexity up to it enumerated)."""
        if not self.applies(problem):
            return Proposal([], plant=False, report={"size": 0})
        found, k = self.skeletons(problem)
        y = np.ascontiguousarray(problem.y, dtype=np.float64)
        w = np.ascontiguousarray(problem.w, dtype=np.float64)
        weights = np.asarray(problem.weights)
        extra = {BARE: 0, OFFSET: weights[CONST] + weights[ADD], NEGATED: weights[CONST] + weights[SUB],
                 SCALED: weights[CONST] + weights[MUL], LINE: 2 * weights[CONST] + weights[MUL] + weights[ADD]}
        allowed = [v for v in extra if v != NEGATED or SUB in {int(b) for b in problem.binops}]
        best, evaluations = {}, 0
        for c, values in found.values.items():
            G = np.ascontiguousarray(np.array(values))
            losses, consts = np.empty((len(G), 5)), np.empty((len(G), 5, 2))
            fit_variants(G, y, w, int(problem.loss_kind), float(problem.tau), losses, consts)
            evaluations += 5 * len(G)
            for v in allowed:
                cplx = c + int(extra[v])
                m = int(np.argmin(losses[:, v]))
                if cplx <= problem.maxsize and np.isfinite(losses[m, v]) and (
                        cplx not in best or losses[m, v] < best[cplx][0]):
                    best[cplx] = (float(losses[m, v]), *found.trees[c][m], v, *consts[m, v])
        models = [_written(ops, feats, v, a, b) for _, (_, ops, feats, v, a, b) in sorted(best.items())]
        return Proposal(models, evaluations, plant=False, report={"size": k})
