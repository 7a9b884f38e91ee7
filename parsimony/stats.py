"""Statistical comparison of methods over datasets (SQR paper, Section 4 and Appendix C).

Tidy in, tidy out: every function takes a long DataFrame with one row per (block, group) —
typically ``dataset`` x ``method`` — and a ``value`` column, and returns a DataFrame with one row
per test: statistic, p-value, the (corrected) alpha and whether the result is significant.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats as _st

from ._validation import check_int, check_quantile


def _check_long(data, *columns) -> None:
    """Raise unless ``data`` is a DataFrame holding ``columns``."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a long-form pandas DataFrame, got {type(data).__name__}")
    for col in columns:
        if col not in data.columns:
            raise ValueError(f"column {col!r} not in data (columns: {list(data.columns)})")


def _wide(data: pd.DataFrame, block: str, group: str, value: str) -> pd.DataFrame:
    """Blocks x groups table of ``value``; blocks with any missing group are dropped."""
    _check_long(data, block, group, value)
    if data.duplicated([block, group]).any():
        dup = data.loc[data.duplicated([block, group], keep=False), [block, group]].iloc[0].tolist()
        raise ValueError(f"more than one value per ({block}, {group}), e.g. {dup}: aggregate first")
    table = data.pivot(index=block, columns=group, values=value).astype(float)
    table = table.dropna(axis=0, how="any")
    if table.shape[0] < 2 or table.shape[1] < 2:
        raise ValueError(f"need at least 2 complete {block}s and 2 {group}s, got {table.shape[0]} x {table.shape[1]}")
    if not np.isfinite(table.to_numpy()).all():
        raise ValueError(f"{value} contains infinite values")
    return table


def _alpha(alpha: float) -> float:
    return check_quantile(alpha, "alpha")


def shapiro_wilk(data: pd.DataFrame, group="method", value="value", alpha=0.05) -> pd.DataFrame:
    """Shapiro–Wilk normality test of ``value`` per group (missing values left out; ``n`` counts
    the values tested)."""
    _check_long(data, group, value)
    alpha = _alpha(alpha)
    rows = []
    for name, sub in data.groupby(group, sort=True):
        x = sub[value].to_numpy(dtype=float)
        x = x[~np.isnan(x)]
        if not np.isfinite(x).all():
            raise ValueError(f"{value} contains infinite values")
        if len(x) < 3:
            raise ValueError(f"Shapiro–Wilk needs at least 3 values per {group}; {name!r} has {len(x)}")
        res = _st.shapiro(x)
        rows.append({group: name, "n": len(x), "statistic": float(res.statistic), "p_value": float(res.pvalue),
                     "alpha": alpha, "normal": bool(res.pvalue >= alpha)})
    return pd.DataFrame(rows)


def friedman(data: pd.DataFrame, block="dataset", group="method", value="value", alpha=0.05, n_tests=1) -> pd.DataFrame:
    """Friedman test that all groups have the same distribution over blocks.

    ``n_tests`` > 1 applies a Bonferroni correction for that many Friedman tests (the paper uses 6:
    three metrics x two quantiles).
    """
    table = _wide(data, block, group, value)
    corrected = _alpha(alpha) / check_int(n_tests, "n_tests", minimum=1)
    values = table.to_numpy()
    if np.all(values == values[:, :1]):
        statistic, p = 0.0, 1.0  # every block ties all groups: no evidence of any difference
    else:
        res = _st.friedmanchisquare(*values.T)
        statistic, p = res.statistic, res.pvalue
    return pd.DataFrame([{"test": "friedman", "n_blocks": table.shape[0], "n_groups": table.shape[1],
                          "statistic": float(statistic), "p_value": float(p),
                          "alpha": corrected, "significant": bool(p < corrected)}])


def _check_pairs(pairs, groups, group) -> list[tuple]:
    """Validate ``pairs`` as a list of (a, b) tuples of two distinct groups present in the data."""
    if isinstance(pairs, (str, bytes)):
        raise TypeError(f"pairs must be a list of ({group}_a, {group}_b) tuples, got the string {pairs!r}")
    out = []
    for pair in pairs:
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(f"each pair must be a tuple of two {group}s, got {pair!r}")
        a, b = pair
        if a not in groups or b not in groups:
            raise ValueError(f"pair ({a!r}, {b!r}) names a {group} not in the data ({groups})")
        if a == b:
            raise ValueError(f"pair ({a!r}, {b!r}) compares a {group} with itself")
        out.append((a, b))
    if not out:
        raise ValueError("pairs is empty: name at least one pair or pass None for all pairs")
    return out


def _pairwise(data, block, group, value, alpha, n_comparisons, pairs, test_name, run):
    table = _wide(data, block, group, value)
    groups = list(table.columns)
    pairs = list(itertools.combinations(groups, 2)) if pairs is None else _check_pairs(pairs, groups, group)
    m = len(pairs) if n_comparisons is None else check_int(n_comparisons, "n_comparisons", minimum=1)
    corrected = _alpha(alpha) / m
    rows = []
    for a, b in pairs:
        x, y = table[a].to_numpy(), table[b].to_numpy()
        if np.array_equal(x, y):
            statistic, p = 0.0, 1.0  # identical in every block: no evidence of a difference
        else:
            scale = max(np.abs(x).max(), np.abs(y).max())  # both tests are scale-free; avoid overflow
            statistic, p = run(x / scale, y / scale)
        rows.append({"test": test_name, "group_a": a, "group_b": b, "n_blocks": len(x),
                     "mean_a": float(x.mean()), "mean_b": float(y.mean()),
                     "median_difference": float(np.median(x - y)), "statistic": float(statistic),
                     "p_value": float(p), "alpha": corrected, "significant": bool(p < corrected)})
    return pd.DataFrame(rows)


def wilcoxon_pairwise(data, block="dataset", group="method", value="value", alpha=0.05,
                      n_comparisons=None, pairs=None) -> pd.DataFrame:
    """Pairwise Wilcoxon signed-rank tests with a Bonferroni-corrected alpha.

    The corrected alpha is ``alpha / n_comparisons`` (default: the number of pairs tested; the paper
    uses 18 for all its comparisons at once).
    """
    def run(x, y):
        res = _st.wilcoxon(x, y)
        return res.statistic, res.pvalue

    return _pairwise(data, block, group, value, alpha, n_comparisons, pairs, "wilcoxon", run)


def paired_t(data, block="dataset", group="method", value="value", alpha=0.05,
             n_comparisons=None, pairs=None) -> pd.DataFrame:
    """Pairwise paired t-tests with a Bonferroni-corrected alpha."""
    def run(x, y):
        res = _st.ttest_rel(x, y)
        return res.statistic, res.pvalue

    return _pairwise(data, block, group, value, alpha, n_comparisons, pairs, "paired_t", run)


def average_ranks(data, block="dataset", group="method", value="value", lower_is_better=True) -> pd.Series:
    """Mean rank of every group over blocks (rank 1 = best; ties share the average rank)."""
    table = _wide(data, block, group, value)
    ranks = (table if lower_is_better else -table).rank(axis=1, method="average")
    return ranks.mean(axis=0).sort_values()


def nemenyi_critical_difference(n_groups: int, n_blocks: int, alpha=0.05) -> float:
    """Nemenyi critical difference of average ranks: ``q_alpha sqrt(k (k + 1) / (6 N))``.

    ``q_alpha`` is the studentized range quantile for ``k`` groups (infinite degrees of freedom)
    divided by sqrt(2), as in Demšar (2006).
    """
    k = check_int(n_groups, "n_groups", minimum=2)
    n = check_int(n_blocks, "n_blocks", minimum=1)
    q = _st.studentized_range.ppf(1.0 - _alpha(alpha), k, np.inf) / np.sqrt(2.0)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n)))


def verdict(row) -> str:
    """A test row's verdict: "Yes", "No", "not run", or that it cannot be significant with its datasets."""
    if not np.isfinite(row["p_value"]):
        return "not run (too few methods or datasets)"
    if row["significant"]:
        return "Yes"
    if np.isfinite(row.get("smallest_p", math.nan)) and row["smallest_p"] >= row["alpha"]:
        return (f"cannot be with {int(row['n_datasets'])} datasets (smallest possible p {row['smallest_p']:.2g} "
                f">= alpha {row['alpha']:.2g})")
    return "No"
