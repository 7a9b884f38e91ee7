"""Agreement with the reference figures (anchors table) and with the reference package ``osrt``."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from parsimony.losses import Squared, as_loss
from parsimony.trees._driver import find_tree

# (dataset, lambda, depth or None, optimal objective, leaves) from ../shared/anchors.md (fast cases)
ANCHORS = [
    ("servo", 0.1, 3, 0.8062860181, 4),
    ("servo", 0.005, 3, 0.4249955345, 5),
    ("servo", 0.01, 5, 0.3061366743, 7),
    ("airfoil", 0.05, 3, 1.0049284327, 3),
    ("airfoil", 0.005, 5, 0.7103528992, 18),
    ("real-estate", 0.01, 3, 0.5071757950, 8),
    ("yacht", 0.005, None, 0.2976385914, 3),
    ("enb-heat", 0.05, 5, 0.2744760760, 3),
    ("servo", 0.05, None, 0.5500675652, 6),
]


def _load(osrt_dir, name):
    frame = pd.read_csv(osrt_dir / f"{name}.csv")
    return frame.iloc[:, :-1], frame.iloc[:, -1].to_numpy(dtype=float)


@pytest.mark.parametrize("name, lam, depth, objective, leaves", ANCHORS)
def test_anchor_objectives(osrt_dir, name, lam, depth, objective, leaves):
    X, y = _load(osrt_dir, name)
    result = find_tree(X.to_numpy(), y, Squared(), lam, depth)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(objective, abs=1e-5)


@pytest.mark.parametrize(
    "name, lam, depth, loss",
    [("servo", 0.05, 3, "squared"), ("airfoil", 0.01, 3, "squared"), ("yacht", 0.01, 5, "squared"),
     ("servo", 0.01, 3, "absolute"), ("airfoil", 0.01, 2, "absolute")],
)
def test_same_objective_as_reference_package(osrt_dir, name, lam, depth, loss):
    osrt_model = pytest.importorskip("osrt.model.osrt", reason="the reference package osrt is not installed")
    X, y = _load(osrt_dir, name)
    config = {"regularization": lam, "depth_budget": depth + 1, "minimum_captured_points": 1,
              "allow_small_reg": True, "k_cluster": True, "look_ahead": True, "worker_limit": 1,
              "metric": "L2" if loss == "squared" else "L1", "verbose": False, "diagnostics": False, "time_limit": 60}
    ref = osrt_model.OSRT(config)
    with contextlib.redirect_stdout(io.StringIO()):
        ref.fit(X, pd.DataFrame(y))
    assert not ref.timeout
    # the reference's tree scored in float64 (its own float32 bookkeeping drifts by ~1e-4)
    pred = np.asarray(ref.predict(X), dtype=float)
    if loss == "squared":
        ref_loss = ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    else:
        ref_loss = np.abs(y - pred).sum() / np.abs(y - np.median(y)).sum()
    ref_objective = ref_loss + lam * ref.leaves()
    ours = find_tree(X.to_numpy(), y, as_loss(loss), lam, depth)
    assert ours.objective == pytest.approx(ref_objective, abs=1e-5)
