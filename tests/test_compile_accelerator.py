"""The compile accelerator (parsimony/_compile_accelerator.py): one specialisation per argument
type, kernels called from kernels compiled to IR only, compile sessions that restore numba's
originals, the package-stamped and locked cache, precompile and its helper process. Skipped
where the accelerator is off (an untested numba, or PARSIMONY_COMPILE_ACCELERATOR=0): its
fallback is tested in test_compile_fallback.py."""

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

from parsimony._numba import accelerated, compiled_kernels, njit, njit_by_constant, precompile

pytestmark = pytest.mark.skipif(not accelerated(), reason="the compile accelerator is off in this environment")
if accelerated():
    from numba.core import errors, event, types

    from parsimony._compile_accelerator import KernelDispatcher, _LinkOnlyLibrary


def _kernels(decorator):
    """A kernel and a caller that passes it the constants 0 and 1 and a variable."""

    @decorator(cache=False)
    def scaled(a, k):
        return a[0] * k

    @njit(cache=False)
    def three_calls(a, i):
        return scaled(a, 0) + scaled(a, 1) + scaled(a, i)

    return scaled, three_calls


@pytest.mark.parametrize("decorator, specialisations", [(njit, 1), (njit_by_constant, 3)])
def test_constants_do_not_multiply_specialisations(decorator, specialisations):
    scaled, three_calls = _kernels(decorator)
    before = compiled_kernels()
    assert three_calls(np.arange(1.0, 4.0), 5) == 0.0 + 1.0 + 5.0
    # numba.njit compiles scaled for Literal[int](0), Literal[int](1) and int64; njit only for int64,
    # in the twin without Python entry points
    assert len(scaled.internal.signatures) == specialisations
    assert scaled.signatures == []
    # compiled to IR for its caller only: no optimisation or machine code of its own
    assert all(isinstance(c.library, _LinkOnlyLibrary) for c in scaled.internal.overloads.values())
    assert not isinstance(next(iter(three_calls.overloads.values())).library, _LinkOnlyLibrary)
    assert isinstance(scaled, KernelDispatcher)
    assert compiled_kernels() == before + 1 + specialisations
    # a call from Python compiles the kernel with its entry point
    assert scaled(np.arange(1.0, 4.0), 5) == 5.0
    assert len(scaled.signatures) == 1
    assert compiled_kernels() == before + 2 + specialisations


def test_kernels_reuse_an_entry_compiled_for_python():
    scaled, three_calls = _kernels(njit)
    assert scaled(np.arange(1.0, 4.0), 2) == 2.0
    before = compiled_kernels()
    assert three_calls(np.arange(1.0, 4.0), 5) == 6.0
    assert scaled.internal.signatures == []  # the int64 entry compiled for Python serves the caller
    assert compiled_kernels() == before + 1


def test_a_call_that_leaves_out_a_default_reuses_the_entry():
    @njit(cache=False)
    def scaled(a, k, offset=1.0):
        return a[0] * k + offset

    @njit(cache=False)
    def caller(a, k):
        return scaled(a, k) + scaled(a, k, offset=0.0)

    assert scaled(np.arange(1.0, 4.0), 2.0) == 3.0  # the entry, its default left out
    assert caller(np.arange(1.0, 4.0), 2.0) == 3.0 + 2.0
    # the first call links the entry (same types, default included); the second passes a float
    # for offset, a signature no entry has: a link-only twin
    assert len(scaled.signatures) == 1 and len(scaled.internal.signatures) == 1
    assert isinstance(scaled.signatures[0][2], types.Omitted) and scaled.internal.signatures[0][2] == types.float64


def test_compiles_pause_the_garbage_collector_and_numbas_message_markup():
    seen = []

    class Watch(event.Listener):
        def on_start(self, ev):
            seen.append((gc.isenabled(), errors.termcolor().errmsg("msg")))

        def on_end(self, ev):
            pass

    @njit(cache=False)
    def inner(x):
        return x * 2

    @njit(cache=False)
    def outer(x):
        return inner(x) + 1

    assert gc.isenabled()
    markup = errors.termcolor().errmsg("msg")
    watch = Watch()
    event.register("numba:compile", watch)
    try:
        assert outer(1.0) == 3.0
    finally:
        event.unregister("numba:compile", watch)
    assert len(seen) == 2 and all(state == (False, "msg") for state in seen)  # outer and nested compiles
    assert gc.isenabled() and errors.termcolor().errmsg("msg") == markup


def test_compiles_remember_call_types_and_restore_numbas_methods():
    from numba.core import base, ir
    from numba.core.runtime.context import NRTContext
    from numba.core.types import functions

    from parsimony import _compile_accelerator as accelerator

    originals = (functions.BaseFunction.get_call_type, functions.BoundFunction.get_call_type,
                 ir.Inst._rec_list_vars, base._has_loc, NRTContext.get_meminfos)
    seen = []

    class Watch(event.Listener):
        def on_start(self, ev):
            seen.append((functions.BaseFunction.get_call_type, functions.BoundFunction.get_call_type,
                         ir.Inst._rec_list_vars, base._has_loc, NRTContext.get_meminfos))

        def on_end(self, ev):
            pass

    @njit(cache=False)
    def arithmetic(a, x):
        return a.sum() * x + a[0] - x

    watch = Watch()
    event.register("numba:compile", watch)
    try:
        assert arithmetic(np.arange(1.0, 4.0), 2.0) == 6.0 * 2.0 + 1.0 - 2.0
    finally:
        event.unregister("numba:compile", watch)
    assert seen and all(a is not b for a, b in zip(seen[0], originals))
    assert (functions.BaseFunction.get_call_type, functions.BoundFunction.get_call_type, ir.Inst._rec_list_vars,
            base._has_loc, NRTContext.get_meminfos) == originals
    # what was remembered is numba's own answer
    remembered = [(key, sig) for key, (_, sig) in accelerator._CALL_TYPES.items()]
    assert remembered
    from numba.core.registry import cpu_target

    for (fnty, args, kws, _), sig in remembered[:50]:
        assert type(fnty).get_call_type(fnty, cpu_target.typing_context, args, dict(kws)) == sig


def test_reference_counting_finds_the_meminfos_numba_finds():
    from collections import namedtuple

    from llvmlite import ir as llvmir
    from numba import typeof
    from numba.core.registry import cpu_target
    from numba.core.runtime.context import NRTContext

    from parsimony._compile_accelerator import _get_meminfos

    Inner = namedtuple("Inner", ["a", "s", "flag"])
    Outer = namedtuple("Outer", ["x", "inner", "k", "pair", "none"])
    value = Outer(np.zeros(3, dtype=np.int64), Inner(np.zeros((2, 2)), 1.0, True), 4,
                  (np.zeros(2), np.zeros(2)), (1.0, 2))
    ty = typeof(value)
    context = cpu_target.target_context
    nrt = NRTContext(context, True)  # (not context.nrt: cached on the context, its copies would inherit it)
    function = llvmir.Function(llvmir.Module(), llvmir.FunctionType(llvmir.VoidType(), [context.get_value_type(ty)]),
                               "f")
    builder = llvmir.IRBuilder(function.append_basic_block())
    arg = function.args[0]

    def path(meminfo):
        """The extractvalue indices from the argument to ``meminfo``."""
        chain = []
        while isinstance(meminfo, llvmir.instructions.ExtractValue):
            chain.append(tuple(meminfo.indices))
            meminfo = meminfo.aggregate
        assert meminfo is arg
        return chain[::-1]

    before = len(builder.block.instructions)
    numbas = NRTContext.get_meminfos(nrt, builder, ty, arg)
    emitted = len(builder.block.instructions) - before
    ours = _get_meminfos(nrt, builder, ty, arg)
    assert [t for t, _ in ours] == [t for t, _ in numbas] and len(ours) == 4  # x, inner.a, pair's two, in order
    assert [path(m) for _, m in ours] == [path(m) for _, m in numbas]
    assert len(builder.block.instructions) - before - emitted < emitted / 3  # the members without one: not read


def test_the_packages_records_pass_to_kernels_whole():
    from collections import namedtuple

    from numba import typeof
    from numba.core.registry import cpu_target

    from parsimony.symbolic._intervals import make_box

    @njit(cache=False)
    def width(box, i):
        return box.hi[i] - box.lo[i] if box.active else box.high - box.low

    @njit(cache=False)
    def total(box):
        s = 0.0
        for i in range(box.lo.shape[0]):
            s += width(box, i)
        return s

    box = make_box(np.zeros(3), np.arange(1.0, 4.0), -1.0, 2.0)
    assert total(box) == 6.0 and total(box._replace(active=False)) == 9.0
    # a record is one LLVM argument (numba flattens it into its scalars: two arrays of 7, two floats, a bool)
    packer = cpu_target.target_context.get_arg_packer
    assert len(packer([typeof(box)]).argument_types) == 1
    Other = namedtuple("Other", box._fields)  # another module's named tuple: numba's flattening
    assert len(packer([typeof(Other(*box))]).argument_types) == 2 * 7 + 3
    uniform = typeof(box._replace(low=np.zeros(1), high=np.ones(1), active=np.ones(1)))
    assert len(packer([uniform]).argument_types) == 1


def test_ir_variables_are_listed_as_numba_lists_them():
    from numba.core import compiler, ir

    from parsimony._compile_accelerator import _rec_list_vars
    from parsimony.symbolic._optimize import nelder_mead

    func_ir = compiler.run_frontend(nelder_mead.py_func)
    statements = [stmt for block in func_ir.blocks.values() for stmt in block.body]
    assert len(statements) > 100
    exprs = [stmt.value for stmt in statements if isinstance(getattr(stmt, "value", None), ir.Expr)]
    for inst, fields in [(stmt, stmt.__dict__) for stmt in statements] + [(e, e._kws) for e in exprs]:
        ours = _rec_list_vars(inst, fields)
        assert ours == ir.Inst._rec_list_vars(inst, fields) == inst.list_vars()
        assert all(isinstance(v, ir.Var) for v in ours)
    assert any(len(_rec_list_vars(e, e._kws)) >= 3 for e in exprs)  # a call's arguments, in order


def test_a_kernels_own_error_is_numbas_and_keeps_the_accelerator(recwarn):
    @njit(cache=False)
    def typo(x):
        return x.no_such_attribute

    @njit(cache=False)
    def calls_typo(x):
        return typo(x) + 1

    markup = errors.termcolor().errmsg("msg")
    with pytest.raises(errors.TypingError, match="no_such_attribute"):
        calls_typo(1.0)
    # numba's own pipeline failed too: the error is the kernel's, the accelerator stays on
    assert accelerated() and not recwarn.list
    assert gc.isenabled() and errors.termcolor().errmsg("msg") == markup


def test_a_second_process_loads_every_kernel_from_the_cache(tmp_path):
    (tmp_path / "kernels_mod.py").write_text(
        "from parsimony._numba import njit\n"
        "@njit\n"
        "def inner(a, k):\n"
        "    return a[0] * k\n"
        "@njit\n"
        "def outer(a, i):\n"
        "    return inner(a, 2) + inner(a, i)\n"
    )
    code = ("import numpy as np, kernels_mod\nfrom parsimony._numba import compiled_kernels\n"
            "print(kernels_mod.outer(np.ones(3), 3), kernels_mod.inner(np.ones(3), 4), compiled_kernels())\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                           cwd=tmp_path).stdout.split() for _ in range(2)]
    assert runs[0] == ["5.0", "4.0", "3"]  # outer, inner from outer (no entry point), inner from Python
    assert runs[1] == ["5.0", "4.0", "0"]


def test_a_kernel_without_a_source_file_compiles_uncached_and_keeps_the_accelerator(recwarn):
    # code from exec or python -c has no file (and may have no module): numba cannot cache it, and
    # the accelerator used to switch itself off on its missing __module__
    namespace = {}
    exec("def plus_one(x):\n    return x + 1\n", namespace)
    plus_one = namespace["plus_one"]
    plus_one.__module__ = None
    assert njit(plus_one)(41) == 42
    assert accelerated() and not recwarn.list


def test_cached_kernels_go_stale_when_any_file_of_their_package_changes(tmp_path):
    # numba itself checks only the defining file, so f would keep the g it was compiled with
    package = tmp_path / "src" / "stamped"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "b.py").write_text("from parsimony._numba import njit\n\n@njit\ndef g(x):\n    return x + 1\n")
    (package / "a.py").write_text("from parsimony._numba import njit\nfrom .b import g\n\n"
                                  "@njit\ndef f(x):\n    return g(x) * 10\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    script = "from parsimony._numba import compiled_kernels\nfrom stamped.a import f\nprint(f(1), compiled_kernels())"

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return out.stdout.split()

    assert run() == ["20", "2"]  # f's entry and g's link-only twin compiled
    assert run() == ["20", "0"]  # loaded from the cache
    (package / "b.py").write_text("from parsimony._numba import njit\n\n@njit\ndef g(x):\n    return x + 2\n")
    assert run() == ["30", "2"]


@pytest.mark.skipif(sys.platform == "win32", reason="the cache lock uses fcntl")
def test_cache_files_are_written_under_a_lock(tmp_path):
    # numba writes a kernel's index and data files unlocked; two processes saving different
    # signatures at once could pair an index entry with the other's code
    import fcntl

    package = tmp_path / "src" / "locked"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "k.py").write_text("from parsimony._numba import njit\n\n@njit\ndef twice(x):\n    return 2 * x\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    lock = subprocess.run([sys.executable, "-c", "from locked.k import twice\nprint(twice._cache._lock_path)"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        process = subprocess.Popen([sys.executable, "-c", "from locked.k import twice\nprint(twice(21))"], env=env,
                                   stdout=subprocess.PIPE, text=True)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=5)  # waits for the lock to look the kernel up in the cache
        fcntl.flock(handle, fcntl.LOCK_UN)
    assert process.communicate(timeout=120)[0].split() == ["42"]


_PLANNED = """
import numpy as np
from parsimony._numba import njit

@njit
def leaf(a, k):
    return a[0] * k

@njit
def middle(a, k):
    return leaf(a, k) + 1.0

@njit
def top(a, k):
    return middle(a, k) * 2.0

def steps():
    return [(top, (np.ones(3), 1.0), "main"), (middle, (np.ones(3), 1.0), "helper")]
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the helper process needs the cache lock (fcntl)")
@pytest.mark.parametrize("helper", ["1", "0"])
def test_precompile_hands_a_step_to_a_helper_process(tmp_path, helper):
    package = tmp_path / "src" / "planned"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "k.py").write_text(_PLANNED)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PARSIMONY_NUMBA_HELPER=helper,
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    script = ("import numpy as np\nfrom parsimony._numba import precompile, compiled_kernels\n"
              "from parsimony._compile_accelerator import _HELPERS\n"
              "from planned import k\n"
              "precompile(k.steps())\n"
              "print(k.top(np.ones(3), 3.0), len(k.top.signatures), len(k.middle.signatures),\n"
              "      len(k.middle.internal.signatures), len(_HELPERS), compiled_kernels())\n")

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return out.stdout.split(), out.stderr

    first, stderr = run()
    if helper == "1" and len(os.sched_getaffinity(0)) > 1:
        # middle is an entry, compiled by the helper (or here, if top needed it before the helper
        # began it) and saved: top's typing loaded it instead of compiling a link-only twin
        assert first[:5] == ["8.0", "1", "1", "0", "1"]
    else:  # top compiled middle's twin, as without precompile
        assert first[:5] == ["8.0", "1", "0", "1", "0"]
    assert int(first[5]) >= 1 and stderr.count("compiling numba kernels, first use only") == 1
    # a second process loads top and starts no helper, though middle's entry may be missing
    env["PARSIMONY_NUMBA_HELPER"] = "1"
    second, stderr = run()
    assert second[:2] == ["8.0", "1"] and second[4:] == ["0", "0"] and stderr == ""


@pytest.mark.skipif(sys.platform == "win32", reason="the helper process needs the cache lock (fcntl)")
@pytest.mark.parametrize("shared", [True, False])
def test_a_helper_links_the_shared_entries_instead_of_compiling_twins(tmp_path, shared):
    package = tmp_path / "src" / "planned"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "k.py").write_text(_PLANNED)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))
    helper = ("import pickle\nimport numpy as np\nfrom parsimony._compile_accelerator import _argument_types, _help\n"
              "from planned import k\n"
              "sig = _argument_types(k.top, (np.ones(3), 1.0))\n"
              f"entries = [('planned.k', 'middle', sig)] if {shared} else []\n"
              "_help(pickle.dumps(([('planned.k', 'top', sig)], entries)))\n"
              "print(len(k.top.signatures), len(k.middle.signatures), len(k.middle.internal.signatures))\n")
    out = subprocess.run([sys.executable, "-c", helper], env=env, capture_output=True, text=True, check=True)
    # shared: middle compiled (and saved) as an entry that top links; else as top's link-only twin
    assert out.stdout.split() == (["1", "1", "0"] if shared else ["1", "0", "1"])
    main = ("import numpy as np\nfrom parsimony._numba import precompile, compiled_kernels\nfrom planned import k\n"
            "precompile([(k.middle, (np.ones(3), 1.0), 'main'), (k.top, (np.ones(3), 1.0), 'main')])\n"
            "print(compiled_kernels(), k.top(np.ones(3), 3.0))\n")
    out = subprocess.run([sys.executable, "-c", main], env=dict(env, PARSIMONY_NUMBA_HELPER="0"),
                         capture_output=True, text=True, check=True)
    # the process that started the helper loads both from the cache (without shared entries, it
    # compiles middle and loads top)
    compiles, value = out.stdout.split()
    assert (compiles == "0") == shared and value == "8.0"


def test_precompile_compiles_the_main_steps_once():
    @njit(cache=False)
    def add(a, k):
        return a[0] + k

    before = compiled_kernels()
    precompile([(add, (np.ones(2), 1), "main")])
    assert len(add.signatures) == 1 and compiled_kernels() == before + 1
    precompile([(add, (np.ones(2), 1), "main")])
    assert add(np.ones(2), 2) == 3.0 and compiled_kernels() == before + 1


def _four_steps():
    """Kernels named by their step: one of this process's, two of the helper's and a spare one."""

    @njit(cache=False)
    def own(a):
        return a[0]

    @njit(cache=False)
    def first(a):
        return a[0] + 1.0

    @njit(cache=False)
    def second(a):
        return a[0] + 2.0

    @njit(cache=False)
    def spare(a):
        return a[0] + 3.0

    a = np.ones(2)
    return [(own, (a,), "main"), (first, (a,), "helper"), (second, (a,), "helper"), (spare, (a,), "spare")]


@pytest.mark.parametrize("helper", [True, False])
def test_precompile_takes_the_helpers_steps_from_the_last(monkeypatch, helper):
    # with a helper (here one that never begins), this process compiles its own steps, its
    # spare ones, then the helper's from the last one (the helper works from the first); without
    # one, its own steps only (the others compile on first use)
    import parsimony._compile_accelerator as accelerator

    order = []
    compile_step = accelerator._compile
    monkeypatch.setattr(accelerator, "_compile", lambda kernel, sig, wait=True: order.append(kernel.py_func.__name__)
                        or compile_step(kernel, sig, wait))
    monkeypatch.setattr(accelerator, "_start_helper", lambda helped, shared=(): helper)
    monkeypatch.setattr(accelerator, "_HELPED", set())
    steps = _four_steps()
    precompile(steps)
    assert order == (["own", "spare", "second", "first"] if helper else ["own"])
    assert [len(kernel.signatures) for kernel, _, _ in steps] == ([1, 1, 1, 1] if helper else [1, 0, 0, 0])


_FITS_USE_THE_PLANNED_TYPES = """
import numpy as np
from parsimony import OptimalSparseRegressionTree, SymbolicQuantileRegressor
from parsimony._compile_accelerator import KernelDispatcher, _argument_types
from parsimony.symbolic import _search
from parsimony.trees import _driver

rng = np.random.default_rng(0)
X = rng.normal(size=(120, 3))  # the additive stage runs from 100 rows
y = X[:, 0] + 0.1 * rng.normal(size=120)
planned = {}
for kernel, args, where in _driver._kernel_steps():
    planned.setdefault(kernel, set()).add(_argument_types(kernel, args))
OptimalSparseRegressionTree(depth_limit=2).fit(X, y).predict(X)
original = _search.precompile
def record(steps):
    for kernel, args, where in steps:
        planned.setdefault(kernel, set()).add(_argument_types(kernel, args))
    original(steps)
_search.precompile = record
for quantile in (0.5, 0.8):
    SymbolicQuantileRegressor(quantile, niterations=1, populations=2, population_size=10, progress=False,
                              random_state=0).fit(X, y).predict(X)
for kernel, sigs in planned.items():  # as entries, or as twins (a helper step compiled here as a callee)
    used = set(map(tuple, kernel.signatures)) | set(map(tuple, kernel.internal.signatures))
    print(kernel.py_func.__name__, "ok" if used <= sigs else "unplanned: %s" % (used - sigs))
"""


def test_fits_call_their_kernels_with_the_planned_types():
    # a plan out of step with a fit costs a cold start a useless compile, then the real one
    out = subprocess.run([sys.executable, "-c", _FITS_USE_THE_PLANNED_TYPES], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = out.stdout.splitlines()
    assert len(lines) >= 9
    assert all(line.endswith(" ok") for line in lines), lines


def test_a_helper_starts_on_its_own_only_when_a_core_is_free(monkeypatch):
    import parsimony._compile_accelerator as numba_policy

    monkeypatch.setattr(numba_policy, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(numba_policy.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert numba_policy._busy()
    monkeypatch.setattr(numba_policy.os, "getloadavg", lambda: (0.5, 1.0, 1.0))
    assert not numba_policy._busy()
