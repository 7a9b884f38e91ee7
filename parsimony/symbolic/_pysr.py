"""SQR through PySR (SymbolicRegression.jl): the Julia engine of SymbolicQuantileRegressor.

:func:`pysr_kwargs` maps SQR's settings to ``PySRRegressor`` keyword arguments (the loss's own
Julia source, the paper's token complexities and its Table 9 settings);
:func:`equations_from_pysr` converts PySR's hall of fame into the native ``equations_`` schema;
:func:`fit_pysr` runs one search and :func:`fit_fronts` one per quantile level, returning fronts
of native flat arrays. Only :func:`fit_pysr` imports pysr (and with it Julia).
"""

from __future__ import annotations

import importlib.util
import math
import re

import numpy as np

from .._validation import check_quantile, seed_from, validate_params
from ..backend import JULIA_INSTALL_HINT, JuliaUnavailableError, resolve_backend
from ..losses import Pinball
from ._expressions import BINARY_OPERATORS, from_tokens
from ._front import EngineFit, pareto_scores
from ._parameters import PAPER_MAXSIZE, SQR_PARAMETERS


#: PySRRegressor settings of the SQR paper (Appendix D, Table 9) that SymbolicQuantileRegressor
#: does not expose; the exposed ones (maxsize, niterations, populations, population_size,
#: parsimony, model_selection, time limit, seed, threads, progress) come from the estimator.
#: Table 9 entries equal to None/defaults that newer PySR renamed (procs, multithreading,
#: enable_autodiff) are expressed through ``parallelism`` instead.
PYSR_TABLE9 = {
    "maxdepth": None,
    "ncycles_per_iteration": 550,
    "fraction_replaced": 0.000364,
    "fraction_replaced_hof": 0.035,
    "migration": True,
    "hof_migration": True,
    "topn": 12,
    "denoise": False,
    "select_k_features": None,
    "dimensional_constraint_penalty": 1000.0,
    "max_evals": None,
    "constraints": None,
    "nested_constraints": None,
    "early_stop_condition": None,
    "warmup_maxsize_by": 0.0,
    "use_frequency": True,
    "use_frequency_in_tournament": True,
    "adaptive_parsimony_scaling": 20.0,
    "should_simplify": True,
    "weight_add_node": 0.79,
    "weight_insert_node": 5.1,
    "weight_delete_node": 1.7,
    "weight_do_nothing": 0.21,
    "weight_mutate_constant": 0.048,
    "weight_mutate_operator": 0.47,
    "weight_swap_operands": 0.1,
    "weight_randomize": 0.00023,
    "weight_simplify": 0.0020,
    "weight_optimize": 0.0,
    "crossover_probability": 0.066,
    "annealing": False,
    "alpha": 0.1,
    "perturbation_factor": 0.076,
    "skip_mutation_failures": True,
    "optimizer_algorithm": "BFGS",
    "optimizer_nrestarts": 2,
    "optimize_probability": 0.14,
    "optimizer_iterations": 8,
    "should_optimize_constants": True,
    "tournament_selection_n": 10,
    "tournament_selection_p": 0.86,
    "batching": False,
    "batch_size": 50,
    "precision": 32,
    "fast_cycle": False,
    "turbo": False,
    "bumper": False,
    "warm_start": False,
    "print_precision": 5,
    "temp_equation_file": False,
    "delete_tempfiles": True,
    "update": False,
}

#: Table 9 values of the parameters SymbolicQuantileRegressor exposes (used when one is None).
SQR_TABLE9 = {
    "maxsize": PAPER_MAXSIZE,
    "niterations": 40,
    "populations": 15,
    "population_size": 33,
    "parsimony": 0.0032,
    "model_selection": "best",
}

#: The SQR paper's default operators (Table 1): + - * / square sqrt exp log sin cos.
PAPER_OPERATORS = ("add", "sub", "mul", "div", "square", "sqrt", "exp", "log", "sin", "cos")

#: Canonical operator name -> PySR operator string.
PYSR_OPERATOR = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "^",
    "square": "square", "cube": "cube", "sqrt": "sqrt", "exp": "exp", "log": "log",
    "sin": "sin", "cos": "cos", "abs": "abs", "neg": "neg",
}
def pysr_kwargs(quantile, *, operators=None, maxsize=None, complexity_of_operators=None, niterations=None,
                populations=None, population_size=None, parsimony=None, model_selection=None,
                time_limit=None, random_state=None, n_jobs=None, progress=True, loss=None, batch_size=None,
                ncycles_per_iteration=None, adaptive_parsimony_scaling=None) -> dict:
    """``PySRRegressor`` keyword arguments for SQR at ``quantile`` (built without importing pysr).

    Parameters mirror ``SymbolicQuantileRegressor``; ``None`` takes the SQR paper's Table 9 value,
    and so does ``maxsize="auto"`` (the additive stage, for which "auto" makes room, is not PySR's).
    ``loss`` (a :mod:`parsimony.losses` object, default ``Pinball(quantile)``) becomes PySR's
    ``elementwise_loss`` from the loss's own :meth:`~parsimony.losses.Loss.julia_source`;
    ``batch_size`` (rows, or None for all rows) switches on PySR's batching.
    Token complexities default to the paper's Table 1 (:data:`parsimony.symbolic.TOKEN_COMPLEXITY`),
    overridden by ``complexity_of_operators`` (which may also set ``"feature"``/``"variable"`` and
    ``"constant"``). A ``random_state`` makes the search serial and deterministic, as PySR requires;
    otherwise ``n_jobs`` other than 1 searches multithreaded. ``model_selection="cost"``,
    ``"elbow"`` or ``"sic"`` asks PySR for ``"best"``; the estimator selects from the converted front itself.
    """
    check_quantile(quantile)
    if isinstance(maxsize, str) and maxsize == "auto":  # no additive stage on this engine: the paper's
        maxsize = PAPER_MAXSIZE
    given = {"operators": PAPER_OPERATORS if operators is None else operators, "maxsize": maxsize,
             "complexity_of_operators": complexity_of_operators or {}, "niterations": niterations,
             "populations": populations, "population_size": population_size, "parsimony": parsimony,
             "model_selection": model_selection, "time_limit": time_limit, "random_state": random_state,
             "n_jobs": n_jobs, "progress": bool(progress), "loss": loss, "batch_size": batch_size,
             "ncycles_per_iteration": ncycles_per_iteration,
             "adaptive_parsimony_scaling": adaptive_parsimony_scaling}
    given.update({key: SQR_TABLE9[key] for key, value in given.items() if value is None and key in SQR_TABLE9})
    # the estimator's own table: the same rules and messages as SymbolicQuantileRegressor.fit
    checked = validate_params({k: v for k, v in given.items() if v is not None},
                              {k: SQR_PARAMETERS[k] for k, v in given.items() if v is not None})
    names, weights = checked["operators"], checked["complexity_of_operators"]
    kwargs = dict(PYSR_TABLE9)
    kwargs["binary_operators"] = [PYSR_OPERATOR[n] for n in names if n in BINARY_OPERATORS]
    kwargs["unary_operators"] = [PYSR_OPERATOR[n] for n in names if n not in BINARY_OPERATORS]
    kwargs["complexity_of_operators"] = {PYSR_OPERATOR[n]: weights[n] for n in names}
    kwargs["complexity_of_variables"] = weights["feature"]
    kwargs["complexity_of_constants"] = weights["constant"]
    loss = checked.get("loss")
    kwargs["elementwise_loss"] = (Pinball(quantile) if loss is None else loss).julia_source()
    if checked.get("batch_size") is not None:
        kwargs["batching"], kwargs["batch_size"] = True, checked["batch_size"]
    for key in ("ncycles_per_iteration", "adaptive_parsimony_scaling", "maxsize", "niterations", "populations",
                "population_size", "parsimony"):
        if key in checked:
            kwargs[key] = checked[key]
    kwargs["model_selection"] = ("best" if checked["model_selection"] in ("cost", "elbow", "sic")
                               else checked["model_selection"])
    if checked.get("time_limit") is not None:
        kwargs["timeout_in_seconds"] = checked["time_limit"]
    if random_state is not None:
        kwargs["random_state"] = seed_from(random_state)
        kwargs["deterministic"] = True
        kwargs["parallelism"] = "serial"
    else:
        kwargs["parallelism"] = "serial" if n_jobs == 1 else "multithreading"
    kwargs["progress"] = bool(progress)
    kwargs["verbosity"] = 1 if progress else 0
    return {k: v for k, v in kwargs.items() if v is not None}


#: Columns of the native ``equations_`` DataFrame, in order.
EQUATIONS_COLUMNS = ("complexity", "loss", "score", "equation", "sympy")

_PYSR_SYMPY_LOCALS = {
    "square": lambda x: x**2, "cube": lambda x: x**3, "neg": lambda x: -x,
}


def equations_from_pysr(frame, feature_names=None):
    """Convert a PySR ``equations_`` DataFrame to the native schema (:data:`EQUATIONS_COLUMNS`).

    Rows with a non-finite loss are dropped; the rest are sorted by complexity and, per
    complexity, only the lowest loss is kept (the Pareto front). PySR's variables ``x0, x1, ...``
    are renamed to ``feature_names`` in ``equation`` and ``sympy``. ``sympy`` comes from PySR's
    ``sympy_format`` column when present, else from parsing ``equation``. ``score`` is PySR's
    (recomputed on the kept rows).
    """
    import pandas as pd
    import sympy

    missing = [c for c in ("complexity", "loss", "equation") if c not in frame.columns]
    if missing:
        raise ValueError(f"not a PySR equations table: missing columns {missing}")
    df = frame.copy()
    df["loss"] = pd.to_numeric(df["loss"], errors="coerce").astype(float)
    df = df[np.isfinite(df["loss"].to_numpy())]
    df = df.sort_values(["complexity", "loss"], kind="stable").drop_duplicates("complexity", keep="first")
    df = df.reset_index(drop=True)
    complexity = df["complexity"].to_numpy()
    if not np.all(np.asarray(complexity, dtype=float) == np.round(np.asarray(complexity, dtype=float))):
        raise ValueError("PySR complexities must be integers")
    complexity = complexity.astype(np.int64)
    loss = df["loss"].to_numpy(dtype=np.float64)

    names = None if feature_names is None else [str(n) for n in feature_names]
    rename = {}
    if names is not None:
        rename = {sympy.Symbol(f"x{i}"): sympy.Symbol(name) for i, name in enumerate(names)}

    def rename_text(text: str) -> str:
        if names is None:
            return text
        return re.sub(r"\bx(\d+)\b", lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names) else m.group(0),
                      text)

    exprs = []
    for _, row in df.iterrows():
        expr = row["sympy_format"] if "sympy_format" in df.columns else None
        if expr is None or (isinstance(expr, float) and math.isnan(expr)):
            source = str(row["equation"]).replace("^", "**")
            symbols = {name: sympy.Symbol(name) for name in re.findall(r"\bx\d+\b", source)}
            expr = sympy.sympify(source, locals={**_PYSR_SYMPY_LOCALS, **symbols})
        else:
            expr = sympy.sympify(expr)
        exprs.append(expr.xreplace(rename) if rename else expr)
    return pd.DataFrame({
        "complexity": complexity,
        "loss": loss,
        "score": pareto_scores(complexity, loss),
        "equation": [rename_text(str(e)) for e in df["equation"]],
        "sympy": exprs,
    }, columns=list(EQUATIONS_COLUMNS))


def fit_pysr(X, y, quantile, *, sample_weight=None, feature_names=None, previous=None, **params):
    """Run one PySR search for SQR at ``quantile``; return ``(model, equations)``.

    ``params`` are the :func:`pysr_kwargs` keywords. ``previous``, a PySRRegressor this function
    returned, goes on from its search (PySR's ``warm_start``) instead of starting afresh.
    Features are passed to PySR as ``x0, x1, ...`` and, when ``feature_names`` is given, renamed
    to them in the returned equations.

    Raises
    ------
    JuliaUnavailableError
        When Julia or pysr is unavailable.
    """
    resolve_backend("julia")  # raises with install instructions when Julia does not work
    try:
        from pysr import PySRRegressor  # lazy: starts PySR's Julia environment
    except ImportError as exc:
        raise JuliaUnavailableError(f"the Julia backend for SQR needs pysr ({exc}). {JULIA_INSTALL_HINT}") from exc
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    kwargs = pysr_kwargs(quantile, **params)
    if previous is None:
        model = PySRRegressor(**kwargs)
    else:
        model = previous
        model.set_params(**{**kwargs, "warm_start": True})
    model.fit(X, y, weights=w)
    return model, equations_from_pysr(model.equations_, feature_names)


def sympy_to_postfix(expr) -> list:
    """Postfix tokens (numbers, ``"x3"``, operator names) of a sympy expression over ``x0, x1, ...``.

    The token form of ``parsimony.symbolic._expressions.from_tokens``: sums and products become
    chains of binary ``add``/``mul``, a factor ``-1`` a ``neg``, powers 2, 3 and 1/2 ``square``,
    ``cube`` and ``sqrt``, a power -1 a division, other powers ``pow``.
    """
    import sympy

    out: list = []

    def walk(e):
        if e.is_Symbol:
            if not re.fullmatch(r"x\d+", e.name):
                raise ValueError(f"unexpected variable {e.name!r}: PySR variables are x0, x1, ...")
            out.append(e.name)
        elif e.is_Number or e.is_NumberSymbol:
            out.append(float(e))
        elif e.is_Add or e.is_Mul:
            args = list(e.args)
            if e.is_Mul and args[0] == -1:
                walk(sympy.Mul(*args[1:]))
                out.append("neg")
                return
            walk(args[0])
            for a in args[1:]:
                if e.is_Mul and a.is_Pow and a.exp == -1:
                    walk(a.base)
                    out.append("div")
                else:
                    walk(a)
                    out.append("add" if e.is_Add else "mul")
        elif e.is_Pow:
            base, ex = e.args
            named = {2: "square", 3: "cube", sympy.Rational(1, 2): "sqrt"}
            if ex in named:
                walk(base)
                out.append(named[ex])
            elif ex == -1:
                out.append(1.0)
                walk(base)
                out.append("div")
            else:
                walk(base)
                walk(ex)
                out.append("pow")
        elif isinstance(e, (sympy.sin, sympy.cos, sympy.exp, sympy.log, sympy.Abs)):
            walk(e.args[0])
            out.append({sympy.sin: "sin", sympy.cos: "cos", sympy.exp: "exp", sympy.log: "log",
                        sympy.Abs: "abs"}[type(e)])
        else:
            raise ValueError(f"cannot express the sympy node {type(e).__name__!r} with the native operators")

    walk(sympy.sympify(expr))
    return out


def pysr_available() -> bool:
    """Whether pysr is installed (checked without importing it)."""
    return importlib.util.find_spec("pysr") is not None


def front_rows(equations, n_features) -> list:
    """Rows ``{"complexity", "loss", "ops", "feats", "vals"}`` of a converted PySR front (the
    native flat arrays); expressions outside the native operator set are dropped."""
    rows = []
    for _, row in equations.iterrows():
        try:
            ops, feats, vals = from_tokens(sympy_to_postfix(row["sympy"]), n_features)
        except ValueError:
            continue  # an expression outside the native operator set cannot be evaluated natively
        rows.append({"complexity": int(row["complexity"]), "loss": float(row["loss"]),
                     "ops": ops, "feats": feats, "vals": vals})
    return rows


def fit_fronts(X, y, sample_weight, plan, previous=None) -> EngineFit:
    """SQR's Julia engine: one PySR search per loss (one per quantile level).

    Takes the estimator's validated values, never the estimator: ``plan`` (its
    :class:`~parsimony.symbolic._parameters.FitPlan`: losses, search settings, canonical operator
    names, the complexity table, the seed) and ``previous`` (the PySR models of the last fit, to
    go on from with ``warm_start``). Returns an :class:`~parsimony.symbolic._front.EngineFit`
    whose fronts are :func:`front_rows` (complexity in the token weights, loss the mean training
    loss) and whose states are the fitted PySRRegressors. ``certify``, ``domain`` and ``rescale``
    map to the estimator's own steps around the engine: ``X`` and ``y`` arrive in the search's
    units, and the returned fronts are written back in the user's and filtered to the rows
    certified on the domain (PySR's search itself is not restricted, so a front may lose rows).
    ``feature_units`` and ``target_units`` map the same way: the estimator marks each returned row
    ``consistent`` and selects among those rows, as on the native engine (whose search they do not
    change either). PySR's own ``X_units``/``y_units`` are not passed: they are SI symbols parsed by
    DynamicQuantities (``T`` is tesla there, temperature in the AI Feynman metadata), and they
    penalise the search rather than mark its front.

    Raises
    ------
    ValueError
        For a setting PySR cannot honour (``feature_relevance > 0``: PySR draws features uniformly;
        ``additive_stage=True``: the additive stage is the native engine's).
    """
    settings, losses = plan.settings, plan.losses
    if settings.additive_stage:
        raise ValueError("additive_stage=True is not supported by the Julia engine (the additive stage is the native "
                         "engine's): use additive_stage=False or 'auto', or backend='native'")
    if settings.feature_relevance > 0:
        raise ValueError(f"feature_relevance={settings.feature_relevance!r} is not supported by the Julia engine "
                         "(PySR draws features uniformly): use feature_relevance=0 or 'auto', or backend='native'")
    batch = settings.batch_rows(len(y))
    params = {"operators": plan.operators, "maxsize": settings.maxsize, "complexity_of_operators": plan.token_table,
              "niterations": settings.niterations, "populations": settings.populations,
              "population_size": settings.population_size, "parsimony": settings.parsimony,
              "time_limit": settings.time_limit, "random_state": plan.seed if plan.seeded else None,
              "n_jobs": settings.n_jobs, "progress": settings.progress, "batch_size": batch,
              "ncycles_per_iteration": settings.ncycles_per_iteration,
              "adaptive_parsimony_scaling": settings.adaptive_parsimony_scaling}
    previous = [None] * len(losses) if previous is None or len(previous) != len(losses) else previous
    fronts, models = [], []
    for loss, model in zip(losses, previous):
        model, equations = fit_pysr(X, y, loss.tau, sample_weight=sample_weight, previous=model, loss=loss, **params)
        rows = front_rows(equations, X.shape[1])
        if not rows:
            raise RuntimeError(f"PySR returned no usable expression for {loss!r}")
        fronts.append(rows)
        models.append(model)
    return EngineFit(fronts, ["completed"] * len(losses), 0, models)
