"""§3.1 Encoder stack: N identical layers of multi-head self-attention, then the position-wise FFN,
each sublayer wrapped as LayerNorm(x + Dropout(Sublayer(x))): the norm comes after the residual
addition (post-norm). ``encode`` applies the N layers to sqrt(d_model) E[src] + PE and returns the
memory, (B, S, d_model) ("The original transformer, step by step", Steps 1-3; "Vanilla Transformer" §2).

Compared with the reference run in float64 on random canonical weights with gamma and beta far from
1 and 0 (so an extra or a missing LayerNorm shows), and padded sources. When ``encode`` fails, the
message names the first encoder layer, and the sublayer, that diverges on the oracle's own inputs, and
whether the model shows a structural pattern on a padded probe batch (``diagnosis.find_structure``:
an extra LayerNorm after the stack, padded positions replaced by a constant).
"""

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

SECTION = "§3.1 Encoder stack"


def assert_layer_matches_oracle(candidate, check, sizes: LayerSizes, *, what: str):
    rng = sizes.rng()
    weights = layer_weights(sizes, "encoder", rng)
    x, keep = activations(rng, sizes.B, sizes.S, sizes.d_model), trailing_keep(rng, sizes.B, sizes.S)
    got = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)

    def run(variant=None):
        return oracle.encoder_layer(x, weights, sizes.h, sizes.eps, keep, variant=variant)

    diagnose.close(
        check, got, run(), for_dtype(LAYER, candidate.conventions.dtype), what=f"{what} (x{x.shape}, h={sizes.h})",
        alternatives=lambda: diagnose.variant_outputs("encoder_layer", run),
        explain=lambda: diagnose.suspect_in_encoder_layer(candidate, x, weights, sizes.h, sizes.eps, keep),
        rerun=lambda other: other.encoder_layer(x, weights, sizes.h, sizes.eps, keep),
    )


@claims.POST_NORM
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes())
def test_encoder_layer_matches_reference(candidate, check, sizes):
    """An encoder layer with a padded source equals the reference: post-norm self-attention, then FFN."""
    assert_layer_matches_oracle(candidate, check, sizes, what="encoder layer")


@claims.POST_NORM
@pytest.mark.requires("encoder_layer")
def test_encoder_layer_matches_reference_at_base_size(candidate, check):
    """At the paper's base size (d_model 512, h 8, d_ff 2048) an encoder layer equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=9, T=9, h=8, d_k=64, d_ff=2048, bias=True, seed=6))
    assert_layer_matches_oracle(candidate, check, sizes, what="base-size encoder layer")


@claims.EMBEDDING
@pytest.mark.requires(*MODEL_PARTS, "model.encode")
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_encode_matches_reference(candidate, check, sizes):
    """encode(src) equals the reference's memory: embedding x sqrt(d_model) + PE, then N encoder layers."""
    cfg, rng = sizes.config, sizes.rng()
    weights = model_weights(cfg, rng)
    src, _ = source_and_target(sizes, rng)
    got = loaded_model(candidate, cfg, weights).encode(src)
    want = oracle.OracleModel(cfg, weights).encode(src)
    diagnose.close(
        check, got, want, for_dtype(MODEL, candidate.conventions.dtype),
        what=f"memory = encode(src{src.shape}) (N={cfg.N}, d_model={cfg.d_model}, h={cfg.h})",
        alternatives=lambda: diagnose.variant_outputs(
            "model", lambda v: oracle.OracleModel(cfg, weights, variant=v).encode(src)),
        explain=lambda: diagnose.explain_encode(candidate, cfg, weights, src, got),
        structure=lambda: diagnosis.find_structure(candidate, "encoder"),
        rerun=lambda other: loaded_model(other, cfg, weights).encode(src),
    )
