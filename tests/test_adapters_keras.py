"""``conformance.adapters.keras`` and ``template --from`` a Keras 3 model class (tests/drafting/keras_transformer.py),
on the JAX and the torch backend: the draft, its TODOs deleted, maps every weight and certifies. Needs keras and a
backend (the ``[keras]`` extra; the default run skips this file)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("keras") is None:  # not imported here: each run picks its backend in its own process
    pytest.skip("keras is not installed (the [keras] extra)", allow_module_level=True)

DRAFTING = Path(__file__).parent / "drafting"
CHECKS = "logits_match_reference or model_has_no_parameters_beyond_the_paper or parameter_count_matches_formula"


def cli(*args: str, folder: Path, backend: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "KERAS_BACKEND": backend}
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=1200)


def finished(draft: str) -> str:
    """The draft with its guesses accepted: step 3 of the walk-through deletes the TODO lines."""
    return "\n".join(line for line in draft.splitlines() if "TODO" not in line and line != "# Check these guesses:"
                     and not line.startswith("#        ")) + "\n"


@pytest.fixture(scope="module")
def draft() -> str:
    drafted = cli("template", "--from", "keras_transformer:Transformer", folder=DRAFTING, backend="jax")
    assert drafted.returncode == 0, drafted.stderr
    return drafted.stdout


def test_the_draft_maps_every_weight_with_numbered_layers_and_per_head_kernels(draft):
    cross_output = "decoder_layer.{l}.multi_head_attention.1.attention_output.kernel"
    assert f'"decoder.{{l}}.cross_attn.W_O": "{cross_output}"' in draft
    assert '"E": "embedding.0.embeddings"' in draft and "W_out" not in draft  # the logits come from the table
    assert '"eps": (1e-06,)' in draft and '"attention_bias": (True,)' in draft
    assert "No canonical name" not in draft  # every variable is placed


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_finished_draft_certifies_on_each_backend(draft, backend, tmp_path):
    if backend == "jax":
        pytest.importorskip("jax")
    for source in ("keras_transformer.py",):
        (tmp_path / source).write_text((DRAFTING / source).read_text())
    (tmp_path / "keras_adapter.py").write_text(finished(draft))
    run = cli("certify", "keras_adapter.py", "--no-training", "--pass-env", "KERAS_BACKEND", "-k", CHECKS,
              "--json", "report.json", "--progress", "off", folder=tmp_path, backend=backend)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    statuses = {c["id"]: c["status"] for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    assert statuses and set(statuses.values()) == {"passed"}, statuses


def test_heads_wider_than_d_model_over_h_are_named_never_read_as_another_matrix():
    """``MultiHeadAttention(key_dim=d_model)`` (the TensorFlow tutorial, the keras-io example): each kernel merges to
    (d, h d), which a fused W_KV's shape matches; the draft leaves them unmapped and says why, once per attention. Its
    layers, numbered inside a numbered ``Encoder``, are told by the number after ``encoder_layer``."""
    drafted = cli("template", "--from", "keras_wide_heads:Transformer", folder=DRAFTING, backend="torch")
    assert drafted.returncode == 0, drafted.stderr
    text = drafted.stdout
    assert "W_KV" not in text and "W_QKV" not in text, text
    assert text.count("heads 16 wide where the paper's are d_model / h = 8") == 3, text
    assert '"encoder.{l}.ffn.W1": "encoder.0.encoder_layer.{l}.sequential.0.dense.0.kernel"' in text, text
    assert "dense.1.kernel" in text.split('"encoder.{l}.ffn.W2": ')[1].split("\n")[0], text
