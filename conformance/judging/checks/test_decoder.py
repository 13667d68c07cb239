"""§3.1 Decoder stack: N identical layers of masked self-attention, encoder-decoder (cross-)
attention and the position-wise FFN, each wrapped as LayerNorm(x + Dropout(Sublayer(x))).

The self-attention is causal (§3.2.3); in the cross-attention the queries come from the decoder and
the keys and values from the memory, so its weights are (B, h, T, S), not square ("The original
transformer, step by step", Step 4; "Vanilla Transformer" §4). ``decode`` embeds the decoder input
(x sqrt(d_model) + PE), runs the N layers and projects with E^T (§3.4).

Compared with the reference run in float64 on random canonical weights, target and source padded and
of different lengths. When ``decode`` fails, the message names the known bug it matches (confirmed on a
second problem), the first decoder layer and sublayer that diverges on the oracle's own inputs, and
whether the decoder states read back from the logits of a padded probe batch show an extra LayerNorm.
"""

import pytest
from hypothesis import given

from conformance.diagnosis import Question, find_structure
from conformance.diagnosis.localise import locate_decode, suspect_in_decoder_layer
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LOADED_MODEL, LayerSizes, fast_failure, layer_sizes, model_sizes
from conformance.tolerances import LAYER, MODEL, for_candidate

SECTION = "§3.1 Decoder stack"


def assert_layer_matches_oracle(candidate, check, sizes: LayerSizes, *, what: str):
    weights, y, memory, tgt_keep, src_keep = questions.decoder_layer_problem(sizes)
    check.close(
        questions.decoder_layer_output(candidate, sizes),
        oracle.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep),
        for_candidate(LAYER, candidate), what=f"{what} (y{y.shape}, memory{memory.shape}, h={sizes.h})",
        ask=Question(questions.decoder_layer_output, sizes),
        locate=lambda: suspect_in_decoder_layer(candidate, y, memory, weights, sizes.h, sizes.eps, tgt_keep,
                                                src_keep),
    )


@claims.DECODER_LAYER
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes())
def test_decoder_layer_matches_reference(candidate, check, sizes):
    """A decoder layer (T target, S source positions, both padded) equals the reference."""
    assert_layer_matches_oracle(candidate, check, sizes, what="decoder layer")


@claims.DECODER_LAYER
@pytest.mark.requires("decoder_layer")
def test_decoder_layer_matches_reference_at_base_size(candidate, check):
    """At the paper's base size (d_model 512, h 8, d_ff 2048) a decoder layer equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=7, T=9, h=8, d_k=64, d_ff=2048, bias=True, seed=6))
    assert_layer_matches_oracle(candidate, check, sizes, what="base-size decoder layer")


@claims.OUTPUT_LAYER
@pytest.mark.requires(*LOADED_MODEL, "model.decode")
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_decode_matches_reference(candidate, check, sizes):
    """decode(tgt_in, memory, src) equals the reference's logits for the reference's memory."""
    cfg = sizes.config
    weights, src, tgt_in = questions.model_problem(sizes)
    memory = questions.oracle_memory(sizes)  # the same memory, to the bit, for both
    check.close(
        questions.decoded(candidate, sizes), oracle.OracleModel(cfg, weights).decode(tgt_in, memory, src),
        for_candidate(MODEL, candidate),
        what=f"logits = decode(tgt_in{tgt_in.shape}, memory{memory.shape}) (N={cfg.N}, d_model={cfg.d_model})",
        ask=Question(questions.decoded, sizes),
        locate=lambda: locate_decode(candidate, cfg, weights, tgt_in, memory, src),
        structure=lambda: find_structure(candidate, "decoder"),
    )
