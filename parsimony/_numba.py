"""One place that decides how numba kernels are compiled: the stable layer.

Kernels use ``@njit`` from here instead of ``numba.njit``. This layer uses numba's public API
only, and alone gives correct results on every numba the package declares:

- ``njit`` is ``numba.njit`` in nopython mode, ``nogil`` by default, with compiled code cached on
  disk when a cache location is writable (caching is switched off, instead of crashing, on
  read-only installs, or with ``PARSIMONY_NUMBA_CACHE=0``), and never with ``fastmath``: without
  contraction into FMA and reassociation by vector width, a kernel's arithmetic gives the same
  bits on every x86-64 CPU (a reduction that must vectorise keeps partial sums of its own);
- :func:`assign` and :func:`argsort` replace numpy operations that compile for seconds;
- the first compile of a process says so once on stderr (a cold start takes tens of seconds;
  later processes load the kernels from the cache), and when the compiling is over (no compile
  for :data:`QUIET_SECONDS`, or at exit) one more line says how many kernels took how long
  (later bursts of a second or more get one line each); :func:`compiled_kernels` counts compiles
  so that progress bars (:func:`restart_eta`) can leave a compiling step out of their ETA.

The compile accelerator (:mod:`parsimony._compile_accelerator`: one compile per argument type,
kernels called from kernels compiled to LLVM IR only, the package's records passed to kernels
whole, cheaper compile sessions, a cache stamped
with the whole package, a helper process for :func:`precompile`) relies on numba's and llvmlite's
private names: it is loaded only for the numba and llvmlite versions it is tested with
(:data:`ACCELERATOR_TESTED`) and never breaks a fit (any failure falls back to this layer with
one warning). ``PARSIMONY_COMPILE_ACCELERATOR=0`` switches it off, ``=1`` tries it on an untested
numba too. Without it a kernel module that branches on constant codes compiles one
specialisation per constant value, as numba does, and numba's cache checks only a kernel's own
source file: clear the cache (``__pycache__/*.nb*``) after editing kernels with it off.

Nothing is compiled at import time: numba compiles lazily on first call.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref

import llvmlite
import numba
import numpy as np
from numba.core import event  # numba's event API


def _cache_is_writable() -> bool:
    if os.environ.get("PARSIMONY_NUMBA_CACHE", "1") == "0":
        return False
    candidates = [os.environ.get("NUMBA_CACHE_DIR"), os.path.dirname(__file__)]
    for path in candidates:
        if path and os.path.isdir(path) and os.access(path, os.W_OK):
            return True
    # numba falls back to a user-wide cache directory (e.g. ~/.cache/numba)
    home = os.path.expanduser("~")
    return bool(home) and os.access(home, os.W_OK)


CACHE = _cache_is_writable()

ANNOUNCEMENT = "parsimony: compiling numba kernels, first use only (later runs load them from the cache)..."

#: Seconds without a compile after which a burst of compiles is reported done.
QUIET_SECONDS = 2.0

_KERNELS = weakref.WeakSet()  # the Python functions of the kernels made here (and the accelerator's twins)


class _CompileWatch(event.Listener):
    """Counts this process's kernel compiles (cache loads are not compiles), announces the first and
    reports each burst of compiles once it is over (``QUIET_SECONDS`` without one, or at exit)."""

    def __init__(self):
        self.count = 0
        self.depth = 0          # compiles in progress (numba's events nest: callees inside callers)
        self.burst = None       # [start, kernels compiled] of the burst being timed
        self.last_end = 0.0
        self.timer = None
        self.lock = threading.Lock()

    def on_start(self, ev):
        with self.lock:
            self.depth += 1
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
        if getattr(ev.data["dispatcher"], "py_func", None) in _KERNELS:
            self.compiling()

    def compiling(self):
        """Count a compile (here, or a helper process's that this one waits for); announce the first."""
        with self.lock:
            self.count += 1
            if self.burst is None:
                self.burst = [time.perf_counter(), 0]
            self.burst[1] += 1
            first = self.count == 1
        if first:
            _say(ANNOUNCEMENT if CACHE
                 else ANNOUNCEMENT.split(" (")[0] + " (no writable cache: every process compiles)...")
        self._arm()

    def on_end(self, ev):
        with self.lock:
            self.depth -= 1
            self.last_end = time.perf_counter()
        self._arm()

    def _arm(self):
        """(Re)start the quiet-time clock when no compile is in progress."""
        with self.lock:
            if self.depth > 0 or self.burst is None:
                return
            if self.timer is not None:
                self.timer.cancel()
            self.timer = threading.Timer(QUIET_SECONDS, self.report)
            self.timer.daemon = True
            self.timer.start()

    def report(self):
        """Say how long the burst of compiles took (the first always, later ones from a second)."""
        with self.lock:
            if self.burst is None or self.depth > 0:
                return
            (start, kernels), self.burst = self.burst, None
            self.timer = None
            seconds = max(self.last_end, start) - start
            first = kernels == self.count
        if first or seconds >= 1.0:
            more = "" if first else " more"
            _say(f"parsimony: compiled {kernels}{more} numba kernel{'s' * (kernels != 1)} in {seconds:.1f} s")


def _say(message):
    """Write a notice to stderr above any progress bar of this process; on a terminal the line is
    cleared first (a joblib worker's notice would otherwise land on the runner's bar line)."""
    if sys.stderr is not None and sys.stderr.isatty():
        message = "\r\x1b[K" + message
    try:
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)  # above any progress bar
    except ImportError:  # pragma: no cover - tqdm is a dependency
        print(message, file=sys.stderr)


_WATCH = _CompileWatch()
event.register("numba:compile", _WATCH)
atexit.register(_WATCH.report)  # a burst still quiet-timing when the process ends


def compiled_kernels() -> int:
    """Number of kernels (``@njit`` from here) compiled so far in this process; cache loads excluded."""
    return _WATCH.count


def compiling() -> bool:
    """Whether a kernel is being compiled in this process right now (another thread may ask)."""
    return _WATCH.depth > 0


# the numba and llvmlite release series the compile accelerator is tested with
ACCELERATOR_TESTED = {"numba": ("0.68",), "llvmlite": ("0.50",)}


def _series(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _load_accelerator():
    """The compile accelerator module when it is to be used and installs, else None."""
    wanted = os.environ.get("PARSIMONY_COMPILE_ACCELERATOR", "auto")
    if wanted == "0" or numba.config.DISABLE_JIT:
        return None
    tested = (_series(numba.__version__) in ACCELERATOR_TESTED["numba"]
              and _series(llvmlite.__version__) in ACCELERATOR_TESTED["llvmlite"])
    if not tested and wanted != "1":
        return None
    try:
        from . import _compile_accelerator as accelerator
    except Exception as error:  # numba's or llvmlite's private names moved
        import warnings

        warnings.warn(f"parsimony: the compile accelerator is off ({type(error).__name__}: {error})",
                      RuntimeWarning, stacklevel=2)
        return None
    return accelerator if accelerator.install() else None


_ACCELERATOR = _load_accelerator()


def accelerated() -> bool:
    """Whether kernels compile through the compile accelerator (:mod:`parsimony._compile_accelerator`)."""
    return _ACCELERATOR is not None and _ACCELERATOR.active()


def njit(func=None, *, cache=None, boundscheck=None, by_constant=False, **options):
    """``numba.njit`` in nopython mode, cached on disk when possible (through the compile
    accelerator when it is on).

    Parameters
    ----------
    func : callable, optional
        The kernel; without it, a decorator is returned.
    cache : bool, optional
        On-disk caching; by default on when a cache location is writable and the function
        has a source file.
    boundscheck : bool, optional
        As in ``numba.njit``.
    by_constant : bool, default=False
        Compile one specialisation per constant argument value a kernel passes (numba's rule,
        and always so without the accelerator): worth its compile time only where hot loops
        branch on a constant code.
    **options
        Further numba options (``error_model``, ``inline``, ...); ``nogil`` defaults to True.
        ``fastmath`` is refused: results would depend on the CPU's FMA and vector width.
    """
    if options.get("fastmath"):
        raise ValueError(f"fastmath must not be set, got {options['fastmath']!r}: kernels compile without it "
                         "so that a seed gives the same bits on every CPU")
    if func is None:
        return lambda f: njit(f, cache=cache, boundscheck=boundscheck, by_constant=by_constant, **options)
    if numba.config.DISABLE_JIT:
        return func
    options.setdefault("nogil", True)
    if boundscheck is not None:
        options["boundscheck"] = boundscheck
    if cache is None:  # code without a source file (exec, python -c) has no cache location
        cache = CACHE and not func.__code__.co_filename.startswith("<")
    _KERNELS.add(func)
    kernel = _ACCELERATOR.kernel(func, options, by_constant, cache) if accelerated() else None
    if kernel is not None:
        _KERNELS.add(kernel.internal.py_func)
        return kernel
    return numba.njit(cache=cache, **options)(func)


def njit_by_constant(func=None, **options):
    """:func:`njit` with ``by_constant=True``: for kernel modules whose hot loops branch on a
    constant code, such as the tree search's loss kind (unspecialised, OSRT ran 4x slower)."""
    return njit(func, by_constant=True, **options)


@njit
def assign(dst, src):
    """``dst[:] = src`` for 1-D arrays of one length, element by element.

    numba's slice assignment compiles a shape-mismatch error message (string formatting) that
    costs seconds of compile time on first use; kernels copy rows with this instead.
    """
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@njit
def argsort(values):
    """Indices that sort the 1-D array ``values`` (without NaN) ascending; stable: ties keep their order.

    A bottom-up merge sort: ``np.argsort`` compiles numba's quicksort, seconds of compile time
    on first use, in every kernel that sorts.
    """
    n = values.shape[0]
    order = np.empty(n, dtype=np.int64)
    merged = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or values[order[j]] < values[order[i]]):
                    merged[k] = order[j]
                    j += 1
                else:
                    merged[k] = order[i]
                    i += 1
        order, merged = merged, order
        width *= 2
    return order


def precompile(steps):
    """Compile, or load from the cache, the kernels of a fit before it calls them; on a cold
    cache, with a helper process compiling some of them on another core. Without the compile
    accelerator, nothing: the fit's calls compile the kernels as usual.

    Parameters
    ----------
    steps : list of (kernel, args, where)
        Kernels (``@njit`` from here) and arguments of the types the fit calls them with, in
        compile order: callees first, since a kernel that calls an entry compiled already
        links it instead of compiling it again. ``where`` is ``"main"`` (this process compiles
        it), ``"helper"``: when some of those are not cached, a helper process compiles them,
        in this order, into the cache, while this process compiles its own steps and loads the
        helper's as it needs them (also from inside a kernel that calls one with these argument
        types; one the helper has not begun it compiles itself), or ``"spare"``: with a helper,
        this process compiles it after its own steps (the small kernels a fit calls from Python
        late, which would otherwise compile after the helper is done). Then it takes the
        helper's steps from the last, compiling each that the helper has not begun (the helper
        goes from the first), and waits only for those the helper holds. Without a helper (one
        core, no core free by the load average, no writable cache, ``PARSIMONY_NUMBA_HELPER=0``;
        ``=1`` starts one whatever the load) the
        helper and spare steps compile on first use as usual, as they do when every ``"main"``
        step is cached already. Every kernel is compiled and saved under its cache lock, so no
        process compiles one that another is compiling.
    """
    if accelerated():
        _ACCELERATOR.precompile(steps, _WATCH.compiling)


def restart_eta(bar):
    """A fresh tqdm bar in place of ``bar``, at its count, whose rate and ETA count only the steps to come.

    Progress loops call it after a step that compiled kernels (``compiled_kernels()`` grew), so
    that a first step dominated by compilation does not make the ETA minutes long. A disabled
    bar (``disable=True``: it shows nothing and has no description) is returned as it is.
    """
    if bar.disable:
        return bar
    fresh = type(bar)(total=bar.total, initial=bar.n, desc=bar.desc, unit=bar.unit, leave=bar.leave,
                      disable=bar.disable, smoothing=bar.smoothing)
    if bar.postfix:
        fresh.set_postfix_str(bar.postfix)
    bar.leave = False
    bar.close()
    return fresh

