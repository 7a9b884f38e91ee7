"""The factored seeder's forms: a monomial times an additive model,

    ``y = M(x) * (b0 + sum_j b_j f_j(x))``,

with ``M = prod x_i^e_i`` a monomial of the most relevant positive features (exponents -2 to 2,
:func:`~parsimony.symbolic._power._groups`) and the sum one of the additive stage's
(:mod:`parsimony.symbolic._stepwise`). Physical laws often have this shape: ``G*m1*m2*(1/r2 -
1/r1)``, ``m*(u^2 + v^2 + w^2)/2``, ``q*(E + B*v*sin(theta))``; neither a sum of terms, nor a
power law times a function of one monomial, nor a ratio of monomials reaches it.

For a fixed ``M > 0`` the form is the additive stage's problem on the target ``y/M``: the loss of
``y - M*S`` is the loss of ``y/M - S`` on the weights ``w*M^2`` (squared) or ``w*M`` (absolute and
pinball, which are positively homogeneous), so the additive kernel fits the sum exactly for the
fit's own loss, with no new kernel. The work is choosing ``M``: every monomial of the grid is
screened at once by least squares of ``y`` on ``M`` times a small dictionary of each relevant
feature (``1, x, 1/x, x^2``; a batched QR on ``search_rows`` rows), ranked by a Schwarz criterion
(:func:`~parsimony.symbolic._rational._score`'s price per token); the ``beam`` best that leave
less than ``gate`` of what the dictionary alone leaves (``M = 1``: the additive seeder's ground)
run the additive stage. A sum's form is offered when it explains ``min_r2`` of ``y``'s variance
(or ``noisy_r2`` and what it leaves is as rough as noise, :func:`~parsimony.symbolic._noise.white`),
the ``max_forms`` best by the same criterion, offered to the halls of fame after evolution (the
final front polishes and snaps them; the search's path is the one without them). The settings are the fields of
:class:`~parsimony.symbolic.seeds.factored.FactoredSettings`, which says why each has its value.
"""

from __future__ import annotations

import numpy as np

from ..losses import LOSS_SQUARED
from ._evaluator import evaluate, make_workspace
from ._expressions import DIV, MUL, SQUARE, VAR
from ._noise import nearest_rows, white
from ._power import _groups, _PowerWriter
from ._rational import _distinct_best, _score
from ._stepwise import additive_models, stage_data


def _dictionary(Z):
    """The screen's columns on the log-features ``Z`` (rows x features): 1, and each feature, its
    inverse and its square."""
    X = np.exp(Z)
    return np.c_[np.ones(len(Z)), X, 1.0 / X, X * X]


def _tokens(monomials, weights):
    """The token weight of each monomial (rows of exponents) written plainly: each feature, squared
    for a power of two, joined by products (the writer's may be a little less: a ranking's)."""
    E = np.abs(np.asarray(monomials))
    used = (E > 0).sum(axis=1)
    return used * weights[VAR] + (E == 2).sum(axis=1) * weights[SQUARE] + np.maximum(used - 1, 0) * weights[MUL]


def _screen(Z, y, p, monomials, weights, settings):
    """The monomials (rows of exponents over the columns of ``Z``) worth the additive stage, best
    first: each one's share of ``y``'s variance left by least squares on ``M`` times the
    :func:`_dictionary`, ranked by the Schwarz criterion, those leaving under ``gate`` of what
    ``M = 1`` leaves, ``beam`` at most."""
    step = -(-len(y) // settings.search_rows)
    Zs, ys, ps = Z[::step], y[::step], p[::step] / p[::step].sum()
    D = _dictionary(Zs)
    sw = np.sqrt(ps)
    E = np.vstack([np.zeros(Z.shape[1]), np.asarray(monomials, dtype=float)])
    with np.errstate(all="ignore"):
        M = np.exp(Zs @ E.T)  # rows x monomials
        A = (M * sw[:, None]).T[:, :, None] * D[None, :, :]  # monomials x rows x columns
    ok = np.all(np.isfinite(A), axis=(1, 2))
    A[~ok] = 0.0
    Q = np.linalg.qr(A)[0]
    t = ys * sw
    total = float(ps @ (ys - ps @ ys) ** 2)
    left = t @ t - np.einsum("mrk,r->mk", Q, t) ** 2 @ np.ones(D.shape[1])
    share = np.where(ok, np.maximum(left, 0.0) / total, np.inf)
    cost = _tokens(E, weights)
    n = len(ys)
    score = np.log(np.maximum(share, settings.exact)) + np.log(n) / n * settings.token_price * cost
    ranked = [i for i in np.argsort(score[1:], kind="stable") + 1 if share[i] < settings.gate * share[0]]
    return [monomials[i - 1] for i in ranked[:settings.beam]]


def factored_forms(problem, settings):
    """The forms ``M * S`` that qualify (module docstring) on the sample ``(X, y, w)`` of ``problem``
    (a :class:`~parsimony.symbolic.seeds.Problem`), within its ``maxsize``: the
    ``settings.max_forms`` best, as ``(ops, feats, vals)``; and the evaluations the additive stage
    used."""
    s, (X, y, w) = settings, problem.sample
    binops, unops, weights, maxsize, order = problem.binops, problem.unops, problem.weights, problem.maxsize, problem.order
    writer = _PowerWriter(binops, unops, weights)
    positive = np.array([f for f in order if np.all(X[:, f] > 0)], dtype=np.int64)[:s.features]
    if not {MUL, DIV} <= writer.binops or positive.size == 0:
        return [], 0
    Z, p = np.log(X[:, positive]), w / w.sum()
    monomials = _screen(Z, y, p, _groups(len(positive), s.used), weights, s)
    singles, pairs = np.sort(order[:s.single_features]), np.sort(order[:s.pair_features])
    total = float(p @ (y - p @ y) ** 2)
    models, evals, neighbours = [], 0, None
    for e in monomials:
        writer.ops, writer.feats, writer.vals = [], [], []
        writer.monomial(None, [lambda f=int(f): writer.feature(f) for f in positive], [2 * v for v in e])
        head = (np.array(writer.ops, dtype=np.int64), np.array(writer.feats, dtype=np.int64), np.array(writer.vals))
        room = maxsize - int(weights[head[0]].sum()) - int(weights[MUL])
        if room < s.min_room:
            continue
        m = np.exp(Z @ np.asarray(e, dtype=float))
        scaled = w * (m * m if problem.loss_kind == LOSS_SQUARED else m)
        data = stage_data(X.T, y / m, scaled * (w.sum() / scaled.sum()), problem.loss_kind, problem.tau, binops, unops,
                          weights, room)
        out = (np.zeros((s.max_steps, room), dtype=np.int64), np.zeros((s.max_steps, room), dtype=np.int64),
               np.zeros((s.max_steps, room)), np.zeros(s.max_steps, dtype=np.int64))
        count, used = additive_models(data, singles, pairs, s.knobs(), out)
        evals += int(used)
        for k in range(count):
            tree = tuple(np.r_[a[k, :out[3][k]], h, extra] for a, h, extra in
                         zip(out[:3], head, (MUL, 0, 0.0)))
            tree = (tree[0].astype(np.int64), tree[1].astype(np.int64), tree[2].astype(np.float64))
            values = np.empty(len(y))
            evaluate(*tree, len(tree[0]), data.Xt, make_workspace(len(tree[0]), len(y)), values)
            residual = y - values
            share = float(p @ (residual - p @ residual) ** 2 / total)
            if not share <= 1 - s.min_r2:
                if not share <= 1 - s.noisy_r2:
                    continue
                neighbours = nearest_rows(X)[:, 0] if neighbours is None else neighbours
                if not white(residual, w, neighbours, s.white_z):
                    continue
            models.append((_score(share, tree, int(weights[tree[0]].sum()), len(y), s), len(models), tree))
    return _distinct_best(models, s.max_forms), evals
