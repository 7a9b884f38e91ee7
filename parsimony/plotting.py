"""Plots for every method: Pareto fronts, trees, regularization paths, ordering curves, CD diagrams.

matplotlib is imported inside each function, so importing this module stays cheap. Every
function takes an optional ``ax`` and returns the ``Axes`` it drew on.
"""

from __future__ import annotations


def _fitted(model, attribute, expected):
    """Raise a clear error unless ``model`` is a fitted estimator with ``attribute``."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model)  # TypeError for a non-estimator, NotFittedError before fit
    if not hasattr(model, attribute):
        raise TypeError(f"expected a fitted {expected}, got {type(model).__name__}")


def _axes(ax=None, figsize=(6, 4)):
    """Return ``ax`` or a fresh Axes of a new figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


# --- SQR: Pareto fronts -----------------------------------------------------------------------
def plot_pareto_front(model, ax=None, log_loss=True):
    """Training loss against complexity of a fitted SymbolicQuantileRegressor's front(s).

    One line per quantile level; the expression ``predict`` uses is circled. ``model`` may
    also be an ``equations_`` DataFrame (or a list of them).
    """
    import pandas as pd

    ax = _axes(ax)
    if isinstance(model, (pd.DataFrame, list)):
        frames = model if isinstance(model, list) else [model]
        chosen = [None] * len(frames)
        labels = [None] * len(frames)
    else:
        _fitted(model, "equations_", "SymbolicQuantileRegressor (or its equations_)")
        frames = model.equations_ if isinstance(model.equations_, list) else [model.equations_]
        best = model.best_index_ if isinstance(model.best_index_, list) else [model.best_index_]
        chosen = best
        labels = [f"tau = {q:g}" for q in model.quantiles_]
    for frame, pick, label in zip(frames, chosen, labels):
        (line,) = ax.plot(frame["complexity"], frame["loss"], marker="o", drawstyle="steps-post", label=label)
        if pick is not None:
            ax.plot(frame["complexity"].iloc[pick], frame["loss"].iloc[pick], marker="o", markersize=14,
                    markerfacecolor="none", markeredgecolor=line.get_color(), linestyle="none")
    if log_loss:
        ax.set_yscale("log")
    ax.set_xlabel("complexity (token weights)")
    ax.set_ylabel("training loss")
    ax.set_title("Pareto front")
    if any(labels):
        ax.legend()
    return ax


def _fitting_fontsize(ax, texts, centres, largest):
    """The largest font size, at most ``largest`` points, at which boxed ``texts`` centred at
    ``centres`` (data coordinates, one row per y value) leave a gap beside each other on a row and
    fill at most 70% of the distance between rows, in the axes' current size."""
    import numpy as np

    renderer = ax.figure.canvas.get_renderer()
    for text in texts:
        text.set_fontsize(largest)
    pad = 2 * 0.3 * largest * ax.figure.dpi / 72  # the round box's padding, both sides
    sizes = np.array([[e.width + pad, e.height + pad] for e in (t.get_window_extent(renderer) for t in texts)])
    points = ax.transData.transform(np.asarray(centres, dtype=float))
    scale = 1.0
    rows = np.unique(np.round(points[:, 1], 3))
    if len(rows) > 1:
        scale = min(scale, 0.7 * np.min(np.diff(rows)) / sizes[:, 1].max())
    for row in rows:
        on_row = np.flatnonzero(np.isclose(points[:, 1], row, atol=1e-3))
        on_row = on_row[np.argsort(points[on_row, 0])]
        for a, b in zip(on_row[:-1], on_row[1:]):
            room = points[b, 0] - points[a, 0] - 0.3 * largest * ax.figure.dpi / 72
            scale = min(scale, room / (0.5 * (sizes[a, 0] + sizes[b, 0])))
    return largest * max(0.95 * scale if scale < 1 else 1.0, 0.0)  # text shrinks a little less than its size


# --- OSRT: trees -------------------------------------------------------------------------------
def plot_osrt_tree(model, ax=None, decimals=2):
    """Draw a fitted ``OptimalSparseRegressionTree`` with conditions at splits and values at leaves.

    The left branch of a split is the one where its condition holds; every box gives its sample
    count. Without ``ax`` the figure is sized to the tree (at most 10 inches wide); the labels take
    the largest font, up to 11 points, that fits the width and the height of the axes.
    """
    _fitted(model, "tree_", "OptimalSparseRegressionTree")
    t = model.tree_
    order = []  # leaves left to right

    def collect(i):
        if t.feature[i] < 0:
            order.append(i)
        else:
            collect(t.children_left[i])
            collect(t.children_right[i])

    collect(0)
    x = {leaf: float(k) for k, leaf in enumerate(order)}

    def place(i):
        if i not in x:
            x[i] = 0.5 * (place(t.children_left[i]) + place(t.children_right[i]))
        return x[i]

    place(0)
    depth = int(t.depth.max()) if t.node_count else 0
    labels = [f"{model.node_condition(i, True)}\nn={t.n_node_samples[i]}" if t.feature[i] >= 0
              else f"{t.value[i]:.{decimals}f}\nn={t.n_node_samples[i]}" for i in range(t.node_count)]
    widest = max(len(line) for label in labels for line in label.split("\n"))
    ax = _axes(ax, figsize=(min(max(1.0 + 0.09 * widest * len(order), 4.0), 10.0), 0.8 + 0.8 * (depth + 1)))
    ax.set_xlim(-0.8, len(order) - 0.2)
    ax.set_ylim(-depth - 0.6, 0.6)
    style = {"boxstyle": "round,pad=0.3", "linewidth": 0.8}
    boxes, small = [], []
    for i in range(t.node_count):
        if t.feature[i] >= 0:
            for child, branch in ((t.children_left[i], "yes"), (t.children_right[i], "no")):
                ax.plot([x[i], x[child]], [-t.depth[i], -t.depth[child]], color="0.5", lw=0.8, zorder=1)
                small.append(ax.text(0.5 * (x[i] + x[child]), -0.5 * (t.depth[i] + t.depth[child]), branch,
                                     ha="center", va="center", color="0.3", zorder=3,
                                     bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"}))
            colours = {"facecolor": "#e8eef7", "edgecolor": "#4a6fa5"}
        else:
            colours = {"facecolor": "#f4efe2", "edgecolor": "#a5814a"}
        boxes.append(ax.text(x[i], -t.depth[i], labels[i], ha="center", va="center", bbox={**style, **colours},
                             zorder=4))
    fontsize = _fitting_fontsize(ax, boxes, [(x[i], -t.depth[i]) for i in range(t.node_count)], largest=11.0)
    for text in boxes:
        text.set_fontsize(fontsize)
    for text in small:
        text.set_fontsize(0.85 * fontsize)
    ax.set_axis_off()
    ax.set_title(f"{t.node_count} nodes, {int((t.feature < 0).sum())} leaves, objective {model.objective_:.4f}",
                 fontsize=max(fontsize, 9.0))
    return ax




def plot_osrt_frontier(results, ax=None, label="OSRT", **kwargs):
    """Loss against number of leaves (``results``: iterable of ``(leaves, loss)``), as a step front."""
    ax = _axes(ax)
    pts = sorted(results)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label, **kwargs)
    ax.set_xlabel("number of leaves")
    ax.set_ylabel("normalised loss")
    ax.legend()
    return ax



# --- ForestPrune: regularization paths --------------------------------------------------------
def plot_forestprune_path(path, x="n_nodes", ax=None, label="ForestPrune", full=True, **kwargs):
    """Error against model size along a ForestPrune (or baseline) path.

    ``path`` is a DataFrame from ``ForestPrune.path`` or ``parsimony.ensembles.pruning_baselines``;
    ``x`` is ``"n_nodes"``, ``"n_trees"`` or ``"alpha"``. Draws the validation error when the
    path has it (else the training error) and, with ``full``, the full ensemble's error as a line.
    Node counts are on a log scale that starts at 0 (the empty model); the error axis turns
    logarithmic when the errors span more than a factor of 20.
    """
    import numpy as np

    if x not in path:
        raise ValueError(f"x must be a column of the path ('n_nodes', 'n_trees' or 'alpha'), got {x!r}")
    ax = _axes(ax)
    err = "val_error" if "val_error" in path and path["val_error"].notna().any() else "train_error"
    data = path.sort_values(x)
    (line,) = ax.plot(data[x], data[err], marker="o", markersize=3, label=label, **kwargs)
    ref = path.attrs.get(f"full_{err}")
    if full and ref is not None:
        ax.axhline(ref, color="grey", linestyle="--", linewidth=1, label="full ensemble")
    if x == "alpha":
        positive = data[x] > 0
        if positive.any():
            ax.set_xscale("log")
    elif (data[x] > 0).any():
        # symlog keeps the empty model (0) on the axis; nothing below 0 is ever drawn
        ax.set_xscale("symlog", linthresh=1, linscale=1)
    if x != "alpha":
        line.sticky_edges.x.append(0)  # the margins never extend the axis below 0
        ax.autoscale_view()
    values = np.concatenate([ax_line.get_ydata() for ax_line in ax.get_lines() if len(ax_line.get_xdata()) > 2]
                            + [np.array([ref] if full and ref is not None else [])]).astype(float)
    values = values[np.isfinite(values) & (values > 0)]
    if values.size and values.max() > 20 * values.min():
        ax.set_yscale("log")
    ax.set_xlabel({"n_nodes": "nodes kept", "n_trees": "trees kept", "alpha": "alpha"}.get(x, x))
    ax.set_ylabel("validation MSE" if err == "val_error" else "training MSE")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(frameon=False)
    return ax


def plot_forestprune_depths(layers, ax=None, label=None, **kwargs):
    """Histogram of the depths kept by a ForestPrune model (``layers_``; removed trees left out)."""
    import numpy as np

    ax = _axes(ax)
    layers = np.asarray(layers)
    depths = layers[layers > 0] - 1
    bins = np.arange(-0.5, (depths.max() if depths.size else 0) + 1.5)
    ax.hist(depths, bins=bins, label=label, **kwargs)
    ax.set_xlabel("depth kept")
    ax.set_ylabel("trees")
    if label is not None:
        ax.legend()
    return ax



# --- Ordered bagging: error curves and bias-variance ------------------------------------------
def plot_ordering_error_curve(curve, ax=None, label=None, keep=None):
    """Error by ensemble size in greedy and original order (ordered-bagging paper, Figure 1).

    Parameters
    ----------
    curve : pandas.DataFrame
        From ``OrderedBaggingRegressor.error_curve``: index ``size``, columns ``ordered``, ``original``.
    ax : matplotlib Axes, optional
    label : str, optional
        Suffix for the legend entries (e.g. ``"train"``, ``"test"``).
    keep : int, optional
        Size of the pruned ensemble, marked with a vertical line.
    """
    ax = _axes(ax)
    suffix = f" ({label})" if label else ""
    line = ax.plot(curve.index, curve["ordered"], label=f"ordered{suffix}")[0]
    ax.plot(curve.index, curve["original"], linestyle="--", color=line.get_color(), label=f"original order{suffix}")
    if keep is not None:
        ax.axvline(keep, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("number of regressors")
    ax.set_ylabel("mean squared error")
    ax.legend()
    return ax


def plot_bias_variance(table, quantity="bias2", ax=None, label=None):
    """Average squared bias or variance of the members by ensemble size (paper Figures 2-3).

    Parameters
    ----------
    table : pandas.DataFrame
        From ``OrderedBaggingRegressor.bias_variance``.
    quantity : {"bias2", "variance"}, default="bias2"
    ax : matplotlib Axes, optional
    label : str, optional
        Suffix for the legend entries (e.g. ``"train"``, ``"test"``).
    """
    if quantity not in ("bias2", "variance"):
        raise ValueError(f"quantity must be 'bias2' or 'variance', got {quantity!r}")
    ax = _axes(ax)
    suffix = f" ({label})" if label else ""
    line = ax.plot(table.index, table[f"{quantity}_ordered"], label=f"ordered{suffix}")[0]
    ax.plot(
        table.index, table[f"{quantity}_original"], linestyle="--", color=line.get_color(), label=f"original order{suffix}"
    )
    ax.set_xlabel("number of regressors")
    ax.set_ylabel("average squared bias" if quantity == "bias2" else "average variance")
    ax.legend()
    return ax



# --- Experiments: critical-difference diagrams and result plots -------------------------------
def plot_critical_difference(ranks, critical_difference, ax=None, title=None):
    """Critical-difference diagram (Demšar 2006): average ranks on an axis, best (rank 1) left.

    Methods whose ranks differ by less than ``critical_difference`` are joined by a thick bar.

    Parameters
    ----------
    ranks : pandas.Series
        Average rank per method (``parsimony.stats.average_ranks``).
    critical_difference : float
        Nemenyi critical difference (``parsimony.stats.nemenyi_critical_difference``).
    ax : matplotlib Axes, optional
    title : str, optional
    """
    import numpy as np

    ranks = ranks.sort_values()
    k = len(ranks)
    if k < 2:
        raise ValueError(f"a critical-difference diagram needs at least 2 methods, got {k}")
    ax = _axes(ax, figsize=(7, 1.2 + 0.35 * k))
    low, high = 1, max(k, int(np.ceil(ranks.max())))
    ax.set_xlim(low - 0.3, high + 0.3)
    ax.hlines(0, low, high, color="black", linewidth=1)
    for r in range(low, high + 1):
        ax.vlines(r, 0, 0.15, color="black", linewidth=1)
        ax.text(r, 0.3, str(r), ha="center", va="bottom", fontsize=9)
    half = (k + 1) // 2
    for i, (name, rank) in enumerate(ranks.items()):
        left = i < half
        level = -(i + 1) if left else -(k - i)
        edge = low - 0.2 if left else high + 0.2
        ax.plot([rank, rank, edge], [0, level * 0.5, level * 0.5], color="black", linewidth=0.8)
        ax.text(edge, level * 0.5, f"{name} ({rank:.2f})", ha="right" if left else "left", va="center", fontsize=9)
    values = ranks.to_numpy()
    cliques, bar = [], -0.25
    for i in range(k):
        j = max(np.flatnonzero(values - values[i] < critical_difference))
        if j > i and not any(a <= i and j <= b for a, b in cliques):
            cliques.append((i, j))
    for i, j in cliques:
        ax.hlines(bar, values[i] - 0.03, values[j] + 0.03, color="black", linewidth=3)
        bar -= 0.2
    ax.set_ylim(min(-0.5 * ((k + 1) // 2) - 0.4, bar - 0.2), 1.7)
    ax.hlines(1.3, low, low + critical_difference, color="tab:red", linewidth=2)
    ax.text(low + critical_difference / 2, 1.4, f"CD = {critical_difference:.2f}", ha="center", va="bottom", fontsize=8)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def plot_accuracy_parsimony(summary, accuracy="nql", parsimony="complexity", ax=None, title=None):
    """Methods in the (parsimony, loss) plane with their Pareto front (lower is better on both).

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per method (the index names it) with columns ``accuracy`` and ``parsimony``.
    accuracy, parsimony : str
        Column names (defaults: mean normalized quantile loss and mean complexity).
    ax : matplotlib Axes, optional
    title : str, optional
    """
    import numpy as np

    if summary.empty:
        raise ValueError("summary has no rows to plot")
    ax = _axes(ax)
    x = summary[parsimony].to_numpy(dtype=float)
    y = summary[accuracy].to_numpy(dtype=float)
    order = np.lexsort((y, x))
    front, best = [], np.inf
    for i in order:
        if y[i] < best:
            front.append(i)
            best = y[i]
    on_front = np.isin(np.arange(len(x)), front)
    ax.scatter(x[~on_front], y[~on_front], color="grey", zorder=3, label="dominated")
    ax.scatter(x[on_front], y[on_front], color="tab:blue", zorder=3, label="Pareto front")
    ax.step(x[front], y[front], where="post", color="tab:blue", linewidth=1)
    for name, xi, yi in zip(summary.index, x, y):
        ax.annotate(str(name), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
    if np.all(x > 0) and x.max() / max(x.min(), 1e-12) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("mean parsimony (complexity)")
    ax.set_ylabel("mean normalized quantile loss" if accuracy == "nql" else accuracy)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax
