"""The Julia session of the optional backend: juliacall started once, ParsimonyKernels loaded.

Nothing here is method-specific and nothing imports juliacall at module import. Each method's
Julia glue lives with the method: ``parsimony.ensembles._cbcd_julia`` (the CBCD twins) and
``parsimony.symbolic._pysr`` (SQR through PySR).
"""

from __future__ import annotations

import functools
from pathlib import Path

from .backend import JULIA_INSTALL_HINT, JuliaUnavailableError, julia_status

#: UUID of the Julia package ParsimonyKernels (julia/Project.toml, declared in juliapkg.json).
KERNELS_UUID = "a8c75590-e745-47b0-8a2c-6a7874ce12c6"
#: The Julia package shipped with parsimony (a symlink to the top-level julia/ in a checkout).
KERNELS_DIR = Path(__file__).resolve().parent / "julia"


@functools.lru_cache(maxsize=1)
def kernels():
    """Return the Julia module ``ParsimonyKernels``, starting Julia on the first call.

    juliacall's package manager (juliapkg) develops ParsimonyKernels from the declaration in
    ``parsimony/juliapkg.json``. When that declaration was not picked up (say, an editable
    install used from another directory), the module is included from :data:`KERNELS_DIR`
    instead; it depends on Julia's standard library only.

    Raises
    ------
    JuliaUnavailableError
        When juliacall is missing or no Julia session starts.
    """
    available, reason = julia_status()
    if not available:
        raise JuliaUnavailableError(f"the Julia backend is unavailable: {reason}. {JULIA_INSTALL_HINT}")
    from juliacall import Main as jl  # lazy: only once Julia is known to work

    if bool(jl.seval('Base.find_package("ParsimonyKernels") !== nothing')):
        jl.seval("import ParsimonyKernels")
    else:
        entry = KERNELS_DIR / "src" / "ParsimonyKernels.jl"
        if not entry.is_file():
            raise JuliaUnavailableError(f"the Julia package ParsimonyKernels was not found at {KERNELS_DIR}")
        jl.seval(f'isdefined(Main, :ParsimonyKernels) || Base.include(Main, raw"{entry}")')
    return jl.ParsimonyKernels
