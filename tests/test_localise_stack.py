"""Localisation walks the whole stack: every divergent layer, then the step after the last one.

Real code deviates in several places at once (pre-norm in every layer and a final LayerNorm after each
stack, as in OpenNMT-py or torch.nn.Transformer(norm_first=True)); the one localisation line must name
them all, not stop at the first layer that disagrees. A bug in one layer is placed in that layer alone,
and a correct candidate shows no divergence.
"""

import numpy as np
import pytest
from conftest import adapter_path

from conformance.boundary.candidate import Candidate
from conformance.boundary.loading import import_target
from conformance.config import ModelConfig
from conformance.diagnosis.localise import fmt_divergence, locate_decode, locate_encode, locate_forward
from conformance.diagnosis.message import tail
from conformance.problems import oracle, questions
from conformance.problems.scenarios import ModelSizes, loaded_model

CONFIG = ModelConfig(src_vocab=11, tgt_vocab=11, d_model=8, h=2, d_ff=16, N=2)
WEIGHTS, SRC, TGT_IN = questions.model_problem(ModelSizes(CONFIG, B=2, S=5, T=4, seed=3))
MEMORY = oracle.OracleModel(CONFIG, WEIGHTS).encode(SRC).astype(np.float32)  # as test_decoder passes it
WIRING = "its sublayers agree with the oracle on their own, so the layer's wiring is suspected"


def candidate(name: str) -> Candidate:
    return Candidate(import_target(name), name=name)


def locate(method: str, cand: Candidate, weights=WEIGHTS) -> str:
    """The line a failing encode / decode / forward check would print, for the module's problem."""
    if method == "encode":
        return locate_encode(cand, CONFIG, weights, SRC)
    if method == "decode":
        memory = oracle.OracleModel(CONFIG, weights).encode(SRC).astype(np.float32)
        return locate_decode(cand, CONFIG, weights, TGT_IN, memory, SRC)
    return locate_forward(cand, loaded_model(cand, CONFIG, weights), CONFIG, weights, SRC, TGT_IN)


@pytest.mark.parametrize(("method", "stack"), [("encode", "encoder"), ("decode", "decoder"), ("forward", "encoder")])
def test_pre_norm_with_a_final_norm_names_every_layer_and_the_norm_after_the_stack(method, stack):
    line = locate(method, candidate(adapter_path("pre_norm_final_norm")))
    expected = (f"first divergence: {stack}.0 ({WIRING}", f"); the same in {stack}.1 (every layer);",
                f"; after {stack}.1: an extra LayerNorm (gamma 1, beta 0) suspected")
    assert all(part in line for part in expected), f"expected {expected} in the localisation; got {line!r}"


@pytest.mark.parametrize("method", ["encode", "decode"])
def test_pre_norm_alone_names_every_layer_and_nothing_after_the_stack(method):
    line = locate(method, candidate("mutant:pre_norm"))
    stack = "encoder" if method == "encode" else "decoder"
    assert line.startswith(f"first divergence: {stack}.0 ({WIRING}"), line
    assert line.endswith(f"; the same in {stack}.1 (every layer)"), line


@pytest.mark.parametrize("method", ["encode", "decode", "forward"])
def test_an_extra_final_norm_behind_correct_layers_is_found(method):
    line = locate(method, candidate("mutant:extra_final_layer_norm"))
    stack = "encoder" if method in ("encode", "forward") else "decoder"
    expected = (f"every {stack} layer agrees with the oracle when fed the oracle's inputs and masks; after {stack}.1:"
                " an extra LayerNorm (gamma 1, beta 0) found")
    assert expected in line, f"expected {expected!r} in the localisation; got {line!r}"


def layer_zero_ffn_positive(weights: dict, stack: str) -> dict:
    """b1 of {stack}.0's FFN raised by 10: its pre-activations are then all positive, where GELU and ReLU
    agree (to float32), so only {stack}.1 shows the GELU mutant's bug."""
    name = f"{stack}.0.ffn.b1"
    return {**weights, name: weights[name] + 10.0}


@pytest.mark.parametrize(("method", "stack"), [("encode", "encoder"), ("decode", "decoder")])
def test_a_bug_that_shows_in_one_layer_is_placed_in_that_layer_alone(method, stack):
    line = locate(method, candidate("mutant:gelu_instead_of_relu"), layer_zero_ffn_positive(WEIGHTS, stack))
    assert line == f"first divergence: {stack}.1 (feed-forward sublayer suspected)", line


@pytest.mark.parametrize("method", ["encode", "decode", "forward"])
def test_the_reference_shows_no_divergence(method):
    line = locate(method, candidate("reference"))
    assert "divergence" not in line and "extra LayerNorm" not in line, line
    assert line.endswith("or a step after the last layer (a final LayerNorm) suspected"), line


def test_layers_are_grouped_by_suspect_in_the_order_each_first_shows():
    found = [(0, "A"), (1, "A"), (2, "B"), (3, "A"), (5, "A")]
    assert fmt_divergence("encoder", found, 6) == (
        "first divergence: encoder.0 (A); the same in encoder.1, encoder.3, encoder.5; also encoder.2 (B)")
    every = [(layer, "A") for layer in range(6)]
    assert fmt_divergence("decoder", every, 6) == (
        "first divergence: decoder.0 (A); the same in decoder.1-5 (every layer)")


def test_the_extra_norm_is_named_once_when_a_match_or_the_structural_probe_names_it():
    where = locate("encode", candidate("mutant:extra_final_layer_norm"))
    for matches, patterns in [([], ["extra_final_layer_norm"]),
                              ([{"mutant": "extra_final_layer_norm", "bug": "An extra LayerNorm after the stacks.",
                                 "max_abs": 1.0, "probe_max_abs": 1.0}], [])]:
        text = "\n".join(tail(matches, where, patterns))
        assert text.count("extra LayerNorm") == 1, text
        assert "every encoder layer agrees with the oracle" in text, text
    assert "(gamma 1, beta 0) found" in "\n".join(tail([], where, []))  # nothing else names it: the line does
