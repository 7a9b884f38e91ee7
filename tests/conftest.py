"""Shared fixtures: the read-only datasets beside the project, and the Julia marker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATASETS = Path(
    os.environ.get("PARSIMONY_SHARED_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
)


def _dataset_dir(sub: str) -> Path:
    path = SHARED_DATASETS / sub
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path} (set PARSIMONY_SHARED_DATASETS)")
    return path


@pytest.fixture(scope="session")
def pmlb_dir() -> Path:
    """``../shared/datasets/pmlb`` (PMLB-format .tsv.gz files); skips when absent."""
    return _dataset_dir("pmlb")


@pytest.fixture(scope="session")
def osrt_dir() -> Path:
    """``../shared/datasets/osrt`` (the OSRT paper's binarised CSVs); skips when absent."""
    return _dataset_dir("osrt")


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("julia") for item in items):
        return
    from parsimony.backend import julia_status

    available, reason = julia_status()
    if available:
        return
    skip = pytest.mark.skip(reason=f"Julia backend unavailable: {reason}")
    for item in items:
        if item.get_closest_marker("julia"):
            item.add_marker(skip)
