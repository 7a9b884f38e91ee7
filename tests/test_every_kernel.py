"""Every numba kernel of the package compiled and exercised at least once, with results checked.

The check runs in a fresh interpreter on an empty numba cache (a kernel loaded from the cache, or
compiled into its caller, is not compiled on its own): it fits every method on small data,
checks the results against exhaustive searches, closed forms and invariants, then lists the
kernels that were compiled. It is the quick selection CI runs at the declared dependency floors
(``pytest -m kernels``), where the compile accelerator is off.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.kernels

ROOT = Path(__file__).resolve().parents[1]


def _kernels():
    """Every kernel of the package, by ``module.name``, once all its modules are imported."""
    import importlib
    import pkgutil

    import parsimony
    from parsimony import _numba

    skip = {"parsimony.symbolic._pysr", "parsimony.ensembles._cbcd_julia", "parsimony._julia"}
    for info in pkgutil.walk_packages(parsimony.__path__, "parsimony."):
        if info.name not in skip:
            importlib.import_module(info.name)
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("parsimony."):
            for attr, value in vars(module).items():
                if getattr(value, "py_func", None) in _numba._KERNELS and value.py_func.__module__ == name:
                    found[f"{name}.{attr}"] = value
    return found


def _compiled(kernel) -> bool:
    internal = getattr(kernel, "internal", None)
    return bool(kernel.signatures) or (internal is not None and bool(internal.signatures))


def _missed(kernels):
    """The kernels not compiled; one that numba inlines (``inline="always"``) counts as compiled
    when a compiled kernel calls it, or an inlined kernel that counts (a caller's caller)."""
    reached = {name for name, k in kernels.items() if _compiled(k)}
    grew = True
    while grew:
        callers = [kernels[name].py_func.__code__.co_names for name in reached]
        new = {name for name, k in kernels.items() if name not in reached and k.targetoptions.get("inline") == "always"
               and any(k.py_func.__name__ in names for names in callers)}
        reached |= new
        grew = bool(new)
    return sorted(set(kernels) - reached)


def _check_trees():
    from parsimony import OptimalSparseRegressionTree
    from parsimony.trees._driver import warm_up

    sys.path.insert(0, str(ROOT / "tests" / "trees"))
    from _osrt_brute import brute_force_objective

    warm_up()
    rng = np.random.default_rng(3)
    Xb = (rng.random((30, 4)) < 0.5).astype(np.uint8)
    y = rng.normal(size=30) + 2.0 * Xb[:, 0]
    w = rng.uniform(0.5, 2.0, 30)
    for loss, tau in (("squared", 0.5), ("absolute", 0.5), ("quantile", 0.8)):
        for depth, weights in ((2, None), (3, w)):
            model = OptimalSparseRegressionTree(regularization=0.02, depth_limit=depth, loss=loss, quantile=tau,
                                                binarizer=None).fit(Xb, y, sample_weight=weights)
            best = brute_force_objective(Xb, y, 0.02, depth, loss=loss, sample_weight=weights, tau=tau)
            assert model.status_ == "optimal" and abs(model.objective_ - best) < 1e-9, (loss, depth, model.objective_,
                                                                                        best)
    # the k-Means bounds computed outside the kernel (backend="julia"'s path, with the native twin)
    from parsimony.losses import Absolute
    from parsimony.trees._driver import find_tree
    from parsimony.trees._kmeans import cluster_costs

    native = find_tree(Xb, y, Absolute(), 0.02, 3)
    hosted = find_tree(Xb, y, Absolute(), 0.02, 3, cluster_costs=cluster_costs)
    assert (hosted.objective, hosted.stats["bounds"]) == (native.objective, native.stats["bounds"])
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0.0, 3.0, -1.0) + 0.3 * rng.normal(size=60)
    for loss in ("squared", "absolute", "quantile"):
        model = OptimalSparseRegressionTree(regularization=0.05, depth_limit=2, loss=loss, quantile=0.7).fit(X, y)
        best = brute_force_objective(model.binarizer_.transform(X), y, 0.05, 2, loss=loss, tau=0.7)
        assert model.status_ == "optimal" and abs(model.objective_ - best) < 1e-9, (loss, model.objective_, best)


def _signatures(run):
    """Call ``run()`` and return, for each package kernel it compiled, the argument types it was
    compiled for, as an entry called from Python or as the compile accelerator's twin linked into
    its callers (``name__from_kernels``: counted as the kernel)."""
    from numba.core import event

    from parsimony import _numba

    with event.install_recorder("numba:compile") as recorder:
        run()
    compiled = {}
    for _, ev in recorder.buffer:
        func = ev.data["dispatcher"].py_func
        if ev.is_start and func in _numba._KERNELS:
            name = f"{func.__module__}.{func.__qualname__}".removesuffix("__from_kernels")
            compiled.setdefault(name, set()).add(str(tuple(ev.data["args"])))
    return compiled


# kernels written for arrays of any dtype, called with several by design (a copy of float and of int rows)
_ANY_DTYPE = {"parsimony._numba.assign"}


def _check_symbolic():
    """Fits and intervals checked; returns the kernels the first fit compiled for more than one
    signature (each costs a cold start a compile: with the compile accelerator, a fit passes each
    kernel one set of argument types)."""
    from parsimony import ConformalQuantileInterval, SymbolicQuantileRegressor, pinball_loss
    from parsimony._numba import accelerated

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(120, 2))
    y = 2.0 * X[:, 0] + 1.0 + 0.1 * rng.normal(size=120)
    settings = dict(niterations=3, populations=2, population_size=20, progress=False, random_state=1)
    compiled = _signatures(lambda: SymbolicQuantileRegressor(**settings).fit(X, y))
    repeated = sorted(name for name, sigs in compiled.items() if len(sigs) > 1 and name not in _ANY_DTYPE)
    repeated = repeated if accelerated() else []
    for quantile in (0.5, 0.9):
        fits = [SymbolicQuantileRegressor(quantile, **settings).fit(X, y) for _ in range(2)]
        first, again = (model.predict(X) for model in fits)
        np.testing.assert_array_equal(first, again)  # reproducible for a seed
        constant = np.quantile(y, quantile)
        assert pinball_loss(y, first, quantile=quantile) < 0.5 * pinball_loss(y, np.full_like(y, constant),
                                                                               quantile=quantile)
    interval = ConformalQuantileInterval(SymbolicQuantileRegressor(niterations=2, populations=2, population_size=20,
                                                                   progress=False), alpha=0.2, random_state=0).fit(X, y)
    lower, upper = interval.predict_interval(X).T
    assert np.all(lower <= upper)
    return repeated


def _check_ensembles():
    from sklearn.ensemble import RandomForestRegressor

    from parsimony import BaggedNetworks, ForestPrune, OrderedBaggingRegressor
    from parsimony.ensembles._depth_matrices import depth_difference_matrices, ensemble_offset, unpack_ensemble

    rng = np.random.default_rng(2)
    X = rng.uniform(size=(100, 3))
    y = 4.0 * X[:, 0] + np.sin(3.0 * X[:, 1]) + 0.1 * rng.normal(size=100)
    forest = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    mse = lambda p: float(np.mean((y - p) ** 2))  # noqa: E731
    for polish in (None, "ridge"):
        pruned = ForestPrune(forest, alpha=0.01, polish=polish).fit(X, y)
        assert mse(pruned.predict(X)) < 0.5 * mse(np.full_like(y, y.mean()))
    path = ForestPrune(forest).path(X, y)
    assert path["n_trees"].iloc[0] == 0 and path["n_trees"].iloc[-1] > 0  # from the alpha that empties it
    assert np.all(np.diff(path["objective"]) <= 1e-12)  # smaller penalties, smaller optimal objectives
    tables = unpack_ensemble(forest)
    D = depth_difference_matrices(tables, X)  # the full ensemble: gamma * D summed, plus the offset
    np.testing.assert_allclose(tables.gamma * D.sum(axis=(0, 1)) + ensemble_offset(tables, X),
                               forest.predict(X), rtol=1e-6, atol=1e-6)
    bagging = OrderedBaggingRegressor(n_estimators=8, keep=0.5, random_state=0).fit(X, y)
    curves = bagging.bias_variance(X, y)  # the full ensemble is the same in either order
    np.testing.assert_allclose(curves.iloc[-1]["bias2_ordered"], curves.iloc[-1]["bias2_original"])
    np.testing.assert_allclose(curves.iloc[-1]["variance_ordered"], curves.iloc[-1]["variance_original"])
    kept = [bagging.estimators_[i] for i in bagging.order_[:bagging.n_kept_]]
    columns = [bagging.estimators_features_[i] for i in bagging.order_[:bagging.n_kept_]]
    np.testing.assert_allclose(bagging.predict(X), np.mean([m.predict(X[:, f]) for m, f in zip(kept, columns)], 0))
    networks = BaggedNetworks(n_estimators=3, max_iter=30, random_state=0).fit(X, y)
    assert mse(networks.predict(X)) < mse(np.full_like(y, y.mean()))


# kernels the estimators' checks above do not reach, checked by their own tests: (test module, test, arguments)
# (the rational forms' exhaustive triples run only on data a formula nearly reproduces)
_KERNEL_TESTS = [("symbolic.test_rational", "test_best_triples_match_an_exhaustive_least_squares", ())]


def _run_kernel_tests():
    import importlib

    # run as a script, this file's folder (tests/) is on sys.path: a test module is imported as a
    # module of its test package, so its relative imports (the shared helpers) work
    for module, name, args in _KERNEL_TESTS:
        getattr(importlib.import_module(module), name)(*args)


def main():
    """Run the checks, then print the kernels compiled and not compiled (JSON)."""
    kernels = _kernels()
    _check_trees()
    repeated = _check_symbolic()
    _check_ensembles()
    _run_kernel_tests()
    print(json.dumps({"kernels": len(kernels), "missed": _missed(kernels), "repeated": repeated}))


def test_every_kernel_is_compiled_and_its_results_checked(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PARSIMONY_NUMBA_HELPER="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["kernels"] >= 150 and report["missed"] == []
    assert report["repeated"] == []  # SQR's first fit compiled these kernels for two or more signatures


if __name__ == "__main__":
    main()
