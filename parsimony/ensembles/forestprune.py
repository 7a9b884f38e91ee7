"""ForestPrune: depth-layer pruning of tree ensembles (Liu and Mazumder, AISTATS 2023).

``ForestPrune`` takes a fitted random forest, extra-trees or gradient boosting regressor (or fits a
random forest) and keeps, for each tree, only its first ``k_i`` depth layers, choosing the ``k_i`` by
minimising problem (1) of the paper,

    (1/m) ||y - offset - gamma sum_i D_i z_i||^2 + (alpha / K) sum_i ||W_i z_i||_1,

with cyclic block coordinate descent (each block update enumerates the d + 1 monotone candidates of
one tree exactly) followed by the paper's local search. Optional ridge or best-subset polishing
re-weights the kept trees (problem 2), or is optimised jointly with the pruning (problem 5).
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import RandomForestRegressor
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    BOOLEAN, POSITIVE, RANDOM_STATE, Check, Interval, Options, check_array_1d, check_fitted_feature_names, check_int,
    check_nonnegative, check_numeric_columns, check_same_length, extreme_scale, input_feature_names, seed_from,
    validate_params,
)
from ..backend import BACKENDS, resolve_backend
from . import _cbcd, _cbcd_julia
from ._depth_matrices import (
    EnsembleTables,
    check_ensemble,
    ensemble_leaves,
    ensemble_offset,
    layer_weights,
    leaf_indices,
    truncated_node_values,
    unpack_ensemble,
    unwrap_frozen,
)

__all__ = ["ForestPrune", "select_path_model"]

_DEFAULT_PATIENCE = 1  # the paper's rule: stop at the first swap that does not improve
_MAX_SWEEPS = 10_000
_SWEEP_CHUNK = 25  # with a deadline, CBCD runs this many sweeps between clock checks


@dataclass
class PruningProblem:
    """Everything CBCD needs, built once per (ensemble, X, y, weighting)."""

    tables: EnsembleTables
    leaves: np.ndarray  # (n_trees, m) int32 leaf of each row: D_i = E_i T_i
    gram: np.ndarray  # (n_trees, n_layers, n_layers) gram[i] = D_i^T D_i
    prefix_norms: np.ndarray  # (n_trees, n_layers + 1) prefix_norms[i, k] = ||D_i z_k||^2
    wcum: np.ndarray  # (n_trees, n_layers + 1) cumulative penalty weights
    ncum: np.ndarray  # (n_trees, n_layers + 1) cumulative node counts
    K: float
    gamma: float
    target: np.ndarray  # (y - offset) / unit
    swap_order: np.ndarray  # local search: trees tried first come first
    T: np.ndarray  # the transposed leaf table divided by unit
    unit: float = 1.0  # a power of two dividing y and the trees' values when |y| is extreme (exact)
    y_var: float = 1.0  # variance of y / unit: alpha and the objective are relative to it

    @property
    def n_layers(self) -> np.ndarray:
        return self.tables.n_layers

    @property
    def n_trees(self) -> int:
        return self.leaves.shape[0]

    @property
    def factors(self) -> tuple:
        """``(leaves, T, leaf_offset)``: the depth-difference matrices in factored form (``T`` is the
        transposed leaf table divided by ``unit``, see ``_cbcd``)."""
        return self.leaves, self.T, self.tables.leaf_offset


def build_problem(tables: EnsembleTables, X, y, weighting: str = "node") -> PruningProblem:
    """Depth-difference matrices, Gram tables and layer weights for ``X``, ``y``."""
    y = np.asarray(y, dtype=np.float64)
    unit = extreme_scale(y)
    T = tables.leaf_table_t if unit == 1.0 else tables.leaf_table_t / unit
    leaves = leaf_indices(tables, X)
    gram, prefix_norms = _cbcd.gram_tables(leaves, T, tables.leaf_offset, tables.n_layers)
    w, K = layer_weights(tables, weighting)
    zeros = np.zeros((w.shape[0], 1))
    wcum = np.hstack([zeros, np.cumsum(w, axis=1)])
    ncum = np.hstack([zeros, np.cumsum(tables.layer_nodes, axis=1).astype(np.float64)])
    y_unit = y if unit == 1.0 else y / unit
    offset = ensemble_offset(tables, X)
    target = y_unit - (offset if unit == 1.0 else offset / unit)
    if tables.boosting:
        swap_order = np.arange(tables.n_trees)
    else:
        # bagging: sort trees by their own training error (paper Section 3.1)
        full = tables.leaf_table.sum(axis=1)[tables.leaf_offset[:-1, None] + leaves]
        if unit != 1.0:
            full = full / unit
        errors = ((full - y_unit[None, :]) ** 2).mean(axis=1)
        swap_order = np.argsort(errors, kind="stable")
    y_var = float(np.var(y_unit)) if y.size else 0.0
    y_var = y_var if np.isfinite(y_var) and y_var > 0.0 else 1.0
    return PruningProblem(tables, leaves, gram, prefix_norms, wcum, ncum, K, tables.gamma, target,
                          swap_order.astype(np.int64), T, unit, y_var)


@dataclass
class Solution:
    layers: np.ndarray
    beta: np.ndarray
    objective: float
    n_sweeps: int
    n_swaps: int
    history: np.ndarray
    status: str  # "converged", "max_sweeps" (a CBCD run hit its sweep cap) or "time_limit"
    residual: np.ndarray | None = None


def _run_cbcd(cbcd, args, R, layers, beta, gamma, pen_scale, alpha2, mode, mt, history, deadline):
    """CBCD to convergence, ``_MAX_SWEEPS`` or the deadline; returns ``(sweeps, status)``."""
    if deadline is None:
        sweeps = cbcd(*args, R, layers, beta, gamma, pen_scale, alpha2, mode, mt, _MAX_SWEEPS, history)
        return abs(sweeps), "converged" if sweeps > 0 else "max_sweeps"
    total = 0
    while True:  # the kernel resumes from the state it left in R, layers, beta
        chunk = min(_SWEEP_CHUNK, _MAX_SWEEPS - total)
        sweeps = cbcd(*args, R, layers, beta, gamma, pen_scale, alpha2, mode, mt, chunk, history[total:])
        total += abs(sweeps)
        if sweeps > 0:
            return total, "converged"
        if total >= _MAX_SWEEPS:
            return total, "max_sweeps"
        if time.perf_counter() > deadline:
            return total, "time_limit"


def solve(problem: PruningProblem, alpha: float, mode: int = _cbcd.PLAIN, alpha2: float = 0.0,
          max_trees: int | None = None, patience: int = _DEFAULT_PATIENCE, rng=None,
          layers0=None, beta0=None, residual0=None, cbcd=_cbcd.cbcd, deadline: float | None = None) -> Solution:
    """CBCD from ``layers0`` (zeros by default), then local search; returns the best point seen.
    A constant target returns the empty model, which predicts it exactly (through ``intercept_``).

    ``alpha`` is relative to the variance of y (the penalty is ``alpha var(y) / K`` per unit layer
    weight); the returned objective is in the problem's units (``unit`` squared), so dividing it by
    ``problem.y_var`` gives problem (1) on y standardised.

    ``residual0`` may pass the residual of the warm start (``Solution.residual``) to skip its
    computation; the returned residual is maintained incrementally (drift ~1e-13). ``cbcd`` is
    the sweep kernel, the numba one or its Julia twin (``_cbcd_julia.get_kernel("cbcd", engine)``).
    Past ``deadline`` (a ``time.perf_counter()`` value) CBCD and the local search stop and the
    best point so far is returned with status ``"time_limit"``.
    """
    n = problem.n_trees
    if problem.target.size and np.ptp(problem.target) == 0.0:  # a constant target: no tree, the intercept fits it
        return Solution(np.zeros(n, dtype=np.int64), np.ones(n) if mode == _cbcd.PLAIN else np.zeros(n), 0.0, 0, 0,
                        np.zeros(0), "converged", problem.target.copy())
    rng = np.random.default_rng(rng)
    layers = np.zeros(n, dtype=np.int64) if layers0 is None else np.array(layers0, dtype=np.int64)
    if beta0 is None:
        beta = np.ones(n) if mode == _cbcd.PLAIN else np.where(layers > 0, 1.0, 0.0)
    else:
        beta = np.array(beta0, dtype=np.float64)
    pen_scale = alpha * problem.y_var / problem.K if problem.K > 0 else 0.0
    mt = 0 if max_trees is None else int(max_trees)
    if mt and np.count_nonzero(layers) > mt:
        raise ValueError("warm start keeps more trees than max_trees")
    fac = problem.factors
    args = (*fac, problem.gram, problem.prefix_norms, problem.wcum, problem.n_layers)
    if residual0 is None:
        R = _cbcd.residual(*fac, problem.target, layers, beta, problem.gamma)
    else:
        R = np.array(residual0, dtype=np.float64)
    history = np.full(200, np.nan)
    sweeps, status = _run_cbcd(cbcd, args, R, layers, beta, problem.gamma, pen_scale, alpha2, mode, mt, history,
                               deadline)
    history = history[: min(sweeps, history.size)].copy()
    total_sweeps = sweeps
    best_obj = _cbcd.objective(R, layers, beta, problem.wcum, pen_scale, alpha2, mode)
    best = (layers.copy(), beta.copy(), R.copy())
    n_swaps = 0
    fails = 0
    scratch = np.empty(0)
    while fails < patience and status != "time_limit":
        kept = np.flatnonzero(layers > 0)
        empty = problem.swap_order[layers[problem.swap_order] == 0]
        if kept.size == 0 or empty.size == 0:
            break
        if deadline is not None and time.perf_counter() > deadline:
            status = "time_limit"
            break
        xi = int(kept[rng.integers(kept.size)])
        entering = int(empty[0])
        _cbcd.set_block(*fac, R, xi, layers[xi], beta[xi], 0, 0.0, problem.gamma)
        layers[xi] = 0
        beta[xi] = 1.0 if mode == _cbcd.PLAIN else 0.0
        full = int(problem.n_layers[entering])
        _cbcd.set_block(*fac, R, entering, 0, 0.0, full, 1.0, problem.gamma)
        layers[entering] = full
        beta[entering] = 1.0
        sweeps, swap_status = _run_cbcd(cbcd, args, R, layers, beta, problem.gamma, pen_scale, alpha2, mode, mt,
                                        scratch, deadline)
        total_sweeps += sweeps
        if swap_status != "converged":
            status = swap_status
        n_swaps += 1
        obj = _cbcd.objective(R, layers, beta, problem.wcum, pen_scale, alpha2, mode)
        if obj < best_obj - 1e-12 * abs(best_obj):
            best_obj = obj
            best = (layers.copy(), beta.copy(), R.copy())
            fails = 0
        else:
            layers[:], beta[:], R[:] = best
            fails += 1
    layers, beta, R = best
    return Solution(layers, beta, float(best_obj), total_sweeps, n_swaps, history, status, R)


def ridge_polish(Q, target, gamma, alpha2):
    """Closed-form minimiser of ``(1/m)||t - gamma Q b||^2 + alpha2 ||b||^2`` (problem 2, rho = 2)."""
    m, s = Q.shape
    if s == 0:
        return np.zeros(0)
    A = (gamma * gamma / m) * (Q.T @ Q) + alpha2 * np.eye(s)
    b = (gamma / m) * (Q.T @ target)
    return np.linalg.solve(A, b)


def _l0_value(A, b, tt, beta, alpha2):
    return tt - 2.0 * b @ beta + beta @ A @ beta + alpha2 * np.count_nonzero(beta)


def best_subset_polish(Q, target, gamma, alpha2, beta0=None, max_iter=1000):
    """Problem 2 with rho = 0: ``(1/m)||t - gamma Q b||^2 + alpha2 ||b||_0``.

    Iterative hard thresholding (step 1/L) from ``beta0`` (ones by default), then exact coordinate
    descent until no single coefficient changes (a coordinate-wise minimum), each step a descent.
    """
    m, s = Q.shape
    if s == 0:
        return np.zeros(0)
    A = (gamma * gamma / m) * (Q.T @ Q)
    b = (gamma / m) * (Q.T @ target)
    tt = float(target @ target) / m
    beta = np.ones(s) if beta0 is None else np.array(beta0, dtype=np.float64)
    lip = 2.0 * float(np.linalg.eigvalsh(A)[-1])
    if lip > 0:
        thresh = np.sqrt(2.0 * alpha2 / lip)
        value = _l0_value(A, b, tt, beta, alpha2)
        for _ in range(max_iter):
            u = beta - (2.0 / lip) * (A @ beta - b)
            new = np.where(np.abs(u) > thresh, u, 0.0)
            new_value = _l0_value(A, b, tt, new, alpha2)
            if new_value > value - 1e-15 * max(1.0, abs(value)):
                if new_value <= value:
                    beta = new
                break
            beta, value = new, new_value
    # exact coordinate descent on the L0 problem
    grad_part = A @ beta
    for _ in range(max_iter):
        changed = False
        for j in range(s):
            ajj = A[j, j]
            if ajj <= 0:
                continue
            rho = b[j] - (grad_part[j] - ajj * beta[j])
            cand = rho / ajj
            # keeping j lowers the loss by ajj*cand^2 and costs alpha2
            new = cand if ajj * cand * cand > alpha2 else 0.0
            if new != beta[j]:
                old_val = -2 * rho * beta[j] + ajj * beta[j] ** 2 + (alpha2 if beta[j] != 0 else 0.0)
                new_val = -2 * rho * new + ajj * new**2 + (alpha2 if new != 0 else 0.0)
                if new_val < old_val - 1e-14 * max(1.0, abs(old_val)):
                    grad_part += A[:, j] * (new - beta[j])
                    beta[j] = new
                    changed = True
        if not changed:
            break
    return beta


def _patience(local_search, name="local_search") -> int:
    """Consecutive non-improving swaps that end the local search (True: the paper's rule, False: none)."""
    if isinstance(local_search, (bool, np.bool_)):
        return _DEFAULT_PATIENCE if local_search else 0
    return check_int(local_search, name, minimum=0)


#: ForestPrune's parameter table (see :func:`parsimony._validation.validate_params`); ``estimator``
#: is checked where it is unpacked (``check_ensemble``), with messages about fitted ensembles.
FORESTPRUNE_PARAMETERS = {
    "alpha": [Interval(numbers.Real, 0)],
    "weighting": [Options("node", "depth")],
    "polish": [None, Options("ridge", "best_subset")],
    "polish_alpha": [Interval(numbers.Real, 0)],
    "max_trees": [None, Interval(numbers.Integral, 1)],
    "joint": [BOOLEAN],
    "local_search": [Check(_patience, "True, False or an integer >= 0")],
    "n_estimators": [Interval(numbers.Integral, 1)],
    "max_depth": [None, Interval(numbers.Integral, 1)],
    "random_state": [RANDOM_STATE],
    "time_limit": [None, POSITIVE],
    "backend": [Options(*BACKENDS)],
}


def select_path_model(path: pd.DataFrame, tolerance: float = 0.01, error: str | None = None) -> int:
    """Index of the smallest model (fewest nodes) whose error is within ``tolerance`` of the full model's.

    ``tolerance`` is the paper's phi: a row qualifies when its error is at most ``(1 + phi)`` times
    the full ensemble's error (``path.attrs["full_<error>"]``). ``error`` defaults to
    ``"val_error"`` when the path has it, else ``"train_error"``. Falls back to the lowest error.
    """
    tolerance = check_nonnegative(tolerance, "tolerance")
    if error is None:
        error = "val_error" if "val_error" in path and path["val_error"].notna().all() else "train_error"
    full = path.attrs.get(f"full_{error}")
    if full is None:
        raise ValueError(f"path has no full-model reference for {error!r}")
    ok = path[path[error] <= (1.0 + tolerance) * full]
    if ok.empty:
        return int(path[error].idxmin())
    return int(ok.sort_values(["n_nodes", error], kind="stable").index[0])


class ForestPrune(RegressorMixin, BaseEstimator):
    """Prune depth layers from the trees of an ensemble (ForestPrune, problem 1 of the paper).

    Parameters
    ----------
    estimator : fitted RandomForestRegressor, ExtraTreesRegressor or GradientBoostingRegressor, or None
        The ensemble to prune (used as is, not refitted; wrap it in
        ``sklearn.frozen.FrozenEstimator`` to keep it fitted through ``clone``). None fits
        ``RandomForestRegressor(n_estimators, max_depth, random_state)`` on the data given to ``fit``.
    alpha : float, default=1.0
        Regularisation strength (>= 0) of the layer penalty ``(alpha var(y) / K) sum_i ||W_i z_i||_1``:
        relative to the variance of ``y``, as on the paper's standardised ``y``, so ``y`` and
        ``c * y`` keep the same layers.
    weighting : {"node", "depth"}, default="node"
        Layer weights: number of nodes of the layer (root layer included), or 1 per existing layer.
        ``K`` is their total.
    polish : {None, "ridge", "best_subset"}, default=None
        Re-weight the kept trees by problem 2 with ``rho = 2`` (closed form) or ``rho = 0``
        (iterative hard thresholding then exact coordinate descent), penalty ``polish_alpha``.
    polish_alpha : float, default=1e-4
        The ``alpha_2`` of problems 2 and 5. With the paper's 1/m scaling the ridge penalty is
        compared with a mean squared error and the tree weights ``beta`` start at 1 (a bagging
        tree enters as ``beta / n``), so the paper's suggested 1e-2 already shrinks strongly.
    max_trees : int or None, default=None
        At most this many trees may be kept (a cardinality constraint inside CBCD).
    joint : bool, default=False
        Optimise pruning and polishing together (problem 5); needs ``polish``.
    local_search : bool or int, default=True
        Run the paper's swap local search after CBCD (remove a random kept tree, add the first
        removed tree in full, re-run CBCD; keep the result if better). True stops at the first
        swap that does not improve, as in the paper; an integer sets how many consecutive
        non-improving swaps end it.
    n_estimators, max_depth : int, default=100, 6
        Size of the random forest fitted when ``estimator`` is None.
    random_state : int, RandomState, Generator or None
        Seeds the local search (and the forest fitted when ``estimator`` is None).
    time_limit : float or None, default=None
        Seconds allowed from the start of ``fit`` (or ``path``); past it CBCD and the local search
        stop, the best point found is kept and ``status_`` is "time_limit" (``path`` stops at
        the alpha being solved and marks ``path_.attrs["status"]``).
    backend : {"auto", "native", "julia"}, default="auto"
        Engine of the CBCD sweeps: the numba kernels ("native"), or their ParsimonyKernels twin
        through juliacall ("julia"; needs ``pip install 'parsimony-ml[julia]'`` and a Julia
        runtime, else ``JuliaUnavailableError``). "auto" takes Julia only when it works (the
        environment variable ``PARSIMONY_BACKEND`` may decide), else native. Both give the same
        solution.

    Attributes
    ----------
    estimator_ : the ensemble that was pruned.
    layers_ : ndarray of int, layers kept per tree (0 removes the tree; depth kept is layers - 1).
    coef_ : ndarray, tree weights beta (1 for kept trees without polishing, 0 for removed trees).
    objective_ : float, problem (1) (problem (5) when ``joint``) at the pruning solution, divided by
        the variance of ``y`` (the objective on ``y`` standardised).
    intercept_ : float, 0, or when no tree is kept the mean of ``y`` minus the ensemble's offset, so
        that an empty model predicts the training mean (not 0).
    n_trees_, n_nodes_ : size of the pruned model.
    complexity_ : int, ``n_nodes_`` (the model protocol's parsimony: nodes of the kept layers).
    n_sweeps_, n_swaps_, history_ : CBCD sweeps, local-search swaps, objective after each sweep
        of the first CBCD run (at most 200 recorded).
    status_ : "converged", "max_sweeps" (a CBCD run hit its sweep cap) or "time_limit".
    backend_ : "native" or "julia", the engine that ran.
    path_ : DataFrame of the last ``path`` / ``fit_path`` call.
    path_layers_, path_coef_ : ndarray (n_alphas, n_trees), the layers kept and tree weights of each
        row of ``path_``.
    """

    def __init__(self, estimator=None, alpha=1.0, weighting="node", polish=None, polish_alpha=1e-4,
                 max_trees=None, joint=False, local_search=True, n_estimators=100, max_depth=6,
                 random_state=None, time_limit=None, backend="auto"):
        self.estimator = estimator
        self.alpha = alpha
        self.weighting = weighting
        self.polish = polish
        self.polish_alpha = polish_alpha
        self.max_trees = max_trees
        self.joint = joint
        self.local_search = local_search
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.random_state = random_state
        self.time_limit = time_limit
        self.backend = backend

    # -- setup ----------------------------------------------------------------------------------
    def _params(self) -> dict:
        """The parameters checked against :data:`FORESTPRUNE_PARAMETERS` (``local_search`` as a patience)."""
        params = validate_params(self.get_params(deep=False), FORESTPRUNE_PARAMETERS)
        if params["joint"] and params["polish"] is None:
            raise ValueError("joint=True optimises pruning and polishing together: set polish='ridge' or 'best_subset'")
        return params

    def _deadline(self, start):
        return None if self.time_limit is None else start + float(self.time_limit)

    def _mode(self):
        if not self.joint:
            return _cbcd.PLAIN
        return _cbcd.RIDGE if self.polish == "ridge" else _cbcd.SUBSET

    def _setup(self, X, y):
        check_numeric_columns(X, type(self).__name__)
        if self.estimator is not None:
            check_fitted_feature_names(unwrap_frozen(self.estimator), X, "the prefitted estimator")
        X, y = validate_data(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        if self.estimator is None:
            state = self.random_state  # scikit-learn's forests take no Generator: draw a seed from it
            forest = RandomForestRegressor(
                n_estimators=self.n_estimators, max_depth=self.max_depth,
                random_state=seed_from(state) % 2**32 if isinstance(state, np.random.Generator) else state,
            )
            unit = extreme_scale(y)
            if unit == 1.0:
                self.estimator_ = forest.fit(X, y)
            else:  # the trees' squared errors would overflow or underflow: fit y / unit, scale back exactly
                self.estimator_ = forest.fit(X, y / unit)
                for tree in forest.estimators_:
                    tree.tree_.value[...] *= unit
        else:
            ensemble = unwrap_frozen(self.estimator)
            check_ensemble(ensemble, X.shape[1])
            self.estimator_ = ensemble
        self._tables = unpack_ensemble(self.estimator_)
        self.gamma_ = self._tables.gamma
        problem = build_problem(self._tables, X, y, self.weighting)
        self.K_ = problem.K
        return X, y, problem

    def _cbcd_kernel(self):
        """Resolve ``backend`` (sets ``backend_``) and return its CBCD sweep kernel."""
        self.backend_ = resolve_backend(self.backend)
        return _cbcd_julia.get_kernel("cbcd", self.backend_)

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X, y):
        """Solve problem (1) (or 5) for ``alpha`` on ``X``, ``y``, then polish if asked."""
        start = time.perf_counter()
        params = self._params()  # checked once
        cbcd = self._cbcd_kernel()
        X, y, problem = self._setup(X, y)
        sol = solve(problem, params["alpha"], self._mode(), params["polish_alpha"], params["max_trees"],
                    params["local_search"], np.random.default_rng(seed_from(self.random_state)), cbcd=cbcd,
                    deadline=self._deadline(start))
        self._install(problem, sol)
        return self

    def _install(self, problem: PruningProblem, sol: Solution):
        layers = sol.layers.copy()
        beta = np.where(layers > 0, sol.beta, 0.0)
        if not self.joint and self.polish is not None:
            idx = np.flatnonzero(layers > 0)
            Q = _cbcd.stack_truncated(*problem.factors, layers, idx)
            if self.polish == "ridge":
                coef = ridge_polish(Q, problem.target, problem.gamma, float(self.polish_alpha))
            else:
                coef = best_subset_polish(Q, problem.target, problem.gamma, float(self.polish_alpha))
            beta = np.zeros(problem.n_trees)
            beta[idx] = coef
        layers[beta == 0] = 0
        self.layers_ = layers
        self.coef_ = beta
        self.objective_ = sol.objective / problem.y_var
        self.n_sweeps_ = sol.n_sweeps
        self.n_swaps_ = sol.n_swaps
        self.history_ = sol.history
        self.status_ = sol.status
        kept = np.flatnonzero(layers > 0)
        # an empty model predicts the mean of y, not the ensemble's offset alone (0 for bagging)
        self.intercept_ = 0.0 if kept.size else float(np.mean(problem.target)) * problem.unit
        self.n_trees_ = int(kept.size)
        self.n_nodes_ = int(sum(problem.ncum[i, layers[i]] for i in kept))
        self.complexity_ = self.n_nodes_  # the model protocol: nodes of the kept depth layers
        self._node_predictions = {
            int(i): truncated_node_values(self._tables, int(i), int(layers[i])) for i in kept
        }

    # -- prediction -----------------------------------------------------------------------------
    def predict(self, X):
        """Predictions of the pruned (and polished) ensemble."""
        check_is_fitted(self, "layers_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, reset=False)
        pred = ensemble_offset(self._tables, X)
        kept = list(self._node_predictions)
        if not kept:
            return pred + self.intercept_
        leaves = ensemble_leaves(self._tables, X, kept)
        for row, i in enumerate(kept):
            pred += (self.gamma_ * self.coef_[i]) * self._node_predictions[i][leaves[row]]
        return pred

    # -- regularization path --------------------------------------------------------------------
    def path(self, X, y, alphas=None, X_val=None, y_val=None):
        """Warm-started regularization path (paper Section 3.2), largest alpha first.

        Returns a DataFrame with one row per alpha: ``alpha, objective, n_trees, n_nodes,
        depth_hist`` (trees per number of layers kept, index 0 = removed), ``train_error`` and
        ``val_error`` (mean squared errors; NaN without validation data), ``n_sweeps`` and
        ``status``; the layers and tree weights of row ``i`` are ``path_layers_[i]`` and
        ``path_coef_[i]``. ``attrs`` holds the full ensemble's errors and the path's ``status``
        ("completed", or "time_limit" when ``time_limit`` cut it short: the rows stop at the alpha
        being solved). Default alphas: 50 values geometrically spaced from the smallest alpha that
        empties the ensemble down to 1e-4 of it.
        """
        df, _ = self._path(X, y, alphas, X_val, y_val)
        return df

    def _path(self, X, y, alphas, X_val, y_val):
        """``path``; also returns its rows with the errors in the problem's units, for ``fit_path``."""
        start = time.perf_counter()
        patience = self._params()["local_search"]  # checked once
        cbcd = self._cbcd_kernel()
        X, y, problem = self._setup(X, y)
        if alphas is None:
            amax = _cbcd.alpha_max(*problem.factors, problem.prefix_norms, problem.wcum, problem.n_layers,
                                   problem.target, problem.gamma, problem.K)
            amax = amax / problem.y_var if amax > 0 else 1.0
            alphas = np.geomspace(amax, amax * 1e-4, 50)
        alphas = np.sort(check_array_1d(alphas, "alphas"))[::-1]
        if np.any(alphas < 0):
            raise ValueError("alphas must be >= 0")
        val = None
        if (X_val is None) != (y_val is None):
            raise ValueError("pass both X_val and y_val, or neither")
        if X_val is not None:
            X_val = validate_data(self, X_val, reset=False)
            y_val = check_array_1d(y_val, "y_val")
            check_same_length(("X_val", X_val), ("y_val", y_val))
            fac_val = (leaf_indices(self._tables, X_val), self._tables.leaf_table_t, self._tables.leaf_offset)
            offset_val = ensemble_offset(self._tables, X_val)
            if problem.unit != 1.0:
                y_val, offset_val = y_val / problem.unit, offset_val / problem.unit
            fac_val = (fac_val[0], problem.T, fac_val[2])
            val = (fac_val, y_val - offset_val)
        mode = self._mode()
        rng = np.random.default_rng(seed_from(self.random_state))
        n = problem.n_trees
        layers = np.zeros(n, dtype=np.int64)
        beta = np.ones(n) if mode == _cbcd.PLAIN else np.zeros(n)
        R = None
        rows, path_layers, path_coef = [], [], []
        status = "completed"
        for a in alphas:
            sol = solve(problem, float(a), mode, float(self.polish_alpha), self.max_trees, patience, rng,
                        layers, beta, R, cbcd, deadline=self._deadline(start))
            layers, beta, R = sol.layers, sol.beta, sol.residual
            rows.append(self._path_row(problem, sol, float(a), val))
            path_layers.append(layers.copy())
            path_coef.append(np.where(layers > 0, beta, 0.0))
            if sol.status == "time_limit":
                status = "time_limit"
                break
        internal = pd.DataFrame(rows)
        internal.attrs["status"] = status
        full = problem.n_layers.copy()
        ones = np.ones(n)
        internal.attrs["full_train_error"] = self._mse(problem.factors, problem.target, full, ones)
        if val is not None:
            internal.attrs["full_val_error"] = self._mse(val[0], val[1], full, ones)
        internal.attrs["full_n_nodes"] = int(problem.ncum[np.arange(n), full].sum())
        df = internal
        if problem.unit != 1.0:  # errors back in the units of y (squares of extreme y may overflow)
            df = internal.copy()
            sq = problem.unit * problem.unit
            for col in ("train_error", "val_error"):
                df[col] = internal[col] * sq
                if f"full_{col}" in internal.attrs:
                    df.attrs[f"full_{col}"] = internal.attrs[f"full_{col}"] * sq
        self.path_ = df
        self.path_layers_ = np.array(path_layers, dtype=np.int64).reshape(len(rows), n)
        self.path_coef_ = np.array(path_coef, dtype=np.float64).reshape(len(rows), n)
        self._path_problem = problem
        return df, internal

    def _mse(self, factors, target, layers, beta):
        R = _cbcd.residual(*factors, target, layers, beta, self.gamma_)
        return float(R @ R / R.shape[0])

    def _path_row(self, problem, sol, alpha, val):
        layers = sol.layers
        beta = np.where(layers > 0, sol.beta, 0.0)
        kept = layers > 0
        train, val_err = problem.target, np.nan
        if not kept.any():  # the empty model predicts the training mean (``intercept_``)
            shift = float(np.mean(problem.target))
            train = problem.target - shift
            val = None if val is None else (val[0], val[1] - shift)
        train_err = self._mse(problem.factors, train, layers, beta)
        if val is not None:
            val_err = self._mse(val[0], val[1], layers, beta)
        return {
            "alpha": alpha,
            "objective": sol.objective / problem.y_var,
            "n_trees": int(kept.sum()),
            "n_nodes": int(problem.ncum[np.arange(problem.n_trees), layers].sum()),
            "depth_hist": np.bincount(layers, minlength=problem.tables.max_layers + 1),
            "train_error": train_err,
            "val_error": val_err,
            "n_sweeps": sol.n_sweeps,
            "status": sol.status,
        }

    def fit_path(self, X, y, X_val=None, y_val=None, alphas=None, tolerance=0.01):
        """Compute the path, keep the smallest model within ``tolerance`` (phi) of the full model.

        The error compared is the validation error when ``X_val``/``y_val`` are given, else the
        training error. Polishing (if set) is applied to the selected point. Returns ``self``.
        """
        _, internal = self._path(X, y, alphas, X_val, y_val)
        idx = select_path_model(internal, tolerance)
        row = internal.loc[idx]
        self.alpha_ = float(row["alpha"])
        objective = float(row["objective"]) * self._path_problem.y_var
        sol = Solution(self.path_layers_[idx].copy(), self.path_coef_[idx].copy(), objective,
                       int(row["n_sweeps"]), 0, np.array([]), row["status"])
        self._install(self._path_problem, sol)
        del self._path_problem
        return self

    def plot_path(self, x="n_nodes", ax=None):
        """Plot the last path's training (and validation) error against model size."""
        check_is_fitted(self, "path_")
        from ..plotting import plot_forestprune_path

        return plot_forestprune_path(self.path_, x=x, ax=ax)

    # -- export ---------------------------------------------------------------------------------
    def export_trees(self, feature_names=None) -> pd.DataFrame:
        """The kept trees as a node table (truncated at their kept depth).

        Columns: ``tree, node, depth, feature, threshold, left, right, value, weight``; a node
        at the kept depth is a leaf (``left = right = -1``, ``feature`` None) whose value is its mean.
        """
        check_is_fitted(self, "layers_")
        names = input_feature_names(self, feature_names)
        t = self._tables
        rows = []
        for i in self._node_predictions:
            start, stop = t.node_offset[i], t.node_offset[i + 1]
            k = int(self.layers_[i])
            for node in range(stop - start):
                g = start + node
                depth = int(t.depth[g])
                if depth >= k:
                    continue
                leaf = t.left[g] < 0 or depth == k - 1
                rows.append({
                    "tree": int(i), "node": node, "depth": depth,
                    "feature": None if leaf else names[int(t.feature[g])],
                    "threshold": np.nan if leaf else float(t.threshold[g]),
                    "left": -1 if leaf else int(t.left[g]), "right": -1 if leaf else int(t.right[g]),
                    "value": float(t.value[g]), "weight": float(self.gamma_ * self.coef_[i]),
                })
        return pd.DataFrame(rows, columns=["tree", "node", "depth", "feature", "threshold", "left", "right",
                                           "value", "weight"])

    def _initial_value(self):
        """The constant every prediction starts from, or None when boosting's init is not constant."""
        init = self._tables.init
        if init is None or (isinstance(init, str) and init == "zero"):
            return 0.0 + self.intercept_
        constant = getattr(init, "constant_", None)
        return None if constant is None else float(np.ravel(constant)[0]) + self.intercept_

    def export_text(self, feature_names=None, decimals=3) -> str:
        """Readable text of the kept trees: ``prediction = initial value + sum weight * tree(x)``.

        ``decimals`` is the number of significant digits printed; the first line gives the
        initial value (boosting's initial prediction, 0 for bagging, the training mean for a
        model that keeps no tree), so the printed pieces sum to ``predict`` up to that precision.
        """
        check_is_fitted(self, "layers_")
        decimals = check_int(decimals, "decimals", minimum=1)
        nodes = self.export_trees(feature_names)
        init = self._initial_value()
        if init is None:
            head = f"prediction = {self._tables.init!r}.predict(x) + sum over trees of weight * value"
        elif self.n_trees_ == 0:
            head = f"prediction = {init:.{decimals}g} (no tree kept: the training mean)"
        else:
            head = f"prediction = {init:.{decimals}g} + sum over trees of weight * value"
        lines = [head]
        for tree, tab in nodes.groupby("tree", sort=True):
            tab = tab.set_index("node")
            lines.append(f"tree {tree} (weight {tab['weight'].iloc[0]:.{decimals}g}, "
                         f"{int(self.layers_[tree]) - 1} splits deep):")

            def walk(node, indent):
                r = tab.loc[node]
                pad = "    " * indent
                if r["left"] < 0:
                    lines.append(f"{pad}value {r['value']:.{decimals}g}")
                    return
                lines.append(f"{pad}if {r['feature']} <= {r['threshold']:.{decimals}g}:")
                walk(int(r["left"]), indent + 1)
                lines.append(f"{pad}else:")
                walk(int(r["right"]), indent + 1)

            walk(0, 1)
        return "\n".join(lines)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
