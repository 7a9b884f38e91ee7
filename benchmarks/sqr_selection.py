"""Model selection on SQR's fronts, tried offline on the PMLB sets of ``sqr_srbench.py``.

Each fold is fitted once as ``sqr_srbench.py`` fits it (default settings changed by ``--set``,
``random_state`` the fold, the same folds); every row of its front is scored on the test fold
(whole-range NQL and ACE) and stored in ``--fronts`` with its tree (``tokens``, JSON), unit-free
complexity and fitted constants (in the search's units, as the estimator counts them; appended as
it goes, ``--resume`` goes on). Where the fit ran
two searches (a signed feature, ``rescale=True``) both fronts are stored (``search``: 0 the
features as scaled, 1 shifted; ``kept``: the front the estimator installed; ``selected``: the
row it picks on that front), so that the choice between them can be replayed too; the rules
below read the kept fronts.
Then each selection rule picks one row per fold from the stored fronts, and the rules are set
side by side on issue 27's "Must hold" 3: non-Friedman mean NQL and parsimony against the
paper's (parsimony: paper + 1), Friedman mean NQL and parsimony against the paper's mean NQL on
the same sets and :data:`PARSIMONY_TARGET` (issue 40's must-hold 2), mean ACE (against
``--baseline``, a CSV of ``sqr_srbench.py``, when given). The rules: the estimator's own pick
(``fitted``), every ``model_selection`` of :func:`~parsimony.symbolic.select_equation`
(``"cost"`` on each row's unit-free complexity, as the estimator's, and on its tokens as written),
``"cost"`` at each ``--prices`` (its token price; the default is
:data:`~parsimony.symbolic.regressor.SELECTION_PARSIMONY`), and ``oracle``, the row of lowest
test NQL (what the fronts hold, not a rule). What selection can and cannot buy on these fronts
shows here without refitting; on the Friedman sets also as one figure per level, the best mix
(:func:`budget_oracle`: each fold any row, on test NQL, at mean parsimony at most
:data:`PARSIMONY_TARGET`). A second table gives, per set and level, the estimator's own pick
(mean test NQL and parsimony over the folds) beside the paper's NQL and parsimony.

    python benchmarks/sqr_selection.py [--datasets ... | --fast | --friedman] [--fronts /tmp/sqr_fronts.csv]
        [--resume] [--prices 0.012 0.016 0.02] [--baseline OLD.csv] [--set maxsize=20]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_friedman1 import parse_settings  # noqa: E402
from sqr_srbench import (  # noqa: E402
    append_folds, dataset_names, fold_parser, paper_table, read_results,
)

from parsimony.losses import Pinball  # noqa: E402
from parsimony.metrics import absolute_coverage_error, normalized_quantile_loss  # noqa: E402
from parsimony.symbolic import SymbolicQuantileRegressor, select_equation  # noqa: E402
from parsimony.symbolic._parameters import MODEL_SELECTIONS  # noqa: E402
from parsimony.symbolic._search import constant_baseline  # noqa: E402
from parsimony.symbolic._front import calibration_tolerance  # noqa: E402
from parsimony.symbolic._units import unit_free_complexity  # noqa: E402

#: Issue 40's must-hold 2: mean parsimony at most this on the ``fri_c*`` sets (the rule ``oracle <=
#: 20 tokens`` picks each front's row of lowest test NQL among those: what selection can buy there).
PARSIMONY_TARGET = 20
FIELDS = ["dataset", "tau", "fold", "search", "kept", "row", "selected", "complexity", "unit_free", "fitted", "loss",
          "score", "coverage", "baseline", "n_samples", "tolerance", "nql", "ace", "equation", "tokens"]


def front_rows(X, y, train, test, tau, fold, settings):
    """Fit one fold as ``sqr_srbench.py`` does; the front of each search it ran (``search``: 0 the
    features as scaled, 1 shifted; ``kept``: the front the estimator installed), each row scored on
    the test fold (``selected``: the row the estimator would pick on that search's front)."""
    model = SymbolicQuantileRegressor(quantile=tau, random_state=fold, progress=False, n_jobs=1, **settings)
    searches = []
    picked = model._picked_criteria

    def record(X_, y_, w_, plan, result):  # each search's front, as chosen_fit sees it
        searches.append((plan, result))
        return picked(X_, y_, w_, plan, result)

    model._picked_criteria = record
    model.fit(X[train], y[train])
    del model._picked_criteria
    kept = model._fronts[0]
    w = np.ones(len(train))
    common = {"n_samples": len(train), "baseline": constant_baseline(y[train], w, Pinball(tau)),
              "tolerance": calibration_tolerance(tau, w)}
    rows = []
    for search, (plan, result) in enumerate(searches or [(None, None)]):
        if result is not None:
            model._install(X[train], y[train], w, plan, result)
        front = model._fronts[0]
        for row, eq in enumerate(model.equations_.itertuples()):
            pred = model.predict(X[test], index=row)
            tree = front[row]
            rows.append({**common, "row": row, "selected": int(row == model.best_index_),
                         "search": search, "kept": int(front is kept), "complexity": eq.complexity,
                         "unit_free": unit_free_complexity(tree["ops"], tree["feats"], tree["vals"],
                                                           model.complexity_weights_),
                         "fitted": tree["fitted"],  # (counted in the search's units)
                         "tokens": json.dumps([tree["ops"].tolist(), tree["feats"].tolist(), tree["vals"].tolist()]),
                         "loss": eq.loss, "score": eq.score, "coverage": eq.coverage, "equation": eq.equation,
                         "nql": normalized_quantile_loss(y[test], pred, tau, y_range=float(np.ptp(y))),
                         "ace": absolute_coverage_error(y[test], pred, tau)})
    return rows


def rules(prices) -> dict:
    """``{name: front -> row}`` for every rule compared (``"cost"`` with the rows' unit-free
    complexity where the fronts have it, as the estimator selects, and ``"cost (user tokens)"``
    without it)."""
    def model_selection(name, price=None, unit_free=True):
        def pick(front):
            extra = {} if price is None else {"token_price": price}
            if name == "cost" and unit_free and "unit_free" in front and front.unit_free.notna().all():
                extra["unit_free"] = front.unit_free.to_numpy()
            return select_equation(front, name, front.tau.iloc[0], front.tolerance.iloc[0],
                                   n_samples=front.n_samples.iloc[0], baseline=front.baseline.iloc[0], **extra)
        return pick

    out = {"fitted": lambda front: int(np.flatnonzero(front.selected.to_numpy())[0])}
    out.update({name: model_selection(name) for name in MODEL_SELECTIONS})
    out["cost (user tokens)"] = model_selection("cost", unit_free=False)
    out.update({f"cost@{price:g}": model_selection("cost", price) for price in prices})
    out["oracle (test NQL)"] = lambda front: int(np.argmin(front.nql.to_numpy()))
    out[f"oracle <= {PARSIMONY_TARGET} tokens"] = lambda front: int(np.argmin(
        np.where(front.complexity.to_numpy() <= PARSIMONY_TARGET, front.nql.to_numpy(), np.inf)))
    return out


def _fold_groups(fronts):
    """The fronts the estimator kept, one frame per set, level and fold, in front order."""
    if "kept" in fronts:
        fronts = fronts[fronts.kept.fillna(1).astype(bool)]
    return [g.sort_values("row").reset_index(drop=True) for _, g in fronts.groupby(["dataset", "tau", "fold"])]


def _set_means(groups, rule, paper):
    """Per set and level, the folds' picks by ``rule`` averaged (``folds``, ``nql``, ``ace``,
    ``complexity``) beside the paper's NQL and parsimony."""
    import pandas as pd

    picks = pd.DataFrame([g.iloc[rule(g)] for g in groups])
    means = picks.groupby(["tau", "dataset"]).agg(folds=("fold", "size"), nql=("nql", "mean"), ace=("ace", "mean"),
                                                  complexity=("complexity", "mean")).reset_index()
    means["paper_nql"] = [paper.get((t, d), {}).get("nql", np.nan) for t, d in zip(means.tau, means.dataset)]
    means["paper_parsimony"] = [paper.get((t, d), {}).get("parsimony", np.nan)
                                for t, d in zip(means.tau, means.dataset)]
    return means


def compare(fronts, paper, prices, baseline=None):
    """One row per rule and level: the issue's figures, each with its target."""
    import pandas as pd

    base_ace = None if baseline is None else baseline.groupby(["tau", "dataset"]).ace.mean()
    groups = _fold_groups(fronts)
    table = []
    for name, rule in rules(prices).items():
        means = _set_means(groups, rule, paper)
        for tau, part in means.groupby("tau"):
            friedman = part.dataset.str.contains("fri")
            other = part[~friedman].dropna(subset=["paper_nql"])
            row = {"rule": name, "tau": tau,
                   "nonfri_nql": other.nql.mean(), "paper_nql": other.paper_nql.mean(),
                   "nonfri_parsimony": other.complexity.mean(), "paper+1": other.paper_parsimony.mean() + 1,
                   "fri_nql": part[friedman].nql.mean(), "fri_paper": part[friedman].paper_nql.mean(),
                   "fri_parsimony": part[friedman].complexity.mean(), "fri_max": PARSIMONY_TARGET,
                   "ace": part.ace.mean()}
            if base_ace is not None:
                row["baseline_ace"] = np.mean([base_ace.get((tau, d), np.nan) for d in part.dataset])
            table.append(row)
    return pd.DataFrame(table)


def budget_oracle(fronts, budget=PARSIMONY_TARGET):
    """Per level, the lowest mean test NQL of the Friedman sets' kept fronts when each fold may take
    any of its rows so long as the mean complexity over all folds is at most ``budget`` (exact, by
    dynamic programming over the total tokens): what any selection, however well informed, can buy
    at that mean parsimony; a figure above the paper's NQL is a front limit, not a selection one."""
    import pandas as pd

    table = []
    for tau, part in pd.concat(_fold_groups(fronts)).groupby("tau"):
        groups = [g for _, g in part[part.dataset.str.contains("fri")].groupby(["dataset", "fold"])]
        total = budget * len(groups)
        best = np.r_[0.0, np.full(total, np.inf)]  # best[t]: lowest NQL sum over the folds so far at t tokens
        for g in groups:
            new = np.full(total + 1, np.inf)
            for c, nql in zip(g.complexity.astype(int), g.nql):
                if c <= total:
                    new[c:] = np.minimum(new[c:], best[:total + 1 - c] + nql)
            best = new
        if groups:
            table.append({"tau": tau, "folds": len(groups), "mean tokens <=": budget,
                          "oracle mix NQL": best.min() / len(groups)})
    return pd.DataFrame(table)


def search_choices(fronts):
    """Per level, over the folds that ran two searches: mean test NQL and parsimony of each
    search's own pick, of the kept one and of the better pick by test NQL (the choice's oracle)."""
    import pandas as pd

    if "search" not in fronts or fronts.search.nunique() < 2:
        return None
    picks = fronts[fronts.selected == 1]
    two = picks.groupby(["dataset", "tau", "fold"]).search.transform("nunique") > 1
    table = []
    for tau, part in picks[two].groupby("tau"):
        folds = part.groupby(["dataset", "fold"])
        chosen = {"search 0 (as scaled)": part[part.search == 0], "search 1 (shifted)": part[part.search == 1],
                  "kept": part[part.kept == 1], "oracle": part.loc[folds.nql.idxmin()]}
        for name, rows in chosen.items():
            means = rows.groupby("dataset").agg(nql=("nql", "mean"), c=("complexity", "mean"))
            table.append({"tau": tau, "pick": name, "sets": len(means), "nql": means.nql.mean(),
                          "parsimony": means.c.mean()})
    return pd.DataFrame(table)


def per_set(fronts, paper, rule="fitted"):
    """One row per set and level for ``rule`` (the estimator's own pick by default): mean test
    NQL and parsimony (complexity) over the folds, beside the paper's NQL and parsimony and
    ``front_at_paper``, the mean over the folds of the lowest test NQL among the kept front's rows
    of complexity at most the paper's parsimony (an oracle: what the fronts hold at the paper's
    size, not a rule)."""
    groups = _fold_groups(fronts)
    table = _set_means(groups, rules([])[rule], paper)
    at_paper = {}
    for g in groups:
        key = (g.tau.iloc[0], g.dataset.iloc[0])
        size = paper.get(key, {}).get("parsimony", np.nan)
        nql = g.nql[g.complexity <= size]
        at_paper.setdefault(key, []).append(nql.min() if len(nql) else np.nan)
    table["front_at_paper"] = [np.mean(at_paper[(t, d)]) for t, d in zip(table.tau, table.dataset)]
    table = table[["dataset", "tau", "folds", "nql", "complexity", "paper_nql", "paper_parsimony", "front_at_paper"]]
    return table.sort_values(["tau", "dataset"]).rename(columns={"dataset": "set", "complexity": "parsimony"})


def main(argv=None):
    parser = fold_parser(__doc__.splitlines()[0])
    parser.add_argument("--fronts", default="/tmp/sqr_fronts.csv", help="CSV of the scored fronts")
    parser.add_argument("--prices", nargs="*", type=float, default=[0.01, 0.012, 0.02, 0.025],
                        help="token prices of the cost rule to compare")
    args = parser.parse_args(argv)
    import pandas as pd

    paper = paper_table()
    names = dataset_names(args, paper)
    out = Path(args.fronts)
    if not args.report_only:
        settings = parse_settings(args.set)
        append_folds(names, args.quantiles, args.folds, out, args.resume, FIELDS,
                     lambda X, y, train, test, tau, fold: front_rows(X, y, train, test, tau, fold, settings))
    elif not out.exists():
        parser.error(f"--report-only reads --fronts, and {out} does not exist")
    fronts = pd.read_csv(out)
    fronts = fronts[fronts.dataset.isin(names) & fronts.tau.isin(args.quantiles)]
    baseline = read_results(args.baseline) if args.baseline else None
    pd.set_option("display.width", 250)
    print(compare(fronts, paper, args.prices, baseline).round(4).to_string(index=False))
    mix = budget_oracle(fronts)
    if not mix.empty:
        print("\nFriedman sets, the best mix of rows at the target's mean parsimony (an oracle on test NQL):")
        print(mix.round(4).to_string(index=False))
    choices = search_choices(fronts)
    if choices is not None:
        print("\nThe choice between the two searches (sets and folds with a signed feature; means over sets):")
        print(choices.round(4).to_string(index=False))
    print("\nPer set, the estimator's own pick (mean over the folds), and the front's best row on test NQL at "
          "the paper's parsimony (front_at_paper):")
    table = per_set(fronts, paper)
    print(table.round(4).to_string(index=False))
    friedman = table[table.set.str.contains("fri")]
    if not friedman.empty:
        print("\nFriedman sets, means per level:")
        print(friedman.groupby("tau")[["nql", "parsimony", "paper_nql", "paper_parsimony", "front_at_paper"]]
              .mean().round(4).to_string())


if __name__ == "__main__":
    main()
