"""``conformance.adapters.linen`` and ``template --from`` a Flax Linen class (tests/drafting/linen_transformer.py, in
the style of Flax's own examples): the draft maps every parameter by Linen's own names, puts ``decode``'s arguments in
the order their names say, and, its TODO lines deleted, certifies. Needs flax (the ``[jax]`` extra; the default run
skips this file)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("flax") is None:
    pytest.skip("flax is not installed (the [jax] extra)", allow_module_level=True)

DRAFTING = Path(__file__).parent / "drafting"
CHECKS = ("logits_match_reference or decode_matches_reference or model_has_no_parameters_beyond_the_paper"
          " or parameter_count_matches_formula_for_any_config or layers_use_the_lessons_layer_norm_epsilon")


def cli(*args: str, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=folder, capture_output=True, text=True,
                          timeout=1200)


def finished(draft: str) -> str:
    """The draft with its guesses accepted: the walk-through's step 3 deletes the TODO lines."""
    return "\n".join(line for line in draft.splitlines() if "TODO" not in line and line != "# Check these guesses:"
                     and not line.startswith("#        ")) + "\n"


@pytest.fixture(scope="module")
def draft() -> str:
    drafted = cli("template", "--from", "linen_transformer:Transformer", folder=DRAFTING)
    assert drafted.returncode == 0, drafted.stderr
    return drafted.stdout


def test_the_draft_is_on_the_linen_helper_with_linens_own_names(draft):
    assert "from conformance.adapters.linen import LinenAdapter" in draft
    assert "from linen_transformer import TransformerConfig, Transformer" in draft  # the config class it builds
    assert '"decoder.{l}.cross_attn.W_O": "encoderdecoderblock_{l}.MultiHeadDotProductAttention_1.out.kernel"' in draft
    assert '"decoder.{l}.norm3.gamma": "encoderdecoderblock_{l}.LayerNorm_2.scale"' in draft
    assert '"encoder.{l}.ffn.W2": "encoderblock_{l}.MlpBlock_0.Dense_1.kernel"' in draft  # mlp_dim is d_ff
    assert "mlp_dim=c.d_ff" in draft and '"E": "embed.embedding"' in draft and "W_out" not in draft
    assert "No canonical name" not in draft
    assert '"eps": (1e-06,)' in draft and '"tie_output": (True,)' in draft


def test_decode_with_its_arguments_in_another_order_is_called_in_that_order(draft):
    assert "def decode(module, tgt_in, memory, src):" in draft
    assert "return module.decode(memory, src, tgt_in)" in draft  # Transformer.decode(encoded, inputs, targets)
    assert "raise NotImplementedError" not in draft


def test_the_finished_draft_round_trips_the_canonical_weights_counts_its_params_and_sows_attention(draft):
    import jax
    import numpy as np

    from conformance.config import toy_config
    from conformance.weights import model_shapes, random_weights

    sys.path.insert(0, str(DRAFTING))
    try:
        namespace: dict = {}
        exec(compile(finished(draft), "linen_adapter.py", "exec"), namespace)
    finally:
        sys.path.remove(str(DRAFTING))
    adapter, config = namespace["adapter"], toy_config(N=1, d_model=16, h=2, d_ff=40)
    model = adapter.build_model(config.as_dict(), seed=0)
    weights = random_weights(model_shapes(config), np.random.default_rng(0))
    model.load_weights(weights)
    for name, value in model.dump_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)
    assert np.asarray(model.forward(np.array([[3, 4, 0]]), np.array([[1, 5]]))).shape == (1, 2, config.tgt_vocab)
    assert adapter.parameter_count(config.as_dict()) == sum(int(np.size(v))
                                                            for v in jax.tree_util.tree_leaves(model.params))
    # the attention weights, sown by every nn.MultiHeadDotProductAttention and named by the map's projections
    weights = model.attention_weights(np.array([[3, 4, 0]]), np.array([[1, 5]]))
    assert {name: w.shape for name, w in weights.items()} == {
        "encoder.0.self_attn": (1, 2, 3, 3), "decoder.0.self_attn": (1, 2, 2, 2), "decoder.0.cross_attn": (1, 2, 2, 3)}
    assert weights["decoder.0.self_attn"][0, :, 0, 1].tolist() == [0.0, 0.0]  # the future: exactly 0
    assert weights["encoder.0.self_attn"][0, :, :, 2].max() == 0.0  # the padded key


@pytest.mark.slow
def test_the_finished_draft_certifies(draft, tmp_path):
    (tmp_path / "linen_transformer.py").write_text((DRAFTING / "linen_transformer.py").read_text())
    (tmp_path / "linen_adapter.py").write_text(finished(draft))
    run = cli("certify", "linen_adapter.py", "--no-training", "-k", CHECKS, "--json", "report.json",
              "--progress", "off", folder=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    statuses = {c["id"]: c["status"] for c in json.loads((tmp_path / "report.json").read_text())["checks"]}
    assert statuses.pop("layers_use_the_lessons_layer_norm_epsilon") == "advisory"  # nn.LayerNorm's 1e-6
    assert statuses and set(statuses.values()) == {"passed"}, statuses


def test_a_decoder_that_shifts_its_targets_itself_is_told_by_what_it_does(draft):
    assert "shifts its targets" not in draft
    drafted = cli("template", "--from", "linen_transformer:ShiftingTransformer", folder=DRAFTING)
    assert drafted.returncode == 0, drafted.stderr
    assert "shift its targets right itself" in " ".join(line.strip("# ") for line in drafted.stdout.splitlines())


def test_a_factory_of_a_linen_model_is_told_to_name_the_class():
    drafted = cli("template", "--from", "linen_transformer:make_transformer", folder=DRAFTING)
    assert drafted.returncode == 0, drafted.stderr
    text = " ".join(line.strip("# ").strip() for line in drafted.stdout.splitlines())
    assert ("it returned a Transformer, a Flax model: template --from drafts a Flax model from its class (template"
            " --from linen_transformer:Transformer), not from a function") in text, drafted.stdout
