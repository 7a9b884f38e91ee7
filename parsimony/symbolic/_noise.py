"""The noise in a target, estimated from the data alone, for the seeders: a residual's change
between neighbouring rows. Noise independent of the features changes as much between two
neighbours as between any two rows; what a fit misses varies smoothly with the features and
changes little between neighbours. Half the mean squared difference of a residual to its nearest
row's (:func:`neighbour_variance`) is then the noise's variance plus a little of the misfit's:
an upper estimate of the noise, and, against the residual's own variance, a test of whether it
is noise at all (:func:`white`)."""

from __future__ import annotations

import numpy as np


def nearest_rows(X, k=1):
    """Each row's ``k`` nearest other rows of ``X`` (columns standardised), nearest first: rows by
    ``k`` columns."""
    from scipy.spatial import cKDTree

    spread = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    return cKDTree(Z).query(Z, k=k + 1)[1][:, 1:]


def neighbour_variance(residual, p, neighbour):
    """Half the ``p``-weighted mean squared difference of ``residual`` between each row and its
    ``neighbour`` (an index a row): the variance of noise independent of the features, plus what a
    misfit changes between neighbours."""
    with np.errstate(all="ignore"):
        return float(p @ (residual - residual[neighbour]) ** 2 / 2)


def noise_deviation(y, w, neighbour):
    """An upper estimate of the standard deviation of the noise in ``y`` (weights ``w``): the root
    of its own :func:`neighbour_variance`. A seeder reads a value of ``y`` within a few of these of
    0 as a law's value near 0 that noise may have carried across it."""
    return np.sqrt(neighbour_variance(y, w / w.sum(), neighbour))


def white(residual, w, neighbour, z):
    """Whether ``residual`` is as rough as noise between neighbouring rows: its
    :func:`neighbour_variance` is its variance for noise independent of the features (a ratio of 1
    up to ``sqrt(2/n)``, measured on uniform rows in 1 to 5 dimensions), less for a residual that
    varies smoothly with them (a form that misses part of the law); ``z`` standard deviations
    below 1 still pass."""
    p = w / w.sum()
    spread = p @ (residual - p @ residual) ** 2
    if not (np.all(np.isfinite(residual)) and spread > 0):
        return False
    return bool(neighbour_variance(residual, p, neighbour) / spread >= 1 - z * np.sqrt(2.0 / len(residual)))
