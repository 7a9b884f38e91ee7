"""The optional Julia backend: ParsimonyKernels through juliacall, and SQR through PySR.

Nothing here imports juliacall or pysr at module import. :func:`kernels` starts Julia on first
use (raising :class:`~parsimony.backend.JuliaUnavailableError` with install instructions when
it cannot), loads the Julia package ``ParsimonyKernels`` and caches it. The kernel functions
below (:func:`cluster_costs`, :func:`cbcd`, ...) take and return exactly what their numba twins
take and return; :func:`get_kernel` picks the twin for a backend.

For symbolic quantile regression, :func:`pysr_kwargs` maps the parameters of
``SymbolicQuantileRegressor`` to ``PySRRegressor`` keyword arguments (pinball loss at the
requested quantile, the paper's token complexities and the PySR settings of the SQR paper's
Table 9), :func:`equations_from_pysr` converts PySR's hall of fame into the native
``equations_`` schema, and :func:`fit_pysr` runs one search. The first two never import pysr.
"""

from __future__ import annotations

import functools
import importlib
import math
import re
from pathlib import Path

import numpy as np

from ._validation import check_quantile, seed_from
from .backend import JULIA_INSTALL_HINT, JuliaUnavailableError, julia_status, resolve_backend

#: UUID of the Julia package ParsimonyKernels (julia/Project.toml, declared in juliapkg.json).
KERNELS_UUID = "a8c75590-e745-47b0-8a2c-6a7874ce12c6"
#: The Julia package shipped with parsimony (a symlink to the top-level julia/ in a checkout).
KERNELS_DIR = Path(__file__).resolve().parent / "julia"

# ------------------------------------------------------------------------------ Julia session


@functools.lru_cache(maxsize=1)
def kernels():
    """Return the Julia module ``ParsimonyKernels``, starting Julia on the first call.

    juliacall's package manager (juliapkg) develops ParsimonyKernels from the declaration in
    ``parsimony/juliapkg.json``. When that declaration was not picked up (say, an editable
    install used from another directory), the module is included from :data:`KERNELS_DIR`
    instead; it depends on Julia's standard library only.

    Raises
    ------
    JuliaUnavailableError
        When juliacall is missing or no Julia session starts.
    """
    available, reason = julia_status()
    if not available:
        raise JuliaUnavailableError(f"the Julia backend is unavailable: {reason}. {JULIA_INSTALL_HINT}")
    from juliacall import Main as jl  # lazy: only once Julia is known to work

    if bool(jl.seval('Base.find_package("ParsimonyKernels") !== nothing')):
        jl.seval("import ParsimonyKernels")
    else:
        entry = KERNELS_DIR / "src" / "ParsimonyKernels.jl"
        if not entry.is_file():
            raise JuliaUnavailableError(f"the Julia package ParsimonyKernels was not found at {KERNELS_DIR}")
        jl.seval(f'isdefined(Main, :ParsimonyKernels) || Base.include(Main, raw"{entry}")')
    return jl.ParsimonyKernels


def _f64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


# ------------------------------------------------------------------- kernels with native twins


def cluster_costs(kind, weights, values, max_clusters, lam, floor):
    """Julia twin of :func:`parsimony.trees._kmeans.cluster_costs` (same arguments and results)."""
    best, costs = kernels().cluster_costs(int(kind), _f64(weights), _f64(values), int(max_clusters),
                                          float(lam), float(floor))
    return float(best), np.array(costs, dtype=np.float64)


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def gram_tables(leaves, T, loff, n_layers):
    """Julia twin of :func:`parsimony.ensembles._cbcd.gram_tables`.

    As for every CBCD twin, ``T`` is the transposed leaf table, (n_layers, n_leaves_total)
    (``EnsembleTables.leaf_table_t``); Julia reads it with the same (layer, leaf) indexing.
    """
    G, PP = kernels().gram_tables(_i64(leaves), _f64(T), _i64(loff), _i64(n_layers))
    return np.array(G, dtype=np.float64), np.array(PP, dtype=np.float64)


def residual(leaves, T, loff, target, layers, beta, gamma):
    """Julia twin of :func:`parsimony.ensembles._cbcd.residual`."""
    R = kernels().residual(_i64(leaves), _f64(T), _i64(loff), _f64(target), _i64(layers), _f64(beta), float(gamma))
    return np.array(R, dtype=np.float64)


def objective(R, layers, beta, wcum, pen_scale, alpha2, mode):
    """Julia twin of :func:`parsimony.ensembles._cbcd.objective`."""
    return float(kernels().objective(_f64(R), _i64(layers), _f64(beta), _f64(wcum), float(pen_scale), float(alpha2),
                                     int(mode)))


def stack_truncated(leaves, T, loff, layers, idx):
    """Julia twin of :func:`parsimony.ensembles._cbcd.stack_truncated` (``idx``: 0-based tree indices)."""
    Q = kernels().stack_truncated(_i64(leaves), _f64(T), _i64(loff), _i64(layers), _i64(idx))
    return np.array(Q, dtype=np.float64)


def alpha_max(leaves, T, loff, PP, wcum, n_layers, target, gamma, K):
    """Julia twin of :func:`parsimony.ensembles._cbcd.alpha_max`."""
    return float(kernels().alpha_max(_i64(leaves), _f64(T), _i64(loff), _f64(PP), _f64(wcum), _i64(n_layers),
                                     _f64(target), float(gamma), float(K)))


def _inplace(a, dtype, name):
    if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.writeable):
        raise TypeError(f"{name} must be a writeable {np.dtype(dtype).name} NumPy array (it is updated in place)")
    return a


def cbcd(leaves, T, loff, G, PP, wcum, n_layers, R, layers, beta, gamma, pen_scale, alpha2, mode, max_trees,
         max_sweeps, history):
    """Julia twin of :func:`parsimony.ensembles._cbcd.cbcd`.

    ``R``, ``layers``, ``beta`` and ``history`` are updated in place (juliacall hands Julia a
    view of the NumPy buffers); returns the number of sweeps (the last one stopped once ``n``
    consecutive block updates changed nothing), negative if ``max_sweeps`` was hit.
    """
    R = _inplace(R, np.float64, "R")
    layers = _inplace(layers, np.int64, "layers")
    beta = _inplace(beta, np.float64, "beta")
    history = _inplace(history, np.float64, "history")
    sweeps = kernels().cbcd_b(_i64(leaves), _f64(T), _i64(loff), _f64(G), _f64(PP), _f64(wcum), _i64(n_layers),
                              R, layers, beta, float(gamma), float(pen_scale), float(alpha2), int(mode),
                              int(max_trees), int(max_sweeps), history)
    return int(sweeps)


#: Kernels with a Julia twin: name -> (module of the numba twin, attribute).
NATIVE_TWINS = {
    "cluster_costs": ("parsimony.trees._kmeans", "cluster_costs"),
    "gram_tables": ("parsimony.ensembles._cbcd", "gram_tables"),
    "residual": ("parsimony.ensembles._cbcd", "residual"),
    "objective": ("parsimony.ensembles._cbcd", "objective"),
    "stack_truncated": ("parsimony.ensembles._cbcd", "stack_truncated"),
    "alpha_max": ("parsimony.ensembles._cbcd", "alpha_max"),
    "cbcd": ("parsimony.ensembles._cbcd", "cbcd"),
}


def get_kernel(name: str, backend: str | None = "auto"):
    """Return kernel ``name`` for ``backend`` ("auto", "native", "julia"): both twins share one contract.

    ``"auto"`` gives the Julia twin only when Julia works (see :func:`parsimony.backend.resolve_backend`).
    """
    if name not in NATIVE_TWINS:
        raise ValueError(f"unknown kernel {name!r}; kernels with a Julia twin: {sorted(NATIVE_TWINS)}")
    if resolve_backend(backend) == "julia":
        return globals()[name]
    module, attr = NATIVE_TWINS[name]
    return getattr(importlib.import_module(module), attr)


# -------------------------------------------------------------------------------- SQR via PySR

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
    "maxsize": 20,
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
_BINARY = ("add", "sub", "mul", "div", "pow")
_ALIASES = {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "**": "pow"}


def _canonical(op) -> str:
    if not isinstance(op, str):
        raise TypeError(f"operators must be strings, got {op!r}")
    key = op.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in PYSR_OPERATOR:
        raise ValueError(f"unknown operator {op!r}; known operators: {', '.join(PYSR_OPERATOR)} (and + - * / ^)")
    return key


def pinball_loss_julia(quantile) -> str:
    """Julia source of the pinball loss at ``quantile`` for PySR's ``elementwise_loss``.

    Self-contained (no package needed on PySR's workers), with the SymbolicRegression.jl
    signatures ``loss(prediction, target)`` and ``loss(prediction, target, weight)``; the same
    function as ``ParsimonyKernels.Pinball(quantile)`` and :func:`parsimony.metrics.pinball_loss`
    (under-prediction weighs ``quantile``). The residual's float type is kept (Float32 searches).
    """
    tau = check_quantile(quantile)
    text = repr(tau)  # shortest round-trip decimal; Julia parses it to the same Float64
    return (
        "begin\n"
        "    function parsimony_pinball(prediction, target)\n"
        "        r = float(target - prediction)\n"
        f"        q = convert(typeof(r), {text})\n"
        "        return r >= zero(r) ? q * r : (q - one(q)) * r\n"
        "    end\n"
        "    parsimony_pinball(prediction, target, weight) = weight * parsimony_pinball(prediction, target)\n"
        "    parsimony_pinball\n"
        "end"
    )


def pysr_kwargs(quantile, *, operators=None, maxsize=None, complexity_of_operators=None, niterations=None,
                populations=None, population_size=None, parsimony=None, model_selection=None,
                time_limit=None, random_state=None, n_jobs=None, progress=True) -> dict:
    """``PySRRegressor`` keyword arguments for SQR at ``quantile`` (built without importing pysr).

    Parameters mirror ``SymbolicQuantileRegressor``; ``None`` takes the SQR paper's Table 9 value.
    Token complexities default to the paper's Table 1 (:data:`parsimony.metrics.TOKEN_COMPLEXITY`),
    overridden by ``complexity_of_operators`` (which may also set ``"feature"``/``"variable"`` and
    ``"constant"``). A ``random_state`` makes the search serial and deterministic, as PySR requires;
    otherwise ``n_jobs`` other than 1 searches multithreaded. ``model_selection="elbow"`` (native only)
    asks PySR for ``"best"``; the estimator selects from the converted front itself.
    """
    from .metrics import TOKEN_COMPLEXITY

    kwargs = dict(PYSR_TABLE9)
    ops = PAPER_OPERATORS if operators is None else ([operators] if isinstance(operators, str) else list(operators))
    names = []
    for op in ops:
        key = _canonical(op)
        if key not in names:
            names.append(key)
    binary = [PYSR_OPERATOR[n] for n in names if n in _BINARY]
    unary = [PYSR_OPERATOR[n] for n in names if n not in _BINARY]
    if not binary:
        raise ValueError("operators must contain at least one binary operator (add, sub, mul, div, pow)")
    weights = dict(TOKEN_COMPLEXITY)
    for key, value in dict(complexity_of_operators or {}).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"complexity_of_operators[{key!r}] must be a positive number, got {value!r}")
        key = "feature" if key in ("feature", "variable") else ("constant" if key == "constant" else _canonical(key))
        weights[key] = value
    kwargs["binary_operators"] = binary
    kwargs["unary_operators"] = unary
    kwargs["complexity_of_operators"] = {PYSR_OPERATOR[n]: weights[n] for n in names}
    kwargs["complexity_of_variables"] = weights["feature"]
    kwargs["complexity_of_constants"] = weights["constant"]
    kwargs["elementwise_loss"] = pinball_loss_julia(quantile)

    given = {"maxsize": maxsize, "niterations": niterations, "populations": populations,
             "population_size": population_size, "parsimony": parsimony, "model_selection": model_selection}
    for key, value in given.items():
        kwargs[key] = SQR_TABLE9[key] if value is None else value
    for key in ("maxsize", "niterations", "populations", "population_size"):
        value = kwargs[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {value!r}")
        kwargs[key] = int(value)
    if not isinstance(kwargs["parsimony"], (int, float)) or kwargs["parsimony"] < 0:
        raise ValueError(f"parsimony must be a number >= 0, got {kwargs['parsimony']!r}")
    selection = kwargs["model_selection"]
    if selection not in ("best", "score", "accuracy", "elbow"):
        raise ValueError(f"model_selection must be 'best', 'score', 'accuracy' or 'elbow', got {selection!r}")
    kwargs["model_selection"] = "best" if selection == "elbow" else selection
    if time_limit is not None:
        if not isinstance(time_limit, (int, float)) or not time_limit > 0:
            raise ValueError(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
        kwargs["timeout_in_seconds"] = float(time_limit)
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

    from .symbolic.regressor import pareto_scores

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


def fit_pysr(X, y, quantile, *, sample_weight=None, feature_names=None, max_samples=None, extra=None,
             previous=None, **params):
    """Run one PySR search for SQR at ``quantile``; return ``(model, equations)``.

    ``params`` are the :func:`pysr_kwargs` keywords; ``extra`` adds or overrides PySRRegressor
    keywords (say ``ncycles_per_iteration``). ``previous``, a PySRRegressor this function
    returned, goes on from its search (PySR's ``warm_start``) instead of starting afresh.
    ``max_samples`` draws that many rows without replacement (seeded by ``random_state``), the
    paper's SQR10K. Features are passed to PySR as ``x0, x1, ...`` and renamed to
    ``feature_names`` in the returned equations.

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
    if max_samples is not None and X.shape[0] > max_samples:
        rng = np.random.default_rng(seed_from(params.get("random_state")))
        rows = np.sort(rng.choice(X.shape[0], size=int(max_samples), replace=False))
        X, y = X[rows], y[rows]
        w = None if w is None else w[rows]
    kwargs = {**pysr_kwargs(quantile, **params), **(extra or {})}
    if previous is None:
        model = PySRRegressor(**kwargs)
    else:
        model = previous
        model.set_params(**{**kwargs, "warm_start": True})
    model.fit(X, y, weights=w)
    if feature_names is None:
        feature_names = [f"x{i}" for i in range(X.shape[1])]
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


def fit_sqr_fronts(estimator, X, y, sample_weight, quantiles, feature_names):
    """SymbolicQuantileRegressor's Julia engine: one PySR search per quantile level.

    Implements the contract of ``parsimony.symbolic._julia.fit_julia``: returns, per quantile,
    the Pareto front as rows ``{"complexity", "loss", "ops", "feats", "vals"}`` (complexity in
    the estimator's token weights, loss the mean pinball loss on ``X, y``), with expressions
    converted to the native flat arrays so that predict, export and plots work unchanged.
    ``X`` is already subsampled (``max_samples``) by the estimator. With ``warm_start`` the
    estimator's PySR models of its last fit go on searching.
    """
    from .symbolic._expressions import from_tokens

    params = {name: getattr(estimator, name, None) for name in (
        "operators", "maxsize", "complexity_of_operators", "niterations", "populations", "population_size",
        "parsimony", "model_selection", "time_limit", "random_state", "n_jobs")}
    params["progress"] = bool(getattr(estimator, "progress", True))
    extra = {name: getattr(estimator, name) for name in ("ncycles_per_iteration", "adaptive_parsimony_scaling")
             if getattr(estimator, name, None) is not None}
    n_features = X.shape[1]
    fronts = []
    previous = getattr(estimator, "_pysr_models", None) if getattr(estimator, "warm_start", False) else None
    if previous is None or len(previous) != len(quantiles):
        previous = [None] * len(quantiles)
    estimator._pysr_models = []
    for tau, model in zip(quantiles, previous):
        model, equations = fit_pysr(X, y, tau, sample_weight=sample_weight, extra=extra, previous=model, **params)
        estimator._pysr_models.append(model)
        rows = []
        for _, row in equations.iterrows():
            try:
                ops, feats, vals = from_tokens(sympy_to_postfix(row["sympy"]), n_features)
            except ValueError:
                continue  # an expression outside the native operator set cannot be evaluated natively
            rows.append({"complexity": int(row["complexity"]), "loss": float(row["loss"]),
                         "ops": ops, "feats": feats, "vals": vals})
        if not rows:
            raise RuntimeError(f"PySR returned no usable expression at quantile {tau}")
        fronts.append(rows)
    return fronts
