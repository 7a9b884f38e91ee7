import gzip

import numpy as np
import pandas as pd
import pytest

from parsimony import datasets
from parsimony.datasets import heteroskedastic_quantile, list_datasets, load_dataset


@pytest.fixture
def local_dir(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0, 1, 0], "target": [0.5, 1.5, 2.5]})
    with gzip.open(tmp_path / "tiny.tsv.gz", "wt") as fh:
        frame.to_csv(fh, sep="\t", index=False)
    pd.DataFrame({"f": [1, 0], "y": [3.0, 4.0]}).to_csv(tmp_path / "small.csv", index=False)
    return tmp_path


def test_load_pmlb_and_csv(local_dir):
    X, y = load_dataset("tiny", data_dir=local_dir)
    assert list(X.columns) == ["a", "b"] and y.name == "target" and y.tolist() == [0.5, 1.5, 2.5]
    X, y = load_dataset(local_dir / "small.csv")  # explicit path, last column is the target
    assert list(X.columns) == ["f"] and y.tolist() == [3.0, 4.0]


def test_lookup_order_env_and_listing(local_dir, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PARSIMONY_DATA", str(local_dir))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    X, _ = load_dataset("small")
    assert X.shape == (2, 1)
    table = list_datasets()
    assert set(table.name) == {"tiny", "small"}
    assert table.set_index("name").loc["tiny", ["n", "d"]].tolist() == [3, 2]


def test_unknown_dataset_says_where_it_looked(local_dir, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    with pytest.raises(FileNotFoundError, match="not found: looked for nope") as info:
        load_dataset("nope", data_dir=local_dir, download=False)
    assert str(local_dir) in str(info.value)
    with pytest.raises(ValueError, match="non-empty"):
        load_dataset("")


def test_shared_pmlb_matches_manifest(pmlb_dir):
    X, y = load_dataset("192_vineyard", data_dir=pmlb_dir)
    assert X.shape == (52, 2) and np.isfinite(y).all()


def test_synthetic_generators():
    X, y = datasets.make_friedman1(200, random_state=0)
    assert X.shape == (200, 10)
    resid = y - (10 * np.sin(np.pi * X.x0 * X.x1) + 20 * (X.x2 - 0.5) ** 2 + 10 * X.x3 + 5 * X.x4)
    assert 0.8 < resid.std() < 1.2  # noise sd 1, as in the papers
    X, y = datasets.make_friedman2(2000, random_state=0)
    assert X.shape == (2000, 4) and 120 < (y - np.sqrt(X.x0**2 + (X.x1 * X.x2 - 1 / (X.x1 * X.x3)) ** 2)).std() < 180
    X, y = datasets.make_peak(500, random_state=1)
    r = np.linalg.norm(X, axis=1)
    assert X.shape == (500, 20) and r.max() <= 3.0
    assert np.std(y - 25 * np.exp(-0.5 * r**2)) == pytest.approx(1.0, abs=0.15)
    X, y = datasets.make_heteroskedastic(20000, random_state=2)
    q9 = heteroskedastic_quantile(X.x0, 0.9)
    assert np.mean(y <= q9) == pytest.approx(0.9, abs=0.01)
    same = datasets.make_peak(10, random_state=5)[1], datasets.make_peak(10, random_state=5)[1]
    assert same[0].equals(same[1])
    with pytest.raises(ValueError, match="n_samples must be >= 1"):
        datasets.make_peak(0)


def test_heteroskedastic_rejects_where_the_model_is_undefined():
    with pytest.raises(ValueError, match=">= 0"):
        heteroskedastic_quantile([1.0, -0.5], 0.9)
    with pytest.raises(ValueError, match="high"):
        datasets.make_heteroskedastic(10, high=np.inf)
    with pytest.raises(ValueError, match="too large"):
        datasets.make_heteroskedastic(10, high=1e200)
    X, y = datasets.make_heteroskedastic(50, high=1e100, random_state=0)
    assert np.isfinite(y).all()


@pytest.mark.parametrize("name, content, match", [
    ("empty.csv", b"", "it is empty"),
    ("corrupt.tsv.gz", b"\x1f\x8b\x08\x00 not really gzip", "corrupt or truncated gzip"),
    ("binary.csv", bytes(range(256)) * 8, "binary content|malformed"),
])
def test_unreadable_files_name_themselves_and_do_not_stop_the_listing(local_dir, name, content, match):
    bad = local_dir / name
    bad.write_bytes(content)
    with pytest.raises(ValueError, match=f"{bad}.*({match})"):
        load_dataset(bad)
    with pytest.warns(UserWarning, match=name):
        table = list_datasets(local_dir)
    assert {"tiny", "small"} <= set(table["name"])
