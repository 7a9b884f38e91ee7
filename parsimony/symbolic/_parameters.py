"""SymbolicQuantileRegressor's parameters, declared once: the constraint table checked at the
start of ``fit`` (and by the PySR mapping), and the validated values turned into search settings."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

from .._validation import (
    BOOLEAN, N_JOBS, POSITIVE, RANDOM_STATE, Check, InstanceOf, Interval, Options, check_quantiles, validate_params,
)
from ..backend import BACKENDS
from ..losses import LOSSES, Loss
from ._expressions import TOKEN_COMPLEXITY, canonical_operator, operator_codes
from ._search import SearchSettings

MODEL_SELECTIONS = ("cost", "best", "score", "accuracy", "elbow", "sic")
AUTO_BATCH_SIZE = 128  # batch_size="auto": evolve on batches of this many rows once there are twice as many


def operator_names(operators, name="operators") -> tuple:
    """Canonical operator names (one string is a list of one); at least one binary operator."""
    if isinstance(operators, str):
        operators = [operators]
    if not hasattr(operators, "__iter__") or isinstance(operators, Mapping):
        raise TypeError(f"{name} must be a sequence of operator names such as ('add', 'mul', 'sin'), "
                        f"got {operators!r}")
    return operator_codes(list(operators))[2]


def token_weights(weights, name="complexity_of_operators") -> dict:
    """The complete token-weight table: :data:`~parsimony.symbolic.TOKEN_COMPLEXITY` updated by ``weights``
    (keys: operator names, ``"feature"``/``"variable"``, ``"constant"``; values: integers >= 1)."""
    if not isinstance(weights, Mapping):
        raise TypeError(f"{name} must be a dict {{operator name: integer weight >= 1}}, got {weights!r}")
    table = dict(TOKEN_COMPLEXITY)
    for key, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value).is_integer() \
                or value < 1:
            raise ValueError(f"{name}[{key!r}] must be an integer >= 1, got {value!r}")
        key = "feature" if key in ("feature", "variable") else ("constant" if key == "constant"
                                                                 else canonical_operator(key))
        table[key] = int(value)
    return table


#: The constraint table of SymbolicQuantileRegressor (see :func:`parsimony._validation.validate_params`).
SQR_PARAMETERS = {
    "quantile": [Check(check_quantiles, "a number in (0, 1) or a sequence of them")],
    "operators": [Check(operator_names, "a sequence of operator names")],
    "maxsize": [Interval(numbers.Integral, 1)],
    "complexity_of_operators": [None, Check(token_weights, "a dict {operator name: integer weight >= 1}")],
    "niterations": [Interval(numbers.Integral, 1)],
    "populations": [Interval(numbers.Integral, 1)],
    "population_size": [Interval(numbers.Integral, 2)],
    "ncycles_per_iteration": [Interval(numbers.Integral, 1)],
    "parsimony": [Interval(numbers.Real, 0)],
    "adaptive_parsimony_scaling": [Interval(numbers.Real, 0)],
    "feature_relevance": [Options("auto"), Interval(numbers.Real, 0, 1)],
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
}


def validated(values: dict) -> dict:
    """``values`` (all of SQR's parameters) checked against :data:`SQR_PARAMETERS` and normalised."""
    return validate_params(values, SQR_PARAMETERS)


def search_settings(params: dict, engine: str) -> SearchSettings:
    """The search settings of validated parameters ``params`` for ``engine`` ("native" or "julia")."""
    relevance = params["feature_relevance"]
    if relevance == "auto":
        relevance = 0.5 if engine == "native" else 0.0
    batch = AUTO_BATCH_SIZE if params["batch_size"] == "auto" else params["batch_size"]
    n_jobs = params["n_jobs"]
    return SearchSettings(
        maxsize=params["maxsize"], niterations=params["niterations"], populations=params["populations"],
        population_size=params["population_size"], ncycles_per_iteration=params["ncycles_per_iteration"],
        parsimony=params["parsimony"], adaptive_parsimony_scaling=params["adaptive_parsimony_scaling"],
        feature_relevance=relevance, batch_size=batch, time_limit=params["time_limit"],
        n_jobs=1 if n_jobs is None else n_jobs, progress=params["progress"],
    )
