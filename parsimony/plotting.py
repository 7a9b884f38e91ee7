"""Plots for every method: Pareto fronts, trees, regularization paths, ordering curves, CD diagrams.

matplotlib is imported inside each function, so importing this module stays cheap. Every
function takes an optional ``ax`` and returns the ``Axes`` it drew on.
"""

from __future__ import annotations


def _axes(ax=None, figsize=(6, 4)):
    """Return ``ax`` or a fresh Axes of a new figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize)
    return ax


# --- SQR: Pareto fronts -----------------------------------------------------------------------


# --- OSRT: trees -------------------------------------------------------------------------------


# --- ForestPrune: regularization paths --------------------------------------------------------


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
