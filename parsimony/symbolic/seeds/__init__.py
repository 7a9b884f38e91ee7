"""The seeders of SQR's native search: stages that build whole expressions before evolution.

A seeder has a ``name``, a frozen ``settings`` record (each constant with its reason and what it
was measured on) and three methods: ``applies(problem)`` (whether it builds anything on this
data), ``kernels(binops, unops, weights, maxsize)`` (its numba kernels as
:func:`~parsimony._numba.precompile` steps) and ``propose(problem)``, which returns a
:class:`Proposal`: the expressions
``(ops, feats, vals)`` it offers to the search's halls of fame, whether they are also planted in
the populations, and the evaluations it used. :data:`SEEDERS` lists them in the order they run;
the estimator's ``stages`` parameter picks which run, so an ablation is a setting.
"""

from __future__ import annotations

from ._base import SAMPLE_ROWS, Problem, Proposal, sample_rows
from .additive import AdditiveSeeder, AdditiveSettings
from .exhaustive import ExhaustiveSeeder, ExhaustiveSettings
from .factored import FactoredSeeder, FactoredSettings
from .power import PowerSeeder, PowerSettings
from .rational import RationalSeeder, RationalSettings

#: Every seeder, in the order they run (and offer their expressions).
SEEDERS = (ExhaustiveSeeder(), AdditiveSeeder(), RationalSeeder(), PowerSeeder(), FactoredSeeder())
#: The seeders' names, in that order: the values of the estimator's ``stages``.
STAGES = tuple(s.name for s in SEEDERS)


def seeders(names) -> list:
    """The seeders named in ``names`` (any order), in :data:`SEEDERS`' order."""
    names = set(names)
    return [s for s in SEEDERS if s.name in names]


__all__ = ["SAMPLE_ROWS", "SEEDERS", "STAGES", "AdditiveSeeder", "AdditiveSettings", "ExhaustiveSeeder", "ExhaustiveSettings",
           "FactoredSeeder", "FactoredSettings",
           "PowerSeeder", "PowerSettings", "Problem", "Proposal", "RationalSeeder", "RationalSettings", "sample_rows", "seeders"]
