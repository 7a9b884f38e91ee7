"""SymbolicQuantileRegressor's parameters, declared once: the constraint table checked at the
start of ``fit`` (and by the PySR mapping), and the validated values turned into the settings of
a fit (:func:`fit_plan`) that both engines take."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._validation import (
    BOOLEAN, N_JOBS, POSITIVE, RANDOM_STATE, Check, InstanceOf, Interval, Options, check_quantiles, validate_params,
)
from ..backend import BACKENDS
from ..losses import LOSSES, Loss, Pinball, as_loss
from ._dimensions import check_units_parameter
from ._expressions import TOKEN_COMPLEXITY, complexity_weights, operator_codes, token_weights
from ._intervals import Box
from ._search import SearchSettings
from .seeds import STAGES, AdditiveSeeder, Problem

MODEL_SELECTIONS = ("cost", "best", "score", "accuracy", "elbow", "sic")
#: ``batch_size="auto"``: evolve on batches of this many rows once there are twice as many.
#: Measured on the first 6 of the 60 AI Feynman problems at 10,000 rows (``sqr_recovery.py --rows
#: 10000 --first 6 --noise 0``, tau .5, seed 0): batches of 64 / 128 / 256 rows and none solve all
#: 6, median fit 2.88 / 2.76 / 3.44 / 2.85 s CPU (a loaded machine): on these the batches save no
#: time and cost no law; 128 is not argued for by more than that.
AUTO_BATCH_SIZE = 128
#: The SQR paper's maxsize (Table 9): ``maxsize="auto"`` where the additive stage does not run.
PAPER_MAXSIZE = 20
#: ``maxsize="auto"`` where the additive stage runs: room for its sums (Friedman #1's shape is 28 tokens).
STAGE_MAXSIZE = 30
#: Distinct training rows from which ``maxsize="auto"`` is :data:`STAGE_MAXSIZE`: on the PMLB sets of
#: fewer than 100 training rows, coverage at tau = .9 is further off at 30 than at 20.
STAGE_MAXSIZE_ROWS = 100


def stage_names(stages, name="stages") -> tuple:
    """The seeders named in ``stages`` (a sequence of names among :data:`~parsimony.symbolic.seeds.STAGES`;
    empty: none), in the order they run."""
    if isinstance(stages, str) or not hasattr(stages, "__iter__") or isinstance(stages, Mapping):
        raise TypeError(f"{name} must be 'auto' or a sequence of stage names among {STAGES}, got {stages!r}")
    names = list(stages)
    unknown = [stage for stage in names if stage not in STAGES]
    if unknown:
        raise ValueError(f"{name} must be names among {STAGES}, got {unknown[0]!r}")
    return tuple(name for name in STAGES if name in names)


def operator_names(operators, name="operators") -> tuple:
    """Canonical operator names (one string is a list of one); at least one binary operator."""
    if isinstance(operators, str):
        operators = [operators]
    if not hasattr(operators, "__iter__") or isinstance(operators, Mapping):
        raise TypeError(f"{name} must be a sequence of operator names such as ('add', 'mul', 'sin'), "
                        f"got {operators!r}")
    return operator_codes(list(operators))[2]


#: The constraint table of SymbolicQuantileRegressor (see :func:`parsimony._validation.validate_params`).
SQR_PARAMETERS = {
    "quantile": [Check(check_quantiles, "a number in (0, 1) or a sequence of them")],
    "operators": [Check(operator_names, "a sequence of operator names")],
    "maxsize": [Options("auto"), Interval(numbers.Integral, 1)],
    "complexity_of_operators": [None, Check(token_weights, "a dict {operator name: integer weight >= 1}")],
    "niterations": [Interval(numbers.Integral, 1)],
    "populations": [Interval(numbers.Integral, 1)],
    "population_size": [Interval(numbers.Integral, 2)],
    "ncycles_per_iteration": [Interval(numbers.Integral, 1)],
    "parsimony": [Interval(numbers.Real, 0)],
    "adaptive_parsimony_scaling": [Interval(numbers.Real, 0)],
    "feature_relevance": [Options("auto"), Interval(numbers.Real, 0, 1)],
    "additive_stage": [Options("auto"), BOOLEAN],
    "stages": [Options("auto"), Check(stage_names, f"a sequence of stage names among {STAGES}")],
    "model_selection": [Options(*MODEL_SELECTIONS)],
    "max_samples": [None, Interval(numbers.Integral, 1)],
    "rearrange": [BOOLEAN],
    "loss": [None, Options(*LOSSES), InstanceOf(Loss, "a parsimony.losses object")],
    "batch_size": [None, Options("auto"), Interval(numbers.Integral, 16)],
    "time_limit": [None, POSITIVE],
    "warm_start": [BOOLEAN],
    "random_state": [RANDOM_STATE],
    "n_jobs": [None, N_JOBS],
    "progress": [BOOLEAN],
    "backend": [Options(*BACKENDS)],
    "certify": [BOOLEAN],
    "domain": [None, Check(lambda d, name: domain_bounds(d) and d, "an array of shape (n_features, 2): each feature's [low, high]")],
    "rescale": [Options("scale"), BOOLEAN],
    "feature_units": [None, Check(check_units_parameter, "a sequence of units (one per feature, e.g. 'm^1 * s^(-1)' "
                                                         "or {'m': 1, 's': -1}) or a dict keyed by feature name")],
    "target_units": [None, Check(check_units_parameter, "a unit such as 'kg' or {'kg': 1}")],
}


def domain_bounds(domain, n_features=None) -> tuple:
    """``(low, high)`` arrays of a ``domain`` of shape ``(n_features, 2)`` (finite, ``low <= high``)."""
    try:
        bounds = np.asarray(domain, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"domain must be an array of shape (n_features, 2) of numbers, got {domain!r}") from None
    if bounds.ndim != 2 or bounds.shape[1] != 2 or (n_features is not None and bounds.shape[0] != n_features):
        wanted = "(n_features, 2)" if n_features is None else f"({n_features}, 2)"
        raise ValueError(f"domain must have shape {wanted}: one [low, high] per feature, got shape {bounds.shape}")
    if not np.all(np.isfinite(bounds)) or np.any(bounds[:, 0] > bounds[:, 1]):
        raise ValueError("domain must hold finite bounds with low <= high for every feature")
    return bounds[:, 0].copy(), bounds[:, 1].copy()


def validated(values: dict) -> dict:
    """``values`` (all of SQR's parameters) checked against :data:`SQR_PARAMETERS` and normalised."""
    return validate_params(values, SQR_PARAMETERS)


def search_settings(params: dict, engine: str) -> SearchSettings:
    """The search settings of validated parameters ``params`` for ``engine`` ("native" or "julia");
    ``maxsize="auto"`` is :data:`STAGE_MAXSIZE` until :meth:`FitPlan.resolve_maxsize` sees the data."""
    relevance = params["feature_relevance"]
    if relevance == "auto":
        relevance = 0.5 if engine == "native" else 0.0
    stage, stages = params["additive_stage"], params["stages"]
    if stages != "auto" and stages and engine != "native":
        raise ValueError(f"stages={stages!r} is not supported by the Julia engine (the seeders are the native "
                         "engine's): use stages='auto' or (), or backend='native'")
    if stage == "auto":
        stage = engine == "native"
    batch = AUTO_BATCH_SIZE if params["batch_size"] == "auto" else params["batch_size"]
    n_jobs = params["n_jobs"]
    return SearchSettings(
        maxsize=STAGE_MAXSIZE if params["maxsize"] == "auto" else params["maxsize"], niterations=params["niterations"], populations=params["populations"],
        population_size=params["population_size"], ncycles_per_iteration=params["ncycles_per_iteration"],
        parsimony=params["parsimony"], adaptive_parsimony_scaling=params["adaptive_parsimony_scaling"],
        feature_relevance=relevance, additive_stage=bool(stage), stages=STAGES if stages == "auto" else stages,
        batch_size=batch, time_limit=params["time_limit"],
        n_jobs=1 if n_jobs is None else n_jobs, progress=params["progress"],
    )


def level_losses(loss, quantiles) -> list:
    """The loss object of each quantile level, for a validated ``loss`` parameter: the pinball
    loss at each level (None, "pinball" or "quantile"), else the one loss given (a single level
    only; names and objects as every estimator takes them, :func:`parsimony.losses.as_loss`)."""
    if loss is None or loss in ("pinball", "quantile"):
        return [Pinball(q) for q in quantiles]
    if len(quantiles) > 1:
        raise ValueError("a custom loss fits one model: give a single quantile level")
    return [as_loss(loss)]


@dataclass
class FitPlan:
    """Everything a fit takes from the estimator's validated parameters: the engine, the loss
    of each quantile level, the search settings, the operators and token weights, and the
    fit's random generator (seeded once; the subsample, then the engine, draw from it)."""

    engine: str
    quantiles: list
    losses: list
    settings: SearchSettings
    binops: np.ndarray
    unops: np.ndarray
    operators: tuple  # canonical names
    token_table: dict  # token name -> complexity
    weights: np.ndarray  # complexity per opcode
    max_samples: int | None
    seed: int
    seeded: bool  # random_state was given (the Julia engine is then seeded with ``seed``)
    rng: np.random.Generator
    auto_maxsize: bool  # maxsize="auto": :meth:`resolve_maxsize` sets it on the data
    box: Box | None = None  # where an expression must be certified finite, in the search's units (None: no check)

    def resolve_maxsize(self, X, y, w) -> None:
        """Set ``maxsize="auto"`` for the training data ``(X, y, w)``: :data:`STAGE_MAXSIZE`
        where the additive seeder runs (it is on and applies,
        :class:`~parsimony.symbolic.seeds.AdditiveSettings`) on at least
        :data:`STAGE_MAXSIZE_ROWS` distinct rows, else the paper's :data:`PAPER_MAXSIZE`. The
        extra room exists for the stage's sums; where there are none (the Julia engine) or the
        data is small it only lets evolution fit noise."""
        if self.auto_maxsize:
            seeder, problem = AdditiveSeeder(), Problem(X, y, w, 0, 0.5, (), (), (), 0)
            runs = (self.settings.additive_stage and seeder.name in self.settings.stages
                    and seeder.applies(problem) and len(problem.sample[1]) >= STAGE_MAXSIZE_ROWS)
            self.settings.maxsize = STAGE_MAXSIZE if runs else PAPER_MAXSIZE


def fit_plan(params: dict, engine: str, seed: int, seeded: bool) -> FitPlan:
    """The :class:`FitPlan` of validated parameters ``params`` on ``engine`` ("native" or
    "julia"), with the integer ``seed`` drawn from ``random_state`` (``seeded``: it was not None)."""
    binops, unops, names = operator_codes(params["operators"])
    table = params["complexity_of_operators"] or dict(TOKEN_COMPLEXITY)
    quantiles = params["quantile"]
    return FitPlan(engine, quantiles, level_losses(params["loss"], quantiles), search_settings(params, engine),
                   binops, unops, names, table, complexity_weights(table), params["max_samples"], seed, seeded,
                   np.random.default_rng(seed), params["maxsize"] == "auto")
