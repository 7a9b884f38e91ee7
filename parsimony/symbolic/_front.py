"""The Pareto front's scores, shared by the native engine and the PySR glue."""

from __future__ import annotations

import numpy as np


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
