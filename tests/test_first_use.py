"""benchmarks/first_use.py's reports: the compiled functions a fit never calls (``--called``), each
process's outermost compiles (``--timeline``), and each kernel's compile beside its run (``--pays``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _first_use():
    spec = importlib.util.spec_from_file_location("first_use", ROOT / "benchmarks" / "first_use.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_uncalled_lists_the_package_functions_the_fit_never_calls(capsys):
    records = {  # name -> [exclusive, inclusive, specialisations, per signature], as the cold run's profile
        "parsimony.a.entry": [1.0, 3.0, 1, {}],
        "parsimony.a.twin__from_kernels": [0.5, 0.5, 1, {}],
        "parsimony.a.twin": [0.25, 0.25, 1, {}],    # the same function compiled as an entry too
        "parsimony.b.unused__from_kernels": [0.75, 0.75, 1, {}],
        "numba.np.arrayobj.impl": [2.0, 2.0, 1, {}],  # numba's own: not the package's
    }
    _first_use()._print_uncalled("sqr", records, ["parsimony.a.entry", "parsimony.a.twin", "parsimony.c.python"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == ("sqr: 1 of 3 compiled package functions never called by the fit "
                        "(0.75 of 2.50 s exclusive compile time)")
    assert lines[1].split() == ["0.75", "parsimony.b.unused"]
    assert len(lines) == 2


def test_timeline_lists_the_main_process_first_with_each_process_total(capsys):
    events = [  # [pid, start, end, CPU, function], as the hook writes them, in file order
        [7, 3.0, 9.0, 5.5, "parsimony.b.helped"],
        [5, 1.0, 20.0, 14.0, "parsimony.a.search"],
        [7, 1.5, 2.5, 1.0, "parsimony.b.first"],
    ]
    _first_use()._print_timeline("osrt", events, 5)
    lines = capsys.readouterr().out.strip().splitlines()[2:]
    assert [line.split() for line in lines] == [
        ["main", "1.00", "20.00", "14.00", "parsimony.a.search"],
        ["main", "20.00", "14.00", "total", "over", "1", "compiles", "(end", "of", "the", "last)"],
        ["helper", "1.50", "2.50", "1.00", "parsimony.b.first"],
        ["helper", "3.00", "9.00", "5.50", "parsimony.b.helped"],
        ["helper", "9.00", "6.50", "total", "over", "2", "compiles", "(end", "of", "the", "last)"],
    ]


def test_pays_lists_each_kernel_by_compile_cpu_beside_its_run(capsys):
    records = {  # name -> [exclusive, inclusive, specialisations, per signature, CPU inclusive]
        "parsimony.a.search": [5.0, 16.0, 1, {}, 15.0],
        "parsimony.b.small": [0.5, 0.5, 1, {}, 0.4],
    }
    runs = {"parsimony.b.small": [0.2, 4], "parsimony.a.search": [0.03, 100], "parsimony.c.cached": [0.0, 2],
            "(the whole fit)": [1.5, 1]}
    _first_use()._print_pays("sqr", records, runs)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith("(s; the whole warm fit 1.50 s CPU)")
    assert [line.split() for line in lines[2:]] == [
        ["15.00", "0.030", "100", "500", "parsimony.a.search"],
        ["0.40", "0.200", "4", "2", "parsimony.b.small"],
        ["0.00", "0.000", "2", "inf", "parsimony.c.cached"],
    ]
