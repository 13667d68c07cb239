"""The trained toy checkpoint: the lesson's reversal model, trained by the reference, in the candidate.

``fixtures/golden/toy_checkpoint.npz`` holds the canonical weights of the toy model (toy_config(): d_model
64, 4 heads, 2 + 2 layers, 13 tokens) after the lesson's 3,000-step run with the paper's recipe;
``toy_outputs.npz`` the reference's outputs on "c a b e d" and a padded batch. Random weights test the
formulas; trained weights test them where a real model lives: LayerNorm gains and biases that training
moved, sharp attention, logits near the smoothed target. The candidate loads the checkpoint and must
reproduce the outputs, decode the same tokens and attend the same way; a randomised twin compares it
with the float64 reference on sequences drawn for this run, so memorising the golden earns nothing.
"""

import functools

import numpy as np
import pytest

from conformance import claims, diagnose, oracle, published
from conformance import training as T
from conformance.compare import assert_true
from conformance.config import toy_config
from conformance.fixtures import golden
from conformance.scenarios import MODEL_PARTS, loaded_model
from conformance.tolerances import MODEL, Tolerance, for_dtype

SECTION = "§3 Model architecture: the trained toy checkpoint"
EXACT = Tolerance(0, 0, "token ids are exact")
CONFIG = toy_config()


@functools.cache
def checkpoint() -> dict[str, np.ndarray]:
    return golden.load("toy_checkpoint")


@functools.cache
def outputs() -> dict[str, np.ndarray]:
    return golden.load("toy_outputs")


def tol(candidate) -> Tolerance:
    return golden.tolerance_for("toy_outputs", candidate.conventions.dtype)


def trained_model(candidate):
    return loaded_model(candidate, CONFIG, checkpoint())


@claims.TRAINED_EXAMPLE
@pytest.mark.requires(*MODEL_PARTS, "model.encode", "model.forward")
def test_trained_checkpoint_outputs_match_golden(candidate, check):
    """With the trained weights loaded, memory and logits of "c a b e d" and of a padded batch equal the
    reference's stored outputs (trained gamma and beta: an extra final LayerNorm shows here)."""
    model, stored = trained_model(candidate), outputs()
    for name, label in (("example", '"c a b e d"'), ("batch", f"a padded batch {stored['batch_src'].shape}")):
        src, tgt_in = stored[f"{name}_src"], stored[f"{name}_tgt_in"]
        diagnose.close(check, model.encode(src), stored[f"{name}_memory"], tol(candidate),
                       what=f"memory of {label}",
                       alternatives=lambda src=src: diagnose.variant_outputs(
                           "model", lambda v: oracle.OracleModel(CONFIG, checkpoint(), variant=v).encode(src)),
                       explain=lambda src=src: diagnose.explain_encode(candidate, CONFIG, checkpoint(), src,
                                                                        model.encode(src)))
        diagnose.close_logits(check, candidate, model, CONFIG, checkpoint(), src, tgt_in, stored[f"{name}_logits"],
                              tol(candidate), what=f"logits of {label}, teacher-forced")


@claims.TRAINED_EXAMPLE
@pytest.mark.requires(*MODEL_PARTS, "model.forward")
def test_trained_checkpoint_matches_reference_on_fresh_inputs(candidate, check, rng):
    """The randomised twin: on reversal sequences drawn for this run, the logits equal the float64
    reference's with the same trained weights."""
    batch = T.reversal_batch(rng, 12, CONFIG)
    expected = oracle.OracleModel(CONFIG, checkpoint()).forward(batch.src, batch.tgt_in)
    diagnose.close_logits(check, candidate, trained_model(candidate), CONFIG, checkpoint(), batch.src, batch.tgt_in,
                          expected, for_dtype(MODEL, candidate.conventions.dtype),
                          what=f"logits of a fresh padded batch {batch.src.shape}, teacher-forced")


@claims.TRAINED_EXAMPLE
@pytest.mark.requires(*MODEL_PARTS, "model.greedy_decode")
def test_trained_checkpoint_decodes_like_the_reference(candidate, check):
    """Greedy decoding with the trained weights: "c a b e d" gives "d e b a c </s>" (as in the lesson),
    and every sequence of the stored batch gives the reference's tokens."""
    model, stored, names = trained_model(candidate), outputs(), T.token_names(CONFIG)
    example = model.greedy_decode(stored["example_src"], stored["example_src"].shape[1] + 1)
    # Printed three times: the task, the diagram's next tokens, the rows of the cross-attention chart.
    published_output = published.value("toy.task.example").split() + ["</s>"]
    assert published_output == published.value("diagram.next_tokens").split() \
        == published.value("cross_chart.rows_write").split(), "fixtures/published.toml disagrees with itself"
    spelled = " ".join(names[int(i)] for i in np.asarray(example)[0][: len(published_output)])
    assert_true(spelled == " ".join(published_output),
                f"greedy decoding of c a b e d with the trained weights gave {spelled}",
                likely="greedy decoding that does not feed back its choices, reads the wrong position's"
                       " prediction, or a forward pass that differs (see trained_checkpoint_outputs_match_golden)",
                expected=" ".join(published_output), actual=spelled)
    check.close(model.greedy_decode(stored["batch_src"], stored["batch_src"].shape[1] + 1), stored["batch_greedy"],
                EXACT, what=f"greedy token ids of the stored batch {stored['batch_src'].shape}")


def record_attention(check, got: dict, stored: dict) -> None:
    """Every layer's weights (heads, queries, keys) beside the reference's, for the report's maps; a
    layer of the wrong shape is left out (the comparison below says why)."""
    names = T.token_names(CONFIG)
    layers = {}
    for key in sorted(k for k in stored if k.startswith("example_attention.")):
        layer, reference = key.removeprefix("example_attention."), stored[key][0]
        weights = np.asarray(got.get(layer, ()), dtype=np.float64)
        if weights.shape == stored[key].shape:
            layers[layer] = {"candidate": weights[0].round(4), "reference": reference.astype(np.float64).round(4)}
    check.record("attention", {"source": [names[int(i)] for i in stored["example_src"][0]],
                               "target": [names[int(i)] for i in stored["example_tgt_in"][0]],
                               "anti_diagonal": f"decoder.{CONFIG.N - 1}.cross_attn", "layers": layers})


@claims.MIRRORED_ATTENTION
@pytest.mark.requires(*MODEL_PARTS, "model.attention_weights")
def test_trained_checkpoint_attention_matches_golden(candidate, check):
    """Every attention layer's weights on "c a b e d" equal the reference's, and the last decoder layer's
    cross-attention reads the source back to front (the lesson's anti-diagonal)."""
    stored = outputs()
    got = trained_model(candidate).attention_weights(stored["example_src"], stored["example_tgt_in"])
    record_attention(check, got, stored)
    layers = sorted(key.removeprefix("example_attention.") for key in stored if key.startswith("example_attention."))
    missing = [layer for layer in layers if layer not in got]
    assert_true(not missing, f"model.attention_weights gave no {missing} (names: encoder.{{l}}.self_attn,"
                " decoder.{l}.self_attn, decoder.{l}.cross_attn, l from 0)", expected=layers, actual=sorted(got))
    for layer in layers:
        check.close(got[layer], stored[f"example_attention.{layer}"], tol(candidate),
                    what=f"{layer} weights (1, h, queries, keys) on c a b e d")
    last = np.asarray(got[f"decoder.{CONFIG.N - 1}.cross_attn"], np.float64)[0].mean(0)  # (T, S)
    S = stored["example_src"].shape[1]
    peaks = last[:S].argmax(-1)
    assert_true(bool((peaks == S - 1 - np.arange(S)).all()),
                f"rows 1-{S} of decoder.{CONFIG.N - 1}.cross_attn (mean of heads) peak on source positions"
                f" {(peaks + 1).tolist()}, not on the mirrored ones",
                likely="the weights returned are self-attention, or transposed (keys x queries)",
                expected=list(range(S, 0, -1)), actual=(peaks + 1).tolist())
