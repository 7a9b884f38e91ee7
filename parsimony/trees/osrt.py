"""Optimal sparse regression trees: the scikit-learn estimator (the search is ``_driver.find_tree``)."""

from __future__ import annotations

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (BOOLEAN, POSITIVE, QUANTILE, InstanceOf, Interval, Options, check_numeric_columns,
                           check_sample_weight, input_feature_names, validate_params)
from ..backend import BACKENDS, resolve_backend
from ..losses import LOSSES, Loss, as_loss
from ._driver import BOUNDS, _ensure_compiled, find_tree
from .binarizer import Binarizer

__all__ = ["OptimalSparseRegressionTree", "OSRT_PARAMETERS"]


#: OptimalSparseRegressionTree's parameter table (see :func:`parsimony._validation.validate_params`).
OSRT_PARAMETERS = {
    "regularization": [Interval(numbers.Real, 0)],
    "depth_limit": [None, Interval(numbers.Integral, 0)],
    "loss": [Options(*LOSSES), InstanceOf(Loss, "a parsimony.losses object")],
    "quantile": [QUANTILE],
    "bound": [Options(*BOUNDS)],
    "time_limit": [None, POSITIVE],
    "memory_limit": [None, POSITIVE],
    "binarizer": [None, Options("auto"), InstanceOf(Binarizer, "a Binarizer instance")],
    "progress": [BOOLEAN],
    "backend": [Options(*BACKENDS)],
}


class OptimalSparseRegressionTree(RegressorMixin, BaseEstimator):
    """Provably optimal sparse regression tree (OSRT, Zhang et al., AAAI 2023).

    Minimises ``loss(t) / loss(one leaf) + regularization * leaves(t)`` over all trees on binary
    features (optionally of depth at most ``depth_limit``), exactly, by dynamic programming
    with bounds. The squared loss is the sum of squared errors about each leaf's mean (so a
    one-leaf tree has loss 1, as in the reference implementation ``osrt``); the absolute
    loss uses absolute errors about each leaf's median.

    Parameters
    ----------
    regularization : float, default=0.05
        Penalty per leaf (``lambda``), >= 0.
    depth_limit : int or None, default=None
        Largest number of splits on a root-to-leaf path; None searches all depths.
    loss : {"squared", "absolute", "quantile", "pinball"} or a loss object, default="squared"
        "quantile" (or "pinball") is the pinball loss at level ``quantile``: leaves predict the
        weighted ``quantile``-quantile of their rows and the loss is normalised by the pinball loss
        of the best constant (one leaf has loss 1). "absolute" is the same at ``quantile=0.5``.
        A ``Squared()``, ``Absolute()`` or ``Pinball(tau)`` object of :mod:`parsimony.losses` is
        used as it is (the names every estimator accepts, :data:`parsimony.losses.LOSSES`).
    quantile : float, default=0.5
        Level tau in (0, 1) of ``loss="quantile"`` (ignored by the other losses and by loss objects).
    bound : {"kmeans", "equivalent", "none"}, default="kmeans"
        Lower bound used to prune: the k-Means (k-median) equivalent-points bound, the plain
        equivalent-points bound, or only the leaf penalty. The optimum does not depend on it.
    time_limit : float or None, default=None
        Seconds for the whole ``fit`` (input checks, binarisation, search and the tree), first-use
        compilation of the kernels aside: it happens before the clock starts
        (``search_stats_["compile_seconds"]``; ``search_stats_["seconds"]`` is the rest). When
        reached, the search stops, its best tree is completed greedily (with a tenth of the limit,
        at most a second, kept for that), ``status_`` is "time_limit" and ``gap_`` is the
        certified distance to the optimum. The fit ends late by at most one slice of the search
        (paced to 0.05-0.2 s, but at least one node expansion: under the absolute and pinball
        losses an expansion bounds every child, a second or more on thousands of rows).
    memory_limit : float or None, default=None
        Megabytes for the memo table; when exceeded the search stops like a time limit, with
        ``status_`` "memory_limit".
    binarizer : "auto", None or Binarizer, default="auto"
        "auto" binarises numeric columns with ``Binarizer()`` (binary columns pass through
        unchanged); None requires X to be binary (0/1) and raises otherwise; a ``Binarizer``
        instance is cloned and fitted.
    progress : bool, default=False
        Show a progress bar of the search: seconds (of ``time_limit``, when set), the best
        objective found so far, the certified lower bound and the subproblems stored.
    backend : {"auto", "native", "julia"}, default="auto"
        Engine of the k-Means bounds (``bound="kmeans"``): "native" computes them in the search
        kernel; "julia" computes each through the Julia twin of the clustering kernel
        (ParsimonyKernels' ``cluster_costs``, the same numbers: the same search and tree), paused
        for it, which is slower; "auto" is "julia" only when Julia works, else native. "julia"
        without a working Julia raises ``JuliaUnavailableError`` saying how to get one.

    Attributes
    ----------
    tree_ : TreeTable
        Node table of the fitted tree (see ``TreeTable``).
    objective_, loss_ : float
        Objective and normalised loss of the fitted tree on the training data.
    lower_bound_ : float
        Certified lower bound on the optimal objective (equal to ``objective_`` when optimal).
    gap_ : float
        ``objective_ - lower_bound_`` (0 when optimal).
    status_ : str
        "optimal", "time_limit" or "memory_limit".
    n_leaves_, depth_ : int
    complexity_ : int
        Number of nodes (splits and leaves), the SQR paper's tree complexity.
    search_stats_ : dict
        Subproblems stored, node expansions, bounds computed, table size, ``seconds`` (the fit
        after compilation) and ``compile_seconds``.
    backend_ : "native" or "julia", the engine of the bounds that ran.
    binarizer_ : Binarizer or None
    binary_feature_names_ : ndarray of str
        Names of the binary columns the tree splits on.
    n_features_in_, feature_names_in_
        Set by ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from parsimony.trees import OptimalSparseRegressionTree
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
    >>> y = 3.0 * X[:, 0] + 0.1 * X[:, 1]
    >>> model = OptimalSparseRegressionTree(regularization=0.01, binarizer=None).fit(X, y)
    >>> model.n_leaves_, model.status_
    (2, 'optimal')
    """

    def __init__(self, regularization=0.05, depth_limit=None, loss="squared", bound="kmeans", time_limit=None,
                 memory_limit=None, binarizer="auto", quantile=0.5, progress=False, backend="auto"):
        self.regularization = regularization
        self.depth_limit = depth_limit
        self.loss = loss
        self.quantile = quantile
        self.bound = bound
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self.binarizer = binarizer
        self.progress = progress
        self.backend = backend

    def _binarize_fit(self, X, sample_weight=None):
        names = input_feature_names(self)
        if self.binarizer is None:
            bad = ~np.all((X == 0) | (X == 1), axis=0)
            if bad.any():
                j = int(np.nonzero(bad)[0][0])
                raise ValueError(
                    f"X must be binary (0/1) when binarizer=None, but feature {names[j]!r} holds other values; "
                    "pass binarizer='auto' or a Binarizer to binarise numeric features")
            self.binarizer_ = None
            self.binary_feature_names_ = np.asarray(names, dtype=object)
            self._conditions = self._split_conditions(names)
            return X.astype(np.uint8)
        from sklearn.base import clone

        binarizer = Binarizer() if isinstance(self.binarizer, str) else clone(self.binarizer)
        binarizer.fit(X, sample_weight=sample_weight)
        self.binarizer_ = binarizer
        self._conditions = self._split_conditions(names)
        self.binary_feature_names_ = np.asarray([column for _, _, column in self._conditions], dtype=object)
        return binarizer.transform(X)

    def _split_conditions(self, names):
        """``(true, false, column name)`` of every binary column, with ``names`` for the input features."""
        if self.binarizer_ is None:
            return [(f"{n} = 1", f"{n} = 0", n) for n in names]
        conds = []
        for j, thr in enumerate(self.binarizer_.thresholds_):
            if self.binarizer_.binary_columns_[j]:
                conds.append((f"{names[j]} = 1", f"{names[j]} = 0", names[j]))
            else:
                conds.extend((f"{names[j]} <= {t:.6g}", f"{names[j]} > {t:.6g}", f"{names[j]} <= {t:.6g}")
                             for t in thr)
        return conds

    def _binarize(self, X):
        if self.binarizer_ is None:
            bad = ~np.all((X == 0) | (X == 1), axis=0)
            if bad.any():
                raise ValueError("X must be binary (0/1): this model was fitted with binarizer=None")
            return X.astype(np.uint8)
        return self.binarizer_.transform(X)

    # -- fit / predict ---------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Find the optimal tree for ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary features, or numeric ones when a binarizer is set.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights: losses, leaf means (weighted medians for the absolute
            loss) and the binarizer's thresholds are weighted, so integer weights act as
            repeated rows and rows of weight 0 as absent ones.

        Returns
        -------
        self
        """
        params = validate_params(self.get_params(deep=False), OSRT_PARAMETERS)  # checked once
        self.backend_ = resolve_backend(params["backend"])
        cluster_costs = None
        if self.backend_ == "julia":
            from ._kmeans_julia import cluster_costs
        compile_seconds = _ensure_compiled()  # before the clock of time_limit starts
        start = time.perf_counter()
        check_numeric_columns(X, type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        w = check_sample_weight(sample_weight, len(y))
        if w is not None:
            X, y, w = X[w > 0], y[w > 0], w[w > 0]
        Xb = self._binarize_fit(X, w)
        lam = params["regularization"]
        result = find_tree(Xb, y, as_loss(params["loss"], params["quantile"]), lam, params["depth_limit"],
                           params["bound"], params["time_limit"], params["memory_limit"], sample_weight=w,
                           clock_start=start, progress=params["progress"], cluster_costs=cluster_costs)
        self.tree_ = result.tree
        leaves = self.tree_.feature < 0
        self.n_leaves_ = int(leaves.sum())
        self.complexity_ = self.tree_.node_count  # the model protocol: nodes of the tree
        self.depth_ = int(self.tree_.depth.max())
        self.loss_ = float(self.tree_.loss[leaves].sum())
        self.objective_ = self.loss_ + lam * self.n_leaves_
        self.status_ = result.status
        self.lower_bound_ = self.objective_ if result.status == "optimal" else min(result.lower_bound,
                                                                                   self.objective_)
        self.gap_ = self.objective_ - self.lower_bound_
        self.search_stats_ = {**result.stats, "compile_seconds": compile_seconds,
                              "seconds": time.perf_counter() - start}
        return self

    def predict(self, X):
        """Predicted value of the leaf each row of ``X`` falls into."""
        check_is_fitted(self, "tree_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.tree_.value[self.tree_.apply(self._binarize(X))]

    def apply(self, X):
        """Index (in ``tree_``) of the leaf each row of ``X`` falls into."""
        check_is_fitted(self, "tree_")
        check_numeric_columns(X, type(self).__name__)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.tree_.apply(self._binarize(X))

    # -- export ------------------------------------------------------------------------------------
    def node_condition(self, node: int, branch: bool, conditions=None) -> str:
        """Readable condition of ``node``'s true (left) or false (right) branch."""
        return (conditions or self._conditions)[self.tree_.feature[node]][0 if branch else 1]

    def export_text(self, feature_names=None, decimals: int = 3) -> str:
        """The tree as indented text, one condition or leaf per line (leaf values to ``decimals``
        places); ``feature_names`` renames the input features (default: the names seen in ``fit``)."""
        check_is_fitted(self, "tree_")
        conditions = None if feature_names is None else self._split_conditions(input_feature_names(self, feature_names))
        t = self.tree_
        lines = []

        def visit(i, indent):
            pad = "|   " * indent
            if t.feature[i] < 0:
                lines.append(f"{pad}|--- value: {t.value[i]:.{decimals}f}  (n={t.n_node_samples[i]})")
                return
            for branch, child in ((True, t.children_left[i]), (False, t.children_right[i])):
                lines.append(f"{pad}|--- {self.node_condition(i, branch, conditions)}")
                visit(child, indent + 1)

        visit(0, 0)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Nested dictionary: splits hold ``feature``, ``condition``, ``true``, ``false``; leaves ``value``."""
        check_is_fitted(self, "tree_")
        t = self.tree_

        def visit(i):
            out = {"n_samples": int(t.n_node_samples[i]), "value": float(t.value[i]), "loss": float(t.loss[i])}
            if t.feature[i] >= 0:
                out["feature"] = int(t.feature[i])
                out["condition"] = self.node_condition(i, True)
                out["true"] = visit(t.children_left[i])
                out["false"] = visit(t.children_right[i])
            return out

        return visit(0)

    def plot_tree(self, ax=None, decimals: int = 2):
        """Draw the tree with matplotlib; returns the Axes."""
        from ..plotting import plot_osrt_tree

        return plot_osrt_tree(self, ax=ax, decimals=decimals)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
