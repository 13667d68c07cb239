"""§3.2.3 Masks: padding hides keys (not queries), decoder self-attention is causal with the diagonal
visible, cross-attention reads the whole source except its padding.

"Vanilla Transformer": M adds 0 at allowed positions and -inf at forbidden ones, so masked weights are
exactly 0; "the strictly upper triangle is blocked; the diagonal stays visible because the current
input predicts the next token"; "Cross-attention can read the full source sentence, not just a source
prefix"; the padding mask "excludes the first input's two placeholder keys". A padded *query* row is
still computed by the formula (it reads the real keys); only its use downstream is ignored. A query
whose keys are all masked has no defined softmax: this suite specifies weights 0 and attention output
0 for it (``conformance.formulas.attention``), so multi-head attention returns b_O there.

Layer checks run the candidate's own layers twice, changing only what a mask must hide (or must
show), so they hold whatever the candidate's numerics.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import claims, diagnose, oracle
from conformance.compare import assert_true, measure
from conformance.errors import Blocked
from conformance.scenarios import (
    activations,
    fast_failure,
    key_padding,
    layer_sizes,
    layer_weights,
    trailing_keep,
)
from conformance.strategies import keep_masks
from conformance.tolerances import ELEMENTWISE, LAYER, for_dtype
from conformance.weights import attention_shapes, random_weights

SECTION = "§3.2.3 Masks"

QUERIES_PADDED = "padding applied to the queries (rows) instead of the keys (columns)"
LEAKY_MASK = ("the mask multiplied into the scores or added as a finite number instead of -inf,"
              " or applied after the softmax")


def tol(candidate, table=LAYER):
    return for_dtype(table, candidate.conventions.dtype)


def reached(candidate, before, afters) -> np.ndarray:
    """How visibly each output vector moved, in units of the layer tolerance (> 10: a real change, not
    rounding), the larger over two independent perturbations: one perturbation can, by accident, move
    a vector only along a direction the next LayerNorm removes (likely at d_model = 4), two hardly both.

    before (..., d), afters [(..., d), ...] -> (...)."""
    before = np.asarray(before, np.float64)
    allowed = tol(candidate).allowed(np.abs(before))
    return np.max([(np.abs(np.asarray(a, np.float64) - before) / allowed).max(-1) for a in afters], axis=0)


def padded_keep(rng, B: int, L: int) -> np.ndarray:
    """Trailing padding with at least one padded position (L >= 2)."""
    keep = trailing_keep(rng, B, L)
    keep[0, -1] = False
    keep[:, 0] = True
    return keep


# --------------------------------------------------------------------------------------------------
# Padding hides keys, not queries (encoder and decoder layers)
# --------------------------------------------------------------------------------------------------


@claims.KEY_PADDING
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_changing_padded_source_positions_leaves_real_positions_unchanged(candidate, check, sizes):
    """In an encoder layer, the vectors at padded positions do not reach any real position."""
    rng = sizes.rng()
    weights, keep = layer_weights(sizes, "encoder", rng), padded_keep(rng, sizes.B, sizes.S)
    x = activations(rng, sizes.B, sizes.S, sizes.d_model)
    changed = np.where(keep[..., None], x, activations(rng, *x.shape, scale=3.0))
    before = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    after = candidate.encoder_layer(changed, weights, sizes.h, sizes.eps, keep)
    diagnose.close(check, after[keep], before[keep], tol(candidate),
                   what="encoder layer output at real positions after changing the padded ones",
                   likely=f"the padding mask not applied to the keys ({QUERIES_PADDED}, inverted, or ignored)")


@claims.KEY_PADDING
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_padded_query_rows_still_follow_the_formula(candidate, check, sizes):
    """Padded positions are queries like any other: their outputs read the real keys, as the formula says.

    Judged only where the layer is right at the real positions; elsewhere the check is blocked."""
    rng = sizes.rng()
    weights, keep = layer_weights(sizes, "encoder", rng), padded_keep(rng, sizes.B, sizes.S)
    x = activations(rng, sizes.B, sizes.S, sizes.d_model)
    got = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    want = oracle.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    if not measure(got[keep], want[keep], tol(candidate)).passed:
        raise Blocked("the layer already differs from the reference at the real positions, so what it does at"
                      " the padded ones says nothing about the masks (encoder_layer_matches_reference judges the"
                      " layer)", blocked_by="encoder_layer_matches_reference")
    queries = oracle.encoder_layer(x, weights, sizes.h, sizes.eps, keep,
                                   variant="padding applied to the queries instead of the keys")
    diagnose.close(check, got[~keep], want[~keep], tol(candidate),
                   what="encoder layer output at padded positions",
                   alternatives=lambda: {QUERIES_PADDED: queries[~keep],
                                         "outputs at padded positions zeroed (a padded fast path)": 0 * want[~keep]})


@claims.DECODER_KEYS
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2 and s.T >= 2))
def test_decoder_layer_ignores_padded_target_and_source_keys(candidate, check, sizes):
    """Changing y at padded target positions, or the memory at padded source positions, changes no real output."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    tgt_keep, src_keep = padded_keep(rng, sizes.B, sizes.T), padded_keep(rng, sizes.B, sizes.S)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    y2 = np.where(tgt_keep[..., None], y, activations(rng, *y.shape, scale=3.0))
    memory2 = np.where(src_keep[..., None], memory, activations(rng, *memory.shape, scale=3.0))
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    for name, args in (("y at padded target positions", (y2, memory)), ("padded memory positions", (y, memory2))):
        after = candidate.decoder_layer(*args, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
        diagnose.close(check, after[tgt_keep], before[tgt_keep], tol(candidate),
                       what=f"decoder layer output at real target positions after changing {name}",
                       likely=f"a padding mask not applied to the keys ({QUERIES_PADDED}, or ignored)")


# --------------------------------------------------------------------------------------------------
# Causal self-attention in the decoder, the whole source in the cross-attention
# --------------------------------------------------------------------------------------------------


@claims.CAUSAL_MASK
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.T >= 2), data=st.data())
def test_decoder_output_up_to_t_ignores_later_positions(candidate, check, sizes, data):
    """Changing y after position t leaves the outputs at positions 0..t unchanged; changing y_t changes output t."""
    t = data.draw(st.integers(0, sizes.T - 2), label="t")
    rng = sizes.rng()
    weights, src_keep = layer_weights(sizes, "decoder", rng), trailing_keep(rng, sizes.B, sizes.S)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    tgt_keep = np.ones((sizes.B, sizes.T), bool)
    later = y.copy()
    later[:, t + 1:] = activations(rng, sizes.B, sizes.T - t - 1, sizes.d_model, scale=3.0)
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    after = candidate.decoder_layer(later, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    diagnose.close(check, after[:, : t + 1], before[:, : t + 1], tol(candidate),
                   what=f"decoder layer output at positions 0..{t} after changing y at {t + 1}..{sizes.T - 1}",
                   likely="no causal mask in the decoder self-attention: the future leaks")
    afters = []
    for _ in range(2):
        now = y.copy()
        now[:, t] = activations(rng, sizes.B, sizes.d_model, scale=3.0)
        afters.append(candidate.decoder_layer(now, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)[:, t])
    moved = reached(candidate, before[:, t], afters)  # (B,)
    assert_true(bool((moved > 10).all()), f"changing y at position {t} left the output at {t} unchanged"
                f" (change {moved.min():.3g} x tolerance)",
                likely="the decoder layer ignores its own input at t (no residual connection?)",
                expected="a visible change", actual=f"{moved.min():.3g} x tolerance")


@claims.START_READS_ITSELF
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes())
def test_decoder_position_reads_itself(candidate, check, sizes):
    """The diagonal is visible: position 0 reads its own value (changing W_V changes its output).

    Position 0, the start token, can read only itself; with the diagonal blocked it reads nothing."""
    rng = sizes.rng()
    weights, src_keep = layer_weights(sizes, "decoder", rng), trailing_keep(rng, sizes.B, sizes.S)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    tgt_keep = np.ones((sizes.B, sizes.T), bool)
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    afters = []
    for _ in range(2):
        changed = {**weights, "self_attn.W_V": activations(rng, sizes.d_model, sizes.d_model, scale=2.0)}
        afters.append(candidate.decoder_layer(y, memory, changed, sizes.h, sizes.eps, tgt_keep, src_keep)[:, 0])
    moved = float(reached(candidate, before[:, 0], afters).min())
    assert_true(moved > 10, f"changing the self-attention's W_V left the output at position 0 unchanged"
                f" (change {moved:.3g} x tolerance): position 0 reads no value",
                likely="the causal mask blocks the diagonal (torch.triu(..., diagonal=0) where 1 was meant),"
                       " so the start token reads nothing; or the self-attention's output does not reach the"
                       " layer's output (no residual connection)",
                expected="position 0 reads itself", actual=f"change {moved:.3g} x tolerance")


@claims.CROSS_READS_WHOLE_SOURCE
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2), data=st.data())
def test_cross_attention_reads_every_real_source_position(candidate, check, sizes, data):
    """Every target position reads every real source position: cross-attention has no causal mask.

    Changing the memory at source position s changes the output at every target position, also t < s.
    The cross-attention's W_Q and b_Q are 0 here, so its scores are all equal and every visible source
    position gets weight 1/S exactly: what the check sees is the mask, not a softmax that happens to
    give position s a tiny weight."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    weights.update({name: np.zeros_like(weights[name]) for name in ("cross_attn.W_Q", "cross_attn.b_Q")
                    if name in weights})
    y = activations(rng, sizes.B, sizes.T, sizes.d_model)
    memory = activations(rng, sizes.B, sizes.S, sizes.d_model)
    tgt_keep, src_keep = np.ones((sizes.B, sizes.T), bool), np.ones((sizes.B, sizes.S), bool)
    s = data.draw(st.integers(1, sizes.S - 1), label="s")
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    afters = []
    for _ in range(2):
        changed = memory.copy()
        changed[:, s] = activations(rng, sizes.B, sizes.d_model, scale=3.0)
        afters.append(candidate.decoder_layer(y, changed, weights, sizes.h, sizes.eps, tgt_keep, src_keep))
    moved = reached(candidate, before, afters)  # (B, T)
    blind = sorted({int(t) for t in np.argwhere(moved <= 10)[:, 1]})
    assert_true(not blind, f"changing memory position {s} did not reach target positions {blind}"
                f" (change {moved.min():.3g} x tolerance at worst)",
                likely="a causal mask on the cross-attention, or the cross-attention reads the decoder states"
                       " instead of the memory",
                expected=f"every target position reads source position {s}", actual=f"blind at {blind}")


# --------------------------------------------------------------------------------------------------
# Masked weights in every head (multi-head attention with a mask the suite supplies)
# --------------------------------------------------------------------------------------------------


def mha_problem(sizes, rng, Lq, Lk):
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    return weights, activations(rng, sizes.B, Lq, sizes.d_model), activations(rng, sizes.B, Lk, sizes.d_model)


@claims.MASKED_WEIGHTS_ZERO
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), causal=st.booleans())
def test_masked_weights_are_exactly_zero_in_every_head(candidate, sizes, causal):
    """Where the mask forbids a key (padding, or the future), every head's weight is exactly 0 (e^-inf)."""
    rng = sizes.rng()
    L = sizes.T
    weights, x, _ = mha_problem(sizes, rng, L, L)
    keep = oracle.causal_keep(L).repeat(sizes.B, 0) if causal else keep_masks(rng, (sizes.B, L, L), p_keep=0.5)
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)
    leaked = attn[np.broadcast_to(~keep[:, None], attn.shape)]
    worst = float(np.abs(leaked).max()) if leaked.size else 0.0
    assert_true(worst == 0.0, f"masked positions got weight up to {worst:.3g}"
                f" ({int((leaked != 0).sum())} of {leaked.size} not exactly 0)", likely=LEAKY_MASK,
                expected="0 at every masked position", actual=f"max {worst:.3g}")


@claims.START_READS_ITSELF
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), causal=st.booleans())
def test_masked_rows_sum_to_one_in_every_head(candidate, check, sizes, causal):
    """With a mask, each head's weights over the visible keys still sum to 1 (the mask acts before the softmax)."""
    rng = sizes.rng()
    weights, x, _ = mha_problem(sizes, rng, sizes.T, sizes.T)
    keep = oracle.causal_keep(sizes.T).repeat(sizes.B, 0) if causal else keep_masks(rng, (sizes.B, sizes.T, sizes.T))
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)
    sums = attn.astype(np.float64).sum(-1)
    diagnose.close(check, sums, np.ones_like(sums), tol(candidate, ELEMENTWISE), what="row sums of masked weights",
                   likely="the mask applied after the softmax (weights zeroed, rows not renormalised)")


@claims.START_READS_ITSELF
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes())
def test_causal_mask_hides_the_future_and_keeps_the_diagonal(candidate, check, sizes):
    """With the causal mask, position 0 reads only itself (weight 1) and every position reads itself."""
    rng = sizes.rng()
    weights, x, _ = mha_problem(sizes, rng, sizes.T, sizes.T)
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, oracle.causal_keep(sizes.T).repeat(sizes.B, 0))
    diagnose.close(check, attn[:, :, 0, 0], np.ones(attn.shape[:2]), tol(candidate, ELEMENTWISE),
                   what="weight of position 0 on itself (the start token reads only itself)", likely=LEAKY_MASK)
    diagonal = np.diagonal(attn, axis1=-2, axis2=-1)
    assert_true(bool((diagonal > 0).all()), "a position gave itself weight 0 under the causal mask",
                likely="the causal mask blocks the diagonal", expected="diagonal > 0",
                actual=f"min diagonal weight {float(diagonal.min()):.3g}")


@claims.FULLY_MASKED_ROW
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_fully_masked_row_gives_zero_weights_and_only_b_O(candidate, check, sizes):
    """A query with every key masked gets weights 0 and output b_O (= 0 @ W_O + b_O), never NaN.

    The suite's convention for a row with no visible key (docs/claims.md): weights 0 and attention output
    0, before W_O and b_O. Only that row is judged here."""
    rng = sizes.rng()
    weights, query, memory = mha_problem(sizes, rng, sizes.T, sizes.S)
    keep = keep_masks(rng, (sizes.B, sizes.T, sizes.S))
    keep[0, 0, :] = False
    out, attn = candidate.multi_head_attention(query, memory, memory, weights, sizes.h, keep)
    check.close(attn[0, :, 0], np.zeros((sizes.h, sizes.S)), tol(candidate, ELEMENTWISE),
                what="weights of the fully masked row")
    b_O = weights.get("b_O", np.zeros(sizes.d_model))  # 0 @ W_O + b_O; no bias: 0
    diagnose.close(check, out[0, 0], b_O, tol(candidate), what="output of the fully masked row",
                   likely="softmax over a row of -inf replaced by uniform weights (a finite fill value)")
    # The other rows are the multi-head checks' claim (the lessons'); this convention judges this row only.


@claims.MASKED_WEIGHTS_ZERO
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), data=st.data())
def test_masking_keys_equals_removing_them(candidate, check, sizes, data):
    """Attention with some keys masked equals attention over the kept keys alone (K and V shortened)."""
    rng = sizes.rng()
    weights, query, memory = mha_problem(sizes, rng, sizes.T, sizes.S)
    key_keep = keep_masks(rng, (sizes.B, sizes.S), p_keep=0.6)
    out, attn = candidate.multi_head_attention(query, memory, memory, weights, sizes.h, key_padding(key_keep, sizes.T))
    for b in range(sizes.B):
        kept = memory[b: b + 1, key_keep[b]]
        alone_out, alone_attn = candidate.multi_head_attention(query[b: b + 1], kept, kept, weights, sizes.h, None)
        diagnose.close(check, out[b], alone_out[0], tol(candidate), what=f"row {b}: masked vs keys removed, output",
                       likely=LEAKY_MASK)
        check.close(attn[b][..., key_keep[b]], alone_attn[0], tol(candidate),
                    what=f"row {b}: masked vs keys removed, weights of the kept keys")
