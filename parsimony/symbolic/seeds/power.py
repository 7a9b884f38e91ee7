"""The power seeder: a power law times a power of a function of one monomial, for one-signed data
on positive features (the method: :mod:`parsimony.symbolic._power`)."""

from __future__ import annotations

from dataclasses import dataclass

from .._power import power_forms
from ._base import FormSeeder


@dataclass(frozen=True)
class PowerSettings:
    """The power seeder's choices. An ablation of the whole seeder is ``stages`` without
    ``"power"``."""

    min_rows: int = 100
    """Distinct rows it needs (as the rational seeder: on fewer a law with free exponents fits noise)."""
    features: int = 6
    """The monomial ``U`` inside ``g`` is over this many of the most relevant positive features
    (the power law itself over all of them)."""
    used: int = 4
    """Features of ``U`` at most (``h*omega/(k*T)``: four)."""
    search_rows: int = 100
    """Rows the grid is scored and ``a`` refined on (every k-th; the exponents are fitted on all)."""
    beam: int = 16
    """Grid points (one per function and monomial) refined and written."""
    min_r2: float = 0.995
    """Share of ``y``'s variance a form explains to be offered (the rational seeder's)."""
    noisy_r2: float = 0.9
    """Or this share, when what it leaves is as rough as noise (the rational seeder's)."""
    white_z: float = 3.0
    """Standard deviations of the roughness test (the rational seeder's)."""
    max_forms: int = 4
    """Forms offered at most."""
    token_price: float = 0.05
    """A token must cut the variance a form leaves by 5% (the rational seeder's)."""
    exact: float = 1e-12
    """A form leaving this share of ``y``'s variance reproduces it."""


class PowerSeeder(FormSeeder):
    """Forms ``c * prod x_i^e_i * g(a U)^k``."""

    name = "power"
    settings_type = PowerSettings
    forms = staticmethod(power_forms)
