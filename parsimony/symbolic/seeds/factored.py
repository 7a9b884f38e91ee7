"""The factored seeder: a monomial times an additive model, ``M(x) * (b0 + sum_j b_j f_j(x))``, for
data on positive features (the method: :mod:`parsimony.symbolic._factored`; the sums are the
additive stage's kernel's, run on ``y/M``)."""

from __future__ import annotations

from dataclasses import dataclass

from .._factored import factored_forms
from .._stepwise import Knobs
from ._base import Problem, Proposal, SampleSeeder
from .additive import AdditiveSeeder, AdditiveSettings


@dataclass(frozen=True)
class FactoredSettings:
    """The factored seeder's choices. An ablation of the whole seeder is ``stages`` without
    ``"factored"``. The noise tests and the Schwarz price are the rational seeder's (same values,
    same reasons); the rest bound the cost: the screen is one batched QR, and each monomial kept
    runs the additive kernel once (a short sum: the monomial takes its share of ``maxsize``). No
    value was tuned: measured with the defaults (``sqr_recovery.py --jobs 1`` on 7d564c6, load 4-6),
    median fit CPU on the 60 1.50 -> 1.58 s."""

    min_rows: int = 100
    """Distinct rows it needs (as the power and rational seeders: a form with free exponents and
    a sum beside them fits noise on fewer)."""
    features: int = 5
    """The monomial is over this many of the most relevant positive features (``G*m1*m2/(r1*r2)``:
    five)."""
    used: int = 5
    """Features of the monomial at most (:func:`~parsimony.symbolic._power._groups`: on three or
    more each exponent is -1 or 1); 372 monomials on five features."""
    search_rows: int = 250
    """Rows the screen's least squares use (every k-th): the QR of every monomial's 16 columns at
    once stays a few tens of milliseconds."""
    gate: float = 0.5
    """A monomial runs the additive stage only when its screen leaves less than this share of what
    the dictionary alone leaves (``M = 1``): on data that are a sum already the factor buys
    nothing the additive seeder does not find."""
    beam: int = 2
    """Monomials that run the additive stage, best first (each run is a few tens of milliseconds
    on 1,000 rows)."""
    min_room: int = 5
    """Tokens the sum needs beside the monomial (a constant plus one term)."""
    single_features: int = 50
    """The additive stage's terms of one feature (the additive seeder's)."""
    pair_features: int = 4
    """Its products and ratios among this many of the most relevant features (the additive
    seeder's 6 costs twice the screen; the monomial carries most interactions already)."""
    max_terms: int = 4
    """Terms of the sum at most: beside a monomial, ``maxsize`` 30 holds no more."""
    max_steps: int = 8
    """Steps of the stage (each writes at most one sum): twice ``max_terms``, for replacements."""
    min_r2: float = 0.995
    """Share of ``y``'s variance a form explains to be offered (the rational seeder's)."""
    noisy_r2: float = 0.9
    """Or this share, when what it leaves is as rough as noise (the rational seeder's)."""
    white_z: float = 3.0
    """Standard deviations of the roughness test (the rational seeder's)."""
    token_price: float = 0.25
    """A token's price in fitted constants in the Schwarz criterion (the rational seeder's)."""
    exact: float = 1e-12
    """A form leaving this share of ``y``'s variance reproduces it (the rational seeder's)."""
    max_forms: int = 4
    """Forms offered at most (the power seeder's)."""
    plant: bool = False
    """Whether the forms are planted in the populations (else they are offered to the halls of fame
    after evolution, :attr:`~parsimony.symbolic.seeds.Proposal.late`: the final front polishes and
    snaps them, and the search's path is the one without the seeder). Planted, ``sqr_recovery.py --jobs 1`` on
    7d564c6 (load 4-5): the 60 42 / 38 / 34 -> 43 / 38 / 35 at noise 0 / 0.01 / 0.1, but the other
    59 28 -> 27 at 0.1 and out-of-family at 0.1 18 -> 17 of 62: a planted form moves the search's
    path on problems it does not solve. Late (the default): the 60 42 / 38 / 35, the 59 37 / 28 at
    0.01 / 0.1, out-of-family 18 / 62 at 0.1 (each as before the seeder but the 60's +1 at 0.1)."""

    def knobs(self) -> Knobs:
        """The additive kernel's record: the additive seeder's choices (its modulated waves too) but
        for the sum's length, and no shifted products (a wave of one feature or one product is a
        term already)."""
        base = AdditiveSettings()
        return Knobs(base.screened, self.max_terms, base.backfit_passes, 0, base.screen_steps, float(base.drop_share),
                     base.modulated)


class FactoredSeeder(SampleSeeder):
    """Forms ``M * S``: a monomial times one of the additive stage's sums."""

    name = "factored"
    settings_type = FactoredSettings

    def propose(self, problem: Problem) -> Proposal:
        """The forms that qualify (planted in the populations when the settings say so, else late)."""
        forms, evaluations = factored_forms(problem, self.settings) if self.applies(problem) else ([], 0)
        return Proposal(forms, evaluations, plant=self.settings.plant, late=True)

    def kernels(self, binops, unops, weights, maxsize) -> list:
        """The additive kernel's step (the same types: a step the additive seeder also lists loads
        what the first compiled)."""
        return AdditiveSeeder().kernels(binops, unops, weights, maxsize)
