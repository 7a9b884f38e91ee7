import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from parsimony import stats


def _long(table: np.ndarray, methods=("A", "B", "C")) -> pd.DataFrame:
    return pd.DataFrame(
        [{"dataset": f"d{i}", "method": m, "value": table[i, j]} for i in range(table.shape[0]) for j, m in enumerate(methods)]
    )


@pytest.fixture
def scores():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(12, 1))
    return base + rng.normal(scale=0.3, size=(12, 3)) + np.array([0.0, 0.4, 1.0])


def test_friedman_matches_scipy(scores):
    res = stats.friedman(_long(scores)).iloc[0]
    ref = st.friedmanchisquare(*scores.T)
    assert res.statistic == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)
    assert stats.friedman(_long(scores), n_tests=6).iloc[0].alpha == pytest.approx(0.05 / 6)


def test_wilcoxon_and_t_match_scipy(scores):
    wil = stats.wilcoxon_pairwise(_long(scores))
    ttest = stats.paired_t(_long(scores))
    for (a, b), row_w, row_t in zip([(0, 1), (0, 2), (1, 2)], wil.itertuples(), ttest.itertuples()):
        assert row_w.p_value == pytest.approx(st.wilcoxon(scores[:, a], scores[:, b]).pvalue)
        assert row_t.p_value == pytest.approx(st.ttest_rel(scores[:, a], scores[:, b]).pvalue)
        assert row_w.alpha == pytest.approx(0.05 / 3)


def test_bonferroni_hand_computed_case():
    # 3 comparisons at alpha .05 -> corrected .0166..; p = 0.0156 (n=10 all positive: 2/1024*... exact)
    x = np.arange(1.0, 11.0)
    table = np.c_[x + 10.0, x, x + np.r_[np.full(5, 0.5), np.full(5, -0.5)] * np.arange(1, 11)]
    res = stats.wilcoxon_pairwise(_long(table))
    ab = res[(res.group_a == "A") & (res.group_b == "B")].iloc[0]
    # all 10 differences positive: exact two-sided p = 2 / 2**10
    assert ab.p_value == pytest.approx(2 / 1024)
    assert ab.alpha == pytest.approx(0.05 / 3) and bool(ab.significant)
    paper = stats.wilcoxon_pairwise(_long(table), n_comparisons=18).iloc[0]
    assert paper.alpha == pytest.approx(0.05 / 18) and bool(paper.significant)  # 0.00195 < 0.00278


def test_shapiro_ranks_and_cd(scores):
    sw = stats.shapiro_wilk(_long(scores))
    assert sw.loc[0, "p_value"] == pytest.approx(st.shapiro(scores[:, 0]).pvalue)
    ranks = stats.average_ranks(_long(scores))
    assert list(ranks.index) == ["A", "B", "C"] and ranks.sum() == pytest.approx(6.0)
    # Demšar (2006) Table 5: q_0.05 = 2.569 for k = 4
    assert stats.nemenyi_critical_difference(4, 30) == pytest.approx(2.569 * np.sqrt(20 / 180), rel=1e-3)


def test_bad_input(scores):
    df = _long(scores)
    with pytest.raises(ValueError, match="column 'score' not in data"):
        stats.friedman(df, value="score")
    with pytest.raises(ValueError, match="more than one value"):
        stats.friedman(pd.concat([df, df]))
    with pytest.raises(ValueError, match="not in the data"):
        stats.wilcoxon_pairwise(df, pairs=[("A", "Z")])
    with pytest.raises(TypeError, match="long-form pandas DataFrame"):
        stats.friedman(scores)
    with pytest.raises(TypeError, match="long-form pandas DataFrame"):
        stats.shapiro_wilk(scores[:, 0].tolist())


def test_shapiro_leaves_out_missing_values(scores):
    df = _long(scores)
    first = df.index[df["method"] == "A"][0]
    df.loc[first, "value"] = np.nan
    sw = stats.shapiro_wilk(df).set_index("method")
    assert sw.loc["A", "n"] == scores.shape[0] - 1
    assert sw.loc["A", "p_value"] == pytest.approx(st.shapiro(df.loc[df["method"] == "A", "value"].dropna()).pvalue)
    df.loc[first, "value"] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        stats.shapiro_wilk(df)


def test_all_ties_give_no_difference_instead_of_nan():
    tied = _long(np.tile(np.arange(6.0)[:, None], (1, 3)))
    fr = stats.friedman(tied).iloc[0]
    assert (fr.statistic, fr.p_value, fr.significant) == (0.0, 1.0, False)
    for test in (stats.paired_t, stats.wilcoxon_pairwise):
        res = test(tied)
        assert np.isfinite(res[["statistic", "p_value"]].to_numpy()).all()
        assert (res.p_value == 1.0).all() and not res.significant.any()


def test_paired_t_is_scale_free(scores):
    small = stats.paired_t(_long(scores))
    huge = stats.paired_t(_long(scores * 1e300))
    np.testing.assert_allclose(huge.p_value, small.p_value, rtol=1e-9)
    np.testing.assert_allclose(huge.statistic, small.statistic, rtol=1e-9)
    assert huge.significant.any()


@pytest.mark.parametrize("n_tests, error", [(-1, ValueError), (0, ValueError), (0.5, TypeError), ("x", TypeError)])
def test_friedman_rejects_bad_n_tests(scores, n_tests, error):
    with pytest.raises(error, match="n_tests"):
        stats.friedman(_long(scores), n_tests=n_tests)


def test_pairwise_rejects_bad_comparisons_and_pairs(scores):
    df = _long(scores)
    with pytest.raises(TypeError, match="n_comparisons"):
        stats.wilcoxon_pairwise(df, n_comparisons=2.7)
    with pytest.raises(ValueError, match="tuple of two"):
        stats.paired_t(df, pairs=["AB"])
    with pytest.raises(TypeError, match="pairs"):
        stats.paired_t(df, pairs="AB")
    with pytest.raises(ValueError, match="itself"):
        stats.paired_t(df, pairs=[("A", "A")])


@pytest.mark.parametrize("args, error", [((2.7, 10), TypeError), (("3", 10), TypeError), ((float("nan"), 10), TypeError),
                                         ((None, 10), TypeError), ((3, None), TypeError), ((1, 10), ValueError)])
def test_nemenyi_rejects_non_integer_counts(args, error):
    with pytest.raises(error, match="n_groups|n_blocks"):
        stats.nemenyi_critical_difference(*args)
