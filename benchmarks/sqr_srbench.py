"""SQR on the PMLB sets of ../shared/datasets/pmlb, 5-fold CV at tau = .5 and .9, against the paper and peers.

NQL (normalized quantile loss, SQR paper Eq. 7) is the mean pinball loss divided by the range of
the **whole dataset's** target: that convention reproduces the paper's Table 11 (see
../shared/anchors.md), so it is the primary ``nql`` here; ``nql_fold`` divides by the test fold's
own range. For every dataset and level the table shows the mean over folds of NQL, ACE (absolute
coverage error, Eq. 8), parsimony (token complexity, Table 1 weights) and fit time beside the
paper's Table 11 (parsed at run time from anchors.md, section "SQR") and beside the peers run on
the same folds by ``benchmarks/sqr_peers.py``: unpenalised linear QR, the best constant quantile of
the training fold and eggp. The summary prints issue 15's "Must hold" criteria 1-5 side by side
with their targets and a PASS/FAIL column (the Friedman targets are issue 27's):

1. non-Friedman sets: mean NQL <= the paper's SQR, mean parsimony <= the paper's + 1;
2. the 10 Friedman-1 sets (names containing "fri"): mean NQL <= 0.030 (tau=.5) / 0.015 (tau=.9),
   mean parsimony <= 26;
3. all sets: mean NQL below linear QR's and eggp's (each on the sets where that peer has all folds);
4. no set where SQR's mean test NQL over the folds is worse than the best constant quantile's
   (the per-fold count is printed too, for information);
5. median fit time (CPU seconds of the fit, one thread) <= the paper's median (its ms column, same
   sets), mean ACE <= a baseline run's
   (``--baseline``, a CSV of this script from the code to compare with; skipped without one).

SQR results are appended to ``--out`` as they come and peers to their cache
(``~/.cache/parsimony-bench/peers.csv``), so a long run can be interrupted and resumed
(``--resume``); missing constant/linear-QR rows are computed (fast), missing eggp rows only when
``eggp`` is named in ``--peers`` (about a minute a fit: run ``sqr_peers.py`` in the background).
``--report-only`` prints the tables from the CSVs without fitting; ``--fast`` runs a 10-set subset;
``--set name=value`` changes an SQR parameter (JSON values, repeatable: ``--set maxsize=30``).

    python benchmarks/sqr_srbench.py [--datasets 192_vineyard 228_elusage | --fast] [--folds 5]
        [--quantiles 0.5 0.9] [--n-jobs 1] [--out /tmp/sqr_srbench.csv] [--resume]
        [--peers constant lqr [eggp]] [--baseline OLD.csv] [--report-only] [--set maxsize=30]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqr_peers import (  # noqa: E402  (the peers' module sits beside this script)
    CACHE, SHARED, benchmark_folds, cache_key, dataset_path, eggp_parsimony, load_xy, peer_identity, read_cache, run_peers,
)

from sqr_friedman1 import parse_settings  # noqa: E402

from parsimony.metrics import absolute_coverage_error, normalized_quantile_loss  # noqa: E402
from parsimony.symbolic import SymbolicQuantileRegressor  # noqa: E402

ANCHORS = SHARED.parent / "anchors.md"
FIELDS = ["dataset", "tau", "fold", "nql", "nql_fold", "ace", "parsimony", "seconds", "equation"]
FAST = ["192_vineyard", "228_elusage", "210_cloud", "1089_USCrime", "230_machine_cpu", "1027_ESL",
        "522_pm10", "594_fri_c2_100_5", "579_fri_c0_250_5", "631_fri_c1_500_5"]
FRIEDMAN_TARGET = {"nql": {0.5: 0.030, 0.9: 0.015}, "parsimony": 26.0}  # issue 27


def paper_table(path: Path = ANCHORS) -> dict:
    """``{(tau, dataset): {"nql", "lqr_nql", "ace", "parsimony", "ms", "n", "d"}}`` from the SQR section."""
    text = path.read_text()
    start = text.index("## SQR")
    end = text.find("\n## ", start + 5)
    section = text[start:end if end > 0 else None]
    header = None
    table = {}
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue
        row = dict(zip(header, cells))

        def num(key):
            value = row.get(key, "-")
            return float(value) if re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", value) else np.nan

        table[(float(row["tau"]), row["dataset"])] = {
            "nql": num("NQL SQR"), "lqr_nql": num("NQL LQR"), "ace": num("ACE SQR"),
            "parsimony": num("parsimony SQR"), "ms": num("SQR ms"), "n": num("n"), "d": num("d"),
        }
    return table


def run_fold(X, y, train, test, tau, seed, n_jobs, whole_range, settings=None):
    """Fit SQR at its defaults (changed by ``settings``) on one fold; the CSV row's measured fields."""
    model = SymbolicQuantileRegressor(quantile=tau, random_state=seed, progress=False, n_jobs=n_jobs,
                                      **(settings or {}))
    start = time.process_time()  # CPU seconds: the machine is shared, wall times are not comparable
    model.fit(X[train], y[train])
    seconds = time.process_time() - start
    pred = model.predict(X[test])
    return {
        "nql": normalized_quantile_loss(y[test], pred, tau, y_range=whole_range),
        "nql_fold": normalized_quantile_loss(y[test], pred, tau),
        "ace": absolute_coverage_error(y[test], pred, tau),
        "parsimony": int(model.complexity_),
        "seconds": seconds,
        "equation": model.equations_["equation"].iloc[model.best_index_],
    }


def read_results(path):
    """This script's CSV as a DataFrame; an older file (``nql`` = fold range, ``nql_full``) is renamed."""
    import pandas as pd

    results = pd.read_csv(path)
    if "nql_full" in results.columns:  # written before the whole range became the primary NQL
        results = results.rename(columns={"nql": "nql_fold"}).rename(columns={"nql_full": "nql"})
    return results


def _upgrade(path: Path) -> None:
    """Rewrite an older CSV with the current columns so that appending to it stays consistent."""
    with open(path, newline="") as fh:
        header = next(csv.reader(fh), [])
    if header and header != FIELDS:
        read_results(path)[FIELDS].to_csv(path, index=False)


def append_folds(names, quantiles, n_folds, out: Path, resume: bool, fields, rows_of) -> None:
    """Append to the CSV ``out`` (columns ``fields``) the rows ``rows_of(X, y, train, test, tau, fold)``
    gives for every (dataset, tau, fold) of ``names`` not yet in it (``resume``; otherwise ``out``
    starts afresh), each fold's rows flushed as they come, so that a long run can be resumed."""
    done = set()
    if resume and out.exists():
        with open(out) as fh:
            done = {(r["dataset"], float(r["tau"]), int(r["fold"])) for r in csv.DictReader(fh)}
    elif out.exists():
        out.unlink()
    new_file = not out.exists()
    with open(out, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        if new_file:
            writer.writeheader()
        for name in names:
            if not dataset_path(name).exists():
                print(f"{name}: not in {dataset_path(name).parent}, skipped", flush=True)
                continue
            X, y = load_xy(name)
            for tau in quantiles:
                for fold, (train, test) in enumerate(benchmark_folds(X, n_folds)):
                    if (name, tau, fold) in done:
                        continue
                    for row in rows_of(X, y, train, test, tau, fold):
                        writer.writerow({"dataset": name, "tau": tau, "fold": fold, **row})
                    fh.flush()
                print(f"{name} tau={tau}: done", flush=True)


def run_sqr(names, quantiles, n_folds, n_jobs, out: Path, resume: bool, settings=None) -> None:
    if resume and out.exists():
        _upgrade(out)
    # warm-up: compile the kernels outside the timings
    SymbolicQuantileRegressor(niterations=1, progress=False).fit(np.random.rand(30, 2), np.random.rand(30))
    append_folds(names, quantiles, n_folds, out, resume, FIELDS, lambda X, y, train, test, tau, fold: [
        run_fold(X, y, train, test, tau, seed=fold, n_jobs=n_jobs, whole_range=float(np.ptp(y)), settings=settings)])


def peer_results(cache: Path, names, quantiles, n_folds):
    """The cache's rows for the current peers' versions and settings, on the benchmark's cells."""
    import pandas as pd

    wanted = {(name, float(tau), fold) for name in names for tau in quantiles for fold in range(n_folds)}
    identities = {peer: peer_identity(peer) for peer in ("constant", "lqr", "eggp")}
    rows = [r for r in read_cache(cache)
            if cache_key(r)[:3] in wanted and identities.get(r["peer"]) == (r["version"], r["settings"])]
    frame = pd.DataFrame(rows, columns=["dataset", "tau", "fold", "peer", "nql", "nql_fold", "ace", "parsimony",
                                        "seconds", "equation"])
    for column in ("tau", "nql", "nql_fold", "ace", "parsimony", "seconds"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    frame["fold"] = frame["fold"].astype(int)
    unread = (frame.peer == "eggp") & frame.parsimony.isna() & ~frame.equation.str.startswith("FAILED")
    frame.loc[unread, "parsimony"] = [eggp_parsimony(e) for e in frame.equation[unread]]  # rows cached before a fix
    return frame


def _complete_sets(frame, n_folds):
    """``(tau, dataset)`` means over folds of the sets with a finite NQL on every fold."""
    ok = frame[np.isfinite(frame.nql)]
    means = ok.groupby(["tau", "dataset"]).agg(
        nql=("nql", "mean"), nql_fold=("nql_fold", "mean"), ace=("ace", "mean"), parsimony=("parsimony", "mean"),
        seconds=("seconds", "mean"), folds=("fold", "count"))
    return means[means.folds == n_folds]


def _verdict(ok) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def report(results, peers, paper, n_folds=5, baseline=None) -> list[dict]:
    """Print the per-set table and the issue-15 criteria; returns the criteria rows."""
    import pandas as pd

    pd.set_option("display.width", 250)
    pd.set_option("display.max_rows", 500)
    ours = _complete_sets(results, n_folds)
    table = ours.reset_index()
    for key in ("nql", "lqr_nql", "ace", "parsimony"):
        table[f"paper_{key}"] = [paper.get((t, d), {}).get(key, np.nan) for t, d in zip(table.tau, table.dataset)]
    table["paper_seconds"] = [paper.get((t, d), {}).get("ms", np.nan) / 1000 for t, d in zip(table.tau, table.dataset)]
    by_peer = {peer: _complete_sets(peers[peers.peer == peer], n_folds) for peer in ("lqr", "constant", "eggp")}
    for peer, means in by_peer.items():
        table[f"{peer}_nql"] = [means.nql.get((t, d), np.nan) for t, d in zip(table.tau, table.dataset)]
    table["eggp_parsimony"] = [by_peer["eggp"].parsimony.get((t, d), np.nan) for t, d in zip(table.tau, table.dataset)]
    cols = ["tau", "dataset", "nql", "nql_fold", "paper_nql", "lqr_nql", "paper_lqr_nql", "eggp_nql", "constant_nql",
            "ace", "paper_ace", "parsimony", "paper_parsimony", "eggp_parsimony", "seconds", "paper_seconds"]
    print("SQR per set (means over folds; nql: whole-dataset range, nql_fold: test-fold range)")
    print(table[cols].round(4).to_string(index=False))
    print()

    base = _complete_sets(baseline, n_folds) if baseline is not None else None
    criteria = []

    def add(number, tau, what, ours_value, target, ok, sets):
        def text(value):
            return "-" if not np.isfinite(value) else (f"{value:.0f}" if number == 4 else f"{value:.4f}")

        criteria.append({"#": number, "tau": tau, "criterion": what, "ours": text(ours_value), "target": text(target),
                         "sets": sets, "verdict": _verdict(ok)})

    for tau, group in table.groupby("tau"):
        friedman = group.dataset.str.contains("fri")
        for label, part in (("non-Friedman", group[~friedman]), ("Friedman", group[friedman])):
            part = part.dropna(subset=["paper_nql"])
            if part.empty:
                continue
            if label == "non-Friedman":
                nql_target, pars_target = part.paper_nql.mean(), part.paper_parsimony.mean() + 1
                names = ("mean NQL <= paper SQR", "mean parsimony <= paper + 1")
            else:
                nql_target, pars_target = FRIEDMAN_TARGET["nql"].get(tau, np.nan), FRIEDMAN_TARGET["parsimony"]
                names = (f"mean NQL <= {nql_target}", f"mean parsimony <= {pars_target:g}")
            number = 1 if label == "non-Friedman" else 2
            add(number, tau, f"{label}: {names[0]}", part.nql.mean(), nql_target, part.nql.mean() <= nql_target,
                len(part))
            add(number, tau, f"{label}: {names[1]}", part.parsimony.mean(), pars_target,
                part.parsimony.mean() <= pars_target, len(part))
        for peer, label in (("lqr", "linear QR (unpenalised)"), ("eggp", "eggp")):
            both = group.dropna(subset=[f"{peer}_nql"])
            if both.empty:
                add(3, tau, f"all sets: mean NQL < {label}", np.nan, np.nan, None, 0)
                continue
            add(3, tau, f"all sets: mean NQL < {label}", both.nql.mean(), both[f"{peer}_nql"].mean(),
                both.nql.mean() < both[f"{peer}_nql"].mean(), len(both))
        worse = group[group.nql > group.constant_nql]
        rows = results[results.tau == tau].merge(
            peers[(peers.peer == "constant") & (peers.tau == tau)][["dataset", "fold", "nql"]],
            on=["dataset", "fold"], suffixes=("", "_constant"))
        folds_worse = int((rows.nql > rows.nql_constant).sum())
        add(4, tau, f"sets where mean NQL > best constant's ({folds_worse}/{len(rows)} folds)", len(worse), 0,
            len(worse) == 0 if group.constant_nql.notna().any() else None, int(group.constant_nql.notna().sum()))
        if len(worse):
            print(f"tau={tau}: sets worse than the best constant quantile: "
                  + ", ".join(f"{d} ({a:.4f} vs {b:.4f})" for d, a, b in zip(worse.dataset, worse.nql, worse.constant_nql)))
        timed = group.dropna(subset=["paper_seconds"])
        add(5, tau, "median fit seconds <= paper's median", timed.seconds.median(), timed.paper_seconds.median(),
            timed.seconds.median() <= timed.paper_seconds.median(), len(timed))
        if base is not None:
            old = base.loc[[key for key in group.set_index(["tau", "dataset"]).index if key in base.index]]
            now = group.set_index(["tau", "dataset"]).loc[old.index]
            add(5, tau, "mean ACE <= baseline's", now.ace.mean(), old.ace.mean(),
                now.ace.mean() <= old.ace.mean() if len(old) else None, len(old))
        else:
            add(5, tau, "mean ACE <= baseline's (no --baseline)", group.ace.mean(), np.nan, None, len(group))
        add("-", tau, "info: mean NQL, fold range (paper convention is whole range)", group.nql_fold.mean(),
            np.nan, None, len(group))
        if not by_peer["eggp"].empty:
            eggp_sets = group.dropna(subset=["eggp_nql"])
            add("-", tau, "info: eggp mean parsimony (its sets)", eggp_sets.eggp_parsimony.mean(), np.nan, None,
                len(eggp_sets))
    summary = pd.DataFrame(criteria)
    print("Issue 27 item 3: issue 15's 'Must hold' with issue 27's Friedman targets "
          "(whole-range NQL; each peer compared on the sets where it has every fold)")
    print(summary.to_string(index=False))
    return criteria


def dataset_names(args, paper) -> list:
    """The sets of ``--datasets``, ``--fast`` or ``--friedman``, else every set of the paper's table,
    smallest first."""
    if args.datasets or args.fast:
        return args.datasets or FAST
    names = sorted({name for (_, name) in paper}, key=lambda name: paper.get((0.5, name), {}).get("n", 0))
    return [name for name in names if "fri_c" in name] if args.friedman else names


def fold_parser(description) -> argparse.ArgumentParser:
    """The options this script shares with the others that fit its folds (``sqr_selection.py``):
    the sets, levels and folds, ``--resume``, ``--report-only``, ``--baseline`` and ``--set``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--fast", action="store_true", help=f"the 10-set subset {' '.join(FAST)}")
    parser.add_argument("--friedman", action="store_true",
                        help="the paper's fri_c* sets (the 9 of ../shared: issue 40's must-hold 2)")
    parser.add_argument("--quantiles", nargs="*", type=float, default=[0.5, 0.9])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="report from the CSVs, no fitting")
    parser.add_argument("--baseline", default=None, help="a CSV of sqr_srbench.py to compare mean ACE with")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                        help="SQR parameters (JSON values), e.g. maxsize=20")
    return parser


def main(argv=None):
    parser = fold_parser(__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", default="/tmp/sqr_srbench.csv")
    parser.add_argument("--peers", nargs="*", default=["constant", "lqr"], choices=["constant", "lqr", "eggp"],
                        help="peers whose missing rows are computed (cached rows of every peer are shown)")
    parser.add_argument("--peer-cache", default=str(CACHE))
    args = parser.parse_args(argv)

    paper = paper_table()
    names = dataset_names(args, paper)
    out = Path(args.out)
    if args.report_only and not out.exists():
        parser.error(f"--report-only reads the SQR results of --out, and {out} does not exist; "
                     "run without --report-only first or pass the CSV of an earlier run")
    if not args.report_only:
        run_peers(names, args.peers, args.quantiles, args.folds, Path(args.peer_cache), log=lambda m: None)
        run_sqr(names, args.quantiles, args.folds, args.n_jobs, out, args.resume, parse_settings(args.set))
    results = read_results(out)
    results = results[results.dataset.isin(names) & results.tau.isin(args.quantiles)]
    peers = peer_results(Path(args.peer_cache), names, args.quantiles, args.folds)
    baseline = read_results(args.baseline) if args.baseline else None
    report(results, peers, paper, args.folds, baseline)


if __name__ == "__main__":
    main()
