"""OSRT: parsimony's native search against the reference package ``osrt`` (0.2.2), side by side.

For every (dataset, lambda, depth) row of the anchors table (../shared/anchors.md) this runs both
solvers on the same binary data, one thread each, and prints objectives, leaves, seconds and the
time ratio ours / reference. Then it prints:

- the median time ratio over the cases the reference solves (target <= 0.5);
- which of the reference's unsolved cases (timed out at 120 s in the anchors) we prove optimal
  within the time limit (target: at least half);
- the first-call compile time in a fresh process, with numba's on-disk cache (target <= 10 s),
  and without it (cold compile, for information);
- the peak memory of the largest case (resident set growth of a fresh process).

Seconds: ours = wall time of ``parsimony.trees._driver.find_tree`` (preprocessing included); reference =
its own optimisation time (``osrt.time()``), as in the anchors table. Fast cases (< 2 s) take the
best of 3 runs for both solvers. Ratios divide by max(reference seconds, 1 ms).

Usage::

    python benchmarks/osrt_vs_reference.py                      # everything
    python benchmarks/osrt_vs_reference.py --datasets servo yacht --depths 3 5
    python benchmarks/osrt_vs_reference.py --no-reference       # ours only, anchors as reference
    python benchmarks/osrt_vs_reference.py --rerun-unsolved     # also rerun the reference's timeouts
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("PARSIMONY_SHARED_DATASETS", HERE.parents[1] / "shared" / "datasets")) / "osrt"

# (dataset, lambda, depth (None = no limit), optimal objective or None, leaves, reference seconds or None)
ANCHORS = [
    ("servo", 0.1, 3, 0.8062860181, 4, 0.029), ("servo", 0.05, 3, 0.6062860181, 4, 0.030),
    ("servo", 0.01, 3, 0.4462860181, 4, 0.041), ("servo", 0.005, 3, 0.4249955345, 5, 0.039),
    ("servo", 0.1, 5, 0.8037446909, 5, 0.408), ("servo", 0.05, 5, 0.5500675652, 6, 0.545),
    ("servo", 0.01, 5, 0.3061366743, 7, 0.748), ("servo", 0.005, 5, 0.2698461907, 8, 0.765),
    ("airfoil", 0.1, 3, 1.1, 1, 0.037), ("airfoil", 0.05, 3, 1.0049284327, 3, 0.104),
    ("airfoil", 0.01, 3, 0.8588005911, 7, 0.178), ("airfoil", 0.005, 3, 0.8238005911, 7, 0.226),
    ("airfoil", 0.1, 5, 1.1, 1, 0.037), ("airfoil", 0.05, 5, 1.0049284327, 3, 0.799),
    ("airfoil", 0.01, 5, 0.7854066533, 13, 2.952), ("airfoil", 0.005, 5, 0.7103528992, 18, 3.315),
    ("real-estate", 0.1, 3, 0.8849235891, 3, 0.063), ("real-estate", 0.05, 3, 0.7243713467, 4, 0.114),
    ("real-estate", 0.01, 3, 0.5071757950, 8, 0.102), ("real-estate", 0.005, 3, 0.4671757950, 8, 0.141),
    ("real-estate", 0.1, 5, 0.8849235891, 3, 0.115), ("real-estate", 0.05, 5, 0.7243713467, 4, 1.242),
    ("real-estate", 0.01, 5, 0.4758756291, 12, 2.606), ("real-estate", 0.005, 5, 0.3957034171, 19, 2.862),
    ("yacht", 0.1, 3, 0.4972028270, 2, 0.000), ("yacht", 0.05, 3, 0.3972028270, 2, 0.000),
    ("yacht", 0.01, 3, 0.3126385914, 3, 0.002), ("yacht", 0.005, 3, 0.2976385914, 3, 0.004),
    ("yacht", 0.1, 5, 0.4972028270, 2, 0.000), ("yacht", 0.05, 5, 0.3972028270, 2, 0.000),
    ("yacht", 0.01, 5, 0.3126385914, 3, 0.002), ("yacht", 0.005, 5, 0.2976385914, 3, 0.005),
    ("enb-heat", 0.1, 3, 0.4089130760, 2, 0.008), ("enb-heat", 0.05, 3, 0.2744760760, 3, 0.047),
    ("enb-heat", 0.01, 3, 0.1380855695, 6, 0.618), ("enb-heat", 0.005, 3, 0.1042985437, 7, 0.758),
    ("enb-heat", 0.1, 5, 0.4089130760, 2, 0.008), ("enb-heat", 0.05, 5, 0.2744760760, 3, 0.073),
    ("enb-heat", 0.01, 5, 0.1369551483, 8, 15.690), ("enb-heat", 0.005, 5, 0.0919680939, 11, 25.234),
    ("servo", 0.1, None, 0.8037446909, 5, 0.728), ("servo", 0.05, None, 0.5500675652, 6, 16.013),
    ("servo", 0.01, None, 0.1934007289, 13, 29.069), ("servo", 0.005, None, 0.1211863707, 16, 29.599),
    ("airfoil", 0.1, None, 1.1, 1, 0.034), ("airfoil", 0.05, None, 1.0049284327, 3, 0.955),
    ("airfoil", 0.01, None, None, None, None), ("airfoil", 0.005, None, None, None, None),
    ("real-estate", 0.1, None, 0.8849235891, 3, 0.109), ("real-estate", 0.05, None, 0.7243713467, 4, 2.823),
    ("real-estate", 0.01, None, None, None, None), ("real-estate", 0.005, None, None, None, None),
    ("yacht", 0.1, None, 0.4972028270, 2, 0.000), ("yacht", 0.05, None, 0.3972028270, 2, 0.000),
    ("yacht", 0.01, None, 0.3126385914, 3, 0.002), ("yacht", 0.005, None, 0.2976385914, 3, 0.004),
    ("enb-heat", 0.1, None, 0.4089130760, 2, 0.007), ("enb-heat", 0.05, None, 0.2744760760, 3, 0.052),
    ("enb-heat", 0.01, None, None, None, None), ("enb-heat", 0.005, None, None, None, None),
]


def load(name):
    frame = pd.read_csv(DATA / f"{name}.csv")
    return frame.iloc[:, :-1], frame.iloc[:, -1].to_numpy(dtype=float)


def run_ours(X, y, lam, depth, time_limit):
    from parsimony.losses import Squared
    from parsimony.trees._driver import find_tree

    t = time.perf_counter()
    Xb = X.to_numpy(dtype=np.uint8)
    result = find_tree(Xb, y, Squared(), lam, depth, time_limit=time_limit)
    seconds = time.perf_counter() - t
    leaves = int((result.tree.feature < 0).sum())
    # score the returned tree itself (not the search's value), so "better than the reference" is checkable
    yv = np.asarray(y, dtype=float)
    sse = sum(((yv[r] - yv[r].mean()) ** 2).sum() for r in _leaf_rows(result.tree, Xb))
    tree_objective = sse / ((yv - yv.mean()) ** 2).sum() + lam * leaves if leaves > 1 else 1.0 + lam
    assert abs(tree_objective - result.objective) < 1e-9, (tree_objective, result.objective)
    return {"objective": tree_objective, "lower_bound": result.lower_bound, "status": result.status,
            "leaves": leaves, "seconds": seconds, "table_mb": result.stats.get("table_megabytes", 0.0)}


def _leaf_rows(tree, Xb):
    leaf = tree.apply(Xb)
    return [np.nonzero(leaf == i)[0] for i in np.unique(leaf)]


@contextlib.contextmanager
def _quiet():
    """Silence Python and C-level output of the reference (it prints from its extension)."""
    sys.stdout.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run_reference(X, y, lam, depth, time_limit):
    from osrt.model.osrt import OSRT

    config = {"regularization": lam, "depth_budget": 0 if depth is None else depth + 1,
              "minimum_captured_points": 1, "allow_small_reg": True, "k_cluster": True, "look_ahead": True,
              "worker_limit": 1, "metric": "L2", "verbose": False, "diagnostics": False,
              "time_limit": int(time_limit)}
    model = OSRT(config)
    with _quiet():
        model.fit(X, pd.DataFrame(y))
    pred = np.asarray(model.predict(X), dtype=float)
    objective = ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum() + lam * model.leaves()
    solved = not model.timeout
    return {"objective": float(objective), "leaves": int(model.leaves()), "solved": solved,
            "seconds": float(model.time) if solved else float(time_limit)}


def best_of(fn, *args, repeats=3, fast=2.0):
    first = fn(*args)
    if first["seconds"] >= fast:
        return first
    runs = [first] + [fn(*args) for _ in range(repeats - 1)]
    return min(runs, key=lambda r: r["seconds"])


FIRST_CALL = r"""
import time
from parsimony.trees._driver import warm_up
t = time.perf_counter(); warm_up()
print(time.perf_counter() - t)
"""

PEAK = r"""
import sys, json, numpy as np, pandas as pd
from parsimony.losses import Squared
from parsimony.trees._driver import find_tree

def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
X = (np.random.default_rng(0).random((30, 4)) < 0.5).astype(np.uint8); find_tree(X, np.arange(30.0), Squared(), 0.01, None)
frame = pd.read_csv(sys.argv[1]); Xb = frame.iloc[:, :-1].to_numpy(dtype=np.uint8); y = frame.iloc[:, -1].to_numpy(float)
with open("/proc/self/clear_refs", "w") as f:  # reset the peak (VmHWM) to the current resident size
    f.write("5")
base = status_mb("VmRSS")
r = find_tree(Xb, y, Squared(), float(sys.argv[2]), None if sys.argv[3] == "none" else int(sys.argv[3]), time_limit=float(sys.argv[4]))
print(json.dumps({"base_mb": base, "peak_mb": status_mb("VmHWM"), "table_mb": r.stats.get("table_megabytes", 0)}))
"""


def first_call_seconds(cold: bool) -> float:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        if cold:
            env["NUMBA_CACHE_DIR"] = tmp
        out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--lambdas", nargs="*", type=float, default=None)
    parser.add_argument("--depths", nargs="*", default=None, help="3, 5 and/or none")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--no-reference", action="store_true", help="use the anchors' figures for the reference")
    parser.add_argument("--rerun-unsolved", action="store_true",
                        help="also run the reference on the rows it could not finish in the anchors")
    parser.add_argument("--skip-compile", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args(argv)

    rows = [r for r in ANCHORS
            if (args.datasets is None or r[0] in args.datasets)
            and (args.lambdas is None or r[1] in args.lambdas)
            and (args.depths is None or ("none" if r[2] is None else str(r[2])) in args.depths)]
    have_reference = not args.no_reference
    if have_reference:
        try:
            import osrt  # noqa: F401
        except ImportError:
            print("osrt is not installed: using the anchors' figures for the reference")
            have_reference = False
    if not DATA.is_dir():
        sys.exit(f"datasets not found at {DATA}")

    # warm-up (loads or compiles every kernel) so that compile time is not charged to a case
    from parsimony.trees._driver import warm_up

    warm_up()

    header = (f"{'dataset':<12}{'lambda':>7}{'depth':>6} | {'ours obj':>11}{'lv':>4}{'sec':>8} {'status':<8}| "
              f"{'ref obj':>11}{'lv':>4}{'sec':>9} | {'ratio':>6} {'match':>5}")
    print(header)
    print("-" * len(header))
    solved_ratios, unsolved, records = [], [], []
    from_anchors = False
    lower_cases = 0
    ref_timeouts = 0
    for name, lam, depth, anchor_obj, anchor_leaves, anchor_sec in rows:
        X, y = load(name)
        ours = best_of(run_ours, X, y, lam, depth, args.time_limit)
        ref_unsolved_in_anchors = anchor_obj is None
        if have_reference and (not ref_unsolved_in_anchors or args.rerun_unsolved):
            ref = best_of(run_reference, X, y, lam, depth, args.time_limit)
        elif ref_unsolved_in_anchors:
            ref = {"objective": float("nan"), "leaves": 0, "solved": False, "seconds": 120.0, "anchors": True}
        else:
            ref = {"objective": anchor_obj, "leaves": anchor_leaves, "solved": True, "seconds": anchor_sec,
                   "anchors": True}
        depth_s = "none" if depth is None else str(depth)
        if not ref["solved"] and not ref_unsolved_in_anchors:
            # the anchors solved it but the reference timed out in this (noisy) run: its time is at
            # least the limit, so ours / limit over-states our ratio; compare with the anchors' optimum
            ref_timeouts += 1
            ref = dict(ref, solved=True, objective=anchor_obj, leaves=anchor_leaves, seconds=args.time_limit)
        if ref_unsolved_in_anchors:
            unsolved.append((name, lam, depth_s, ours["status"] == "optimal", ours["seconds"], ours["objective"]))
        if ref["solved"]:
            ratio = ours["seconds"] / max(ref["seconds"], 1e-3)
            diff = ours["objective"] - ref["objective"]
            solved_ratios.append(ratio)
            if ours["status"] != "optimal" or diff > 1e-5:
                match_s = "NO"
            else:
                match_s = "yes" if diff >= -1e-5 else "lower"
                lower_cases += match_s == "lower"
            ratio_s = f"{ratio:6.2f}"
        else:
            ratio_s, match_s = "   -", "-"
        ref_obj = "timeout" if not ref["solved"] else f"{ref['objective']:.8f}"
        src = "*" if ref.get("anchors") else " "
        print(f"{name:<12}{lam:>7}{depth_s:>6} | {ours['objective']:>11.8f}{ours['leaves']:>4}{ours['seconds']:>8.3f} "
              f"{ours['status']:<8}| {ref_obj:>11}{ref['leaves'] or '-':>4}{ref['seconds']:>8.3f}{src} | "
              f"{ratio_s} {match_s:>5}", flush=True)
        records.append((name, lam, depth, ours))
        from_anchors = from_anchors or bool(ref.get("anchors"))
    if from_anchors:
        print("* reference figures taken from the anchors table (not rerun)")

    print("match: yes = same objective (1e-5); lower = our tree (scored in float64 from its leaves) beats the "
          "reference's reported optimum; NO = worse or not proven")
    if ref_timeouts:
        print(f"{ref_timeouts} case(s) the anchors solved timed out for the reference in this run: counted as "
              f"solved in {args.time_limit:.0f} s (a lower bound on its time) against the anchors' optimum")
    if lower_cases:
        print(f"cases where the reference's 'optimal' tree is beaten: {lower_cases}")
    print()
    if solved_ratios:
        print(f"median time ratio ours/reference over {len(solved_ratios)} cases the reference solves: "
              f"{statistics.median(solved_ratios):.3f} (target <= 0.5); "
              f"geometric mean {float(np.exp(np.mean(np.log(solved_ratios)))):.3f}")
    if unsolved:
        proven = sum(u[3] for u in unsolved)
        print(f"cases the reference could not solve in 120 s (anchors) proven optimal within {args.time_limit:.0f} s: "
              f"{proven}/{len(unsolved)} "
              "(target: at least half)")
        for name, lam, depth_s, ok, sec, obj in unsolved:
            print(f"  {name} lambda={lam} depth={depth_s}: {'proven' if ok else 'not proven'} in {sec:.2f} s, "
                  f"objective {obj:.8f}")

    if not args.skip_compile:
        warm = first_call_seconds(cold=False)
        print(f"first-call compile time, fresh process with numba's disk cache: {warm:.2f} s (target <= 10 s)")
        cold = first_call_seconds(cold=True)
        print(f"first-call compile time, fresh process with an empty cache: {cold:.2f} s")

    if not args.skip_memory and records:
        name, lam, depth, ours = max(records, key=lambda r: r[3]["table_mb"])
        out = subprocess.run([sys.executable, "-c", PEAK, str(DATA / f"{name}.csv"), str(lam),
                              "none" if depth is None else str(depth), str(args.time_limit)],
                             capture_output=True, text=True, check=True)
        mem = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"peak memory of the largest case ({name}, lambda={lam}, depth={depth or 'none'}): "
              f"memo table {mem['table_mb']:.1f} MB; the solve raised the process's resident memory from "
              f"{mem['base_mb']:.0f} MB to a peak of {mem['peak_mb']:.0f} MB "
              f"(+{mem['peak_mb'] - mem['base_mb']:.1f} MB)")


if __name__ == "__main__":
    main()
