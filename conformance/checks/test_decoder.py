"""§3.1 Decoder stack: N identical layers of masked self-attention, encoder-decoder (cross-)
attention and the position-wise FFN, each wrapped as LayerNorm(x + Dropout(Sublayer(x))).

The self-attention is causal (§3.2.3); in the cross-attention the queries come from the decoder and
the keys and values from the memory, so its weights are (B, h, T, S), not square ("The original
transformer, step by step", Step 4; "Vanilla Transformer" §4). ``decode`` embeds the decoder input
(x sqrt(d_model) + PE), runs the N layers and projects with E^T (§3.4).

Compared with the reference run in float64 on random canonical weights, target and source padded and
of different lengths. When ``decode`` fails, the message names the first decoder layer, and the
sublayer, that diverges on the oracle's own inputs, and whether the decoder states read back from the
logits of a padded probe batch show an extra LayerNorm after the stack (``diagnosis.find_structure``).
"""

import numpy as np
import pytest
from hypothesis import given

from conformance import claims, diagnose, diagnosis, oracle
from conformance.scenarios import (
    MODEL_PARTS,
    LayerSizes,
    activations,
    fast_failure,
    layer_sizes,
    layer_weights,
    loaded_model,
    model_sizes,
    model_weights,
    source_and_target,
    trailing_keep,
)
from conformance.tolerances import LAYER, MODEL, for_dtype

SECTION = "§3.1 Decoder stack"


def layer_problem(sizes: LayerSizes):
    """Weights, decoder states y (B, T), memory (B, S) and both padding masks."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    return weights, y, memory, trailing_keep(rng, sizes.B, sizes.T), trailing_keep(rng, sizes.B, sizes.S)


def assert_layer_matches_oracle(candidate, check, sizes: LayerSizes, *, what: str):
    weights, y, memory, tgt_keep, src_keep = layer_problem(sizes)
    got = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)

    def run(variant=None):
        return oracle.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep, variant=variant)

    diagnose.close(
        check, got, run(), for_dtype(LAYER, candidate.conventions.dtype),
        what=f"{what} (y{y.shape}, memory{memory.shape}, h={sizes.h})",
        alternatives=lambda: diagnose.variant_outputs("decoder_layer", run),
        explain=lambda: diagnose.suspect_in_decoder_layer(candidate, y, memory, weights, sizes.h, sizes.eps, tgt_keep,
                                                          src_keep),
        rerun=lambda other: other.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep),
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
@pytest.mark.requires(*MODEL_PARTS, "model.decode")
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_decode_matches_reference(candidate, check, sizes):
    """decode(tgt_in, memory, src) equals the reference's logits for the reference's memory."""
    cfg, rng = sizes.config, sizes.rng()
    weights = model_weights(cfg, rng)
    src, tgt_in = source_and_target(sizes, rng)
    model = oracle.OracleModel(cfg, weights)
    memory = model.encode(src).astype(np.float32)  # the same memory, to the bit, for both
    got = loaded_model(candidate, cfg, weights).decode(tgt_in, memory, src)
    diagnose.close(
        check, got, model.decode(tgt_in, memory, src), for_dtype(MODEL, candidate.conventions.dtype),
        what=f"logits = decode(tgt_in{tgt_in.shape}, memory{memory.shape}) (N={cfg.N}, d_model={cfg.d_model})",
        alternatives=lambda: diagnose.variant_outputs(
            "model", lambda v: oracle.OracleModel(cfg, weights, variant=v).decode(tgt_in, memory, src)),
        explain=lambda: diagnose.explain_decode(candidate, cfg, weights, tgt_in, memory, src),
        structure=lambda: diagnosis.find_structure(candidate, "decoder"),
        rerun=lambda other: loaded_model(other, cfg, weights).decode(tgt_in, memory, src),
    )
