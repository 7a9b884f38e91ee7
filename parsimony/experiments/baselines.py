"""Baselines of the SQR paper's benchmark (Section 4.2), tuned per dataset as in its Table 10.

- LQR: linear quantile regression (scikit-learn ``QuantileRegressor``, exact ``highs`` LP solver) on
  standardised features, tuned over its L1 penalty ``alpha`` (the paper tuned statsmodels'
  ``max_iter``, which only matters for an iterative solver; the LP is solved exactly here). The
  first trial is the smallest penalty, i.e. the paper's practically unpenalised model.
- QDT: :class:`QuantileDecisionTreeRegressor`, a CART tree whose leaves predict the tau-quantile of
  their training targets, tuned over ``min_samples_leaf`` in 1..50.
- LGBM: LightGBM with the quantile objective, tuned over ``num_leaves``, ``learning_rate``,
  ``max_depth`` and ``min_child_samples`` (needs the ``bench`` extra).
- OSRT-Q: the provably optimal sparse quantile tree (:class:`~parsimony.trees.OptimalSparseRegressionTree`
  with ``loss="quantile"``), tuned over its per-leaf penalty ``regularization`` (log scale, 1e-3 to
  0.2; the first trial is 0.01, the OSRT default of the benchmark budgets).

Tuning is :class:`TunedQuantileRegressor`: inner k-fold cross-validation of the pinball loss,
Optuna's TPE sampler seeded by ``random_state`` (or, without Optuna, a seeded random search over the
same space), under a trial count and a time limit. The first trial always evaluates the
estimator's own parameter values.
"""

from __future__ import annotations

import json
import math
import numbers
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import QuantileRegressor
from sklearn.model_selection import KFold
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .._validation import (
    POSITIVE, QUANTILE, SKLEARN_RANDOM_STATE, Check, Interval, Options, check_numeric_columns, check_quantile,
    input_feature_names, validate_params,
)
from ..base import QuantileScoreMixin
from ..losses import grouped_weighted_quantiles
from ..metrics import complexity, pinball_loss
from ._optional import available, require

# ----------------------------------------------------------------------------- quantile tree


#: QDT's parameter table; the tree's own parameters are checked by DecisionTreeRegressor.
QDT_PARAMETERS = {"quantile": [QUANTILE]}


class QuantileDecisionTreeRegressor(QuantileScoreMixin, RegressorMixin, BaseEstimator):
    """CART regression tree whose leaves predict the tau-quantile of their training targets (QDT).

    The tree is grown by scikit-learn's ``DecisionTreeRegressor``; each leaf then predicts the lower
    weighted ``quantile`` of the training targets that reach it, the constant that minimises the
    leaf's pinball loss. ``score`` is the D^2 pinball score at ``quantile``.

    Parameters
    ----------
    quantile : float in (0, 1), default=0.5
    criterion : {"squared_error", "absolute_error", "friedman_mse", "poisson"}, default="squared_error"
        Split criterion of the CART tree.
    max_depth, min_samples_split, min_samples_leaf, max_leaf_nodes, random_state :
        As in ``sklearn.tree.DecisionTreeRegressor``.

    Attributes
    ----------
    estimator_ : DecisionTreeRegressor
        The grown tree (its leaf means are not used).
    tree_ : sklearn Tree
        ``estimator_.tree_``.
    complexity_ : int
        Number of nodes of the tree.
    node_values_ : ndarray of shape (node_count,)
        Prediction of every node: the tau-quantile of the training targets reaching it (leaves).
    n_features_in_, feature_names_in_ :
        As in scikit-learn.
    """

    def __init__(self, quantile=0.5, criterion="squared_error", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, max_leaf_nodes=None, random_state=None):
        self.quantile = quantile
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.max_leaf_nodes = max_leaf_nodes
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``(X, y)`` and set every leaf to its targets' tau-quantile.

        Returns
        -------
        self
        """
        tau = validate_params(self.get_params(deep=False), QDT_PARAMETERS)["quantile"]
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        tree = _cart_tree(self).fit(X, y, sample_weight=sample_weight)
        leaves = tree.apply(X)
        values = tree.tree_.value[:, 0, 0].astype(np.float64).copy()
        quantiles = grouped_weighted_quantiles(leaves, y, tau, sample_weight)
        reached = ~np.isnan(quantiles)
        values[: quantiles.size][reached] = quantiles[reached]
        self.estimator_ = tree
        self.tree_ = tree.tree_
        self.node_values_ = values
        self.complexity_ = int(tree.tree_.node_count)
        return self

    def export_text(self, feature_names=None, decimals=6) -> str:
        """The tree as indented text: splits ``name <= threshold`` and leaf values (``decimals`` significant digits)."""
        check_is_fitted(self)
        names = input_feature_names(self, feature_names)
        tree, lines = self.tree_, []

        def walk(node, depth):
            pad = "|   " * depth
            if tree.children_left[node] == -1:
                lines.append(f"{pad}value: {self.node_values_[node]:.{decimals}g}")
                return
            name, thr = names[tree.feature[node]], tree.threshold[node]
            lines.append(f"{pad}{name} <= {thr:.{decimals}g}")
            walk(tree.children_left[node], depth + 1)
            lines.append(f"{pad}{name} >  {thr:.{decimals}g}")
            walk(tree.children_right[node], depth + 1)

        walk(0, 0)
        return "\n".join(lines)

    def predict(self, X):
        """Leaf tau-quantile for every row of ``X``."""
        check_is_fitted(self)
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.node_values_[self.estimator_.apply(X)]


def _final_step(model):
    """The last step of a pipeline (the model itself otherwise)."""
    return model.steps[-1][1] if hasattr(model, "steps") else model


def _linear_text(pipeline, names, decimals) -> str:
    """``y = b + a1*x1 + ...`` of a (scaler, linear model) pipeline, in the original feature units."""
    scaler, linear = pipeline.steps[0][1], pipeline.steps[-1][1]
    coef = np.asarray(linear.coef_, dtype=float)
    mean = getattr(scaler, "mean_", np.zeros_like(coef))
    scale = getattr(scaler, "scale_", np.ones_like(coef))
    slopes = coef / scale
    intercept = float(linear.intercept_) - float(np.sum(slopes * mean))
    terms = [f"{intercept:.{decimals}g}"] + [f"{s:+.{decimals}g}*{n}" for s, n in zip(slopes, names) if s != 0]
    return "y = " + " ".join(terms)


def _cart_tree(qdt: QuantileDecisionTreeRegressor):
    """The unfitted CART tree a :class:`QuantileDecisionTreeRegressor` grows."""
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(
        criterion=qdt.criterion, max_depth=qdt.max_depth, min_samples_split=qdt.min_samples_split,
        min_samples_leaf=qdt.min_samples_leaf, max_leaf_nodes=qdt.max_leaf_nodes, random_state=qdt.random_state,
    )


# ----------------------------------------------------------------------------- tuning

_KINDS = ("int", "int_log", "float", "float_log", "categorical")


def _check_space(space, name="param_space") -> dict:
    if space is None:
        return {}
    if not isinstance(space, dict):
        raise ValueError(f"param_space must be a dict name -> (kind, ...), got {type(space).__name__}")
    for name, spec in space.items():
        if not isinstance(spec, tuple) or not spec or spec[0] not in _KINDS:
            raise ValueError(f"param_space[{name!r}] must be a tuple starting with one of {_KINDS}, got {spec!r}")
        if spec[0] == "categorical":
            if len(spec) != 2 or not list(spec[1]):
                raise ValueError(f"param_space[{name!r}] must be ('categorical', [choices]), got {spec!r}")
        elif len(spec) != 3 or not spec[1] <= spec[2] or (spec[0].endswith("log") and spec[1] <= 0):
            raise ValueError(f"param_space[{name!r}] must be (kind, low, high) with 0 < low <= high for log kinds, got {spec!r}")
    return space


def _in_space(value, spec) -> bool:
    if spec[0] == "categorical":
        return value in list(spec[1])
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    return spec[1] <= value <= spec[2]


def _random_params(space: dict, rng: np.random.Generator) -> dict:
    params = {}
    for name, spec in space.items():
        kind = spec[0]
        if kind == "categorical":
            choices = list(spec[1])
            params[name] = choices[int(rng.integers(len(choices)))]
        elif kind == "int":
            params[name] = int(rng.integers(spec[1], spec[2] + 1))
        elif kind == "int_log":
            params[name] = int(min(spec[2], max(spec[1], round(math.exp(rng.uniform(math.log(spec[1]), math.log(spec[2] + 0.5)))))))
        elif kind == "float":
            params[name] = float(rng.uniform(spec[1], spec[2]))
        else:
            params[name] = float(math.exp(rng.uniform(math.log(spec[1]), math.log(spec[2]))))
    return params


def _optuna_params(trial, space: dict) -> dict:
    params = {}
    for name, spec in space.items():
        kind = spec[0]
        if kind == "categorical":
            params[name] = trial.suggest_categorical(name, list(spec[1]))
        elif kind in ("int", "int_log"):
            params[name] = trial.suggest_int(name, int(spec[1]), int(spec[2]), log=kind == "int_log")
        else:
            params[name] = trial.suggest_float(name, float(spec[1]), float(spec[2]), log=kind == "float_log")
    return params


#: TunedQuantileRegressor's parameter table (see :func:`parsimony._validation.validate_params`).
TUNED_PARAMETERS = {
    "param_space": [None, Check(_check_space, "a dict name -> (kind, ...)")],
    "quantile": [QUANTILE],
    "cv": [Interval(numbers.Integral, 2)],
    "n_trials": [Interval(numbers.Integral, 1)],
    "time_limit": [None, POSITIVE],
    "search": [Options("auto", "optuna", "random")],
    "selection": [Options("best", "one_se")],
    "random_state": [SKLEARN_RANDOM_STATE],
}


class TunedQuantileRegressor(QuantileScoreMixin, RegressorMixin, BaseEstimator):
    """Tune a quantile regressor's hyperparameters by inner k-fold CV of the pinball loss, then refit.

    ``score`` is the D^2 pinball score at ``quantile``.

    Parameters
    ----------
    estimator : regressor, default=None
        The model to tune, already set up for ``quantile``; ``None`` means
        :class:`QuantileDecisionTreeRegressor` at ``quantile``.
    param_space : dict, default=None
        ``name -> (kind, low, high)`` with kind ``"int"``, ``"int_log"``, ``"float"`` or
        ``"float_log"``, or ``name -> ("categorical", choices)``. ``None``/empty: no tuning.
    quantile : float in (0, 1), default=0.5
        Level of the pinball loss that scores the trials.
    cv : int, default=5
        Inner folds (fewer when there are fewer samples).
    n_trials : int, default=20
        Trials, the first at the estimator's own parameter values.
    time_limit : float or None, default=None
        Seconds for the search (checked between trials); results are reproducible when the trial
        count, not the time limit, ends the search.
    search : {"auto", "optuna", "random"}, default="auto"
        Optuna's TPE sampler (seeded) or a seeded random search; "auto" takes Optuna when installed.
    selection : {"best", "one_se"}, default="best"
        Which trial is refitted: the lowest mean inner-CV loss, or (Breiman et al.'s
        one-standard-error rule) the least complex one whose mean loss is within one standard
        error (over the folds) of the lowest; complexity is that of the trial's fold models.
    random_state : int, RandomState or None, default=None
        Seeds the folds, the sampler and (when it has one) the estimator's ``random_state``.

    Attributes
    ----------
    best_estimator_ : regressor
        The estimator refitted on all data with ``best_params_``.
    best_params_ : dict
    best_score_ : float
        Mean inner-CV pinball loss of the selected trial.
    trials_ : pandas.DataFrame
        One row per trial: ``trial``, the parameters, ``pinball`` (mean over the folds),
        ``pinball_se`` (its standard error) and ``complexity`` (mean over the fold models).
    search_ : str
        ``"optuna-tpe"``, ``"random"`` or ``"none"``.
    tune_time_, refit_time_ : float
        Seconds spent on the search and on the final fit.
    status_ : str
        ``"complete"`` (all trials ran) or ``"time_limit"``.
    complexity_ : int
        :func:`parsimony.metrics.complexity` of the refitted model (of a pipeline's last step).
    """

    def __init__(self, estimator=None, param_space=None, quantile=0.5, cv=5, n_trials=20, time_limit=None,
                 search="auto", selection="best", random_state=None):
        self.estimator = estimator
        self.param_space = param_space
        self.quantile = quantile
        self.cv = cv
        self.n_trials = n_trials
        self.time_limit = time_limit
        self.search = search
        self.selection = selection
        self.random_state = random_state

    def _base(self, seed: int):
        tau = check_quantile(self.quantile)
        base = QuantileDecisionTreeRegressor(quantile=tau) if self.estimator is None else clone(self.estimator)
        if "random_state" in base.get_params(deep=False):
            base.set_params(random_state=seed)
        return base

    def fit(self, X, y):
        """Search the space by inner cross-validation, then refit the best on ``(X, y)``.

        Returns
        -------
        self
        """
        params = validate_params(self.get_params(deep=False), TUNED_PARAMETERS)  # checked once
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        tau, space, n_trials, cv = params["quantile"], params["param_space"] or {}, params["n_trials"], params["cv"]
        limit, search = params["time_limit"], params["search"]
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(0, 2**31 - 1))
        base = self._base(seed)
        n_splits = min(cv, len(y))
        folds = list(KFold(n_splits, shuffle=True, random_state=seed).split(X)) if n_splits >= 2 else []

        records = []

        def score(params: dict) -> float:
            """Record the trial (mean loss, its standard error, mean complexity); return the mean."""
            losses, sizes = [], []
            for train, test in folds:
                try:
                    model = clone(base).set_params(**params).fit(X[train], y[train])
                    losses.append(pinball_loss(y[test], model.predict(X[test]), tau))
                    sizes.append(complexity(_final_step(model)))
                except (ValueError, FloatingPointError, ArithmeticError):
                    losses = []
                    break
            mean = float(np.mean(losses)) if losses else math.inf
            se = float(np.std(losses, ddof=1) / math.sqrt(len(losses))) if len(losses) > 1 else 0.0
            records.append({"trial": len(records), **params, "pinball": mean, "pinball_se": se,
                            "complexity": float(np.mean(sizes)) if losses else math.nan})
            return mean

        current = base.get_params()
        default = {k: current[k] for k in space if k in current and _in_space(current[k], space[k])}
        start, self.status_ = time.perf_counter(), "complete"
        if not space or not folds:
            self.search_ = "none"
        elif search == "random" or (search == "auto" and not available("optuna")):
            self.search_ = "random"
            sampler = np.random.default_rng(seed)
            for i in range(n_trials):
                if limit is not None and i > 0 and time.perf_counter() - start > limit:
                    self.status_ = "time_limit"
                    break
                score({**_random_params(space, sampler), **(default if i == 0 else {})})
        else:
            optuna = require("optuna", "tuning with search='optuna'")
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            self.search_ = "optuna-tpe"
            study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
            if len(default) == len(space):
                study.enqueue_trial(default)
            # ask and tell, not study.optimize: a Ctrl-C inside optimize's bookkeeping (optuna 5.0)
            # surfaced as an UnboundLocalError, which a benchmark then stored as a failed task
            for i in range(n_trials):
                if limit is not None and i > 0 and time.perf_counter() - start > limit:
                    self.status_ = "time_limit"
                    break
                trial = study.ask()
                study.tell(trial, score(_optuna_params(trial, space)))
        self.tune_time_ = time.perf_counter() - start
        trials = pd.DataFrame(records, columns=["trial", *space, "pinball", "pinball_se", "complexity"])
        best = select_trial(records, params["selection"])
        if best is not None:
            self.best_params_ = {k: _plain(best[k]) for k in space}
            self.best_score_ = float(best["pinball"])
        else:
            self.best_params_, self.best_score_ = {}, math.nan
        self.trials_ = trials
        start = time.perf_counter()
        self.best_estimator_ = clone(base).set_params(**self.best_params_).fit(X, y)
        self.refit_time_ = time.perf_counter() - start
        self.complexity_ = complexity(_final_step(self.best_estimator_))
        return self

    def export_text(self, feature_names=None, decimals=6) -> str:
        """``tuned {best_params_}`` and the refitted model: its own ``export_text``, a linear
        formula, or a LightGBM summary (``decimals`` significant digits)."""
        check_is_fitted(self)
        names = input_feature_names(self, feature_names)
        model = self.best_estimator_
        if callable(getattr(model, "export_text", None)):
            text = model.export_text(feature_names=names, decimals=decimals)
        elif hasattr(_final_step(model), "coef_") and hasattr(model, "steps"):
            text = _linear_text(model, names, decimals)
        elif hasattr(model, "booster_"):
            trees = model.booster_.dump_model()["tree_info"]
            text = f"LightGBM: {len(trees)} trees, {sum(t['num_leaves'] for t in trees)} leaves"
        else:
            text = repr(model)
        return f"tuned {json.dumps(self.best_params_, default=str)}\n{text}"

    def predict(self, X):
        """Predict with the refitted best estimator."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.best_estimator_.predict(X)


def select_trial(records, selection="best"):
    """The chosen trial among ``records`` (dicts with ``trial``, ``pinball``, ``pinball_se``,
    ``complexity``, as in ``trials_``), or None when no trial has a finite loss: the lowest mean
    loss (``"best"``), or the least complex trial within one standard error of it (``"one_se"``)."""
    finite = [r for r in records if math.isfinite(r["pinball"])]
    if not finite:
        return None
    best = min(finite, key=lambda r: (r["pinball"], r["trial"]))
    if selection == "one_se":
        near = [r for r in finite if r["pinball"] <= best["pinball"] + best["pinball_se"]]
        best = min(near, key=lambda r: (r["complexity"], r["pinball"], r["trial"]))
    return best


def _plain(value):
    """numpy scalars to Python numbers (for JSON and set_params)."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


# ----------------------------------------------------------------------------- the three baselines

#: Search spaces of the SQR paper's Table 10 (LQR: see the module docstring).
PARAM_SPACES = {
    "LQR": {"quantileregressor__alpha": ("float_log", 1e-6, 1.0)},
    "QDT": {"min_samples_leaf": ("int", 1, 50)},
    "OSRT-Q": {"regularization": ("float_log", 1e-3, 0.2)},
    "LGBM": {
        "num_leaves": ("int", 2, 100),
        "learning_rate": ("float_log", 0.01, 0.5),
        "max_depth": ("int", 1, 20),
        "min_child_samples": ("int", 5, 100),
    },
}


class _QuantileLP(QuantileRegressor):
    """:class:`~sklearn.linear_model.QuantileRegressor` whose unpenalised fit survives ill-conditioned
    features: where HiGHS fails (505_tecator: 124 collinear spectra, condition number 2e11; scikit-learn
    then subscripts the missing solution), the fit is solved again on the features' singular vectors,
    whose LP is well conditioned, and mapped back: the same model, since quantile regression is
    equivariant under an invertible linear map of the features."""

    def fit(self, X, y, sample_weight=None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            try:
                super().fit(X, y, sample_weight=sample_weight)
                solved = True
            except TypeError:  # scikit-learn subscripts the failed LP's solution, None
                solved = False
        failed = not solved or any(issubclass(w.category, ConvergenceWarning) for w in caught)
        if failed and self.alpha == 0:
            self._fit_rotated(X, y, sample_weight)
            return self
        if not solved:  # an L1 penalty is not invariant under the rotation
            raise ValueError(f"the LP of QuantileRegressor(alpha={self.alpha!r}) failed on these features: its "
                             "solver reports numerical difficulties")
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=2)
        return self

    def _fit_rotated(self, X, y, sample_weight):
        X, y = validate_data(self, X, y, dtype=np.float64)
        center = np.average(X, axis=0, weights=sample_weight) if self.fit_intercept else np.zeros(X.shape[1])
        _, singular, vt = np.linalg.svd(X - center, full_matrices=False)
        keep = singular > singular[0] * 1e-12 if singular.size and singular[0] > 0 else np.zeros(0, dtype=bool)
        basis = vt[keep].T / singular[keep]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            inner = QuantileRegressor(**self.get_params()).fit((X - center) @ basis, y, sample_weight=sample_weight)
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):
            raise ValueError("the LP of linear quantile regression failed on these features, and on their singular "
                             f"vectors too (condition number {singular[0] / singular[-1]:.3g})")
        self.coef_ = basis @ inner.coef_
        self.intercept_ = float(inner.intercept_ - center @ self.coef_)
        self.n_iter_ = inner.n_iter_


def make_lqr(quantile=0.5, random_state=None, n_trials=20, time_limit=None, cv=5, search="auto", tune=True,
             intercept=True):
    """Tuned linear quantile regression (standardised features, ``highs`` LP solver).

    ``tune=False`` fits the unpenalised model (``alpha=0``) once, without inner cross-validation:
    the model of the SQR paper's LQR column (statsmodels' ``QuantReg``, whose tuned ``max_iter``
    does not change a converged fit). ``intercept=False`` (with ``tune=False``) fits it through the
    origin on the raw features, as ``QuantReg(y, X)`` does without an added constant column.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    if not intercept:
        if tune:
            raise ValueError("intercept=False is the paper's untuned model: pass tune=False with it")
        model = make_pipeline(FunctionTransformer(), _QuantileLP(quantile=check_quantile(quantile), alpha=0.0,
                                                                       fit_intercept=False, solver="highs-ipm"))
        return TunedQuantileRegressor(model, None, quantile, cv, n_trials, time_limit, search, random_state=random_state)
    alpha = 1e-6 if tune else 0.0
    # the interior-point method with crossover reaches the same optimum, 3x faster than the default on 6,500 x 21
    model = make_pipeline(StandardScaler(), _QuantileLP(quantile=check_quantile(quantile), alpha=alpha,
                                                              solver="highs" if tune else "highs-ipm"))
    return TunedQuantileRegressor(model, PARAM_SPACES["LQR"] if tune else None, quantile, cv, n_trials, time_limit,
                                  search, random_state=random_state)


def make_qdt(quantile=0.5, random_state=None, n_trials=20, time_limit=None, cv=5, search="auto"):
    """Tuned quantile decision tree (``min_samples_leaf`` in 1..50)."""
    model = QuantileDecisionTreeRegressor(quantile=check_quantile(quantile))
    return TunedQuantileRegressor(model, PARAM_SPACES["QDT"], quantile, cv, n_trials, time_limit, search,
                                  random_state=random_state)


def make_osrt_q(quantile=0.5, random_state=None, n_trials=20, time_limit=None, cv=5, search="auto", depth_limit=5,
                n_thresholds=4, tree_time_limit=None, selection="best"):
    """Tuned optimal sparse quantile tree (``regularization`` on a log scale; each fit under
    ``tree_time_limit``); ``selection="one_se"`` refits the sparsest tree within one standard
    error of the best inner-CV loss (see :class:`TunedQuantileRegressor`)."""
    from ..trees import Binarizer, OptimalSparseRegressionTree

    model = OptimalSparseRegressionTree(regularization=0.01, depth_limit=depth_limit, loss="quantile",
                                        quantile=check_quantile(quantile), time_limit=tree_time_limit,
                                        binarizer=Binarizer(n_thresholds=n_thresholds))
    return TunedQuantileRegressor(model, PARAM_SPACES["OSRT-Q"], quantile, cv, n_trials, time_limit, search,
                                  selection=selection, random_state=random_state)


def make_lgbm(quantile=0.5, random_state=None, n_trials=20, time_limit=None, cv=5, search="auto", n_estimators=100):
    """Tuned LightGBM with the quantile objective (one thread, deterministic); needs the bench extra."""
    lightgbm = require("lightgbm", "the LGBM baseline")
    model = lightgbm.LGBMRegressor(
        objective="quantile", alpha=check_quantile(quantile), n_estimators=n_estimators, num_leaves=31,
        learning_rate=0.1, max_depth=20, min_child_samples=20, n_jobs=1, deterministic=True, force_row_wise=True,
        verbose=-1,
    )
    return TunedQuantileRegressor(model, PARAM_SPACES["LGBM"], quantile, cv, n_trials, time_limit, search,
                                  random_state=random_state)

