"""SymbolicQuantileRegressor: symbolic quantile regression (SQR) as a scikit-learn regressor."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_int, check_numeric_columns, check_sample_weight, input_feature_names, seed_from
from ..backend import JULIA_INSTALL_HINT, JuliaUnavailableError, resolve_backend
from ..base import QuantileScoreMixin
from ..losses import Pinball, Squared
from ..metrics import coverage
from ._dimensions import feature_dimensions, is_consistent, parse_unit
from ._evaluator import evaluate, make_data, make_workspace, tree_loss
from ._expressions import CONST, DEFAULT_OPERATORS, to_sympy, to_string
from ._front import LAW_COVERAGE_ERRORS, EngineFit, calibration_tolerance, coverage_tolerance, effective_rows, pareto_scores
from ._intervals import REFINE_BUDGET, Box, make_box, refined_enclosure, tight_enclosure
from ._parameters import domain_bounds, fit_plan, validated
from ._pysr import fit_fronts, pysr_available
from ._search import (
    SNAP_PRICE, constant_baseline, fitted_constants, pareto_complexities, search_fronts, simpler_wins, snap_values,
)
from ._units import Units, to_user_units, unit_free_complexity


#: Weight of complexity in ``model_selection="cost"``, per unit of the best constant's loss (a
#: token must lower the loss by 1.6% of the constant's): a lower price buys NQL with tokens.
#: Replayed on stored fronts (``benchmarks/sqr_selection.py --report-only --prices``, 5 folds, tau
#: .5 / .9): on the 10 ``--fast`` sets (7 non-Friedman: paper .0400 / .0243, its parsimony + 1
#: 8.11 / 8.94) 0.010 / 0.012 / 0.016 / 0.020 / 0.025 give NQL .0373 / .0380 / .0396 / .0406 /
#: .0410 at parsimony 8.94 / 8.26 / 7.03 / 6.34 / 5.94 (tau .5), .0181 / .0182 / .0188 / .0193 /
#: .0191 at 9.20 / 8.60 / 7.31 / 5.94 / 5.26 (tau .9): 0.016 is the lowest there within the
#: paper's parsimony + 1 at both levels. On older fronts of 24 non-Friedman sets (the paper's
#: budget; paper + 1 7.03 / 7.57) 0.012 / 0.016 / 0.020 give .0437 / .0457 / .0479 at 9.74 / 8.62
#: / 6.98 (tau .5). On the AI Feynman fronts of the recovery protocol (``sqr_noise_fronts.py``,
#: noise 0 / 0.01 / 0.1) 0.008-0.016 solve 37 / 36 / 25-26 of the 60, 0.02 37 / 35 / 25, 0.032
#: 37 / 34 / 25; of the other 59, 0.008-0.012 35 / 29 / 25, 0.016-0.032 35 / 28 / 25.
SELECTION_PARSIMONY = 0.016
#: How many tokens' worth more a calibrated row may cost than the cheapest row under
#: ``model_selection="cost"``: calibration (training coverage near the level) is worth a few
#: tokens, not a large loss. Replayed on stored fronts (``sqr_selection.py --report-only``, the
#: ``cost`` rule with this constant patched): on 24 non-Friedman PMLB sets (5 folds, the paper's
#: budget) 0 / 1 / 2 / 4 / 8 / 16 give tau .5 NQL .0471 / .0471 / .0471 / .0457 / .0455 / .0456 at
#: parsimony 7.55 / 7.60 / 7.65 / 8.62 / 8.83 / 8.94 and ACE .072 / .070 / .070 / .059 / .052 / .049
#: (tau .9 NQL .0208-.0210 throughout); on the 10 ``--fast`` sets tau .5 NQL .0405 / .0403 / .0399
#: / .0396 / .0396 / .0396 (ACE .096 -> .076 from 0 to 4, flat beyond); the 9 ``fri_c*`` sets do
#: not move; on the 60 AI Feynman fronts (noise 0 / 0.01 / 0.1) 37 / 36 / 25 solved at every
#: value (the other 59: 35 / 28 / 25, 26 at noise 0.1 with 0 or 1). 4 is where NQL stops falling.
CALIBRATION_TOKENS = 4
#: Where an admitted expression's enclosure over the domain must lie: within this many ranges of
#: the training targets beyond them (a formula that reaches twenty times the targets' range away
#: from them somewhere on the box is not one to deploy). Not ten: a true law reaches beyond its
#: sampled targets at the box's corners, which rows rarely reach (on the 60 AI Feynman problems,
#: 1,000 uniform rows: up to 13.0 ranges for -m q^4/(8 eps^2 h^2 n^2) in 5 features, 8.6 next).
ENCLOSURE_SPANS = 20.0
#: Pieces the enclosures reported in ``equations_`` may split the domain into (once per front
#: row, so the cost is small): on 1,639 random expressions of the default operators (up to 15
#: tokens, 3 features on [1, 5], finite on a 41^3 grid) the reported width over the grid's range,
#: at the 90th percentile, is 1.03 / 1.02 / 1.01 / 1.00 at 16 / 64 / 256 / 1024 pieces, for 6 /
#: 10 / 29 / 170 us a call (median 1.00 at every budget).
REPORT_BUDGET = 256
#: A row whose loss is at most this fraction of the best constant's reproduces the targets (up to
#: rounding); ``model_selection="cost"`` takes the simplest such row that has at least
#: ``ROWS_PER_TOKEN`` (effective) rows per unit of complexity (fewer rows than that, and a formula
#: with a constant per few rows can reproduce any targets). Replayed on the 60 AI Feynman fronts of
#: the recovery protocol (1,000 rows; noise 0 / 0.01 / 0.1): EXACT_LOSS 1e-10 to 1e-4 all solve
#: 37 / 36 / 25, 1e-12 35 / 36 / 25 (rounding of a law's fit exceeds it: two exact laws lost); on
#: the other 59's fronts 1e-12 loses one (35 -> 34). ROWS_PER_TOKEN 0 to 40 moves nothing there
#: (1,000 rows are over 30 a token) nor on the PMLB fronts (no row reproduces real targets).
EXACT_LOSS, ROWS_PER_TOKEN = 1e-9, 4
#: Fitted constants a row within the noise may have and still replace the cost's choice as the law
#: (``select_equation``'s noise counterpart): its scale. Replayed on stored fronts of the recovery
#: protocol (``benchmarks/sqr_noise_fronts.py``; the 60 at noise 0 / 0.01 / 0.1, the other 59 at
#: 0 / 0.01) and of ``benchmarks/sqr_selection.py`` (24 non-Friedman and 9 fri_c* PMLB sets, the
#: --fast ten; 5 folds, tau .5 and .9): 0 -> the 60 37 / 37 / 28, the 59 37 / 31, no PMLB pick
#: moved; 1 -> 37 / 37 / 29 (II_11_3 at 0.1), 37 / 33 (I_13_4, I_24_6 at 0.01), one PMLB pick of
#: 340 moved (210_cloud tau .9 fold 1, NQL .0138 -> .0113); 2 -> the 59 37 / 33, non-Friedman
#: parsimony 8.48 -> 9.16 (tau .5) and 8.11 -> 9.05 (.9).
LAW_CONSTANTS = 1
#: The most a token must lower a row's loss by under ``model_selection="cost"``, relative to that
#: loss: below ``token_price / RELATIVE_TOKEN_PRICE`` of the constant's loss the cost counts the
#: loss on a log scale (as the Schwarz criterion does), so that where every row explains nearly all
#: of the constant's loss a large relative gain is not lost to a token (on 560_bodyfat, 252 rows,
#: ``495.17/Density - 450.16`` has 35% less loss than ``487.79 - 444.08*Density``, 1.4% of the
#: constant's, for one token). Above that scale the cost is unchanged. Replayed on stored fronts
#: (``sqr_selection.py``, 5 folds, tau .5 / .9; ``sqr_noise_fronts.py``, the recovery protocol):
#: on the 7 non-Friedman ``--fast`` sets 0.05 / 0.1 / 0.2 / off give NQL .0396 / .0396 / .0396 /
#: .0396 at parsimony 7.03 throughout (tau .5) and .0183 / .0187 / .0187 / .0187 at 7.89 / 7.31 /
#: 7.31 / 7.31 (tau .9), the ``fri_c*`` three unmoved at 0.1; on 8 other non-Friedman sets
#: (542, 523, 560, 663, 505, 519, 1028, 1029) .0387 / .0394 / .0394 / .0398 at 8.93 / 8.27 /
#: 8.27 / 7.95 and .0183 / .0185 / .0186 / .0187 at 9.25 / 8.62 / 8.33 / 8.22: at 0.1 only
#: 560_bodyfat, 663_rabe_266 and 505_tecator move, each to a lower NQL (.0028 -> .0018, .0185 ->
#: .0164; .9: .0029 -> .0024, .0065 -> .0058); fitted anew, where the pick also chooses between
#: the two searches, .0398 / .0187 at 7.95 / 8.22 -> .0390 / .0183 at 8.50 / 8.93 (the --fast
#: seven identical). The 60 AI Feynman problems: 38 / 38 / 34 solved at
#: noise 0 / 0.01 / 0.1 at every value (0.1 moves 5 / 1 / 0 unsolved picks to longer rows); the
#: other 59: 37 / 27 at 0.01 / 0.1 at every value (0.1 moves one unsolved pick at 0.01).
RELATIVE_TOKEN_PRICE = 0.1
#: How far (in the Schwarz criterion times the rows, i.e. half the Bayesian information criterion)
#: a row fitting at most :data:`LAW_CONSTANTS` constants may lie above the lowest row at least as
#: complex as the cost's choice and still be the law within the noise: 1, a BIC difference of 2,
#: evidence "not worth more than a bare mention" (Kass and Raftery, 1995). Replayed on the stored
#: fronts above: 0 (the rule on one row) / 1 move no PMLB pick and no verdict of the 60 or the 59
#: (1 moves one unsolved pick of the 59 at 0.1: ``x2`` -> a 16-token row fitting one constant);
#: 3 and 10 move 2 and 7 unsolved picks of the 59, none to a solution. Also the bound within which the
#: dimensional prior replaces an inconsistent choice by a consistent row (:func:`units_choice`):
#: replayed on the 60's fronts with their units (``sqr_noise_fronts.py --units``, noise 0.01 / 0.1),
#: 0, 1 and 3 give the same verdicts, 37 / 34, as without units; no bound (the consistent rows only)
#: 36 / 32.
LAW_EVIDENCE = 1.0


def select_equation(equations: pd.DataFrame, model_selection: str, quantile=None, tolerance=None,
                    squared_loss=False, n_samples=None, baseline=None, token_price=SELECTION_PARSIMONY,
                    fitted_constants=None, unit_free=None) -> int:
    """Row position chosen from a Pareto front by a model-selection rule.

    ``"cost"``: the lowest ``loss / baseline + token_price * complexity``, with ``baseline`` the
    training loss of the best constant: the search's own cost with a parsimony five times the
    search's (0.0032) (:data:`SELECTION_PARSIMONY`, the default ``token_price``), so a token must
    lower the loss by 1.6% of the constant's loss. Unlike the score, which looks at one step of the front at a
    time, the cost weighs every row against every other, in units of the constant's loss
    whatever the scale of the target or the level. With ``unit_free`` (per row, its
    :func:`~parsimony.symbolic._units.unit_free_complexity`; the estimator passes it) the cost
    counts those tokens instead of the row's own: each coefficient its terms need with every
    feature and the target on a generic scale (a shift that enters linearly folded into the
    constant term), so that the choice does not change when they are rescaled (on standardised
    Friedman #1 ``5 x4`` is ``1.44 x4``, and a row writing it ``x4`` saved 2 tokens for 1% of
    the constant's loss; on [0, 1] it cannot). At the accurate end of a front the cost counts the
    loss on a log scale, so a token never has to buy more than :data:`RELATIVE_TOKEN_PRICE` of a
    row's own loss (:func:`_loss_scale`). ``"accuracy"``: lowest loss; ``"score"``:
    highest score (steepest drop of log-loss per unit of complexity); ``"best"``: highest score
    among rows whose loss is within a factor of the lowest: PySR's 1.5 for a squared loss,
    ``sqrt(1.5)`` (the same factor on the scale of the residuals) for the pinball and absolute
    losses, which grow linearly in the residuals; ``"elbow"``: the point farthest below the
    chord joining the simplest and the most accurate expressions, on axes scaled to [0, 1];
    ``"sic"``: among the rows ``"best"`` admits, the lowest Schwarz criterion of quantile
    regression (Koenker and Machado, 1999), ``log(loss) + complexity * log(n) / (2 n)`` with
    ``n = n_samples`` (``log(loss) / 2`` for a squared loss): the complexity is worth less the
    more rows support it, so more data buys longer formulas.

    With ``quantile`` and ``tolerance`` (and a ``coverage`` column), a row is calibrated when its
    training coverage is within ``tolerance`` of ``quantile`` (a pinball-optimal expression with
    a free offset is, up to ties). ``"best"`` and ``"sic"`` then choose among the calibrated rows
    (all rows when none is); ``"cost"`` takes the cheapest calibrated row when its cost exceeds
    the cheapest row's by at most :data:`CALIBRATION_TOKENS` (four) tokens' worth, else the
    cheapest row: calibration is worth a few tokens, not a large loss of accuracy. For it a row
    that reproduces the targets up to rounding (loss at most :data:`EXACT_LOSS` times ``baseline``)
    is calibrated, whatever its coverage (which then only counts ties), and so is one without
    fitted constants (``fitted_constants``) within :data:`LAW_COVERAGE_ERRORS` (three) binomial
    standard errors of ``quantile``: nothing fitted it to cover the level; and with at least
    :data:`ROWS_PER_TOKEN` rows (``n_samples``) per unit of its complexity, the simplest such row
    is chosen whatever its cost: it is the targets' law, not a fit of them (a cheaper
    approximation of ``omega_0/(1 - v/c)`` is still an approximation).

    Its noise counterpart, with ``fitted_constants`` (per row, how many of its constants were
    fitted: :func:`fitted_constants`, counted in the search's units, see :func:`user_front`),
    after the tie-break below: among the rows at least as complex as the choice that fit at most
    :data:`LAW_CONSTANTS` (one) constant, are calibrated and have :data:`ROWS_PER_TOKEN` rows per
    unit of complexity, the one of lowest Schwarz criterion (as ``"sic"``'s) replaces the choice
    when within :data:`LAW_EVIDENCE` ``/ n`` of the lowest row at least as complex as the choice,
    whatever that row fits. A row without fitted constants was not fitted to these targets, so
    its training loss is an honest estimate of its loss on new data; one whose one constant is
    its scale (``q/(4 pi eps r^2)``) is a law up to its units; when no longer row lowers it by
    more than the Schwarz price of the extra tokens (up to that evidence), the data cannot tell
    it from the law that generated them (``rho_0/sqrt(1 - v^2/c^2)`` at noise 0.01 x RMS(y):
    0.30 of ``1.031*rho_0``'s loss, 0.42% of the constant's a token).

    And with ``unit_free`` as well, a tie-break: rows of the same unit-free complexity differ
    only in what the user's units let them drop, so the cost decides between them by their
    losses alone, however small the gap (``x0*x1 - 0.130`` and ``1.0025*x0*x1 - 0.16`` at noise
    0.1 x RMS(y): 7e-5 of the loss apart). Among such rows written with fewer tokens and fewer
    fitted constants (calibrated when the choice is), the one of lowest Schwarz criterion on
    its fitted constants, ``log(loss) + k log(n) / (2 n)``, replaces the choice when it is at
    most the choice's: the extra constants lower the loss by less than the data resolve
    (0.35% of it a constant at 1,000 rows). On the stored fronts of the 24 non-Friedman and 9
    ``fri_c*`` PMLB sets and of quick-suite Friedman #1 in three units (5 folds, tau .5 and
    .9) no mean NQL moves at four decimals (parsimony 8.73 -> 8.68 at tau .5); on the 60 AI
    Feynman problems it decides I_12_5 at noise 0.1 (1.0025*x0*x1 - 0.16 -> x0*x1 - 0.130).
    """
    loss = equations["loss"].to_numpy(dtype=float)
    score = equations["score"].to_numpy(dtype=float)
    if model_selection == "accuracy" or len(loss) == 1:
        return int(np.argmin(loss))
    if model_selection == "score":
        return int(np.argmax(score))
    c = equations["complexity"].to_numpy(dtype=float)
    calibrated = np.ones(len(loss), dtype=bool)
    if quantile is not None and tolerance is not None and "coverage" in equations:
        miss = np.abs(equations["coverage"].to_numpy(dtype=float) - quantile)
        calibrated = miss <= tolerance
        if model_selection == "cost" and fitted_constants is not None and n_samples is not None and n_samples > 0:
            unfitted = _per_row(fitted_constants, loss, "fitted_constants") == 0
            calibrated |= unfitted & (miss <= coverage_tolerance(quantile, n_samples, n_samples, LAW_COVERAGE_ERRORS))
    if model_selection == "cost":
        return _cheapest(loss, c, calibrated, baseline, token_price, n_samples, squared_loss,
                         fitted_constants, unit_free)
    if model_selection in ("best", "sic"):
        ok = loss <= (1.5 if squared_loss else np.sqrt(1.5)) * loss.min()
        if (ok & calibrated).any():
            ok &= calibrated
        rows = np.flatnonzero(ok)
        if model_selection == "best":
            return int(rows[np.argmax(score[rows])])
        criterion = _schwarz_criterion(loss, c, n_samples, squared_loss, "model_selection='sic' needs")
        return int(rows[np.argmin(criterion[rows])])
    x = (c - c[0]) / max(c[-1] - c[0], 1e-300)
    span = loss[0] - loss.min()
    y = (loss - loss.min()) / span if span > 0 else np.zeros_like(loss)
    gain = 1.0 - x - y  # proportional to the distance below the chord from (0, 1) to (1, 0)
    return int(np.argmax(gain)) if gain.max() > 1e-12 else int(np.argmin(loss))


def _cheapest(loss, c, calibrated, baseline, token_price, n_samples, squared_loss, fitted_constants,
              unit_free) -> int:
    """Row chosen by ``model_selection="cost"`` (see :func:`select_equation`)."""
    if baseline is None or not baseline > 0:
        raise ValueError(f"model_selection='cost' needs the best constant's loss baseline > 0, got {baseline!r}")
    if not token_price >= 0:
        raise ValueError(f"token_price must be a number >= 0, got {token_price!r}")
    if unit_free is not None:
        unit_free = _per_row(unit_free, c, "unit_free")
    supported = n_samples is not None and n_samples >= ROWS_PER_TOKEN * c  # rows enough to resolve a relative gain
    cost = _loss_scale(loss / baseline, token_price, supported) + token_price * (c if unit_free is None else unit_free)
    reproduces = loss <= EXACT_LOSS * baseline  # the targets up to rounding
    exact = reproduces & supported
    if exact.any():  # the targets' law, not a fit of them: no approximation is cheaper
        return int(np.flatnonzero(exact)[np.argmin(c[exact])])
    choice = int(np.argmin(cost))
    calibrated = calibrated | reproduces  # exact up to rounding: coverage is only ties
    if calibrated.any():
        rows = np.flatnonzero(calibrated)
        best = int(rows[np.argmin(cost[rows])])
        if cost[best] <= cost[choice] + CALIBRATION_TOKENS * token_price:
            choice = best
    if unit_free is not None and fitted_constants is not None and n_samples is not None:
        choice = _fewer_written(choice, loss, c, unit_free, _per_row(fitted_constants, c, "fitted_constants"),
                                calibrated, n_samples, squared_loss)
    return _law_within_noise(choice, loss, c, calibrated, fitted_constants, n_samples, squared_loss)


def _law_within_noise(choice, loss, c, calibrated, fitted_constants, n_samples, squared_loss) -> int:
    """``choice``, or the row of lowest Schwarz criterion among those at least as complex as it that
    fit at most :data:`LAW_CONSTANTS` constants, are calibrated and have :data:`ROWS_PER_TOKEN` rows
    per unit of complexity, when its criterion is within :data:`LAW_EVIDENCE` / n of the lowest of
    all the rows at least as complex as ``choice`` (see :func:`select_equation`)."""
    if fitted_constants is None or n_samples is None:
        return choice
    fitted = _per_row(fitted_constants, loss, "fitted_constants")
    criterion = _schwarz_criterion(loss, c, n_samples, squared_loss, "fitted_constants needs")
    longer = c >= c[choice]
    laws = np.flatnonzero(longer & (fitted <= LAW_CONSTANTS) & calibrated & (n_samples >= ROWS_PER_TOKEN * c))
    if laws.size == 0:
        return choice
    law = int(laws[np.argmin(criterion[laws])])
    if criterion[law] <= criterion[longer].min() + LAW_EVIDENCE / n_samples:
        return law
    return choice


def _loss_scale(relative, token_price, supported=True) -> np.ndarray:
    """A row's loss relative to the constant's as ``model_selection="cost"`` counts it: itself down to
    ``r0 = token_price / RELATIVE_TOKEN_PRICE``, then ``r0 (1 + log(relative / r0))`` (continuous,
    with a continuous slope), so that below ``r0`` a token is worth :data:`RELATIVE_TOKEN_PRICE` of
    the row's loss. Where every row explains nearly all of the constant's loss, a token's 1.6% of
    it would be a large share of a row's own: on 560_bodyfat ``495.17/Density - 450.16`` lowers
    the line's loss by 35% for one token, 1.4% of the constant's (the Schwarz criterion, on log
    loss, prefers it by 40 tokens' worth). A loss below :data:`EXACT_LOSS` counts as that
    (rounding). Rows not ``supported`` (fewer than :data:`ROWS_PER_TOKEN` rows per unit of
    complexity, or ``n_samples`` not given: such a formula can reproduce any targets) keep the
    constant's scale."""
    r0 = token_price / RELATIVE_TOKEN_PRICE
    if not r0 > 0:
        return relative
    log_scale = r0 * (1.0 + np.log(np.maximum(relative, EXACT_LOSS) / r0))
    return np.where((relative >= r0) | ~np.asarray(supported, dtype=bool), relative, log_scale)


def _fewer_written(choice, loss, c, unit_free, fitted, calibrated, n_samples, squared_loss) -> int:
    """``choice``, or the row of lowest Schwarz criterion on fitted constants among the rows of the
    same unit-free tokens written with fewer tokens and fewer fitted constants (calibrated when
    ``choice`` is), whose loss exceeds ``choice``'s by less than the Schwarz price of the
    constants ``choice`` fits more (see :func:`select_equation`)."""
    criterion = _schwarz_criterion(loss, fitted, n_samples, squared_loss, "unit_free needs")
    rows = np.flatnonzero((c < c[choice]) & (unit_free == unit_free[choice]) & (fitted < fitted[choice])
                          & (calibrated | ~calibrated[choice]) & (criterion <= criterion[choice]))
    return int(rows[np.lexsort((c[rows], criterion[rows]))[0]]) if rows.size else choice


def _per_row(counts, loss, name) -> np.ndarray:
    """``counts`` as an array, one per row of the front (a ValueError naming ``name`` if not)."""
    counts = np.asarray(counts)
    if counts.shape != loss.shape:
        raise ValueError(f"{name} must give one count per row of the front ({len(loss)}), got shape {counts.shape}")
    return counts


def _schwarz_criterion(loss, c, n_samples, squared_loss, who: str) -> np.ndarray:
    """Schwarz criterion of quantile regression per row, ``log(loss) + c log(n) / (2n)`` (``log(loss) / 2``
    for a squared loss); ``who`` starts the error when ``n_samples`` is not above 1."""
    if n_samples is None or not n_samples > 1:
        raise ValueError(f"{who} n_samples > 1, got {n_samples!r}")
    with np.errstate(divide="ignore"):
        return (0.5 if squared_loss else 1.0) * np.log(loss) + c * np.log(n_samples) / (2.0 * n_samples)


def certified_box(lo, hi, y) -> Box:
    """The :data:`~parsimony.symbolic._intervals.Box` of features in ``[lo, hi]`` whose admitted
    expressions' enclosures lie within :data:`ENCLOSURE_SPANS` times the range of the targets
    ``y`` beyond them."""
    low, high = float(np.min(y)), float(np.max(y))
    span = high - low if high > low else max(abs(low), abs(high)) or 1.0
    return make_box(lo, hi, low - ENCLOSURE_SPANS * span, high + ENCLOSURE_SPANS * span)


def user_front(front, units, X, y, w, loss, weights, box, certify=True, dimensions=None) -> list:
    """The front found in the search's ``units``, written in the user's (:func:`to_user_units`),
    its losses recomputed on ``(X, y, w)``, each row's ``enclosure`` of the prediction over
    ``box`` added (``(nan, nan)`` where not certified), the rows not certified dropped when
    ``certify``, the rest kept Pareto-optimal.

    Rows of the search's front that the user's units write with as many tokens are compared as
    the search compares entries of one complexity (:func:`~parsimony.symbolic._search.simpler_wins`),
    on their constants in the search's units: the one with fewer fitted constants wins when the
    data cannot tell it from the other. A law the search writes ``x0*x1/(x2 + 1)`` carries a
    unit constant in other units (``1e-7*x0*x1/(x2 + 1)``), where its refit twin
    ``0.998*x0*x1/(x2 + 1)``, 2 tokens more in the search's units, ties it in tokens; by loss
    alone the twin took the law's place on the front in every units but the search's own, so the
    model found depended on the units of ``X`` and ``y``. For the same reason each row's
    ``fitted`` (what model selection counts, :func:`fitted_constants`) is counted in the search's
    units: the law's 1e-7 above is the units', not a fit. With ``dimensions`` (the features' and
    the target's, :func:`dimensions_of`) each row's ``consistent`` is :func:`dimensionally_consistent`."""
    Xt = np.ascontiguousarray(X.T)
    data = make_data(Xt, y, w, loss)
    price, n_eff = SNAP_PRICE * constant_baseline(y, w, loss), effective_rows(w)
    rows, found = {}, {}  # found: per complexity, the kept row as the search wrote it, its loss the user's
    for row in front:
        ops, feats, vals = to_user_units(row["ops"], row["feats"], row["vals"], units, weights)
        n = len(ops)
        ok = refined_enclosure(ops, feats, vals, n, box.lo, box.hi, box.low, box.high, REFINE_BUDGET)[2]
        if certify and not ok:
            continue
        low, high = tight_enclosure(ops, feats, vals, n, box.lo, box.hi, REPORT_BUDGET) if ok else (np.nan, np.nan)
        value = tree_loss(ops, feats, vals, n, data, make_workspace(n, len(y)))
        # (the engine's own count where the search's formula is written as it is)
        cplx = int(row["complexity"]) if ops is row["ops"] else int(weights[ops].sum())
        entry = (float(value), row["ops"], row["feats"], row["vals"])
        if np.isfinite(value) and (cplx not in rows or simpler_wins(entry, found[cplx], price, data)):
            found[cplx] = entry
            rows[cplx] = {"complexity": cplx, "loss": float(value), "ops": ops, "feats": feats, "vals": vals,
                          "enclosure": (float(low), float(high)),  # (the exhaustive proof holds in the search's units)
                          "certified": bool(row.get("certified", False)) and units.is_identity,
                          "fitted": fitted_constants(row["ops"], row["vals"], n_eff),
                          "consistent": dimensionally_consistent(row, units, dimensions, n_eff)}
    if not rows:  # nothing certified: the best constant
        value = loss.optimal_constant(y, w)
        rows[int(weights[CONST])] = {"complexity": int(weights[CONST]), "loss": float(loss.baseline(y, w)),
                                     "ops": np.array([CONST]), "feats": np.zeros(1, dtype=np.int64),
                                     "vals": np.array([value]), "enclosure": (value, value),
                                     "fitted": fitted_constants(np.array([CONST]), np.array([value]), n_eff)}
        row = rows[int(weights[CONST])]
        row["consistent"] = dimensionally_consistent(row, Units.identity(X.shape[1]), dimensions, n_eff)
    keep = pareto_complexities({c: r["loss"] for c, r in rows.items()}, constant_baseline(y, w, loss))
    return [rows[c] for c in keep]


def dimensionally_consistent(row, units, dimensions, rows) -> bool | None:
    """Whether a front ``row`` (as the search wrote it, in its ``units``) is dimensionally consistent
    with ``dimensions`` (``(features, target)``, :func:`dimensions_of`; None: not known) by
    :func:`~parsimony.symbolic._dimensions.is_consistent`, its simple constants (those
    :func:`fitted_constants` does not count as fitted on ``rows`` effective rows) pure numbers.
    The search's units divide features and target by powers of ten, which changes no dimension;
    where they also shift a feature, every constant may carry a dimension (the shift is its
    feature's quantity, and the search's formula does not tell it from the others)."""
    if dimensions is None:
        return None
    shifted = units.x_shift is not None
    return is_consistent(row["ops"], row["feats"], row["vals"], dimensions[0], dimensions[1],
                         lambda v: shifted or v not in snap_values(v, rows))


def dimensions_of(feature_units, target_units, n_features, feature_names):
    """``(feature dimensions, target dimension or None)`` of the estimator's ``feature_units`` and
    ``target_units``, or None when no unit is given (a ValueError for ``target_units`` alone)."""
    if feature_units is None:
        if target_units is not None:
            raise ValueError("target_units needs feature_units: the target's dimension is checked against the "
                             "features'")
        return None
    target = None if target_units is None else parse_unit(target_units, "target_units")
    return feature_dimensions(feature_units, n_features, feature_names), target


@dataclass(frozen=True)
class Level:
    """What model selection weighs on one quantile level's front ``frame`` (see :func:`select_equation`)."""

    frame: pd.DataFrame
    quantile: float | None  # None for a loss other than the pinball loss
    tolerance: float
    squared_loss: bool
    n_samples: float
    baseline: float
    fitted: np.ndarray  # per row, its fitted constants
    unit_free: np.ndarray  # per row, its unit-free complexity

    def select(self, rows, model_selection) -> int:
        """The row ``model_selection`` takes from ``rows`` of the front alone (a subset of a front
        is a front: its scores computed anew)."""
        sub = self.frame.iloc[rows].reset_index(drop=True)
        if len(rows) < len(self.frame):
            sub["score"] = pareto_scores(sub["complexity"].to_numpy(), sub["loss"].to_numpy(dtype=float))
        return int(rows[select_equation(sub, model_selection, self.quantile, self.tolerance,
                                        squared_loss=self.squared_loss, n_samples=self.n_samples,
                                        baseline=self.baseline, fitted_constants=self.fitted[rows].tolist(),
                                        unit_free=self.unit_free[rows].tolist())])


def units_choice(frame, choice, pick, unit_free, n_samples, squared_loss) -> tuple:
    """The row model selection takes under the dimensional prior, and why (``units_status_``), from
    a front ``frame`` with a ``consistent`` column, the row ``choice`` selected from all rows, and
    ``pick(rows)``, the row selected from ``rows`` alone: ``choice`` when it is consistent
    (``"consistent"``) or when no row is (``"none consistent"``); else the pick among the
    consistent rows when the data cannot tell it from ``choice``: its Schwarz criterion (log loss
    plus its ``unit_free`` complexity times ``log(n) / 2n``, as ``"sic"`` counts it) at most
    :data:`LAW_EVIDENCE` ``/ n`` above ``choice``'s (``"consistent"``); else ``choice``
    (``"inconsistent row better"``: the data overrule the prior, as where only an inconsistent row
    reproduces the targets, or the consistent rows are much worse). The prior decides between rows
    the loss cannot (``x0/(1 - x1/x2^2)`` beside ``x0/sqrt(1 - x1^2/x2^2)`` under noise), never
    against a clear difference of loss."""
    ok = frame["consistent"].to_numpy(dtype=bool)
    if ok[choice]:
        return choice, "consistent"
    if not ok.any():
        return choice, "none consistent"
    alternative = pick(np.flatnonzero(ok))
    criterion = _schwarz_criterion(frame["loss"].to_numpy(dtype=float), np.asarray(unit_free, dtype=float),
                                   n_samples, squared_loss, "the dimensional prior needs")
    if criterion[alternative] <= criterion[choice] + LAW_EVIDENCE / n_samples:
        return alternative, "consistent"
    return choice, "inconsistent row better"


def search_units(X, y, w, rescale, engine) -> list:
    """The units the search runs in (``rescale``, :class:`Units`): one, or with ``rescale=True``
    on the native engine and a feature that takes negative values, two: the features as scaled
    and shifted to start near 0 (:meth:`Units.of`). Where a signed feature's origin lies is the
    law's, not the data's: ``sin(x) cos(y)`` on [-1, 1] is simple only unshifted, Friedman #1
    on standardised features only shifted; each is searched, and the front whose pick is better
    by the Schwarz criterion kept (:func:`chosen_fit`)."""
    if not rescale:
        return [Units.identity(X.shape[1])]
    plain = Units.of(X, y, w, shift=False)
    if rescale == "scale" or engine != "native":  # (the shift serves the native additive stage's products)
        return [plain]
    shifted = Units.of(X, y, w, shift=True)
    return [plain] if shifted.x_shift is None else [plain, shifted]


def chosen_fit(fits, picked) -> EngineFit:
    """One :class:`EngineFit` of the searches ``fits`` of the same levels, their fronts in the
    user's units: per level, the front of the search whose selected row is best by
    ``picked[i][k]`` (the Schwarz criterion of search ``i``'s pick at level ``k``, lower is
    better; the first search on a tie). ``states`` has one entry per search (warm starts)."""
    choice = [int(np.argmin(level)) for level in zip(*picked)]
    sizes = [fit.certified_sizes or [0] * len(choice) for fit in fits]
    statuses = ["time_limit" if "time_limit" in level else "completed" for level in zip(*(f.statuses for f in fits))]
    return EngineFit([fits[j].fronts[k] for k, j in enumerate(choice)], statuses,
                     sum(fit.n_evaluations for fit in fits), [fit.states for fit in fits],
                     None if all(fit.certified_sizes is None for fit in fits)
                     else [sizes[j][k] for k, j in enumerate(choice)])


def _subsample(X, y, w, plan):
    """At most ``plan.max_samples`` rows, drawn without replacement from the plan's generator."""
    if plan.max_samples is None or len(y) <= plan.max_samples:
        return X, y, w
    rows = np.sort(plan.rng.choice(len(y), size=plan.max_samples, replace=False))
    return X[rows], y[rows], w[rows]


class SymbolicQuantileRegressor(QuantileScoreMixin, RegressorMixin, BaseEstimator):
    """Symbolic quantile regression: readable formulas for conditional quantiles.

    Searches expressions over the given operators by regularized evolution (PySR's algorithm,
    on a native numba engine) to minimise the pinball loss at each quantile level, keeps the
    best expression per complexity (the Pareto front, ``equations_``) and selects one of them.
    ``score`` is the D^2 pinball score at the fitted levels (R^2 for ``loss="squared"``).

    Parameters
    ----------
    quantile : float or sequence of float, default=0.5
        Quantile level(s) in (0, 1). Several levels fit one front each; ``predict`` then
        returns one column per level (in the given order).
    operators : sequence of str, default=the paper's Table 1 set
        Operator names among add sub mul div pow square cube sqrt exp log sin cos abs neg
        (``+ - * / ^`` accepted).
    maxsize : int or "auto", default="auto"
        Largest complexity (sum of token weights) of an expression. "auto" is 30 where the
        additive stage runs and the SQR paper's 20 elsewhere (fewer than 100 distinct rows, the
        Julia engine, ``additive_stage=False``): the paper's 20 leaves no room for additive shapes
        such as Friedman #1's ``a sin(b x0 x1) + c (x2 - d)^2 + e x3 + f x4 + g`` (28 tokens),
        which the stage builds, while without its sums the extra room only lets evolution fit
        noise on small data. The front and the model selection still prefer shorter expressions
        where they are as accurate.
    complexity_of_operators : dict or None, default=None
        Token weights (keys: operator names, ``"feature"``, ``"constant"``); missing keys take
        :data:`parsimony.symbolic.TOKEN_COMPLEXITY` (the paper's Table 1 weights).
    niterations, populations, population_size, ncycles_per_iteration : int
        Search budget: each of ``niterations`` rounds evolves every population for
        ``ncycles_per_iteration`` cycles (each replacing about ``population_size / 10``
        members). The defaults (the paper's 40 iterations, on fewer and shorter populations than
        PySR's) fit in about half a second of CPU on a few hundred rows or, with ``batch_size``,
        on more.
    parsimony : float, default=0.0032
        Weight of complexity in the selection cost (relative to the loss of the best constant).
    adaptive_parsimony_scaling : float, default=20.0
        Strength of the penalty on over-represented complexities in tournaments.
    feature_relevance : float in [0, 1] or "auto", default="auto"
        Share of the feature draws of mutations made in proportion to each feature's squared
        rank correlation with the target; the rest are uniform. 0 draws uniformly, as PySR does;
        a positive share finds the few relevant columns of wide data sooner (native engine only:
        the Julia engine raises for a positive share). "auto" is 0.5 on the native engine and 0
        on the Julia engine.
    additive_stage : bool or "auto", default="auto"
        Before evolution, build additive models ``a + sum_t c_t g_t`` by forward stepwise
        selection: terms are features, products and ratios of the six most relevant features, and
        the unary operators of ``operators`` on them with fitted inner constants (``sin(a*x0*x1 + b)``,
        ``(x2 - b)^2``), the outer coefficients exact for the loss; each step's sum enters the
        hall of fame and the populations (a fraction of a second on 1,000 rows and 50 features;
        at most 1,000 rows are used; none on fewer than 50 distinct rows, where such sums fit
        noise). "auto" is True on the native engine and False on the Julia engine, which raises
        for True. False turns off every seeder of ``stages``.
    stages : "auto" or sequence of str, default="auto"
        The seeders that run before evolution when ``additive_stage`` is on, among
        :data:`parsimony.symbolic.seeds.STAGES`: ``"additive"`` (the sums above),
        ``"rational"`` (transformed ratios of monomials for data a closed formula nearly
        reproduces), ``"power"`` (a power law times a power of ``exp``, ``1 + u``, ``exp(u) - 1``,
        ``exp(u) + 1``, ``sin`` or ``cos`` of one monomial ``u``, for one-signed data), ``"factored"`` (a
        monomial of positive features times one of the additive stage's sums, ``m*(u^2 + v^2)``)
        and ``"exhaustive"`` (every expression up to a size fixed by a budget of
        fits, with exact outer constants: it certifies the front's small rows,
        ``equations_["certified"]``). "auto" is all of them; leaving one out is that stage's ablation. The Julia
        engine raises for any other value than "auto" or an empty sequence.
    model_selection : {"cost", "best", "score", "accuracy", "elbow", "sic"}, default="cost"
        How the expression used by ``predict`` is chosen from the front (see
        :func:`select_equation`). ``"cost"`` takes the lowest training loss relative to the best
        constant's plus 0.016 per unit of complexity (each token must buy 1.6% of the
        constant's loss; the complexity counted with each feature and the target on a generic
        scale, so that the choice does not depend on theirs), preferring a calibrated expression (training coverage within two
        standard errors of the quantile level, three for one without fitted constants) that costs
        at most four tokens' worth more.
        ``"best"`` is PySR's rule (highest score among accurate rows) restricted to calibrated
        expressions when there are any. ``"sic"`` ranks the same rows by the Schwarz
        criterion of quantile regression, whose complexity penalty shrinks as rows grow: more
        accurate, longer formulas on larger data.
    max_samples : int or None, default=None
        Fit on a random subsample of at most this many rows (10000 gives the paper's SQR10K).
    rearrange : bool, default=False
        With several quantiles, sort each row's predictions so that they never cross
        (monotone rearrangement).
    loss : None, "pinball", "quantile", "squared", "absolute" or a loss object, default=None
        None, "pinball" and "quantile" fit the pinball loss at each quantile level; other losses
        need a single level (the names every estimator accepts, :data:`parsimony.losses.LOSSES`).
    batch_size : "auto", int or None, default="auto"
        Evolve each population on a random batch of this many rows, redrawn every iteration
        (hall-of-fame candidates are re-scored on all rows); only when there are more than twice
        as many rows. "auto" uses batches of 128 rows (so on more than 256 rows an iteration costs
        about the same whatever the size of the data); None always uses all rows.
    time_limit : float or None, default=None
        Seconds of search per quantile level (steps that compiled numba kernels, as on a first
        fit in a fresh process, do not count); the search stops at the next sync point and keeps
        its current front (``status_ == "time_limit"``).
    warm_start : bool, default=False
        Let ``fit`` run ``niterations`` more iterations, on the data now given, from the
        populations and halls of fame of the previous ``fit`` when the engine, features,
        operators, sizes and levels are the same (otherwise it starts afresh; the Julia engine
        uses PySR's own ``warm_start``). On the same data, fits of ``a`` then ``b`` iterations
        give the equations of one fit of ``a + b``.
    random_state : int, RandomState or None, default=None
        Seed; the same seed gives the same equations for every ``n_jobs``.
    n_jobs : int or None, default=None
        Threads evolving populations in parallel (None: 1, -1: all cores).
    progress : bool, default=True
        Show a progress bar.
    backend : {"auto", "native", "julia"}, default="auto"
        Engine; "auto" uses PySR's Julia engine when Julia and pysr work, else the native one.
        On the Julia engine ``loss`` becomes PySR's ``elementwise_loss`` and ``batch_size`` its
        batching; a positive ``feature_relevance`` and ``additive_stage=True`` raise (native
        engine only).
    certify : bool, default=True
        Admit to the front only expressions certified finite on the domain: their interval
        enclosure over it (interval arithmetic, rounded outward, the domain bisected up to 32
        pieces where one walk over-estimates) is defined and lies within twenty target ranges of the
        training targets. A formula with a pole, a logarithm or square root of a negative, an
        overflowing exponential or a huge value anywhere between the training values never
        enters the front. False keeps the raw search (the enclosures are still reported). On the
        Julia engine the check filters PySR's returned front.
    domain : array of shape (n_features, 2) or None, default=None
        Each feature's ``[low, high]`` over which formulas are certified and their enclosures
        reported (e.g. a physical domain); None is the training data's box (each feature's
        minimum and maximum).
    rescale : bool or "scale", default=True
        Search in units where the features and the target are divided by powers of ten (the
        features' median root mean square, the target's standard deviation, rounded to a power
        of ten), so data in any units is the same search; the formulas are written back in the
        user's units, constants rescaled (and shifts subtracted from the features). Data whose
        magnitudes are near 1 is searched as given. Where a feature takes negative values its
        origin may be the law's (``sin(x)`` on [-1, 1]) or an accident of the data (standardised
        features, whose products and waves are simple from their low end): the search runs
        twice, on the features as scaled and with the signed ones shifted to start near 0, from
        the same seeds and each for the full ``niterations`` (twice the time; ``time_limit``
        shared), and per quantile level the front whose selected formula is better by the
        Schwarz criterion (log training loss plus its unit-free complexity times
        ``log(n) / 2n``) is kept. "scale" searches once, unshifted. The Julia engine never
        shifts (the shift serves the native additive stage).
    feature_units : sequence or dict or None, default=None
        A dimensional prior: each feature's physical unit, as a string (``"m^1 * s^(-1)"``,
        ``"kg"``, ``"m/s^2"``; ``""`` for dimensionless) or a mapping ``{"m": 1, "s": -1}``, in
        the order of the columns or keyed by feature name. Base units are free names. Each row of
        ``equations_`` is then marked ``consistent`` or not (sums of one dimension, dimensionless
        arguments of ``exp``/``log``/``sin``/``cos``, the target's dimension when
        ``target_units`` is given; a fitted constant may carry any unit, an integer or half the
        search kept exact is a pure number: ``1 - v/c^2`` is not consistent with velocities,
        ``1 - v^2/c^2`` is), and where the row selected is not consistent, model selection takes
        the consistent row it selects among those alone when the data cannot tell the two apart
        (Schwarz criterion within one unit of evidence; see ``units_status_``). The search itself
        is not changed. On the Julia engine the rule acts
        on PySR's returned front (PySR's own ``X_units`` are not passed: its unit names are SI
        symbols, these are free names).
    target_units : str or dict or None, default=None
        The target's unit (as ``feature_units``'); needs ``feature_units``.

    Attributes
    ----------
    equations_ : DataFrame or list of DataFrame
        The Pareto front, one per quantile: complexity, loss (training pinball loss), score,
        equation, sympy, lower and upper (an enclosure of the expression's values over the
        domain, certified under floating point; NaN where none is known), coverage (share of
        training targets at or below the expression), and
        certified (True where the exhaustive stage proves that no expression of at most the
        row's complexity, constants only outside (``g``, ``g + a``, ``a - g``, ``b*g``,
        ``a + b*g``), fits the training rows better; see ``certified_size_``).
    best_index_ : int or list of int
        Row of ``equations_`` used by ``predict``.
    complexity_ : int
        Complexity of the selected expression (summed over quantile levels).
    certified_size_ : int or list of int
        Per quantile level, the complexity up to which the exhaustive stage enumerated every
        expression (0 where it did not run: ``stages``, warm starts on new data, the Julia
        engine); rows of ``equations_`` up to it may be ``certified``.
    domain_ : ndarray of shape (n_features, 2)
        The domain formulas are certified on (``domain``, or the training box).
    maxsize_ : int
        The largest complexity searched (``maxsize``, "auto" resolved on the training data).
    status_ : str
        ``"completed"`` or ``"time_limit"`` (the worst over quantile levels).
    units_status_ : str, list of str or None
        With ``feature_units``, per quantile level how the dimensional prior acted:
        ``"consistent"`` (the selected row is consistent), ``"none consistent"`` (no row is:
        selected as without units) or ``"inconsistent row better"`` (the data overrule the prior:
        the row selected without it is better than every consistent row by more than the data's
        resolution, see :func:`units_choice`); None without units.
    n_evaluations_ : int
        Expressions evaluated on the data (all levels).
    """

    def __init__(self, quantile=0.5, *, operators=DEFAULT_OPERATORS, maxsize="auto", complexity_of_operators=None,
                 niterations=40, populations=6, population_size=33, ncycles_per_iteration=60, parsimony=0.0032,
                 adaptive_parsimony_scaling=20.0, feature_relevance="auto", additive_stage="auto",
                 stages="auto", model_selection="cost", max_samples=None, rearrange=False, loss=None, batch_size="auto",
                 time_limit=None, warm_start=False, random_state=None, n_jobs=None, progress=True, backend="auto",
                 certify=True, domain=None, rescale=True, feature_units=None, target_units=None):
        self.quantile = quantile
        self.operators = operators
        self.maxsize = maxsize
        self.complexity_of_operators = complexity_of_operators
        self.niterations = niterations
        self.populations = populations
        self.population_size = population_size
        self.ncycles_per_iteration = ncycles_per_iteration
        self.parsimony = parsimony
        self.adaptive_parsimony_scaling = adaptive_parsimony_scaling
        self.feature_relevance = feature_relevance
        self.additive_stage = additive_stage
        self.stages = stages
        self.model_selection = model_selection
        self.max_samples = max_samples
        self.rearrange = rearrange
        self.loss = loss
        self.batch_size = batch_size
        self.time_limit = time_limit
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress
        self.backend = backend
        self.certify = certify
        self.domain = domain
        self.rescale = rescale
        self.feature_units = feature_units
        self.target_units = target_units

    # ------------------------------------------------------------------------------ validation
    def _score_quantiles(self):  # ``score``: D^2 pinball at each fitted level, R^2 for a squared loss
        check_is_fitted(self, "_fronts")
        return None if isinstance(self._losses[0], Squared) else tuple(loss.tau for loss in self._losses)

    def _engine(self):
        """The engine, resolved once: ``"julia"`` needs Julia and pysr (``"auto"`` falls back to native)."""
        engine = resolve_backend(self.backend)
        if engine == "julia" and not pysr_available():
            if self.backend == "julia":
                raise JuliaUnavailableError(f"backend='julia' for SymbolicQuantileRegressor needs pysr. "
                                            f"{JULIA_INSTALL_HINT}")
            return "native"
        return engine

    # ------------------------------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None):
        """Search a Pareto front of expressions per quantile level; returns ``self``."""
        params = validated(self.get_params(deep=False))  # every parameter, checked once
        X, y, w = self._training_data(X, y, sample_weight)
        dimensions = dimensions_of(params["feature_units"], params["target_units"], X.shape[1],
                                   input_feature_names(self))
        plan = fit_plan(params, self._engine(), seed_from(self.random_state), self.random_state is not None)
        X, y, w = _subsample(X, y, w, plan)
        lo, hi = (X.min(axis=0), X.max(axis=0)) if params["domain"] is None else domain_bounds(params["domain"],
                                                                                             X.shape[1])
        warm = self.warm_start and getattr(self, "backend_", None) == plan.engine
        engine = fit_fronts if plan.engine == "julia" else search_fronts
        choices = search_units(X, y, w, params["rescale"], plan.engine)
        previous = getattr(self, "_engine_states", None) if warm else None
        if previous is None or len(previous) != len(choices):
            previous = [None] * len(choices)
        if plan.settings.time_limit is not None:  # the user's limit shared by the searches
            plan.settings.time_limit /= len(choices)
        box = certified_box(lo, hi, y)
        seeds, fits = plan.rng.bit_generator.state, []
        for units, resume in zip(choices, previous):
            plan.rng.bit_generator.state = seeds  # each units' search from the same seeds
            Xs, ys = units.features(X), units.target(y)
            if params["certify"]:
                shift = 0.0 if units.x_shift is None else units.x_shift
                plan.box = certified_box((lo - shift) / units.x_scale, (hi - shift) / units.x_scale, ys)
            plan.resolve_maxsize(Xs, ys, w)
            result = engine(Xs, ys, w, plan, previous=resume)
            result.fronts = [user_front(front, units, X, y, w, loss, plan.weights, box, params["certify"], dimensions)
                             for front, loss in zip(result.fronts, plan.losses)]
            fits.append(result)
        self.domain_ = np.column_stack([lo, hi])
        if len(fits) > 1:  # (each search's pick, as the fitted model would select it)
            fits = [chosen_fit(fits, [self._picked_criteria(X, y, w, plan, fit) for fit in fits])]
        else:  # the states of each search, as chosen_fit keeps them (a warm start resumes each)
            fits[0].states = [fits[0].states]
        self._install(X, y, w, plan, fits[0])
        return self

    def _picked_criteria(self, X, y, w, plan, result) -> list:
        """Per level, the Schwarz criterion (``log(loss) + c log(n) / (2n)``, ``c`` its unit-free
        complexity, ``n`` the effective rows) of the row that model selection picks on ``result``."""
        self._install(X, y, w, plan, result)
        frames = [self.equations_] if np.ndim(self.quantile) == 0 else self.equations_
        n_eff = effective_rows(w)
        out = []
        for frame, i, front, loss in zip(frames, np.atleast_1d(self.best_index_), result.fronts, plan.losses):
            row = front[i]
            c = unit_free_complexity(row["ops"], row["feats"], row["vals"], plan.weights)
            out.append(float(_schwarz_criterion(np.array([frame["loss"].iloc[i]]), np.array([c]), n_eff,
                                                isinstance(loss, Squared), "choosing the units needs")[0]))
        return out

    def _training_data(self, X, y, sample_weight):
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        w = check_sample_weight(sample_weight, len(y))
        return X, y, np.ones(len(y)) if w is None else w

    def _install(self, X, y, w, plan, result: EngineFit):
        """Set the fitted attributes from the engine's fronts on the (subsampled) training data."""

        self.feature_names_ = input_feature_names(self)
        self.operators_ = plan.operators
        self.complexity_weights_ = plan.weights
        self.quantiles_ = plan.quantiles
        self._losses = plan.losses
        self.n_evaluations_ = result.n_evaluations
        self.backend_ = plan.engine
        self.maxsize_ = plan.settings.maxsize
        self._engine_states = result.states
        self._fronts = result.fronts
        frames = [self._equations_frame(front) for front in result.fronts]
        self._train_ranges = []  # per front row: (min, max, median) of the training predictions
        for k, frame in enumerate(frames):
            preds = [self._evaluate(X, k, i) for i in range(len(frame))]
            frame["coverage"] = [coverage(y, p, w) for p in preds]
            frame["certified"] = [bool(row.get("certified", False)) for row in result.fronts[k]]
            self._train_ranges.append([(float(np.min(p)), float(np.max(p)), float(np.median(p))) for p in preds])
        n_eff = effective_rows(w)
        indices, statuses = [], []
        for f, q, loss, front in zip(frames, plan.quantiles, plan.losses, result.fronts):
            level = Level(f, q if isinstance(loss, Pinball) else None, calibration_tolerance(q, w),
                          isinstance(loss, Squared), n_eff, constant_baseline(y, w, loss),
                          np.array([r["fitted"] for r in front]),
                          np.array([unit_free_complexity(r["ops"], r["feats"], r["vals"], plan.weights) for r in front]))
            choice, status = level.select(np.arange(len(f)), self.model_selection), None
            if front and front[0].get("consistent") is not None:
                f["consistent"] = [bool(r["consistent"]) for r in front]
                choice, status = units_choice(f, choice, lambda rows, lv=level: lv.select(rows, self.model_selection),
                                              level.unit_free, n_eff, level.squared_loss)
            indices.append(choice)
            statuses.append(status)
        single = np.ndim(self.quantile) == 0
        self.units_status_ = statuses[0] if single else statuses
        sizes = result.certified_sizes or [0] * len(frames)
        self.certified_size_ = sizes[0] if single else sizes
        self.equations_ = frames[0] if single else frames
        self.best_index_ = indices[0] if single else indices
        self.complexity_ = int(sum(f["complexity"].iloc[i] for f, i in zip(frames, indices)))
        self.status_ = "time_limit" if "time_limit" in result.statuses else "completed"

    def _equations_frame(self, front):
        from ._sympy_names import feature_symbol

        symbols = [feature_symbol(name) for name in self.feature_names_]  # "dose mg" stays one symbol
        complexity = np.array([row["complexity"] for row in front], dtype=np.int64)
        loss = np.array([row["loss"] for row in front], dtype=float)
        return pd.DataFrame({
            "complexity": complexity,
            "loss": loss,
            "score": pareto_scores(complexity, loss),
            "equation": [to_string(r["ops"], r["feats"], r["vals"], len(r["ops"]), self.feature_names_)
                         for r in front],
            "sympy": [to_sympy(r["ops"], r["feats"], r["vals"], len(r["ops"]), symbols) for r in front],
            "lower": [r["enclosure"][0] for r in front],
            "upper": [r["enclosure"][1] for r in front],
        })

    # --------------------------------------------------------------------------------- predict
    def _evaluate(self, X, k, index):
        row = self._fronts[k][index]
        Xt = np.ascontiguousarray(X.T, dtype=np.float64)
        out = np.empty(X.shape[0])
        ws = make_workspace(len(row["ops"]), X.shape[0])
        evaluate(row["ops"], row["feats"], row["vals"], len(row["ops"]), Xt, ws, out)
        return out

    def _indices(self, index):
        n = len(self._fronts)
        best = self.best_index_ if isinstance(self.best_index_, list) else [self.best_index_]
        if index is None:
            return best
        chosen = list(index) if isinstance(index, (list, tuple, np.ndarray)) else [index] * n
        if len(chosen) != n:
            raise ValueError(f"index must give one row per quantile level ({n}), got {len(chosen)}")
        out = []
        for k, i in enumerate(chosen):
            if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                raise TypeError(f"index must be an integer row of equations_, got {i!r}")
            size = len(self._fronts[k])
            if not -size <= i < size:
                raise ValueError(f"index {i} out of range for a front of {size} equations")
            out.append(int(i) % size)
        return out

    def predict(self, X, index=None):
        """Predict with the selected expression(s), or with row ``index`` of ``equations_``.

        Returns shape ``(n,)`` for one quantile level, ``(n, n_quantiles)`` for several.
        Non-finite values (e.g. a logarithm of a negative input outside the training range) are
        replaced by the expression's training range bounds (or median for NaN).
        """
        check_is_fitted(self, "_fronts")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        columns = []
        for k, idx in enumerate(self._indices(index)):
            pred = self._evaluate(X, k, idx)
            if not np.all(np.isfinite(pred)):
                low, high, mid = self._train_ranges[k][idx]
                pred = np.where(np.isnan(pred), mid, np.clip(pred, low, high))
            columns.append(pred)
        if not isinstance(self.equations_, list):  # fitted for one level
            return columns[0]
        out = np.column_stack(columns)
        if self.rearrange and out.shape[1] > 1:
            order = np.argsort(self.quantiles_, kind="stable")
            out[:, order] = np.sort(out[:, order], axis=1)
        return out

    # -------------------------------------------------------------------------------- exports
    def _selected_frames(self):
        check_is_fitted(self, "_fronts")
        return self.equations_ if isinstance(self.equations_, list) else [self.equations_]

    def sympy(self, index=None, precision=5):
        """The selected expression as sympy (a list for several quantile levels).

        Constants are rounded to ``precision`` significant digits (>= 1) for reading; None keeps
        them at full precision, as in ``equations_["sympy"]`` (``predict`` always uses them).
        """
        from ._sympy_names import round_constants

        if precision is not None:
            precision = check_int(precision, "precision", minimum=1)
        frames = self._selected_frames()
        exprs = [f["sympy"].iloc[i] for f, i in zip(frames, self._indices(index))]
        if precision is not None:
            exprs = [round_constants(expr, precision) for expr in exprs]
        return exprs if isinstance(self.equations_, list) else exprs[0]

    def export_text(self, feature_names=None, decimals=5) -> str:
        """The selected expression as text (one line ``tau=...: expression`` per level for several).

        ``feature_names`` renames the features (default: the names seen in ``fit``); constants
        keep ``decimals`` significant digits (5, as in ``equations_["equation"]``).
        """
        check_is_fitted(self, "_fronts")
        names = self.feature_names_ if feature_names is None else input_feature_names(self, feature_names)
        decimals = check_int(decimals, "decimals", minimum=1)
        texts = []
        for k, i in enumerate(self._indices(None)):
            row = self._fronts[k][i]
            texts.append(to_string(row["ops"], row["feats"], row["vals"], len(row["ops"]), names, precision=decimals))
        if not isinstance(self.equations_, list):
            return texts[0]
        return "\n".join(f"tau={q:g}: {text}" for q, text in zip(self.quantiles_, texts))

    def latex(self, index=None, precision=3):
        """LaTeX of the selected expression(s), constants rounded to ``precision`` significant digits (>= 1)."""
        import sympy

        precision = check_int(precision, "precision", minimum=1)
        exprs = self.sympy(index, precision)
        out = [sympy.latex(expr) for expr in (exprs if isinstance(exprs, list) else [exprs])]
        return out if isinstance(self.equations_, list) else out[0]

    def plot_pareto_front(self, ax=None):
        """Loss against complexity of the front(s), the selected expression marked."""
        from ..plotting import plot_pareto_front

        return plot_pareto_front(self, ax=ax)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True  # tiny budgets in the common checks
        return tags
