"""Model-only adapters are localised by ablation: sublayers switched off through ``load_weights``.

Before, a candidate exposing only ``build_model`` got "(no encoder_layer part: layer-by-layer localisation
unavailable)" under every failing model check. Each known shape and sublayer kind below is named by the
ablation on ``ModelOnly`` views of the catalogue's mutants, through ``locate_encode`` / ``locate_decode`` /
``locate_forward`` as the checks call them; the correct built-ins agree at every stage (no false localisation).
"""

import numpy as np
import pytest
from conftest import adapter_path

from conformance.boundary.candidate import Candidate
from conformance.boundary.loading import import_target
from conformance.config import ModelConfig
from conformance.diagnosis import ablation
from conformance.diagnosis.localise import locate_decode, locate_encode, locate_forward
from conformance.problems import oracle, questions
from conformance.problems.scenarios import ModelSizes, loaded_model

VIEWS = adapter_path("views")
CONFIG = ModelConfig(src_vocab=11, tgt_vocab=11, d_model=8, h=2, d_ff=16, N=2)
WEIGHTS, SRC, TGT_IN = questions.model_problem(ModelSizes(CONFIG, B=2, S=5, T=4, seed=3))
MEMORY = oracle.OracleModel(CONFIG, WEIGHTS).encode(SRC).astype(np.float32)  # as test_decoder passes it


def model_only(name: str) -> Candidate:
    return Candidate(import_target(f"{VIEWS}:ModelOnly")(import_target(name)), name=f"model-only {name}")


def locate(method: str, candidate: Candidate) -> str:
    """The line a failing encode / decode / forward check would print, for the module's problem."""
    if method == "encode":
        return locate_encode(candidate, CONFIG, WEIGHTS, SRC)
    if method == "decode":
        return locate_decode(candidate, CONFIG, WEIGHTS, TGT_IN, MEMORY, SRC)
    return locate_forward(candidate, loaded_model(candidate, CONFIG, WEIGHTS), CONFIG, WEIGHTS, SRC, TGT_IN)


@pytest.mark.parametrize(("name", "method", "expected"), [
    ("mutant:pre_norm", "encode", "with every sublayer off the output is the embedding itself: no LayerNorm on the"
                                  " residual path"),
    ("mutant:pre_norm", "forward", "the memory (model.encode) already differs; " + ablation.HEAD
     + "with every sublayer off the output is the embedding itself"),
    ("mutant:extra_final_layer_norm", "decode", "with every sublayer off the output is the paper's, normalised once"
                                                " more: an extra LayerNorm after the last layer"),
    ("mutant:embedding_not_scaled", "forward", "with every sublayer off the output is the paper's with E[token] not"
                                               " multiplied by sqrt(d_model)"),
    ("mutant:missing_residual", "encode", "the output is the last LayerNorm's beta at every position, whatever the"
                                          " token: no residual connection"),
    ("mutant:mha_without_output_projection", "forward", "yet agrees when the sublayers are switched off from their"
                                                        " input side: the attentions' output projection W_O is not"
                                                        " applied as loaded"),
    ("mutant:dropout_at_evaluation", "encode", "two identical calls give different outputs: dropout (or other"
                                               " randomness) at evaluation suspected"),
    ("mutant:pe_exponent_i_over_d", "encode", "agrees at one position and differs at several: the positional"
                                              " encoding (beyond position 0) suspected"),
    ("mutant:gelu_instead_of_relu", "decode", "with every sublayer off it agrees; differs with only the decoder"
                                              " feed-forward (every layer, decoder.0-1)"),
    ("mutant:gelu_instead_of_relu", "encode", "differs with only the encoder feed-forward (every layer, encoder.0-1)"),
    ("mutant:causal_mask_in_encoder", "encode", "differs with only the encoder self-attention (every layer,"
                                                " encoder.0-1)"),
    ("mutant:no_causal_mask", "forward", "with every sublayer off it agrees; differs with only the decoder"
                                         " self-attention (every layer, decoder.0-1)"),
    ("mutant:causal_mask_on_cross_attention", "decode", "differs with only the decoder cross-attention (every"
                                                        " layer, decoder.0-1)"),
    ("mutant:cross_attention_on_decoder_states", "forward", "differs with only the decoder cross-attention (every"
                                                            " layer, decoder.0-1); the encoder's sublayers not"
                                                            " judged"),
])
def test_the_ablation_names_where_a_model_only_mutant_differs(name, method, expected):
    line = locate(method, model_only(name))
    assert expected in line, f"expected {expected!r} in the localisation; got {line!r}"
    assert line.count(";") <= 2 or "differs with only" in line  # one finding, not a list of every stage


def test_torch_nn_transformer_shows_the_extra_final_norm_and_its_zero_padded_memory():
    """nn.Transformer's defaults: encoder.norm / decoder.norm, and the nested-tensor fast path's zeros."""
    assert (SRC == CONFIG.pad_id).any(), "the fast path needs a padded source; a changed seed must not hide it"
    candidate = model_only("torch-nn-transformer")
    assert "an extra LayerNorm after the last layer" in locate("forward", candidate)
    memory_line = locate("encode", candidate)
    assert "an extra LayerNorm after the last layer" in memory_line, memory_line
    assert "the padded positions are exactly 0" in memory_line, memory_line


class OneLayerMisloaded:
    """A model-only adapter whose load_weights negates decoder.1's b1 (a name map wrong for one layer)."""

    def __init__(self):
        self.inner = import_target("reference")
        self.conventions = self.inner.conventions

    def build_model(self, config, seed):
        model = self.inner.build_model(config, seed)

        class Model:
            def load_weights(self, weights):
                model.load_weights({**weights, "decoder.1.ffn.b1": -weights["decoder.1.ffn.b1"]})

            def __getattr__(self, method):
                return getattr(model, method)

        return Model()


def test_a_bug_in_one_layer_is_placed_in_that_layer():
    line = locate("decode", Candidate(OneLayerMisloaded(), name="one layer misloaded"))
    expected = "with every sublayer off it agrees; differs with only the decoder feed-forward (decoder.1)"
    assert line.endswith(expected), line


@pytest.mark.parametrize("name", ["reference", "numpy", "torch-fused-qkv"])  # float32, float64 additive, seq-first
def test_a_correct_model_agrees_at_every_stage_of_the_ablation(name):
    """The guard against false localisation, through each convention: every stage agrees with the oracle."""
    candidate = model_only(name)
    for method in ("encode", "decode", "forward"):
        probe = ablation.Probe(candidate, method, CONFIG, SRC, TGT_IN, MEMORY if method == "decode" else None)
        assert probe.agrees(WEIGHTS), (name, method)
        assert ablation.everything_off(probe, WEIGHTS) is None, (name, method)
        assert ablation.suspects(probe, WEIGHTS) == [], (name, method)
        assert ablation.layer_norm_epsilon(probe, WEIGHTS) is None, (name, method)
        assert locate(method, candidate).endswith("the model agrees with the oracle: nothing to localise")


def test_near_constant_embeddings_show_an_epsilon_outside_the_root():
    """eps inside or outside the root barely differs on ordinary rows (not at all in float32); on rows of
    variance ~1e-8 the difference is a hundredfold larger."""
    line = locate("encode", model_only("mutant:layer_norm_eps_outside_root"))
    assert "far more on nearly constant ones: the LayerNorm epsilon (the config's is 1e-05" in line, line


def test_switching_off_zeroes_only_the_output_projections_of_the_kinds_not_on():
    weights = ablation.switched(WEIGHTS, {"decoder cross-attention"}, layer=1)
    zero = {name for name, value in weights.items() if not np.any(value)}
    assert zero == {f"{stack}.{layer}.{sub}.{w}" for stack, sub, names in [
        ("encoder", "self_attn", ("W_O", "b_O")), ("encoder", "ffn", ("W2", "b2")),
        ("decoder", "self_attn", ("W_O", "b_O")), ("decoder", "ffn", ("W2", "b2"))]
        for layer in range(2) for w in names} | {"decoder.0.cross_attn.W_O", "decoder.0.cross_attn.b_O"}


class Unloadable:
    """A model-only adapter whose model builds but cannot load weights, or cannot run once loaded."""

    def __init__(self, fail: str):
        self.inner, self.fail = import_target("reference"), fail
        self.conventions = self.inner.conventions

    def build_model(self, config, seed):
        model, fail = self.inner.build_model(config, seed), self.fail

        class Model:
            def load_weights(self, weights):
                if fail == "load_weights":
                    raise KeyError("encoder.0.self_attn.W_O")
                model.load_weights(weights)

            def encode(self, src):
                raise RuntimeError("CUDA out of memory") if fail == "encode" else None

        return Model()


def test_a_model_that_cannot_load_or_run_keeps_the_old_text_and_says_why():
    """Never an exception out of the diagnosis: the old text, and the reason the ablation could not run."""
    old = "(no encoder_layer part: layer-by-layer localisation unavailable"
    for fail, why in [("load_weights", "model.load_weights raised KeyError"),
                      ("encode", "model.encode raised RuntimeError: CUDA out of memory")]:
        line = locate_encode(Candidate(Unloadable(fail), name="unloadable"), CONFIG, WEIGHTS, SRC)
        assert line.startswith(old + "; ablation through load_weights could not run: ") and why in line, line

    class NoLoad:  # a declared model class without load_weights: nothing to ablate through
        conventions = import_target("reference").conventions
        model_class = type("Model", (), {"encode": lambda self, src: None})

        def build_model(self, config, seed):
            return self.model_class()

    assert locate_encode(Candidate(NoLoad(), name="no-load"), CONFIG, WEIGHTS, SRC) == old + ")"


def test_certify_prints_the_ablation_under_a_failing_model_check(certify):
    """End to end: a model-only view of the GELU mutant fails encode_matches_reference, and its message says
    the encoder's feed-forward differs, found by switching sublayers off."""
    run = certify(f"{VIEWS}:model_only_gelu_instead_of_relu", "-k", "encode_matches_reference", "--no-training")
    check = next(c for c in run.report["checks"] if c["id"] == "encode_matches_reference")
    assert check["status"] == "failed", check
    assert ablation.HEAD + "with every sublayer off it agrees; differs with only the encoder feed-forward" \
        in check["message"], check["message"]
    assert "localisation unavailable" not in check["message"]


@pytest.mark.parametrize("isolation", [
    "--no-isolate",
    # isolated, the ablation sends the base-size weights to the worker a dozen times: twice the CPU (slow step);
    # base-size weights cross to an isolated worker in tests/test_walkthrough.py's logits_match_reference_at_base_size
    pytest.param("--isolate", marks=pytest.mark.slow)])
def test_the_base_size_golden_check_is_localised_too(certify, isolation):
    """At the paper's base size (N = 6, d_model 512) the same ablation says where a model-only view differs."""
    run = certify(f"{VIEWS}:model_only_gelu_instead_of_relu", "-k", "base_size_forward_matches_golden",
                  "--no-training", isolation)
    check = next(c for c in run.report["checks"] if c["id"] == "base_size_forward_matches_golden")
    assert check["status"] == "failed", check
    assert "differs with only the encoder feed-forward (every layer, encoder.0-5)" in check["message"], \
        check["message"]


def test_attention_weights_that_differ_while_the_logits_agree_are_said_to_be_reported_differently(certify):
    run = certify("mutant:attention_maps_transposed", "-k", "trained_checkpoint_attention_matches_golden")
    check = next(c for c in run.report["checks"] if c["id"] == "trained_checkpoint_attention_matches_golden")
    assert check["status"] == "failed", check
    assert "logits on this input agree with the reference's: only the weights it reports differ" \
        in check["message"], check["message"]
