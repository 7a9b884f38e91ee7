"""The search's one kernel called from Python, :func:`run_phase`, and the final front's
candidates of one hall-of-fame entry.

:func:`run_phase` initialises or evolves a population, or computes the final front's candidates
of an entry (:func:`front_candidates`: the whole polish of the entry, constants optimised
thoroughly, simplified when that costs no accuracy, then of its loss-optimal line for quantile
losses and of its loss-optimal offset). One kernel rather than one call from Python per phase
or step, so that a first fit compiles (optimises and generates machine code for) the code they
share once instead of once per kernel called from Python (see ``parsimony/_compile_accelerator.py``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._numba import assign, njit
from ..losses import LOSS_PINBALL, LOSS_SQUARED
from ._engine import evolve_population, free_offset, init_population, simplify_tree, tree_complexity
from ._evaluator import evaluate, tree_loss
from ._expressions import ADD, CONST, MUL
from ._optimize import optimize_at, optimize_constants
from ._scaling import LINE_STEPS, pinball_line

#: The final front's polish of an entry's constants (:func:`_polish`): 4 reweighted Gauss-Newton
#: steps, then Nelder-Mead from the entry's constants and from ``POLISH_RESTARTS`` perturbed
#: restarts, each of at most ``POLISH_EVALUATIONS`` evaluations (three times the evolution's
#: ``optimizer_evaluations`` and as many restarts as PySR's ``optimizer_nrestarts``): once per
#: entry, so thorough. The result hardly depends on them: on the first 30 of the 60 AI Feynman
#: problems (``benchmarks/sqr_recovery.py --noise 0 --jobs 1 --first 30``) 60 / 120 / 240
#: evaluations and 0 / 2 / 4 restarts all solve the same 25 (median fit 1.81 / 1.89 / 1.87 s CPU
#: with 60 / 120 / 240 evaluations, 1.83 / 1.86 s with 0 / 4 restarts); on Friedman #1 of the quick suite
#: (``benchmarks/sqr_friedman1.py``, 5 folds) test NQL 0.0166 / 0.0166 / 0.0165 at tau .5 and
#: 0.0068 / 0.0068 / 0.0067 at .9 with 60 / 120 / 240, 0.0166 and 0.0068 with 0 and with 4
#: restarts (CPU a fit 1.5-2.0 s in every run: no difference above the loaded machine's noise).
POLISH_EVALUATIONS, POLISH_RESTARTS = 120, 2
#: Past this many rows, the front's constants are polished on every k-th row (at most this many;
#: losses and offsets on all rows): the polish's cost stops growing with the data. Friedman #1 on
#: 100,000 rows (ten uniform features, noise sd 1, tau .5, seed 0; test NQL on 20,000 fresh rows):
#: 3,000 / 10,000 / 30,000 / all rows cost 5.1 / 6.2 / 7.3 / 24.3 s CPU a fit, test NQL 0.01338
#: (another model selected) / 0.01311 / 0.01311 / 0.01311. (At its introduction, commit 2198956,
#: on 1,000,000 rows: all rows / 10,000 / 30,000 cost 90.5 / 45.7 / 51.4 s, test pinball loss
#: 0.40552 / 0.40558 / 0.40568.)
POLISH_ROWS = 10_000
PHASE_INIT, PHASE_EVOLVE, PHASE_FRONT, PHASE_OFFSET, PHASE_REFIT, PHASE_RESCORE, PHASE_MERGE = range(7)  # run_phase

# records (named tuples: numba passes them to kernels, fields by name)
Candidates = namedtuple("Candidates", [
    "ops", "feats", "vals",  # (3, capacity) per candidate, its nodes
    "length",                # (3,) its number of nodes
    "loss",                  # (3,) its loss
    "complexity",            # (3,) its complexity
])
Candidates.__doc__ = "The final front's candidates of one entry, as :func:`front_candidates` writes them."

Front = namedtuple("Front", [
    "ops", "feats", "vals",  # (max_length + 4,) the entry: its first length[0] nodes (set by the caller)
    "length",                # [0] its number of nodes
    "loss",                  # [0] its loss on the data
    "polish",                # [0] False: the entry's one candidate is itself, its loss computed
    "state",                 # the random state of the polish (seeded by the caller, shared by the entries)
    "settings",              # KernelSettings of the free offset (no parsimony: any gain counts)
    "spare",                 # (ops, feats, vals) of maxsize + 2 nodes: the simplifier's output
    "resid",                 # (rows,) residuals of the free offset
    "sub",                   # Data the constants are polished on: the data, or every k-th row past POLISH_ROWS
    "sub_ws",                # the evaluator's workspace of ``sub``
    "out",                   # Candidates: what the call writes
    "positions",             # (max_length + 4,) PHASE_REFIT: the constants it optimises, its first n_positions[0]
    "n_positions",           # [0] their number
    "refit_state",           # PHASE_REFIT's random state (set by the caller)
])
Front.__doc__ = "The final front's working record: the entry the caller offers, and the buffers of its candidates."


@njit
def _polish(ops, feats, vals, loss, data, ws, state, front, weights):
    """Optimise the constants thoroughly (in place), then simplify (into ``front.spare``, three
    arrays of ``ops.shape[0]`` nodes or more) when that does not cost accuracy; returns ``(ops,
    feats, vals, loss)``, ``loss`` on ``data`` as the input ``loss``.

    The constants are optimised on ``front.sub``; when it is a subsample of ``data``, the result
    is kept only when its loss on ``data`` is no higher, then its offset (and scale) constants
    get their loss-optimal values on ``data`` (:func:`free_offset`, no node added), so that an
    expression with an offset stays calibrated on all rows."""
    length = ops.shape[0]
    sub, sub_ws = front.sub, front.sub_ws
    if sub.y.shape[0] == data.y.shape[0]:
        loss = optimize_constants(ops, feats, vals, length, data, ws, state, loss, POLISH_EVALUATIONS,
                                  POLISH_RESTARTS)
    else:
        before = vals.copy()
        optimize_constants(ops, feats, vals, length, sub, sub_ws, state, tree_loss(ops, feats, vals, length, sub, sub_ws),
                           POLISH_EVALUATIONS, POLISH_RESTARTS)
        polished = tree_loss(ops, feats, vals, length, data, ws)  # leaves its values in ws for free_offset
        if polished <= loss:
            loss = polished
        else:  # the subsample's optimum is worse on all rows
            assign(vals, before)  # (slice assignment compiles a shape-error message: seconds)
            tree_loss(ops, feats, vals, length, data, ws)
        loss = free_offset((ops, feats, vals), length, loss, 0, length, data, ws, front.resid, weights,
                           front.settings)[1]
    s_ops, s_feats, s_vals = front.spare
    new_length = simplify_tree(ops, feats, vals, length, s_ops, s_feats, s_vals)
    if new_length < length:
        so, sf, sv = s_ops[:new_length].copy(), s_feats[:new_length].copy(), s_vals[:new_length].copy()
        s_loss = tree_loss(so, sf, sv, new_length, data, ws)
        if s_loss <= loss + 1e-12 * abs(loss):  # the same function up to rounding
            return so, sf, sv, s_loss
    return ops, feats, vals, loss


@njit
def _extended(ops, feats, vals, n_more):
    """Copies of ``(ops, feats, vals)`` with ``n_more`` zero nodes appended."""
    n = ops.shape[0]
    ops2 = np.zeros(n + n_more, dtype=ops.dtype)
    feats2 = np.zeros(n + n_more, dtype=feats.dtype)
    vals2 = np.zeros(n + n_more)
    for i in range(n):
        ops2[i], feats2[i], vals2[i] = ops[i], feats[i], vals[i]
    return ops2, feats2, vals2


@njit
def _record(out, k, ops, feats, vals, loss, weights):
    """Store candidate ``k`` (its nodes, length, loss and complexity) in the :data:`Candidates` ``out``."""
    n = ops.shape[0]
    for i in range(n):
        out.ops[k, i], out.feats[k, i], out.vals[k, i] = ops[i], feats[i], vals[i]
    out.length[k], out.loss[k], out.complexity[k] = n, loss, int(tree_complexity(ops, n, weights))


@njit
def front_candidates(front, data, ws, weights):
    """The final front's candidates from the entry of the :data:`Front` ``front`` (its loss on
    ``data``), in the order they are offered to the front; ``weights`` are the tokens' complexities.

    The candidates are the expression polished (:func:`_polish`); for a quantile loss, its
    exact loss-optimal line ``a + b f`` (:func:`~parsimony.symbolic._scaling.pinball_line`)
    polished, when within ``settings.maxsize`` and finite; its loss-optimal offset
    (:func:`~parsimony.symbolic._engine.free_offset`, with ``front.settings``) polished, when that
    lowers the loss. Every loss is on ``data`` (the constants may be polished on a subsample of
    it, ``front.sub``). Without ``polish``, the one candidate is the expression as it is, with its
    loss computed. They are written into ``front.out``; returns their number.
    """
    n = front.length[0]
    ops, feats, vals = front.ops[:n], front.feats[:n], front.vals[:n]
    out, settings, state = front.out, front.settings, front.state
    Xt, y, w, loss_kind, tau = data.Xt, data.y, data.w, data.loss_kind, data.tau
    if not front.polish[0]:
        _record(out, 0, ops, feats, vals, tree_loss(ops, feats, vals, n, data, ws), weights)
        return 1
    ops, feats, vals, loss = _polish(ops, feats, vals, front.loss[0], data, ws, state, front, weights)
    _record(out, 0, ops, feats, vals, loss, weights)
    if not np.isfinite(loss):
        return 1
    k = 1
    n = ops.shape[0]
    extra = 2 * weights[CONST] + weights[MUL] + weights[ADD]  # of the line's four tokens
    if loss_kind != LOSS_SQUARED and not tree_complexity(ops, n, weights) + extra > settings.maxsize:
        f = np.empty(y.shape[0])
        evaluate(ops, feats, vals, n, Xt, ws, f)
        a, b, total = pinball_line(f, y, w, tau if loss_kind == LOSS_PINBALL else 0.5, LINE_STEPS)
        if np.isfinite(total):
            ops2, feats2, vals2 = _extended(ops, feats, vals, 4)
            ops2[n], ops2[n + 1], ops2[n + 2], ops2[n + 3] = CONST, MUL, CONST, ADD
            vals2[n], vals2[n + 2] = b, a
            scaled_loss = tree_loss(ops2, feats2, vals2, n + 4, data, ws)
            if np.isfinite(scaled_loss):
                ops2, feats2, vals2, scaled_loss = _polish(ops2, feats2, vals2, scaled_loss, data, ws, state, front, weights)
                _record(out, k, ops2, feats2, vals2, scaled_loss, weights)
                k += 1
    ops2, feats2, vals2 = _extended(ops, feats, vals, 2)
    loss = tree_loss(ops2, feats2, vals2, n, data, ws)  # leaves f's values in ws for free_offset
    n2, loss2, _ = free_offset((ops2, feats2, vals2), n, loss, int(tree_complexity(ops, n, weights)), n + 2, data, ws,
                               front.resid, weights, settings)
    if loss2 < loss:
        ops3, feats3, vals3, loss3 = _polish(ops2[:n2].copy(), feats2[:n2].copy(), vals2[:n2].copy(), loss2, data, ws,
                                             state, front, weights)
        _record(out, k, ops3, feats3, vals3, loss3, weights)
        k += 1
    return k


@njit(error_model="numpy")
def run_phase(phase, population, data, ws, search, front):
    """One phase of the search: ``PHASE_INIT`` fills the :data:`~parsimony.symbolic._engine.Population`
    ``population`` (:func:`init_population`, returns 0), ``PHASE_EVOLVE`` runs one iteration of
    it (:func:`evolve_population`, returns the evaluations used), ``PHASE_FRONT`` writes the final
    front's candidates of the entry of ``front`` (:func:`front_candidates`, returns their number;
    ``population`` unused), ``PHASE_OFFSET`` gives that entry its loss-optimal offset
    (:func:`_entry_offset`, returns its length), ``PHASE_REFIT`` optimises some of its constants
    (:func:`_entry_refit`, returns 0), ``PHASE_RESCORE`` scores every member of ``population``
    on ``data`` (:func:`_rescore`), ``PHASE_MERGE`` offers its members to its hall of fame
    (:func:`_merge`: batching's candidates). ``data`` is what they are scored on, ``ws`` the
    evaluator's workspace and ``search`` the :data:`~parsimony.symbolic._engine.Search`.
    """
    if phase == PHASE_INIT:
        init_population(population, data, ws, search)
        return 0
    if phase == PHASE_EVOLVE:
        return evolve_population(population, data, ws, search)
    if phase == PHASE_OFFSET:
        return _entry_offset(front, data, ws, search.grammar.weights)
    if phase == PHASE_REFIT:
        return _entry_refit(front, data, ws)
    if phase == PHASE_RESCORE:
        return _rescore(population, data, ws)
    if phase == PHASE_MERGE:
        return _merge(population, data, ws, front)
    return front_candidates(front, data, ws, search.grammar.weights)


@njit
def _rescore(population, data, ws):
    """Every member's loss on ``data`` (a batch drawn anew); returns 0. (A phase of
    :func:`run_phase`: one call from Python per population, not one per member.)"""
    for i in range(population.length.shape[0]):
        population.loss[i] = tree_loss(population.ops[i], population.feats[i], population.vals[i],
                                       population.length[i], data, ws)
    return 0


@njit
def _merge(candidates, data, ws, front):
    """Batching's sync point for one population: ``candidates`` (a Population record whose
    members are the candidates it collected, one per complexity, ``inf`` loss where none) enter
    its hall of fame ``candidates.hof`` when lower on all rows ``data``; past ``POLISH_ROWS`` rows
    a candidate no better than the entry on ``front.sub`` (the polishing rows) is not scored on
    all rows. Every candidate is then cleared; returns 0. (A phase of :func:`run_phase`.)"""
    hof, sub, sub_ws = candidates.hof, front.sub, front.sub_ws
    screened = sub.y.shape[0] != data.y.shape[0]
    for c in range(candidates.loss.shape[0]):
        if not np.isfinite(candidates.loss[c]):
            continue
        ops, feats, vals, n = candidates.ops[c], candidates.feats[c], candidates.vals[c], candidates.length[c]
        if screened and np.isfinite(hof.loss[c]) and (
                tree_loss(ops, feats, vals, n, sub, sub_ws)
                >= tree_loss(hof.ops[c], hof.feats[c], hof.vals[c], hof.length[c], sub, sub_ws)):
            continue
        full = tree_loss(ops, feats, vals, n, data, ws)
        if full < hof.loss[c]:
            assign(hof.ops[c], ops)
            assign(hof.feats[c], feats)
            assign(hof.vals[c], vals)
            hof.length[c], hof.loss[c] = n, full
    for c in range(candidates.loss.shape[0]):
        candidates.loss[c] = np.inf
    return 0


@njit
def _entry_offset(front, data, ws, weights):
    """The entry of the :data:`Front` ``front`` (of loss ``front.loss[0]``) with its offset (and
    scale) constants at their loss-optimal values on ``data`` (:func:`free_offset`, no node
    added): ``front.vals`` changed in place, the new loss in ``front.loss[0]``; returns its length.
    (A phase of :func:`run_phase` rather than a kernel called from Python: a first fit does not
    compile ``free_offset`` a second time.)"""
    n = front.length[0]
    child = (front.ops, front.feats, front.vals)
    tree_loss(front.ops, front.feats, front.vals, n, data, ws)  # leaves the values in ws for free_offset
    n, front.loss[0], _ = free_offset(child, n, front.loss[0], 0, n, data, ws, front.resid, weights, front.settings)
    return n


@njit
def _entry_refit(front, data, ws):
    """The constants of the entry of the :data:`Front` ``front`` (of loss ``front.loss[0]``) at
    ``front.positions[:front.n_positions[0]]`` optimised on ``data`` (:func:`optimize_at`:
    ``POLISH_EVALUATIONS`` evaluations, no restart, 4 reweighted steps, random state
    ``front.refit_state``), the others as they are: ``front.vals`` changed in place, the new loss
    in ``front.loss[0]``; returns 0. (A phase of :func:`run_phase`, as :func:`_entry_offset`.)"""
    positions = front.positions[:front.n_positions[0]]
    front.loss[0] = optimize_at(positions, front.ops, front.feats, front.vals, front.length[0], data, ws,
                                front.refit_state, front.loss[0], POLISH_EVALUATIONS, 0, 4)
    return 0
