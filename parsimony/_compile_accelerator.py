"""The compile accelerator: optional, everything that relies on numba's and llvmlite's private names.

:mod:`parsimony._numba` loads it for the numba and llvmlite versions it is tested with (unless
``PARSIMONY_COMPILE_ACCELERATOR=0``); kernels give the same results without it, compiled by
numba's public ``njit``. With it, a kernel is a :class:`KernelDispatcher`:

- a kernel called from another kernel is compiled once per argument *type*, never once per
  constant value: numba would otherwise compile ``f(a, 0)``, ``f(a, 1)`` and ``f(a, i)`` as three
  specialisations (``Literal[int](0)``, ``Literal[int](1)``, ``int64``). Kernels declared with
  ``by_constant`` keep numba's rule;
- a kernel called from another kernel is compiled by a twin dispatcher, to LLVM IR only: without
  the CPython and C entry points numba generates for calls from Python, and without optimisation
  or machine code of its own (:class:`_LinkOnlyLibrary`): the kernels called from Python (the
  entry points) are optimised once each with everything they call, where numba re-optimised every
  callee in every caller up the call graph. Only entry points are cached; an entry already
  compiled serves calls from kernels too;
- while a kernel compiles, Python's cyclic garbage collector is paused, numba's error messages are
  left unformatted, its compile flags compare and hash without rebuilding their values, its
  LLVM-lock events are off and reference counting reads only the members that hold a meminfo
  (:func:`_compile_session`): none changes the compiled code;
- the package's records (named tuples) are passed to a kernel as one LLVM value, not flattened
  into their scalars (:class:`_RecordModel`);
- a cached kernel is reused only while every source file of its package is unchanged (numba
  checks only the kernel's own file), and cache files are read and written under a lock;
- :func:`precompile` compiles a fit's kernels in an order that lets kernels link the entries they
  call and, on a cold cache, hands some to a helper process on another core, which this process
  compiles from the last once its own are done, so that both finish together.

It can never break a fit: :func:`install` checks the signatures and the behaviour of what it
patches and raises :class:`Unsupported` when they differ from the tested ones, and a compile that
raises inside it is done again by numba's own pipeline; if that succeeds the accelerator is
switched off for the process (:func:`disable`: numba's pipeline, caches of its own and one
:class:`CompileAcceleratorWarning`), and if it fails too the error is the kernel's own and is
raised as numba reports it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import hashlib
import importlib
import inspect
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from types import FunctionType

from llvmlite import binding as llvm
from llvmlite import ir as llvmir
from llvmlite.binding import ffi as llvm_ffi
from numba.core import base as numba_base
from numba.core import errors, ir, sigutils, targetconfig, types
from numba.core.caching import FunctionCache, IndexDataCacheFile, NullCache
from numba.core.codegen import CPUCodegen, JITCodeLibrary
from numba.core.compiler import Compiler, DefaultPassBuilder, Flags
from numba.core.compiler_lock import global_compiler_lock
from numba.core.compiler_machinery import LoweringPass, PassManager, register_pass
from numba.core.datamodel import default_manager
from numba.core.datamodel.manager import DataModelManager
from numba.core.datamodel.models import TupleModel, UniTupleModel
from numba.core.registry import CPUDispatcher
from numba.core.runtime.context import NRTContext
from numba.core.target_extension import get_local_target
from numba.core.targetconfig import TargetConfig
from numba.core.typed_passes import AnnotateTypes
from numba.core.types import functions as function_types

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: numba's unlocked cache
    fcntl = None


class CompileAcceleratorWarning(RuntimeWarning):
    """The compile accelerator failed and is off for this process: kernels compile with numba's
    own pipeline (same results, a slower first compile)."""


class Unsupported(RuntimeError):
    """What the accelerator patches differs from the numba and llvmlite it was tested with."""


_ACTIVE = [False]  # installed and not disabled
_WARNED = [False]
_SESSION = [False]  # inside a compile of a kernel (under numba's compiler lock)
_DISPATCHERS = []  # every KernelDispatcher with a package-stamped cache (for disable)


def active() -> bool:
    """Whether kernels compile through the accelerator."""
    return _ACTIVE[0]


def _suspend():
    """Kernels compile with numba's own pipeline and caches of their own (:class:`_RecordsCache`);
    returns what :func:`_resume` restores."""
    _ACTIVE[0] = False
    stamped = [(dispatcher, dispatcher._cache) for dispatcher in _DISPATCHERS]
    for dispatcher, _ in stamped:
        try:
            dispatcher._cache = _RecordsCache(dispatcher.py_func)
        except Exception:  # pragma: no cover - numba's own caching unavailable: compile every time
            dispatcher._cache = NullCache()
    return stamped


def _resume(stamped):
    for dispatcher, cache in stamped:
        dispatcher._cache = cache
    _ACTIVE[0] = True


def disable(reason):
    """Switch the accelerator off for this process (numba's own pipeline and caches for the
    kernels) and warn once with ``reason``."""
    if _ACTIVE[0]:
        _suspend()
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(f"parsimony: the compile accelerator is off for this process ({type(reason).__name__}: "
                      f"{reason}); kernels compile with numba's own pipeline (same results, slower first compile). "
                      "PARSIMONY_COMPILE_ACCELERATOR=0 switches it off without this warning.",
                      CompileAcceleratorWarning, stacklevel=2)


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


_CALL_TYPES = {}  # (function type, argument types, keywords) -> (typing context, signature)


def _memo_call_type(resolve):
    """``get_call_type`` of numba's function types (``resolve``), remembering each signature found.

    numba tries the typing templates of a function in turn (an operator has dozens, most failing
    with an error) at each call site, again each time type inference revisits it and again when
    lowering it. A template's answer depends on the argument types and the target only, and
    numba keeps what the found one registers (its implementation key), so a signature found once
    is the answer for the same arguments later (about 7% of a cold fit's compile time); failures
    are not remembered (numba resolves them again).
    """

    @functools.wraps(resolve)
    def get_call_type(self, context, args, kws):
        key = (self, args, tuple(kws.items()) if kws else (), get_local_target(context))
        try:
            found = _CALL_TYPES.get(key)
        except TypeError:  # an unhashable argument type
            return resolve(self, context, args, kws)
        if found is not None and found[0] is context:
            return found[1]
        sig = resolve(self, context, args, kws)
        if sig is not None:
            _CALL_TYPES[key] = (context, sig)
        return sig

    return get_call_type


#: numba's function types whose resolved calls are remembered within a compile session
_MEMO_CALL_TYPES = (function_types.BaseFunction, function_types.BoundFunction)


_IR_LEAVES = frozenset({str, int, float, bool, type(None), ir.Loc})  # what holds no IR variable
_REC_LIST_VARS = ir.Inst.__dict__["_rec_list_vars"]


def _rec_list_vars(self, val):
    """``Inst._rec_list_vars`` (the IR variables in ``val``, depth first, in numba's order), with
    the common containers and leaves told apart by their exact type instead of four
    ``isinstance`` tests and a call per value: numba lists an instruction's variables each time
    it recomputes the uses and definitions of a function, about ten times per compile."""
    cls = type(val)
    if cls is dict:
        values = val.values()
    elif cls is list or cls is tuple:
        values = val
    else:
        return _REC_LIST_VARS(self, val)
    found = []
    for value in values:
        cls = type(value)
        if cls is ir.Var:
            found.append(value)
        elif cls is ir.Expr:  # (its list_vars: its keywords')
            found.extend(_rec_list_vars(value, value._kws))
        elif cls not in _IR_LEAVES:
            found.extend(_rec_list_vars(self, value))
    return found


_HAS_LOC = {}  # implementation -> whether it takes ``loc`` (numba asks inspect.signature each lowering)


def _has_loc(fn):
    try:
        return _HAS_LOC[fn]
    except KeyError:
        _HAS_LOC[fn] = found = _NUMBA_HAS_LOC(fn)
        return found
    except TypeError:  # pragma: no cover - an unhashable implementation
        return _NUMBA_HAS_LOC(fn)


_NUMBA_HAS_LOC = numba_base._has_loc


_HOLDS_MEMINFO = {}  # (data model manager, type) -> whether a value of the type holds an NRT meminfo


def _holds_meminfo(dmm, builder, ty):
    """Whether :meth:`NRTContext.get_meminfos` finds a meminfo in a value of type ``ty`` (its model
    has one, or a member does, recursively; listing the members emits no code)."""
    key = (dmm, ty)
    try:
        return _HOLDS_MEMINFO[key]
    except KeyError:
        pass
    except TypeError:  # pragma: no cover - an unhashable type
        return True
    model = dmm[ty]
    found = model.has_nrt_meminfo() or any(_holds_meminfo(dmm, builder, member) for member, _ in model.traverse(builder))
    _HOLDS_MEMINFO[key] = found
    return found


def _get_meminfos(self, builder, ty, val):
    """``NRTContext.get_meminfos`` (the ``(type, meminfo)`` pairs inside ``val``, in numba's
    order) without reading the members that hold none.

    numba reads every member of a value to look for meminfos: an array's seven fields and its
    shape and strides, a record's scalars, each an ``extractvalue`` that nothing uses. Every
    reference count of a record of arrays (a variable's end, a call's arguments) emitted them: a
    quarter of a cold SQR fit's IR text, lowered, printed, parsed and removed by LLVM (cold fit
    CPU about 62 -> 56 s). The meminfos found, hence the reference counting, are the same."""
    dmm = self._context.data_model_manager
    model = dmm[ty]
    meminfos = []
    if model.has_nrt_meminfo():
        meminfos.append((ty, model.get_nrt_meminfo(builder, val)))
    for member, getter in model.traverse(builder):
        if _holds_meminfo(dmm, builder, member):
            meminfos.extend(_get_meminfos(self, builder, member, getter(val)))
    return meminfos


_NUMBA_GET_MEMINFOS = NRTContext.get_meminfos


def _numba_llvm_lock_hooks():
    """numba's callbacks on the LLVM lock (they broadcast a ``numba:llvm_lock`` event at every
    call into LLVM, tens of thousands per cold fit, for numba's lock-time statistics)."""
    lock = llvm_ffi.lib._lock
    return lock, [hook for hook in lock._cblist if getattr(hook[0], "__module__", None) == "numba.core.base"]


@contextlib.contextmanager
def _compile_session():
    """The outermost compile of a kernel, with Python's cyclic garbage collector paused,
    numba's error messages unformatted, its compile flags hashed and compared cheaply
    (:data:`_FAST_CONFIG`), its LLVM-lock events off, the signatures of its function types
    remembered (:func:`_memo_call_type`), the variables of its IR instructions listed without a
    call per value (:func:`_rec_list_vars`), whether an implementation takes ``loc`` asked
    once per implementation (:func:`_has_loc`) and the meminfos of a value found without reading
    its other members (:func:`_get_meminfos`); numba's originals are restored afterwards,
    whatever happened.

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
    undo = []
    try:
        _SESSION[0] = True
        undo.append(lambda: _SESSION.__setitem__(0, False))
        if gc.isenabled():
            gc.disable()
            undo.append(gc.enable)
        scheme = errors.termcolor()
        if hasattr(scheme, "_markup"):
            scheme._markup = lambda msg, *args, **kwargs: msg
            undo.append(lambda: delattr(scheme, "_markup"))
        saved = {name: TargetConfig.__dict__[name] for name in _FAST_CONFIG}
        undo.append(lambda: [setattr(TargetConfig, name, method) for name, method in saved.items()])
        for name, method in _FAST_CONFIG.items():
            setattr(TargetConfig, name, method)
        ir.Inst._rec_list_vars = _rec_list_vars
        undo.append(functools.partial(setattr, ir.Inst, "_rec_list_vars", _REC_LIST_VARS))
        numba_base._has_loc = _has_loc
        undo.append(functools.partial(setattr, numba_base, "_has_loc", _NUMBA_HAS_LOC))
        NRTContext.get_meminfos = _get_meminfos
        undo.append(functools.partial(setattr, NRTContext, "get_meminfos", _NUMBA_GET_MEMINFOS))
        for cls in _MEMO_CALL_TYPES:
            undo.append(functools.partial(setattr, cls, "get_call_type", cls.__dict__["get_call_type"]))
            cls.get_call_type = _memo_call_type(cls.__dict__["get_call_type"])
        lock, hooks = _numba_llvm_lock_hooks()
        for hook in hooks:
            lock._cblist.remove(hook)
            undo.append(functools.partial(lock._cblist.append, hook))
        yield
    finally:
        for restore in reversed(undo):
            restore()


_PACKAGE = __name__.partition(".")[0]


def _is_record(fe_type) -> bool:
    """Whether ``fe_type`` is the numba type of a named tuple class of this package (a record)."""
    return getattr(getattr(fe_type, "instance_class", None), "__module__", "").startswith(_PACKAGE + ".")


class _RecordModel:
    """The argument passing of the package's records: a record is one argument of a kernel, an LLVM
    struct value, instead of numba's one argument per scalar inside it (every array's seven or
    nine fields, recursively).

    numba flattens a tuple argument at every call: the caller takes each scalar out of the record
    (an ``extractvalue`` naming the record's whole LLVM type) and the callee puts them back
    together (an ``insertvalue`` each). A record of dozens of arrays passed down a chain of
    kernels made those an eighth of a cold SQR fit's IR lines and a fifth of its text (5.8 of
    28.7 MB), built in Python, printed, parsed and removed by LLVM. LLVM passes a struct
    argument as its scalars in turn; the values and the arithmetic are the same. Mixed into numba's
    tuple models for the package's named tuples only (:func:`_record_models`): other code's
    tuples, and their cached code, are numba's."""

    def get_argument_type(self):
        return self.get_value_type()

    def as_argument(self, builder, value):
        return value

    def from_argument(self, builder, value):
        return value


class _Record(_RecordModel, TupleModel):
    """A record of fields of different types."""


class _UniformRecord(_RecordModel, UniTupleModel):
    """A record whose fields have one type."""


_NUMBA_MODELS = {types.NamedTuple: TupleModel, types.NamedUniTuple: UniTupleModel}


def _record_models():
    """Pass the package's records whole (:class:`_RecordModel`) in every kernel compiled from now
    on, for the whole process: the kernels compiled already take them so, and new ones must call
    them alike (also once the accelerator is off: see :func:`_suspend`)."""
    for fe_class, numba_model in _NUMBA_MODELS.items():
        record = _Record if numba_model is TupleModel else _UniformRecord

        def handler(dmm, fe_type, numba_model=numba_model, record=record):
            return (record if _is_record(fe_type) else numba_model)(dmm, fe_type)

        handler.numba_model = numba_model
        default_manager.register(fe_class, handler)
    for fe_type in [t for t in default_manager._cache if _is_record(t)]:  # (looked up before: none in a fit)
        del default_manager._cache[fe_type]


class KernelDispatcher(CPUDispatcher):
    """A numba dispatcher that types calls from other kernels without literal constants
    (unless ``by_constant``: numba's own rule, one specialisation per constant value) and
    compiles them in ``internal``, its twin without Python entry points; numba's own
    dispatcher once the accelerator is off."""

    by_constant = False
    internal = None

    def get_call_template(self, args, kws):
        """Compile (once) for the argument types with constants widened to their plain type."""
        if not _ACTIVE[0]:
            return super().get_call_template(args, kws)
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
        waits for it and loads it from the cache. Should the outermost compile raise, numba's own
        pipeline compiles ``sig`` again: the accelerator is switched off if that succeeds."""
        if not _ACTIVE[0]:
            return super().compile(sig)
        with global_compiler_lock:
            if _SESSION[0]:
                return self._compile(sig)
            try:
                with _compile_session():
                    return self._compile(sig)
            except Exception as error:
                stamped = _suspend()
                try:
                    entry = super().compile(sig)
                except BaseException:
                    _resume(stamped)  # the kernel's own error, as numba reports it
                    raise
                disable(error)
                return entry

    def _compile(self, sig):
        cache = self._cache
        if not isinstance(cache, _PackageStampedCache) or tuple(sigutils.normalize_signature(sig)[0]) in self.overloads:
            return super().compile(sig)
        with cache.claim():
            return super().compile(sig)

    def get_overload(self, sig):
        """The compiled function for ``sig``: this dispatcher's, else its twin's (for lowering a call)."""
        args = tuple(sigutils.normalize_signature(sig)[0])
        if _ACTIVE[0] and self.internal is not None and args not in self.overloads:
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
        """0: there is no machine code (callers link the IR)."""
        self._ensure_finalized()
        return 0


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


class _KernelCompiler(Compiler):
    """numba's nopython pipeline, lowering into a :class:`_KernelLibrary` (numba's own pipelines
    once the accelerator is off)."""

    library_class = _KernelLibrary

    def define_pipelines(self):
        if not _ACTIVE[0]:
            return super().define_pipelines()
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
    """numba's on-disk cache, stale when any source file of the kernel's package changes, read and
    written under a lock, in files of its own (``NAME.accel.nbi``) beside numba's, so that
    processes with and without the accelerator keep their caches; off with the accelerator.

    numba checks only the file that defines a kernel, but a cached kernel holds the code of
    every kernel it calls (from other modules too) and the module constants it read: an edit
    or an upgrade that touched only those would load stale code. numba also writes a kernel's
    index and data files unlocked, so two processes saving different signatures at once (test
    or joblib workers on a cold cache) could leave an index entry naming the other's code.
    """

    def __init__(self, py_func, root):
        super().__init__(py_func)
        base = self._impl.filename_base + ".accel"
        self._cache_file = IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=base,
            source_stamp=(self._impl.locator.get_source_stamp(), package_source_stamp(root)))
        self._lock_path = os.path.join(self._cache_path, base + ".lock")

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
        if not _ACTIVE[0]:
            return None
        with _file_lock(self._lock_path):
            return super().load_overload(sig, target_context)

    def save_overload(self, sig, data):
        if not _ACTIVE[0]:
            return
        with _file_lock(self._lock_path):
            super().save_overload(sig, data)


class _RecordsCache(FunctionCache):
    """numba's cache of a kernel once the accelerator is off in a process, in files of its own
    (``NAME.records.nbi``): its code passes the package's records whole (:func:`_record_models`,
    for the whole process), which the code in numba's own files, written and read by processes
    without the accelerator, does not."""

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = IndexDataCacheFile(cache_path=self._cache_path,
                                              filename_base=self._impl.filename_base + ".records",
                                              source_stamp=self._impl.locator.get_source_stamp())


def _package_root(func) -> str | None:
    package = sys.modules.get((func.__module__ or "").partition(".")[0])  # None for exec'd code
    path = getattr(package, "__path__", None)  # a package (not a script or a lone module)
    return os.path.abspath(list(path)[0]) if path else None


def _dispatcher(func, options, by_constant, cache, pipeline_class):
    dispatcher = KernelDispatcher(py_func=func, locals={}, targetoptions=options, pipeline_class=pipeline_class)
    dispatcher.by_constant = by_constant
    if cache:
        root = _package_root(func)
        if root is None:
            dispatcher.enable_caching()
        else:
            dispatcher._cache = _PackageStampedCache(func, root)
            _DISPATCHERS.append(dispatcher)
    return dispatcher


def kernel(func, options, by_constant, cache):
    """``func`` compiled by a :class:`KernelDispatcher` (and its link-only twin) with the numba
    target ``options``; None once the accelerator is off (it is switched off, with its warning,
    should this fail)."""
    if not _ACTIVE[0]:
        return None
    try:
        options = dict(options, nopython=True, no_cfunc_wrapper=True)
        dispatcher = _dispatcher(func, options, by_constant, cache, _KernelCompiler)
        # the twin: a copy of the function under its own name
        twin = FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__)
        twin.__kwdefaults__ = func.__kwdefaults__
        twin.__module__ = func.__module__
        twin.__qualname__ = func.__qualname__ + "__from_kernels"
        dispatcher.internal = _dispatcher(twin, dict(options, no_cpython_wrapper=True), by_constant, False,
                                          _LinkOnlyCompiler)
    except Exception as error:
        disable(error)
        return None
    return dispatcher


TESTED_PARAMETERS = {
    # what the accelerator calls or overrides: (class, name) -> parameter names, as in the tested numba
    (CPUCodegen, "_function_pass_manager"): ["self", "kwargs"],
    (CPUCodegen, "_add_module"): ["self", "module"],
    (JITCodeLibrary, "_optimize_functions"): ["self", "ll_module"],
    (JITCodeLibrary, "_optimize_final_module"): ["self"],
    (JITCodeLibrary, "_finalize_final_module"): ["self"],
    (JITCodeLibrary, "_finalize_dynamic_globals"): ["self"],
    (JITCodeLibrary, "_verify_declare_only_symbols"): ["self"],
    (JITCodeLibrary, "_ensure_finalized"): ["self"],
    (JITCodeLibrary, "enable_object_caching"): ["self"],
    (JITCodeLibrary, "get_pointer_to_function"): ["self", "name"],
    (JITCodeLibrary, "__init__"): ["self", "codegen", "name"],
    (IndexDataCacheFile, "__init__"): ["self", "cache_path", "filename_base", "source_stamp"],
    (IndexDataCacheFile, "_load_index"): ["self"],
    (FunctionCache, "__init__"): ["self", "py_func"],
    (FunctionCache, "_index_key"): ["self", "sig", "codegen"],
    (FunctionCache, "load_overload"): ["self", "sig", "target_context"],
    (FunctionCache, "save_overload"): ["self", "sig", "data"],
    (CPUDispatcher, "__init__"): ["self", "py_func", "locals", "targetoptions", "pipeline_class"],
    (CPUDispatcher, "get_call_template"): ["self", "args", "kws"],
    (CPUDispatcher, "fold_argument_types"): ["self", "args", "kws"],
    (CPUDispatcher, "typeof_pyval"): ["self", "val"],
    (CPUDispatcher, "get_overload"): ["self", "sig"],
    (CPUDispatcher, "compile"): ["self", "sig"],
    (CPUDispatcher, "enable_caching"): ["self"],
    (Compiler, "define_pipelines"): ["self"],
    (PassManager, "add_pass_after"): ["self", "pass_cls", "location"],
    (PassManager, "finalize"): ["self"],
    (numba_base, "_has_loc"): ["fn"],
    (DataModelManager, "register"): ["self", "fetypecls", "handler"],
    (TupleModel, "__init__"): ["self", "dmm", "fe_type"],
    (UniTupleModel, "__init__"): ["self", "dmm", "fe_type"],
    (NRTContext, "get_meminfos"): ["self", "builder", "ty", "val"],
    (ir.Inst, "_rec_list_vars"): ["self", "val"],
    (function_types.BaseFunction, "get_call_type"): ["self", "context", "args", "kws"],
    (function_types.BoundFunction, "get_call_type"): ["self", "context", "args", "kws"],
    (TargetConfig, "values"): ["self"],
    (TargetConfig, "__eq__"): ["self", "other"],
    (TargetConfig, "__hash__"): ["self"],
}


def _check():
    """Raise :class:`Unsupported` unless what the accelerator patches has the tested signatures and
    behaves as it assumes (the fast flag methods agree with numba's, numba's LLVM-lock hooks and
    error markup are where they are patched)."""
    for (owner, name), expected in TESTED_PARAMETERS.items():
        member = owner.__dict__.get(name) if name in ("values", "__eq__", "__hash__") else getattr(owner, name, None)
        try:
            found = list(inspect.signature(member).parameters)
        except (TypeError, ValueError):
            found = None
        if found != expected:
            raise Unsupported(f"{owner.__name__}.{name} takes {found}, tested with {expected}")
    handlers = [(default_manager._handlers.get(fe_class), model) for fe_class, model in _NUMBA_MODELS.items()]
    if any(handler is not model and getattr(handler, "numba_model", None) is not model for handler, model in handlers):
        raise Unsupported("numba's named tuples have other data models than its tuples")
    fields = DefaultPassBuilder.define_nopython_pipeline.__code__.co_varnames[:2]
    if fields != ("state", "name"):
        raise Unsupported(f"DefaultPassBuilder.define_nopython_pipeline takes {fields}")
    # the flags: numba's values, equality and hash against the fast replacements
    options = Flags.options
    if not options or not all(isinstance(o, targetconfig.Option) and hasattr(o, "_default") for o in options.values()):
        raise Unsupported("numba's Flags options have no default")
    first, second, third = Flags(), Flags(), Flags()
    name = sorted(options)[0]
    setattr(second, name, getattr(first, name))  # set to its default: equal, though set
    setattr(third, "nrt", not first.nrt)
    for a, b in ((first, second), (first, third), (second, third), (first, first)):
        if (TargetConfig.values(a) != _config_values(a) or TargetConfig.__eq__(a, b) != _config_eq(a, b)
                or TargetConfig.__hash__(a) != _config_hash(a)):
            raise Unsupported("numba's compile flags compare or hash differently")
    lock = getattr(getattr(llvm_ffi, "lib", None), "_lock", None)
    hooks = getattr(lock, "_cblist", None)
    if not isinstance(hooks, list) or not all(isinstance(h, tuple) and len(h) == 2 and all(map(callable, h))
                                              for h in hooks):
        raise Unsupported("llvmlite's lock callbacks are not a list of (acquire, release) pairs")
    scheme = errors.termcolor()
    if hasattr(scheme, "_markup"):
        scheme._markup = lambda msg, *args, **kwargs: msg
        try:
            if scheme.errmsg("parsimony") != "parsimony":
                raise Unsupported("numba's error markup does not go through _markup")
        finally:
            del scheme._markup


def install():
    """Switch the accelerator on after :func:`_check` (off with a warning if that fails); returns
    whether it is on."""
    try:
        _check()
    except Exception as error:
        disable(error)
        return False
    _record_models()
    _ACTIVE[0] = True
    return True


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


def precompile(steps, compiling):
    """:func:`parsimony._numba.precompile` with the accelerator (``compiling``: called when this
    process starts waiting for a helper's compiles)."""
    if not _ACTIVE[0] or not all(isinstance(kernel, KernelDispatcher) for kernel, _, _ in steps):
        return
    try:
        _precompile(steps, compiling)
    except Exception as error:  # pragma: no cover - the fit's own calls compile what it needs
        disable(error)


def _precompile(steps, compiling):
    steps = [(kernel, _argument_types(kernel, args), where) for kernel, args, where in steps]
    if all((kernel, sig) in _PRECOMPILED for kernel, sig, _ in steps):
        return
    helped = [(kernel, sig) for kernel, sig, where in steps if where == "helper"]
    shared = [(kernel, sig) for kernel, sig, where in steps if where == "main"]
    cold = any(not _cached(kernel, sig) for kernel, sig in shared)
    helping = bool(helped) and cold and _start_helper(helped, shared)
    if not helping:
        for kernel, sig, where in steps:
            if where == "main" or (kernel, sig) in _HELPED:
                _compile(kernel, sig)
            _PRECOMPILED.add((kernel, sig))
        return
    _HELPED.update(helped)
    compiling()  # what this process now waits for is compile time too
    # its own steps, its spare ones, then the helper's from the last (the helper works from the
    # first): each one that no process holds, so the two meet and neither waits for the other
    # while a step is left; then the steps the helper was compiling (loaded once it is done)
    own = [(kernel, sig) for kind in ("main", "spare") for kernel, sig, where in steps if where == kind]
    later = [(kernel, sig) for kernel, sig in own + helped[::-1] if not _compile(kernel, sig, wait=False)]
    for kernel, sig in later:
        _compile(kernel, sig)
    _PRECOMPILED.update((kernel, sig) for kernel, sig, _ in steps)


def _compile(kernel, sig, wait=True) -> bool:
    """Compile ``kernel`` for ``sig`` (or load it from the cache); without ``wait``, only when no
    other process holds its cache lock. Returns whether it was compiled or loaded."""
    stamped = isinstance(kernel._cache, _PackageStampedCache)
    claim = kernel._cache.claim(wait) if stamped else contextlib.nullcontext(True)
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
    if fcntl is None or wanted == "0" or _usable_cpus() < 2 or not sys.executable:
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
