"""The golden tensors of ``fixtures/golden/``: complete manifest, checksums enforced, reproducible, one writer."""

import fcntl
import json
import shutil

import numpy as np
import pytest

from conformance.fixtures import golden, regenerate

REQUIRED = {"generator", "arguments", "seed", "versions", "dtype", "tolerance", "sha256"}


def test_every_golden_file_has_a_complete_manifest_entry():
    files = golden.manifest()["files"]
    on_disk = {path.stem for path in golden.GOLDEN_DIR.glob("*.npz")}
    assert set(files) == on_disk == set(regenerate.GENERATORS)
    for name, entry in files.items():
        assert REQUIRED <= set(entry), f"{name} lacks {sorted(REQUIRED - set(entry))}"
        assert entry["tolerance"]["reason"], f"{name}: a tolerance needs its reason"
        assert golden.load(name), f"{name} is empty"


def test_the_quick_goldens_reproduce_from_their_generators():
    assert regenerate.check(list(regenerate.QUICK)) == []


def test_the_toy_checkpoint_is_the_lessons_model_size_and_converged():
    entry = golden.entry("toy_checkpoint")
    weights = golden.load("toy_checkpoint")
    assert sum(w.size for w in weights.values()) == entry["parameter_count"] == 234_304  # the lesson's count
    assert entry["arguments"]["steps"] == 3000
    assert dict(entry["held_out_exact_match"])[3000] >= 0.99


def test_a_golden_whose_bytes_changed_is_refused(tmp_path, monkeypatch):
    shutil.copytree(golden.GOLDEN_DIR, tmp_path / "golden")
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path / "golden")
    monkeypatch.setattr(golden, "MANIFEST", tmp_path / "golden" / "manifest.json")
    arrays = golden.load("toy_outputs")
    arrays["batch_logits"] = arrays["batch_logits"] + 1e-3
    regenerate.write_npz(tmp_path / "golden" / "toy_outputs.npz", arrays)
    with pytest.raises(golden.StaleGolden, match="sha256"):
        golden.load("toy_outputs")


def test_writing_the_same_arrays_gives_the_same_bytes(tmp_path):
    arrays = {"b": np.arange(6.0).reshape(2, 3), "a": np.array([1, 2], dtype=np.int64)}
    regenerate.write_npz(tmp_path / "one.npz", arrays)
    regenerate.write_npz(tmp_path / "two.npz", dict(reversed(arrays.items())))
    assert (tmp_path / "one.npz").read_bytes() == (tmp_path / "two.npz").read_bytes()


def test_regeneration_refuses_to_run_while_another_holds_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(regenerate, "LOCK", tmp_path / ".regenerate.lock")
    monkeypatch.setattr(regenerate, "GOLDEN_DIR", tmp_path)
    with (tmp_path / ".regenerate.lock").open("w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SystemExit, match="another regeneration"):
            regenerate.regenerate(["toy_outputs"])


def test_the_manifest_is_plain_sorted_json():
    text = golden.MANIFEST.read_text()
    data = json.loads(text)
    assert list(data["files"]) == sorted(data["files"])
    assert data["schema_version"] == golden.MANIFEST_SCHEMA
