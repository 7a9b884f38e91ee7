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


# --- Experiments: critical-difference diagrams and result plots -------------------------------
