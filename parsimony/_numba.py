"""One place that decides how numba kernels are compiled.

Kernels use ``@njit`` from here instead of ``numba.njit`` so that

- compiled code is cached on disk when a cache location is writable, and caching is switched
  off (instead of crashing) on read-only installs;
- a kernel called from another kernel is compiled once per argument *type*, never once per
  constant value: numba would otherwise compile ``f(a, 0)``, ``f(a, 1)`` and ``f(a, i)`` as three
  specialisations (``Literal[int](0)``, ``Literal[int](1)``, ``int64``), which multiplied the
  cold-start compile time. The constants reach the kernel as ordinary arguments; the results are
  the same. Modules whose hot loops branch on a constant code (the tree search) keep numba's rule
  with :func:`njit_by_constant`;
- a kernel called from another kernel is compiled by a twin dispatcher, to LLVM IR only: without
  the CPython and C entry points numba generates for calls from Python (unboxing every argument:
  a sixth of the compile time), and without optimisation or machine code of its own
  (:class:`_LinkOnlyLibrary`): the kernels called from Python (the entry points) are optimised
  once each with everything they call, where numba re-optimised every callee in every caller up
  the call graph. Results are the same; only entry points are cached (a warm start loads
  nothing else). A kernel called from Python compiles with its entry point as usual,
  and an entry already compiled serves calls from kernels too.

While a kernel compiles, Python's cyclic garbage collector is paused, numba's error
messages are left unformatted, its compiler flags compare and hash without rebuilding their
values, and its LLVM-lock events are off (:func:`_compile_session`): all cost compile time and
none changes the compiled code.

A cached kernel is reused only while every source file of its package is unchanged (numba
itself checks only the kernel's own file, though a kernel holds the code of the kernels it calls).

A fit can list its kernels and their argument types for :func:`precompile`, which compiles
them in an order that lets kernels link the entries they call, and, on a cold cache, hands some
to a helper process on another core that compiles them into the cache meanwhile (a kernel is
compiled and saved under its cache lock, so a process that needs one another is compiling waits
and loads it).

Nothing is compiled at import time: numba compiles lazily on first call. The first compile of
a process says so once on stderr (a cold start takes tens of seconds; later processes load the
kernels from the cache), and :func:`compiled_kernels` counts compiles so that progress bars can
leave a compiling step out of their ETA.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import hashlib
import importlib
import os
import pickle
import subprocess
import sys
from pathlib import Path
from types import FunctionType

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite.binding import ffi as llvm_ffi
from llvmlite import ir as llvmir
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import global_compiler_lock
from numba.core.compiler import Compiler, CompilerBase, DefaultPassBuilder, Flags
from numba.core.compiler_machinery import LoweringPass, register_pass
from numba.core.typed_passes import AnnotateTypes
from numba.core import errors, event, sigutils, targetconfig, types
from numba.core.targetconfig import TargetConfig
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.registry import CPUDispatcher

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: numba's unlocked cache
    fcntl = None


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

ANNOUNCEMENT = "parsimony: compiling numba kernels, first use only (later runs load them from the cache)"


class _CompileWatch(event.Listener):
    """Counts this process's kernel compiles (cache loads are not compiles) and announces the first."""

    def __init__(self):
        self.count = 0

    def on_start(self, ev):
        if isinstance(ev.data["dispatcher"], KernelDispatcher):
            self.compiling()

    def compiling(self):
        """Count a compile (here, or a helper process's that this one waits for); announce the first."""
        self.count += 1
        if self.count == 1:
            _say(ANNOUNCEMENT if CACHE else ANNOUNCEMENT.split(" (")[0] + " (no writable cache: every process compiles)")

    def on_end(self, ev):
        pass


def _say(message):
    try:
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)  # above any progress bar
    except ImportError:  # pragma: no cover - tqdm is a dependency
        print(message, file=sys.stderr)


_WATCH = _CompileWatch()
event.register("numba:compile", _WATCH)


def compiled_kernels() -> int:
    """Number of kernels (``@njit`` from here) compiled so far in this process; cache loads excluded."""
    return _WATCH.count


_SESSION = [False]  # inside a compile of a kernel (under numba's compiler lock)


def _config_values(self):
    """``TargetConfig.values`` (every option's value, the default where unset), without a
    property call per option."""
    get = self._values.get
    return {name: get(name, option._default) for name, option in self.options.items()}


def _config_eq(self, other):
    """``TargetConfig.__eq__`` (equal values), first comparing the options set."""
    if not isinstance(other, TargetConfig):
        return NotImplemented
    if type(self) is type(other) and self._values == other._values:
        return True
    return _config_values(self) == _config_values(other)


_CONFIG_HASHES = {}


def _config_hash(self):
    """``TargetConfig.__hash__``: numba's hash of the sorted option names, computed once per class."""
    cls = type(self)
    if cls not in _CONFIG_HASHES:
        _CONFIG_HASHES[cls] = hash(tuple(sorted(self.options)))
    return _CONFIG_HASHES[cls]


# numba's compile flags are dictionary keys of its typing caches: it hashed and compared them
# about a hundred thousand times in a cold fit, each time rebuilding every option's value
_FAST_CONFIG = {"values": _config_values, "__eq__": _config_eq, "__hash__": _config_hash}
_FAST_CONFIG_OK = all(name in TargetConfig.__dict__ for name in _FAST_CONFIG) and all(
    isinstance(option, getattr(targetconfig, "Option", ())) and hasattr(option, "_default")
    for config in (Flags,) for option in config.options.values())


def _numba_llvm_lock_hooks():
    """numba's callbacks on the LLVM lock (they broadcast a ``numba:llvm_lock`` event at every
    call into LLVM, tens of thousands per cold fit, for numba's lock-time statistics)."""
    lock = getattr(getattr(llvm_ffi, "lib", None), "_lock", None)
    hooks = getattr(lock, "_cblist", None)
    if not isinstance(hooks, list):
        return lock, []
    return lock, [hook for hook in hooks if getattr(hook[0], "__module__", None) == "numba.core.base"]


@contextlib.contextmanager
def _compile_session():
    """The outermost compile of a kernel, with Python's cyclic garbage collector paused,
    numba's error messages unformatted, its compile flags hashed and compared cheaply
    (:data:`_FAST_CONFIG`) and its LLVM-lock events off.

    A compile allocates millions of short-lived objects that the collector scanned again and
    again (an eighth of the compile time); the garbage is collected after the compile, when the
    collector runs again. numba formats (``colorama``) the message of every error it raises
    while typing, though nearly all are caught while trying overloads (a twentieth). The flags'
    hashes and comparisons took a tenth, the LLVM-lock events a twentieth. None of these
    changes what is compiled (the flags compare and hash as numba's own methods do).
    """
    if _SESSION[0]:
        yield
        return
    _SESSION[0] = True
    collecting = gc.isenabled()
    gc.disable()
    scheme = errors.termcolor()
    plain = hasattr(scheme, "_markup")
    if plain:
        scheme._markup = lambda msg, *args, **kwargs: msg
    saved = {name: TargetConfig.__dict__[name] for name in _FAST_CONFIG} if _FAST_CONFIG_OK else {}
    for name, method in _FAST_CONFIG.items() if saved else ():
        setattr(TargetConfig, name, method)
    lock, hooks = _numba_llvm_lock_hooks()
    for hook in hooks:
        lock._cblist.remove(hook)
    try:
        yield
    finally:
        for hook in hooks:
            lock._cblist.append(hook)
        for name, method in saved.items():
            setattr(TargetConfig, name, method)
        if plain:
            del scheme._markup
        if collecting:
            gc.enable()
        _SESSION[0] = False


class KernelDispatcher(CPUDispatcher):
    """A numba dispatcher that types calls from other kernels without literal constants
    (unless ``by_constant``: numba's own rule, one specialisation per constant value) and
    compiles them in ``internal``, its twin without Python entry points."""

    by_constant = False
    internal = None

    def get_call_template(self, args, kws):
        """Compile (once) for the argument types with constants widened to their plain type."""
        plain = tuple(types.unliteral(a) for a in args)
        plain_kws = {k: types.unliteral(v) for k, v in kws.items()}
        if self.by_constant or (plain == tuple(args) and plain_kws == kws):
            return self._call_template(args, kws)
        try:
            return self._call_template(plain, plain_kws)
        except errors.TypingError:  # a kernel that needs the constant itself
            return self._call_template(args, kws)

    def _call_template(self, args, kws):
        # reuse a compiled entry, or one a helper process compiles (see precompile); entries are
        # keyed by the full argument types, defaults included (a call may leave them out)
        if self.internal is None:
            return super().get_call_template(args, kws)
        try:
            full = tuple(self.fold_argument_types(args, kws)[1])
        except TypeError:  # a call numba's typing rejects: let it say so
            full = None
        if full in self.overloads or (self, full) in _HELPED:
            return super().get_call_template(args, kws)
        return self.internal.get_call_template(args, kws)

    def compile(self, sig):
        """numba's compile (or cache load) for ``sig``, the outermost one in a :func:`_compile_session`,
        under the kernel's cache lock: a process that needs a kernel another one is compiling
        waits for it and loads it from the cache."""
        with global_compiler_lock, _compile_session():
            cache = self._cache
            if not isinstance(cache, _PackageStampedCache) or tuple(sigutils.normalize_signature(sig)[0]) in self.overloads:
                return super().compile(sig)
            with cache.claim():
                return super().compile(sig)

    def get_overload(self, sig):
        """The compiled function for ``sig``: this dispatcher's, else its twin's (for lowering a call)."""
        args = tuple(sigutils.normalize_signature(sig)[0])
        if self.internal is not None and args not in self.overloads:
            return self.internal.get_overload(sig)
        return super().get_overload(sig)


class _KernelLibrary(JITCodeLibrary):
    """numba's JIT code library, running its function-level optimisation with one pass
    manager per module and only on defined functions.

    numba builds a pass manager for every function of a module, declarations included (each
    module declares every function it calls): most of that time went to building pass managers
    (a third of the function-level optimisation, about 1 s of a cold OSRT fit). The passes run,
    and the optimised code, are the same.
    """

    def _optimize_functions(self, ll_module):
        ll_module.data_layout = self._codegen._data_layout
        manager = None
        for func in ll_module.functions:
            if func.is_declaration:
                continue
            if manager is None:
                manager, builder = self._codegen._function_pass_manager()
            manager.run(func, builder)


class _LinkOnlyLibrary(_KernelLibrary):
    """The code of a kernel compiled only to be linked into the kernels that call it.

    numba optimises and generates machine code for every compiled function, then again for
    each caller it is linked into (and their callers): the cost grew with the depth of the call
    graph. Here only the entry points (kernels called from Python) are optimised and turned into
    machine code, once each, with everything they call; results are the same.
    """

    def _optimize_final_module(self):
        pass  # the callers' optimisation covers this code

    def _finalize_final_module(self):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        # no machine code; only the environment pointer that numba fills after compiling
        stub = llvmir.Module(name=self.name + ".env")
        for gv in self._final_module.global_variables:
            if "NumbaEnv" in gv.name and not gv.is_declaration:
                var = llvmir.GlobalVariable(stub, llvmir.IntType(8).as_pointer(), name=gv.name)
                var.linkage = "common"
                var.initializer = llvmir.Constant(var.type.pointee, None)
        self._codegen._add_module(llvm.parse_assembly(str(stub)))
        self._codegen._engine.finalize_object()
        self._finalized = True

    def get_pointer_to_function(self, name):
        """None: there is no machine code (callers link the IR)."""
        self._ensure_finalized()
        return 0


_LINK_ONLY = all(hasattr(JITCodeLibrary, name) for name in (
    "_optimize_final_module", "_finalize_final_module", "_finalize_dynamic_globals", "_verify_declare_only_symbols",
    "_finalized", "_optimize_functions", "enable_object_caching"))


@register_pass(mutates_CFG=False, analysis_only=False)
class _UseOwnLibrary(LoweringPass):
    """Lower into the library class of the compiler (``state.parsimony_library``)."""

    _name = "parsimony_own_library"

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        library_class = state.parsimony_library
        state.library = library_class(state.targetctx.codegen(), state.func_id.func_qualname)
        if library_class is _KernelLibrary:
            state.library.enable_object_caching()  # cacheable, as numba's own
        return True


class _KernelCompiler(CompilerBase):
    """numba's nopython pipeline, lowering into a :class:`_KernelLibrary`."""

    library_class = _KernelLibrary

    def define_pipelines(self):
        self.state.parsimony_library = self.library_class
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(_UseOwnLibrary, AnnotateTypes)
        pm.finalize()
        return [pm]


class _LinkOnlyCompiler(_KernelCompiler):
    """numba's nopython pipeline, lowering into a :class:`_LinkOnlyLibrary`."""

    library_class = _LinkOnlyLibrary


@functools.lru_cache(maxsize=None)
def package_source_stamp(root: str) -> str:
    """SHA-256 of every ``.py`` file under ``root`` (paths and contents)."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


_HELD = {}  # path -> [open handle, depth]: this process's locks (flock does not nest in one process)


@contextlib.contextmanager
def _file_lock(path, wait=True):
    """An exclusive lock on ``path`` between processes, reentrant within one; yields whether it
    is held (False: ``wait=False`` and another process holds it). No lock where unavailable."""
    if path in _HELD:
        _HELD[path][1] += 1
        try:
            yield True
        finally:
            _HELD[path][1] -= 1
        return
    try:
        handle = open(path, "a") if fcntl is not None else None
    except OSError:
        handle = None
    if handle is None:
        yield True
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        _HELD[path] = [handle, 0]
        try:
            yield True
        finally:
            del _HELD[path]
            fcntl.flock(handle, fcntl.LOCK_UN)


class _PackageStampedCache(FunctionCache):
    """numba's on-disk cache, stale when any source file of the kernel's package changes, and
    read and written under a lock.

    numba checks only the file that defines a kernel, but a cached kernel holds the code of
    every kernel it calls (from other modules too) and the module constants it read: an edit
    or an upgrade that touched only those would load stale code. numba also writes a kernel's
    index and data files unlocked, so two processes saving different signatures at once (test
    or joblib workers on a cold cache) could leave an index entry naming the other's code.
    """

    def __init__(self, py_func, root):
        super().__init__(py_func)
        self._cache_file = IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=(self._impl.locator.get_source_stamp(), package_source_stamp(root)))
        self._lock_path = os.path.join(self._cache_path, self._impl.filename_base + ".lock")

    def claim(self, wait=True):
        """The kernel's lock (a context manager yielding whether it is held; see :func:`_file_lock`)."""
        try:
            self._impl.locator.ensure_cache_path()
        except OSError:
            pass
        return _file_lock(self._lock_path, wait)

    def has(self, sig, codegen):
        """Whether the cache holds ``sig`` (without loading it)."""
        return self._index_key(sig, codegen) in self._cache_file._load_index()

    def load_overload(self, sig, target_context):
        with _file_lock(self._lock_path):
            return super().load_overload(sig, target_context)

    def save_overload(self, sig, data):
        with _file_lock(self._lock_path):
            super().save_overload(sig, data)


def _package_root(func) -> str | None:
    package = sys.modules.get(func.__module__.partition(".")[0])
    path = getattr(package, "__path__", None)  # a package (not a script or a lone module)
    return os.path.abspath(list(path)[0]) if path else None


def _dispatcher(func, options, by_constant, cache, pipeline_class=Compiler):
    dispatcher = KernelDispatcher(py_func=func, locals={}, targetoptions=options, pipeline_class=pipeline_class)
    dispatcher.by_constant = by_constant
    if cache:
        root = _package_root(func)
        if root is None:
            dispatcher.enable_caching()
        else:
            dispatcher._cache = _PackageStampedCache(func, root)
    return dispatcher


def njit(func=None, *, cache=None, boundscheck=None, by_constant=False, **options):
    """``numba.njit`` compiled by :class:`KernelDispatcher`, cached on disk when possible.

    Parameters
    ----------
    func : callable, optional
        The kernel; without it, a decorator is returned.
    cache : bool, optional
        On-disk caching; by default on when a cache location is writable.
    boundscheck : bool, optional
        As in ``numba.njit``.
    by_constant : bool, default=False
        Compile one specialisation per constant argument value a kernel passes (numba's rule):
        worth its compile time only where hot loops branch on a constant code.
    **options
        Further numba target options (``error_model``, ``fastmath``, ``inline``, ...);
        ``nogil`` defaults to True.
    """
    if func is None:
        return lambda f: njit(f, cache=cache, boundscheck=boundscheck, by_constant=by_constant, **options)
    if numba.config.DISABLE_JIT:
        return func
    options.setdefault("nogil", True)
    options.update(nopython=True, boundscheck=boundscheck, no_cfunc_wrapper=True)
    cache = CACHE if cache is None else cache
    dispatcher = _dispatcher(func, options, by_constant, cache, _KernelCompiler if _LINK_ONLY else Compiler)
    # the twin: a copy of the function under its own name (so its own cache file)
    twin = FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
    twin.__kwdefaults__ = func.__kwdefaults__
    twin.__module__ = func.__module__
    twin.__qualname__ = func.__qualname__ + "__from_kernels"
    if _LINK_ONLY:
        dispatcher.internal = _dispatcher(twin, dict(options, no_cpython_wrapper=True), by_constant, False,
                                          _LinkOnlyCompiler)
    else:  # pragma: no cover - a numba without the hooks _LinkOnlyLibrary uses
        dispatcher.internal = _dispatcher(twin, dict(options, no_cpython_wrapper=True), by_constant, cache)
    return dispatcher


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


_HELPED = set()  # (kernel, argument types) that a helper process compiles into the cache
_PRECOMPILED = set()  # (kernel, argument types) of the steps precompile went through
_HELPERS = []  # helper processes started here


def _argument_types(kernel, args):
    """The argument types numba compiles ``kernel(*args)`` for, defaults included."""
    return tuple(kernel.fold_argument_types(tuple(kernel.typeof_pyval(a) for a in args), {})[1])


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def precompile(steps):
    """Compile, or load from the cache, the kernels of a fit before it calls them; on a cold
    cache, with a helper process compiling some of them on another core.

    Parameters
    ----------
    steps : list of (kernel, args, where)
        Kernels (``@njit`` from here) and arguments of the types the fit calls them with, in
        compile order: callees first, since a kernel that calls an entry compiled already
        links it instead of compiling it again. ``where`` is ``"main"`` (this process compiles
        it) or ``"helper"``: when some of those are not cached, a helper process compiles them,
        in this order, into the cache, while this process compiles its own steps and loads the
        helper's as it needs them (also from inside a kernel that calls one with these argument
        types; one the helper has not begun it compiles itself). Without a helper (one core, no
        core free by the load average, no writable cache, ``PARSIMONY_NUMBA_HELPER=0``; ``=1``
        starts one whatever the load) the helper steps compile on first use as usual, as they do
        when every ``"main"`` step is cached already. Every kernel is compiled and saved under its
        cache lock, so no process compiles one that another is compiling.
    """
    if numba.config.DISABLE_JIT:
        return
    steps = [(kernel, _argument_types(kernel, args), where) for kernel, args, where in steps]
    if all((kernel, sig) in _PRECOMPILED for kernel, sig, _ in steps):
        return
    helped = [(kernel, sig) for kernel, sig, where in steps if where == "helper"]
    shared = [(kernel, sig) for kernel, sig, where in steps if where == "main"]
    cold = any(not _cached(kernel, sig) for kernel, sig in shared)
    helping = bool(helped) and cold and _start_helper(helped, shared)
    if helping:
        _HELPED.update(helped)
        _WATCH.compiling()  # what this process now waits for is compile time too
    later = []
    for kernel, sig, where in steps:
        if where == "main" or (kernel, sig) in _HELPED:
            if helping and where == "main" and not _compile(kernel, sig, wait=False):
                later.append((kernel, sig))  # the helper is compiling it: first the steps it is not
            else:
                _compile(kernel, sig)
        _PRECOMPILED.add((kernel, sig))
    for kernel, sig in later:
        _compile(kernel, sig)


def _compile(kernel, sig, wait=True) -> bool:
    """Compile ``kernel`` for ``sig`` (or load it from the cache); without ``wait``, only when no
    other process holds its cache lock. Returns whether it was compiled or loaded."""
    claim = kernel._cache.claim(wait) if isinstance(kernel._cache, _PackageStampedCache) else contextlib.nullcontext(True)
    with claim as held:
        if held:
            try:
                kernel.compile(sig)
            except (errors.NumbaError, TypeError):  # pragma: no cover - a step the fit no longer matches
                pass  # the fit's own call compiles what it needs (and reports a kernel's error)
        return held


def _cached(kernel, sig) -> bool:
    """Whether ``kernel`` is compiled for ``sig`` in this process or in the cache (not loading it)."""
    if sig in kernel.overloads:
        return True
    cache = kernel._cache
    return isinstance(cache, _PackageStampedCache) and cache.has(sig, kernel.targetctx.codegen())


def _busy() -> bool:
    """No core free (1-minute load average): a helper would slow the compile down, since it
    compiles some kernels that this process compiles too."""
    try:
        return os.getloadavg()[0] > _usable_cpus() - 1
    except OSError:  # pragma: no cover - no load average
        return False


def _start_helper(helped, shared=()) -> bool:
    """Start a helper process compiling ``helped`` into the cache, unless all are cached; the
    kernels of ``shared`` that they call it takes as entries, loaded from the cache (waiting for
    this process while it compiles one) or compiled there and saved, not as link-only twins."""
    wanted = os.environ.get("PARSIMONY_NUMBA_HELPER", "auto")
    if not CACHE or fcntl is None or wanted == "0" or _usable_cpus() < 2 or not sys.executable:
        return False
    if wanted != "1" and _busy():
        return False
    if not all(isinstance(kernel._cache, _PackageStampedCache) for kernel, _ in helped):
        return False
    todo = [(kernel.py_func.__module__, kernel.py_func.__name__, sig) for kernel, sig in helped
            if not _cached(kernel, sig)]
    if not todo:
        return False
    entries = [(kernel.py_func.__module__, kernel.py_func.__name__, sig) for kernel, sig in shared
               if isinstance(kernel._cache, _PackageStampedCache)]
    paths = [os.path.dirname(_package_root(kernel.py_func)) for kernel, _ in helped]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PARSIMONY_NUMBA_HELPER="0", PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
    code = f"import sys\nfrom {__name__} import _help\n_help(sys.stdin.buffer.read())"
    try:
        process = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process.stdin.write(pickle.dumps((todo, entries)))
        process.stdin.close()
    except (OSError, pickle.PicklingError):
        return False
    if not _HELPERS:
        atexit.register(_stop_helpers)
    _HELPERS.append(process)
    return True


def _help(message):
    """A helper process: compile the kernels of ``message`` (pickled lists of ``(module, name,
    argument types)``: the steps, and the shared entries) into the cache, in order, skipping any
    that another process is compiling. A shared entry that a step calls is linked as an entry:
    loaded from the cache, waiting for the process that compiles it, or compiled here and saved
    (the process that started the helper then loads it), so no kernel is compiled twice."""
    todo, entries = pickle.loads(message)

    def kernels(items):
        for module, name, sig in items:
            kernel = getattr(importlib.import_module(module), name, None)
            if isinstance(kernel, KernelDispatcher) and isinstance(kernel._cache, _PackageStampedCache):
                yield kernel, sig

    _HELPED.update(kernels(entries))
    for kernel, sig in kernels(todo):
        _compile(kernel, sig, wait=False)


def _stop_helpers():
    for process in _HELPERS:
        if process.poll() is None:
            process.terminate()


def restart_eta(bar):
    """A fresh tqdm bar in place of ``bar``, at its count, whose rate and ETA count only the steps to come.

    Progress loops call it after a step that compiled kernels (``compiled_kernels()`` grew), so
    that a first step dominated by compilation does not make the ETA minutes long. A disabled
    bar (``disable=True``: it shows nothing and has no description) is returned as it is.
    """
    if bar.disable:
        return bar
    fresh = type(bar)(total=bar.total, initial=bar.n, desc=bar.desc, unit=bar.unit, leave=bar.leave,
                      disable=bar.disable)
    if bar.postfix:
        fresh.set_postfix_str(bar.postfix)
    bar.leave = False
    bar.close()
    return fresh

