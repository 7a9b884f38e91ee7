"""First use: time to the first fitted model with an empty numba cache, import included.

Each case runs in a fresh interpreter with a fresh, empty ``NUMBA_CACHE_DIR`` (cold start: every
kernel is compiled), then once more in a fresh interpreter on the cache the first one wrote
(warm start). The clock starts before ``import parsimony`` and stops after ``fit`` and
``predict`` on 200 rows of Friedman-1 data. Wall time is what a user waits; CPU time is printed
beside it (the process's own, then its helper's): on a busy machine the wall time overstates the
cost while the CPU time does not. On a cold cache a helper process compiles some kernels on a
second core when one is free (``parsimony._numba.precompile``; here always: the child runs with
``PARSIMONY_NUMBA_HELPER=1``, or 0 with ``--no-helper``), so the wall time is meaningful only
when a second core is free: the load average before each cold run is printed. ``helper steps`` counts the kernels the helper was to compile that this process
loaded from the cache, compiled itself (it needed them first) or compiled as link-only twins (a
plan out of step with the kernels: fix the steps).

Usage: python benchmarks/first_use.py [--repeat 1] [--case sqr osrt] [--profile [--called]] [--pays] [--ir] [--timeline] [--no-helper] [--against DIR]

``--against DIR`` times another checkout (its package on ``PYTHONPATH``, say main's) in the same
conditions: cold runs alternate between the two, pair by pair, and the medians of each and of the
pairwise ratios (this checkout / DIR) are printed, so a comparison holds on a busy machine whose
speed drifts.

The compile accelerator (``parsimony/_compile_accelerator.py``) is used as in any process: run
with ``PARSIMONY_COMPILE_ACCELERATOR=0`` to time numba's own pipeline (no helper process then).

``--profile`` also lists the compile time of each jitted function (exclusive of the kernels it
calls, inclusive, and how many type specialisations were compiled) for the cold run, then the
functions compiled for more than one signature (each signature's CPU and its callers); a
``name__from_kernels`` row is the kernel compiled to LLVM IR for the kernels that call it (see
``parsimony/_numba.py``), whose optimisation and machine code count in its callers' rows. ``--ir``
lists the LLVM IR each function lowered to (lines and characters, before optimisation: what numba
built in Python and LLVM parsed), with ``--no-helper`` all of a fit's. ``--called`` (with
``--profile``) runs the fit once more with its kernels as Python (``NUMBA_DISABLE_JIT=1``, minutes)
and lists the package functions the cold run compiled that the fit never calls: what compiling
only the stages a fit's data makes it run could save (with ``--no-helper``, the helper's kernels
too). On c1fbb02 (SQR, ``--no-helper``, loaded machine) 5 of 161 functions, 1.2% of the compile
time: the first fit runs every seeder and nearly every kernel it compiles.

``--pays`` (a profiled cold run) lists each kernel the fit calls from Python with its cold compile
CPU beside its CPU in one more fit on the warm cache (and the calls): what a kernel costs to
compile against what it saves a fit by being compiled. On 2f7af51 (``--no-helper``, load 5.6) the
search's ``run_phase`` compiled for 18.4 s and ran 0.07 s (0.5-0.8 s in a 1,000-row fit of the
60), the additive stage 15.9 s and 0.05 s (0.05-0.2 s on 1,000 rows); only the rational seeder's
``_best_triples`` ran as long as it compiled (0.5 s). The two large ones are loops of small
passes over the rows (golden sections, Levenberg-Marquardt, per-candidate refits): one golden
section of the additive stage on 1,000 rows took 0.59 / 0.11 ms compiled (a wave / a square's
shift) and 1.56 / 0.42 ms as numpy, the same result to the last bits, before the stage's scalar
control flow in Python; the small ones share their callees with ``run_phase``, so that a numpy
version of one would be a second home of the search's code.

``--timeline`` lists, for the cold run's process and its helper, each outermost compile (kernels
called from Python: entries) with its start and end (s since the cold run started) and CPU, and
each process's compile CPU and last compile's end: whether the two cores share the work, and what
is compiled after the other process is done. On 802c62e (idle machine) SQR's main process compiled
``run_phase`` for 27 s CPU while the helper compiled the simplifier, ``evaluate``, the seeders'
kernels and the enclosures (28 s CPU), both ending within 0.1 s of each other; OSRT's helper was
done at 9 s while ``search`` compiled until 20 s (15 s CPU), but moving ``search``'s callees
(``_expand``, the lookahead kernels) to the helper made the main process wait for them.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS = {"sqr": 15.0, "osrt": 15.0}  # seconds, cold start (issue 40, must hold 5)

CHILD = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
case, profile, ir_sizes, trace, pays = sys.argv[1], *(flag == "1" for flag in sys.argv[2:6])
records = {}
called = set()  # with trace (kernels run as Python: NUMBA_DISABLE_JIT=1), the package functions the fit called
if trace:
    def _record_call(frame, event, arg):
        if event == "call" and frame.f_globals.get("__name__", "").startswith("parsimony"):
            called.add(f"{frame.f_globals['__name__']}.{frame.f_code.co_qualname}")
sizes = {}  # library name -> [IR lines, IR characters] as lowered (before LLVM)
if ir_sizes:
    from numba.core import codegen

    _add_ir_module = codegen.CPUCodeLibrary.add_ir_module

    def add_ir_module(self, ir_module):
        text = str(ir_module)
        size = sizes.setdefault(self.name, [0, 0])
        size[0] += text.count("\n")
        size[1] += len(text)
        return _add_ir_module(self, ir_module)

    codegen.CPUCodeLibrary.add_ir_module = add_ir_module
if profile:
    from numba.core import event

    class _Timer(event.Listener):
        def __init__(self):
            self.stack = []

        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            caller = self.stack[-1][0] if self.stack else "(Python)"
            self.stack.append([f"{fn.__module__}.{fn.__qualname__}", time.perf_counter(), 0.0,
                               str(tuple(ev.data["args"])), caller, time.process_time(), 0.0])

        def on_end(self, ev):
            name, start, inner, sig, caller, cpu_start, cpu_inner = self.stack.pop()
            dt = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            rec = records.setdefault(name, [0.0, 0.0, 0, {}, 0.0])  # wall excl., incl., compiles, specs, CPU incl.
            rec[0] += dt - inner
            rec[1] += dt
            rec[2] += 1
            rec[4] += cpu
            spec = rec[3].setdefault(sig, [0.0, []])  # per signature: exclusive CPU, callers
            spec[0] += cpu - cpu_inner
            spec[1].append(caller)
            if self.stack:
                self.stack[-1][2] += dt
                self.stack[-1][6] += cpu

    event.register("numba:compile", _Timer())
import parsimony
from sklearn.datasets import make_friedman1
X, y = make_friedman1(n_samples=200, random_state=0)
if case == "sqr":
    model = parsimony.SymbolicQuantileRegressor(niterations=2, progress=False, random_state=0)
else:
    model = parsimony.OptimalSparseRegressionTree()
if trace:
    sys.setprofile(_record_call)
model.fit(X, y).predict(X)
sys.setprofile(None)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
runs = {}  # with pays (a warm cache): kernel called from Python -> [CPU s, calls] of one more fit
if pays:
    from numba.core.registry import CPUDispatcher

    outer = [False]

    def _timed(name, kernel):
        def call(*args, **kwargs):
            if outer[0]:  # (a kernel called from Python inside another's call: counted in it)
                return kernel(*args, **kwargs)
            outer[0], start = True, time.process_time()
            try:
                return kernel(*args, **kwargs)
            finally:
                outer[0] = False
                run = runs.setdefault(name, [0.0, 0])
                run[0] += time.process_time() - start
                run[1] += 1
        return call

    timed = {}
    for module in [m for n, m in sys.modules.items() if n.startswith("parsimony") and m is not None]:
        for attr, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher):
                fn = value.py_func
                name = f"{fn.__module__}.{fn.__qualname__}"
                setattr(module, attr, timed.setdefault(name, _timed(name, value)))
    fit_cpu = time.process_time()
    model.fit(X, y).predict(X)
    runs["(the whole fit)"] = [time.process_time() - fit_cpu, 1]
import resource
from parsimony import _numba
accelerator = sys.modules.get("parsimony._compile_accelerator", _numba)  # (an older parsimony: _numba)
for process in getattr(accelerator, "_HELPERS", []):  # (none without the accelerator)
    process.wait()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
steps = [0, 0, 0]  # loaded, compiled here, twins
for kernel, sig in getattr(accelerator, "_HELPED", ()):
    steps[0] += kernel.stats.cache_hits.get(sig, 0) > 0
    steps[1] += kernel.stats.cache_misses.get(sig, 0) > 0
    steps[2] += sig in kernel.internal.overloads
accelerated = getattr(_numba, "accelerated", lambda: True)()  # (an older parsimony: always)
import os
print(json.dumps({"pid": os.getpid(), "accelerated": accelerated, "wall": wall, "cpu": cpu, "helper_cpu": usage.ru_utime + usage.ru_stime,
                  "steps": steps,
                  "compile": records, "ir": sizes, "called": sorted(called), "runs": runs}))
"""

# a sitecustomize for --timeline: every process started with it on PYTHONPATH (the cold run's and its
# helper, which inherits PYTHONPATH) appends its outermost compiles to FIRST_USE_TIMELINE, one JSON
# line each ([pid, start, end, CPU, function]; times since FIRST_USE_T0), once numba is imported
TIMELINE_HOOK = r"""
import builtins, json, os, sys, time
if os.environ.get("FIRST_USE_TIMELINE"):
    _import = builtins.__import__

    def _install():
        from numba.core import event

        class _Outermost(event.Listener):
            depth, start = 0, (0.0, 0.0)

            def on_start(self, ev):
                if self.depth == 0:
                    self.start = (time.time(), time.process_time())
                self.depth += 1

            def on_end(self, ev):
                self.depth -= 1
                if self.depth == 0:
                    fn = ev.data["dispatcher"].py_func
                    t0 = float(os.environ["FIRST_USE_T0"])
                    with open(os.environ["FIRST_USE_TIMELINE"], "a") as f:
                        f.write(json.dumps([os.getpid(), self.start[0] - t0, time.time() - t0,
                                            time.process_time() - self.start[1],
                                            f"{fn.__module__}.{fn.__qualname__}"]) + "\n")

        event.register("numba:compile", _Outermost())

    def _hooked(name, *args, **kwargs):
        module = _import(name, *args, **kwargs)
        numba = sys.modules.get("numba")
        if (builtins.__import__ is _hooked and numba is not None
                and not getattr(numba.__spec__, "_initializing", False)):  # numba imported: once per process
            builtins.__import__ = _import
            _install()
        return module

    builtins.__import__ = _hooked
"""


def _run(case, cache_dir, profile=False, helper=True, root=None, ir_sizes=False, trace=False, timeline=None,
         pays=False):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PARSIMONY_NUMBA_HELPER="1" if helper else "0")
    if timeline is not None:  # a directory: the hook goes there, the events into its timeline.jsonl
        with open(os.path.join(timeline, "sitecustomize.py"), "w") as f:
            f.write(TIMELINE_HOOK)
        env.update(FIRST_USE_TIMELINE=os.path.join(timeline, "timeline.jsonl"), FIRST_USE_T0=repr(time.time()))
        env["PYTHONPATH"] = os.pathsep.join([timeline, *filter(None, [env.get("PYTHONPATH")])])
    if trace:  # the kernels run as Python, so that a profile hook sees every call
        env["NUMBA_DISABLE_JIT"] = "1"
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    flags = ["1" if flag else "0" for flag in (profile, ir_sizes, trace, pays)]
    out = subprocess.run([sys.executable, "-c", CHILD, case, *flags],
                         env=env, cwd=root,
                         capture_output=True, text=True, check=True)  # (-c imports from the working directory first)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if timeline is not None:
        path = env["FIRST_USE_TIMELINE"]
        with open(path) if os.path.exists(path) else open(os.devnull) as f:
            result["timeline"] = [json.loads(line) for line in f]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1, help="cold/warm process pairs per case")
    parser.add_argument("--case", nargs="+", choices=sorted(TARGETS), default=["sqr", "osrt"])
    parser.add_argument("--profile", action="store_true", help="per-function compile times (cold run)")
    parser.add_argument("--no-helper", action="store_true", help="compile in one process (no helper process)")
    parser.add_argument("--ir", action="store_true", help="IR lines and size per compiled function (cold run)")
    parser.add_argument("--against", metavar="DIR", help="another checkout to time pair by pair (cold runs)")
    parser.add_argument("--timeline", action="store_true",
                        help="each process's outermost compiles, start to end (cold run)")
    parser.add_argument("--pays", action="store_true",
                        help="each kernel called from Python: its cold compile beside its run CPU in a warm fit")
    parser.add_argument("--called", action="store_true",
                        help="with --profile: the compiled functions the fit never calls (slow: a run as Python)")
    args = parser.parse_args()
    if args.against:
        return _against(args)
    rows = []
    for case in args.case:
        cold, warm, loads = [], [], []
        for i in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="parsimony-numba-") as cache_dir:
                loads.append(os.getloadavg()[0])
                timeline = os.path.join(cache_dir, "timeline") if args.timeline and i == 0 else None
                if timeline is not None:
                    os.mkdir(timeline)
                cold.append(_run(case, cache_dir, profile=(args.profile or args.pays) and i == 0,
                                 helper=not args.no_helper, ir_sizes=args.ir and i == 0, timeline=timeline))
                warm.append(_run(case, cache_dir, pays=args.pays and i == 0))
        if args.profile:
            records = cold[0]["compile"]
            print(f"\n{case}: compile time per jitted function (cold start; s, wall)")
            print(f"{'exclusive':>10} {'inclusive':>10} {'specs':>5}  function")
            for name, (excl, incl, n, *_) in sorted(records.items(), key=lambda kv: -kv[1][0]):
                if excl >= 0.05:
                    print(f"{excl:10.2f} {incl:10.2f} {n:5d}  {name}")
            print(f"{sum(r[0] for r in records.values()):10.2f} {'':>10} "
                  f"{sum(r[2] for r in records.values()):5d}  total over {len(records)} functions")
            _print_specialisations(records)
            if args.called:
                with tempfile.TemporaryDirectory(prefix="parsimony-numba-") as cache_dir:
                    _print_uncalled(case, records, _run(case, cache_dir, helper=False, trace=True)["called"])
        if args.pays:
            _print_pays(case, cold[0]["compile"], warm[0]["runs"])
        if args.ir:
            _print_ir(case, cold[0]["ir"])
        if args.timeline:
            _print_timeline(case, cold[0]["timeline"], cold[0]["pid"])
        median = statistics.median
        rows.append((case, median(r["wall"] for r in cold), median(r["cpu"] for r in cold),
                     median(r["helper_cpu"] for r in cold), median(r["wall"] for r in warm),
                     median(r["cpu"] for r in warm), median(loads), cold[0]["steps"], cold[0]["accelerated"]))
    accelerator = "on" if all(r[-1] for r in rows) else "off" if not any(r[-1] for r in rows) else "mixed"
    print(f"\nfirst fit, import included, 200 rows (median of {args.repeat}; s; compile accelerator {accelerator})")
    print(f"{'case':6} {'cold wall':>10} {'cold cpu':>9} {'helper cpu':>11} {'target':>7} {'':4} {'warm wall':>10} "
          f"{'warm cpu':>9} {'load':>5}  helper steps (loaded/here/twins)")
    for case, cw, cc, hc, ww, wc, load, steps, _ in rows:
        verdict = "PASS" if cw <= TARGETS[case] else ("pass*" if cc <= TARGETS[case] else "FAIL")
        print(f"{case:6} {cw:10.1f} {cc:9.1f} {hc:11.1f} {TARGETS[case]:7.1f} {verdict:4} {ww:10.1f} {wc:9.1f} "
              f"{load:5.1f}  {'/'.join(map(str, steps))}")
    print("cold: empty NUMBA_CACHE_DIR; warm: a second process on the cache the first wrote. cpu: this process's, "
          "helper cpu: its helper's; load: 1-minute load average before the cold run (2 cores: a free core needs "
          "load < 1). pass*: within target in CPU time only (a busy machine).")


def _print_specialisations(records):
    """The functions compiled for more than one signature in the cold run: each signature's
    exclusive compile CPU and who called it (one kernel typed twice is a full compile twice)."""
    repeated = {name: rec[3] for name, rec in records.items() if len(rec[3]) > 1}
    print(f"\n{len(repeated)} of {len(records)} functions compiled for more than one signature "
          f"(CPU s, exclusive; callers)")
    for name, specs in sorted(repeated.items(), key=lambda kv: -sum(v[0] for v in kv[1].values())):
        print(f"{sum(v[0] for v in specs.values()):10.2f} {len(specs):5d}  {name}")
        for sig, (cpu, callers) in specs.items():
            print(f"{cpu:16.2f}  {sig[:160]}  <- {', '.join(sorted(set(callers)))[:120]}")


def _print_pays(case, records, runs):
    """Each kernel the fit calls from Python: its cold compile (CPU, inclusive of the kernels it was
    the first to call; with a helper, only this process's) beside its CPU in one more fit on a warm
    cache (inclusive of the kernels it calls) and its calls: a kernel that compiles for seconds and
    runs for milliseconds would cost less as numpy, if numpy runs it about as fast."""
    whole = runs.pop("(the whole fit)", [float("nan")])[0]
    print(f"\n{case}: kernels called from Python, cold compile CPU beside warm run CPU (s; the whole warm fit {whole:.2f} s CPU)")
    print(f"{'compile':>8} {'run cpu':>8} {'calls':>6} {'ratio':>7}  kernel")
    for name in sorted(runs, key=lambda name: -records.get(name, [0.0] * 5)[4]):
        compile_time, (run, calls) = records.get(name, [0.0] * 5)[4], runs[name]
        ratio = f"{compile_time / run:7.0f}" if run > 0 else f"{'inf':>7}"
        print(f"{compile_time:8.2f} {run:8.3f} {calls:6d} {ratio}  {name}")


def _print_uncalled(case, records, called):
    """The package's functions compiled in the cold run (this process's: with ``--no-helper``, all)
    that the fit never calls when its kernels run as Python, with their exclusive compile time: what
    compiling only the stages a fit runs could save. A function inlined into its callers
    (``inline="always"``) has no row of its own."""
    called = set(called)
    compiled = {}
    for name, rec in records.items():
        if name.startswith("parsimony."):
            base = name.removesuffix("__from_kernels")
            compiled[base] = compiled.get(base, 0.0) + rec[0]
    uncalled = {name: t for name, t in compiled.items() if name not in called}
    total = sum(compiled.values())
    print(f"\n{case}: {len(uncalled)} of {len(compiled)} compiled package functions never called by the fit "
          f"({sum(uncalled.values()):.2f} of {total:.2f} s exclusive compile time)")
    for name, t in sorted(uncalled.items(), key=lambda kv: -kv[1]):
        print(f"{t:10.2f}  {name}")


def _print_timeline(case, events, main_pid):
    """The outermost compiles of each process of a cold run (``events``: ``[pid, start, end, CPU,
    function]``, times since the run started), the main process's (``main_pid``) first, then each
    process's compile CPU and the end of its last compile."""
    print(f"\n{case}: outermost compiles per process (cold start; s since the run started)")
    print(f"{'process':8} {'start':>7} {'end':>7} {'cpu':>6}  function")
    pids = sorted({e[0] for e in events}, key=lambda pid: (pid != main_pid, pid))
    for pid in pids:
        who = "main" if pid == main_pid else "helper"
        mine = sorted((e for e in events if e[0] == pid), key=lambda e: e[1])
        for _, start, end, cpu, name in mine:
            print(f"{who:8} {start:7.2f} {end:7.2f} {cpu:6.2f}  {name}")
        print(f"{who:8} {'':7} {mine[-1][2]:7.2f} {sum(e[3] for e in mine):6.2f}  "
              f"total over {len(mine)} compiles (end of the last)")


def _print_ir(case, sizes):
    """The IR a cold run lowered (this process's; the helper's is not counted), largest first."""
    print(f"\n{case}: IR lowered per compiled function (cold start; this process only)")
    print(f"{'lines':>9} {'MB':>7}  function")
    for name, (lines, chars) in sorted(sizes.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"{lines:9d} {chars / 1e6:7.2f}  {name}")
    print(f"{sum(v[0] for v in sizes.values()):9d} {sum(v[1] for v in sizes.values()) / 1e6:7.2f}  "
          f"total over {len(sizes)} functions")


def _against(args):
    """Cold runs of this checkout and of ``args.against``, alternating, with their pairwise ratios."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = {"this": here, "other": os.path.abspath(args.against)}
    print(f"this: {here}\nother: {roots['other']}")
    print(f"{'case':6} {'run':>3} {'who':6} {'wall':>7} {'cpu':>7} {'helper':>7} {'load':>5}")
    for case in args.case:
        runs = {"this": [], "other": []}
        for i in range(args.repeat):
            for who in (("this", "other") if i % 2 == 0 else ("other", "this")):
                with tempfile.TemporaryDirectory(prefix="parsimony-numba-") as cache_dir:
                    load = os.getloadavg()[0]
                    r = _run(case, cache_dir, helper=not args.no_helper, root=roots[who])
                runs[who].append(r)
                print(f"{case:6} {i:3d} {who:6} {r['wall']:7.1f} {r['cpu']:7.1f} {r['helper_cpu']:7.1f} {load:5.1f}",
                      flush=True)
        median = statistics.median
        for key in ("wall", "cpu", "helper_cpu"):
            this, other = ([r[key] for r in runs[w]] for w in ("this", "other"))
            ratios = [a / b for a, b in zip(this, other) if b > 0]
            if not ratios:  # (no helper ran)
                continue
            print(f"{case} {key}: this {median(this):.1f} s, other {median(other):.1f} s, "
                  f"ratio this/other median {median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
