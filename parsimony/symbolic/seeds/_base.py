"""The seeders' shared records: the problem a seeder sees and the proposal it returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

#: Rows the additive and rational seeders work on at most (every k-th row of positive weight):
#: their cost does not grow with the data. The recovery protocol's 1,000 rows fit whole.
SAMPLE_ROWS = 1000


@dataclass
class Problem:
    """What a seeder sees: the training rows ``(X, y, w)`` the search fits, the loss (its code
    and level), the grammar (operators and token weights), ``maxsize``, and the features'
    ``relevance`` (squared rank correlation with the target, summing to 1)."""

    X: np.ndarray
    y: np.ndarray
    w: np.ndarray
    loss_kind: int
    tau: float
    binops: np.ndarray
    unops: np.ndarray
    weights: np.ndarray
    maxsize: int
    relevance: np.ndarray = field(default=None, repr=False)

    @cached_property
    def sample(self):
        """At most :data:`SAMPLE_ROWS` rows of positive weight (every k-th), repeated rows merged
        into one row of their summed weight (in sorted order: integer weights and repeated rows
        give the same results, ties and all); ``(X, y, w)``."""
        return sample_rows(self.X, self.y, self.w)

    @cached_property
    def order(self) -> np.ndarray:
        """The features by decreasing relevance (ties: the first)."""
        return np.argsort(-np.asarray(self.relevance, dtype=float), kind="stable").astype(np.int64)


def sample_rows(X, y, w, limit=SAMPLE_ROWS):
    """:attr:`Problem.sample` of ``(X, y, w)``: ``limit`` rows at most, repeated rows merged."""
    rows = np.flatnonzero(w > 0)
    rows = rows[::math.ceil(rows.size / limit)] if rows.size > limit else rows
    unique, inverse = np.unique(np.c_[X[rows], y[rows]], axis=0, return_inverse=True)
    w = np.bincount(inverse.ravel(), weights=w[rows], minlength=len(unique))
    return unique[:, :-1], unique[:, -1], w


@dataclass
class Proposal:
    """A seeder's expressions ``(ops, feats, vals)``; ``plant``: offered to the halls of fame and
    planted in the populations before evolution (else kept for the final front only, which the
    search's path then does not depend on); ``evaluations`` used; ``report``: what the seeder
    wants the fitted model to know (the exhaustive seeder's certified ``size``); ``late`` (with
    ``plant`` False): offered to the halls of fame after evolution, so that the final front
    polishes and snaps them as its own entries while the search's path is the one without them."""

    models: list
    evaluations: int = 0
    plant: bool = True
    late: bool = False
    report: dict = field(default_factory=dict)


class SampleSeeder:
    """A seeder that works on the problem's :attr:`~Problem.sample` and needs ``min_rows`` distinct
    rows there (its settings' ``min_rows``); ``settings_type`` is its settings record."""

    settings_type: type

    def __init__(self, settings=None):
        self.settings = self.settings_type() if settings is None else settings

    def applies(self, problem: Problem) -> bool:
        """Whether the sample holds ``min_rows`` distinct rows."""
        return len(problem.sample[1]) >= self.settings.min_rows


class FormSeeder(SampleSeeder):
    """A sample seeder whose forms come from one numpy function (its ``forms``, a staticmethod:
    ``forms(X, y, w, binops, unops, weights, maxsize, order, settings) -> (forms, fitted)``),
    planted in the populations; no kernel to precompile."""

    def kernels(self, binops, unops, weights, maxsize) -> list:
        """No step to precompile (a small kernel, if any, compiles on first use)."""
        return []

    def propose(self, problem: Problem) -> Proposal:
        """The forms that qualify, planted in the populations."""
        if not self.applies(problem):
            return Proposal([])
        X, y, w = problem.sample
        forms, fitted = self.forms(X, y, w, problem.binops, problem.unops, problem.weights, problem.maxsize,
                                   problem.order, self.settings)
        return Proposal(forms, fitted)
