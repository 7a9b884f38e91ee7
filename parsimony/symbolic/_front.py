"""What the native engine and the PySR glue share: the result of an engine's fit
(:class:`EngineFit`), the Pareto front's scores and the tolerance of a calibrated coverage."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class EngineFit:
    """What an engine returns for the levels of one fit.

    ``fronts``: per level, the Pareto front as a list of dicts (complexity, loss, ops, feats,
    vals) in increasing complexity; ``statuses``: per level, ``"completed"`` or
    ``"time_limit"``; ``n_evaluations``: expressions evaluated (0 when the engine does not
    count them); ``states``: per level, what a warm start of the same engine goes on from;
    ``certified_sizes``: per level, the complexity up to which the front's rows may be
    certified (a row's ``"certified"``; None: no certificate, as from PySR).
    """

    fronts: list
    statuses: list
    n_evaluations: int
    states: list
    certified_sizes: list | None = None


def pareto_scores(complexity, loss) -> np.ndarray:
    """PySR's score, ``-d log(loss) / d complexity`` between consecutive front rows.

    The first row scores 0, an exact fit after an inexact one scores ``inf``.
    """
    loss = np.asarray(loss, dtype=float)
    score = np.zeros(loss.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        score[1:] = -np.diff(np.log(loss)) / np.diff(np.asarray(complexity, dtype=float))
    score[1:][loss[:-1] <= 0] = -np.inf  # nothing improves on an exact fit
    return score


def effective_rows(sample_weight) -> float:
    """Kish's effective number of rows of the weights: ``(sum w)^2 / sum w^2``."""
    w = np.asarray(sample_weight, dtype=float)
    return float(w.sum() ** 2 / np.sum(w * w))


def calibration_tolerance(quantile, sample_weight) -> float:
    """Two binomial standard errors of a coverage at ``quantile`` (Kish effective size), plus 1/n."""
    return 2.0 * np.sqrt(quantile * (1.0 - quantile) / effective_rows(sample_weight)) + 1.0 / len(sample_weight)
