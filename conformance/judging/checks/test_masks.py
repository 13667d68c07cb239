"""§3.2.3 Masks: padding hides keys (not queries), decoder self-attention is causal with the diagonal
visible, cross-attention reads the whole source except its padding.

"Vanilla Transformer": M adds 0 at allowed positions and -inf at forbidden ones, so masked weights are
exactly 0; "the strictly upper triangle is blocked; the diagonal stays visible because the current
input predicts the next token"; "Cross-attention can read the full source sentence, not just a source
prefix"; the padding mask "excludes the first input's two placeholder keys". A padded *query* row is
still computed by the formula (it reads the real keys); only its use downstream is ignored. A query
whose keys are all masked has no defined softmax: the suite's convention (advisory, docs/claims.md)
gives it weights 0 and attention output 0, so multi-head attention returns b_O there.

Layer checks run the candidate's own layers twice, changing only what a mask must hide (or must
show), so they hold whatever the candidate's numerics. Each asks its question as a function of the
drawn sizes (the layer's output on the check's own inputs), so that a failure can be put to the
catalogue of known bugs and confirmed on a second, bigger problem.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.compare import measure
from conformance.diagnosis import Question
from conformance.errors import Blocked
from conformance.paper import claims
from conformance.problems import oracle
from conformance.problems.scenarios import (
    activations,
    fast_failure,
    keep_masks,
    key_padding,
    layer_sizes,
    layer_weights,
    trailing_keep,
)
from conformance.tolerances import ELEMENTWISE, LAYER, for_candidate, visible
from conformance.weights import attention_shapes, random_weights

SECTION = "§3.2.3 Masks"



def reached(candidate, before, afters) -> np.ndarray:
    """How visibly each output vector moved, in units of the layer tolerance (> 10: a real change, not
    rounding), the larger over two independent perturbations: one perturbation can, by accident, move
    a vector only along a direction the next LayerNorm removes (likely at d_model = 4), two hardly both.

    before (..., d), afters [(..., d), ...] -> (...)."""
    before = np.asarray(before, np.float64)
    allowed = visible(LAYER, candidate).allowed(np.abs(before))
    return np.max([(np.abs(np.asarray(a, np.float64) - before) / allowed).max(-1) for a in afters], axis=0)


def padded_keep(rng, B: int, L: int) -> np.ndarray:
    """Trailing padding with at least one padded position (L >= 2)."""
    keep = trailing_keep(rng, B, L)
    keep[0, -1] = False
    keep[:, 0] = True
    return keep


# --------------------------------------------------------------------------------------------------
# The problems, each a function of the drawn sizes, and the layer output each check's question reads
# --------------------------------------------------------------------------------------------------


def padded_source(sizes):
    """Encoder-layer weights, a keep mask with padding, x; and the rng for the check's perturbations."""
    rng = sizes.rng()
    weights, keep = layer_weights(sizes, "encoder", rng), padded_keep(rng, sizes.B, sizes.S)
    return weights, keep, activations(rng, sizes.B, sizes.S, sizes.d_model), rng


def padded_source_output(candidate, sizes):
    weights, keep, x, _ = padded_source(sizes)
    return candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)


def padded_target_and_source(sizes):
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    tgt_keep, src_keep = padded_keep(rng, sizes.B, sizes.T), padded_keep(rng, sizes.B, sizes.S)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    return weights, tgt_keep, src_keep, y, memory, rng


def padded_target_and_source_output(candidate, sizes):
    weights, tgt_keep, src_keep, y, memory, _ = padded_target_and_source(sizes)
    return candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)


def unpadded_target(sizes):
    """Decoder-layer weights, a padded source, y without padding (every position a real query), memory."""
    rng = sizes.rng()
    weights, src_keep = layer_weights(sizes, "decoder", rng), trailing_keep(rng, sizes.B, sizes.S)
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    return weights, np.ones((sizes.B, sizes.T), bool), src_keep, y, memory, rng


def unpadded_target_output(candidate, sizes):
    weights, tgt_keep, src_keep, y, memory, _ = unpadded_target(sizes)
    return candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)


def uniform_cross_attention(sizes):
    """Decoder-layer weights whose cross-attention W_Q and b_Q are 0 (every visible source position gets
    weight 1/S exactly), y and memory without padding."""
    rng = sizes.rng()
    weights = layer_weights(sizes, "decoder", rng)
    weights.update({name: np.zeros_like(weights[name]) for name in ("cross_attn.W_Q", "cross_attn.b_Q")
                    if name in weights})
    y, memory = activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S, sizes.d_model)
    return weights, y, memory, rng


def uniform_cross_attention_output(candidate, sizes):
    weights, y, memory, _ = uniform_cross_attention(sizes)
    everything = np.ones((sizes.B, sizes.T), bool), np.ones((sizes.B, sizes.S), bool)
    return candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, *everything)


# --------------------------------------------------------------------------------------------------
# Padding hides keys, not queries (encoder and decoder layers)
# --------------------------------------------------------------------------------------------------


@claims.KEY_PADDING
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_changing_padded_source_positions_leaves_real_positions_unchanged(candidate, check, sizes):
    """In an encoder layer, the vectors at padded positions do not reach any real position."""
    weights, keep, x, rng = padded_source(sizes)
    changed = np.where(keep[..., None], x, activations(rng, *x.shape, scale=3.0))
    before = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    after = candidate.encoder_layer(changed, weights, sizes.h, sizes.eps, keep)
    check.close(after[keep], before[keep], for_candidate(LAYER, candidate),
                what="encoder layer output at real positions after changing the padded ones (padding must hide"
                     " the keys)", ask=Question(padded_source_output, sizes))


@claims.KEY_PADDING
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_padded_query_rows_still_follow_the_formula(candidate, check, sizes):
    """Padded positions are queries like any other: their outputs read the real keys, as the formula says.

    Judged only where the layer is right at the real positions; elsewhere the check is blocked."""
    weights, keep, x, _ = padded_source(sizes)
    got = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    want = oracle.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    if not measure(got[keep], want[keep], for_candidate(LAYER, candidate)).passed:
        raise Blocked("the layer already differs from the reference at the real positions, so what it does at"
                      " the padded ones says nothing about the masks (encoder_layer_matches_reference judges the"
                      " layer)", blocked_by="encoder_layer_matches_reference")
    check.close(got[~keep], want[~keep], for_candidate(LAYER, candidate),
                what="encoder layer output at padded positions",
                ask=Question(padded_source_output, sizes))


@claims.DECODER_KEYS
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2 and s.T >= 2))
def test_decoder_layer_ignores_padded_target_and_source_keys(candidate, check, sizes):
    """Changing y at padded target positions, or the memory at padded source positions, changes no real output."""
    weights, tgt_keep, src_keep, y, memory, rng = padded_target_and_source(sizes)
    y2 = np.where(tgt_keep[..., None], y, activations(rng, *y.shape, scale=3.0))
    memory2 = np.where(src_keep[..., None], memory, activations(rng, *memory.shape, scale=3.0))
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    for name, args in (("y at padded target positions", (y2, memory)), ("padded memory positions", (y, memory2))):
        after = candidate.decoder_layer(*args, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
        check.close(after[tgt_keep], before[tgt_keep], for_candidate(LAYER, candidate),
                    what=f"decoder layer output at real target positions after changing {name}",
                    ask=Question(padded_target_and_source_output, sizes))


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
    weights, tgt_keep, src_keep, y, memory, rng = unpadded_target(sizes)
    ask = Question(unpadded_target_output, sizes)
    later = y.copy()
    later[:, t + 1:] = activations(rng, sizes.B, sizes.T - t - 1, sizes.d_model, scale=3.0)
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    after = candidate.decoder_layer(later, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    check.close(after[:, : t + 1], before[:, : t + 1], for_candidate(LAYER, candidate),
                what=f"decoder layer output at positions 0..{t} after changing y at {t + 1}..{sizes.T - 1}"
                     " (the future must not leak)", ask=ask)
    afters = []
    for _ in range(2):
        now = y.copy()
        now[:, t] = activations(rng, sizes.B, sizes.d_model, scale=3.0)
        afters.append(candidate.decoder_layer(now, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)[:, t])
    moved = reached(candidate, before[:, t], afters)  # (B,)
    check.claim(bool((moved > 10).all()), f"changing y at position {t} left the output at {t} unchanged"
                f" (change {moved.min():.3g} x tolerance): the layer does not read its own input at t",
                ask=ask, tol=for_candidate(LAYER, candidate),
                                           expected="a visible change", actual=f"{moved.min():.3g} x tolerance")


@claims.START_READS_ITSELF
@pytest.mark.requires("decoder_layer")
@fast_failure()
@given(sizes=layer_sizes())
def test_decoder_position_reads_itself(candidate, check, sizes):
    """The diagonal is visible: position 0 reads its own value (changing W_V changes its output).

    Position 0, the start token, can read only itself; with the diagonal blocked it reads nothing."""
    weights, tgt_keep, src_keep, y, memory, rng = unpadded_target(sizes)
    before = candidate.decoder_layer(y, memory, weights, sizes.h, sizes.eps, tgt_keep, src_keep)
    afters = []
    for _ in range(2):
        changed = {**weights, "self_attn.W_V": activations(rng, sizes.d_model, sizes.d_model, scale=2.0)}
        afters.append(candidate.decoder_layer(y, memory, changed, sizes.h, sizes.eps, tgt_keep, src_keep)[:, 0])
    moved = float(reached(candidate, before[:, 0], afters).min())
    check.claim(moved > 10, f"changing the self-attention's W_V left the output at position 0 unchanged"
                f" (change {moved:.3g} x tolerance): position 0 reads no value through its self-attention",
                ask=Question(unpadded_target_output, sizes), tol=for_candidate(LAYER, candidate),
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
    weights, y, memory, rng = uniform_cross_attention(sizes)
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
    check.claim(not blind, f"changing memory position {s} did not reach target positions {blind}"
                f" (change {moved.min():.3g} x tolerance at worst): those positions do not read the whole source",
                ask=Question(uniform_cross_attention_output, sizes), tol=for_candidate(LAYER, candidate),
                expected=f"every target position reads source position {s}", actual=f"blind at {blind}")


# --------------------------------------------------------------------------------------------------
# Masked weights in every head (multi-head attention with a mask the suite supplies)
# --------------------------------------------------------------------------------------------------


def masked_self_attention(sizes, *, causal: bool, p_keep: float = 0.7):
    """Weights, x (B, T), and a causal or random keep mask (B, T, T) in which every query keeps a key."""
    rng = sizes.rng()
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    x = activations(rng, sizes.B, sizes.T, sizes.d_model)
    activations(rng, sizes.B, sizes.T, sizes.d_model)  # an unused draw that keeps the examples of earlier versions
    keep = oracle.causal_keep(sizes.T).repeat(sizes.B, 0) if causal else \
        keep_masks(rng, (sizes.B, sizes.T, sizes.T), p_keep=p_keep)
    return weights, x, keep


def masked_weights_question(sizes, *, causal: bool, p_keep: float = 0.7) -> Question:
    def answer(candidate, sizes):
        weights, x, keep = masked_self_attention(sizes, causal=causal, p_keep=p_keep)
        return candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)[1]

    return Question(answer, sizes)


@claims.MASKED_WEIGHTS_ZERO
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), causal=st.booleans())
def test_masked_weights_are_exactly_zero_in_every_head(candidate, check, sizes, causal):
    """Where the mask forbids a key (padding, or the future), every head's weight is exactly 0 (e^-inf)."""
    weights, x, keep = masked_self_attention(sizes, causal=causal, p_keep=0.5)
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)
    leaked = attn[np.broadcast_to(~keep[:, None], attn.shape)]
    worst = float(np.abs(leaked).max()) if leaked.size else 0.0
    check.claim(worst == 0.0, f"masked positions got weight up to {worst:.3g}"
                f" ({int((leaked != 0).sum())} of {leaked.size} not exactly 0)",
                ask=masked_weights_question(sizes, causal=causal, p_keep=0.5), tol=for_candidate(LAYER, candidate),
                expected="0 at every masked position", actual=f"max {worst:.3g}")


@claims.START_READS_ITSELF
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), causal=st.booleans())
def test_masked_rows_sum_to_one_in_every_head(candidate, check, sizes, causal):
    """With a mask, each head's weights over the visible keys still sum to 1 (the mask acts before the softmax)."""
    weights, x, keep = masked_self_attention(sizes, causal=causal)
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)
    sums = attn.astype(np.float64).sum(-1)
    check.close(sums, np.ones_like(sums), for_candidate(ELEMENTWISE, candidate), what="row sums of masked weights",
                ask=masked_weights_question(sizes, causal=causal))


@claims.START_READS_ITSELF
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes())
def test_causal_mask_hides_the_future_and_keeps_the_diagonal(candidate, check, sizes):
    """With the causal mask, position 0 reads only itself (weight 1) and every position reads itself."""
    weights, x, keep = masked_self_attention(sizes, causal=True)
    _, attn = candidate.multi_head_attention(x, x, x, weights, sizes.h, keep)
    ask = masked_weights_question(sizes, causal=True)
    check.close(attn[:, :, 0, 0], np.ones(attn.shape[:2]), for_candidate(ELEMENTWISE, candidate),
                what="weight of position 0 on itself (the start token reads only itself)", ask=ask)
    diagonal = np.diagonal(attn, axis1=-2, axis2=-1)
    check.claim(bool((diagonal > 0).all()), "a position gave itself weight 0 under the causal mask",
                ask=ask, tol=for_candidate(LAYER, candidate), expected="diagonal > 0",
                actual=f"min diagonal weight {float(diagonal.min()):.3g}")


def cross_attention_problem(sizes):
    """Weights, queries (B, T), memory (B, S), and the rng for the check's masks."""
    rng = sizes.rng()
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    return weights, activations(rng, sizes.B, sizes.T, sizes.d_model), activations(rng, sizes.B, sizes.S,
                                                                                     sizes.d_model), rng


def fully_masked_row_problem(sizes):
    """Cross-attention whose first query (batch 0, position 0) has every key masked: (weights, query, memory, keep)."""
    weights, query, memory, rng = cross_attention_problem(sizes)
    keep = keep_masks(rng, (sizes.B, sizes.T, sizes.S))
    keep[0, 0, :] = False
    return weights, query, memory, keep


def fully_masked_row_weights(candidate, sizes):
    weights, query, memory, keep = fully_masked_row_problem(sizes)
    return candidate.multi_head_attention(query, memory, memory, weights, sizes.h, keep)[1]


@claims.FULLY_MASKED_ROW
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.S >= 2))
def test_fully_masked_row_gives_zero_weights_and_only_b_O(candidate, check, sizes):
    """A query with every key masked gets weights 0 and output b_O (= 0 @ W_O + b_O), never NaN.

    The suite's convention for a row with no visible key (docs/claims.md): weights 0 and attention output
    0, before W_O and b_O. Only that row is judged here."""
    weights, query, memory, keep = fully_masked_row_problem(sizes)
    check.finite_where_no_row_is_empty(
        lambda: candidate.multi_head_attention(query, memory, memory, weights, sizes.h, np.ones_like(keep)),
        problem="the same cross-attention with no key masked")
    out, attn = candidate.multi_head_attention(query, memory, memory, weights, sizes.h, keep)
    # Diagnosed on every row's weights: a fill of 0 reads the hidden keys of the other rows too, a finite
    # fill (-1e9, finfo.min) only those of the fully masked row.
    check.close(attn[0, :, 0], np.zeros((sizes.h, sizes.S)), for_candidate(ELEMENTWISE, candidate),
                what="weights of the fully masked row", ask=Question(fully_masked_row_weights, sizes))
    b_O = weights.get("b_O", np.zeros(sizes.d_model))  # 0 @ W_O + b_O; no bias: 0
    check.close(out[0, 0], b_O, for_candidate(LAYER, candidate),
                what="output of the fully masked row (a finite fill gives"
                " uniform weights there, -inf without care gives NaN)")
    # The other rows are the multi-head checks' claim (the lessons'); this convention judges this row only.


def keys_removed(sizes):
    weights, query, memory, rng = cross_attention_problem(sizes)
    return weights, query, memory, keep_masks(rng, (sizes.B, sizes.S), p_keep=0.6)


def keys_masked(candidate, sizes):
    weights, query, memory, key_keep = keys_removed(sizes)
    return candidate.multi_head_attention(query, memory, memory, weights, sizes.h, key_padding(key_keep, sizes.T))


def keys_masked_output(candidate, sizes):
    return keys_masked(candidate, sizes)[0]


def keys_masked_weights(candidate, sizes):
    return keys_masked(candidate, sizes)[1]


@claims.MASKED_WEIGHTS_ZERO
@pytest.mark.requires("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes(), data=st.data())
def test_masking_keys_equals_removing_them(candidate, check, sizes, data):
    """Attention with some keys masked equals attention over the kept keys alone (K and V shortened)."""
    weights, query, memory, key_keep = keys_removed(sizes)
    out, attn = candidate.multi_head_attention(query, memory, memory, weights, sizes.h, key_padding(key_keep, sizes.T))
    ask_output = Question(keys_masked_output, sizes, whole=keys_masked, part=(0, "attention output"))
    ask_weights = Question(keys_masked_weights, sizes, whole=keys_masked, part=(1, "attention weights"))
    for b in range(sizes.B):
        kept = memory[b: b + 1, key_keep[b]]
        alone_out, alone_attn = candidate.multi_head_attention(query[b: b + 1], kept, kept, weights, sizes.h, None)
        check.close(out[b], alone_out[0], for_candidate(LAYER, candidate),
                    what=f"row {b}: masked vs keys removed, output", ask=ask_output)
        check.close(attn[b][..., key_keep[b]], alone_attn[0], for_candidate(LAYER, candidate),
                    what=f"row {b}: masked vs keys removed, weights of the kept keys", ask=ask_weights)
