"""Invariances every correct implementation satisfies, whatever its weights (§3.2.3, §3.5, §5.4).

Each check runs the candidate against itself, changing only what the claim says cannot matter:
tokens after position t (the decoder is causal), padding appended to a batch (it hides keys only),
the other rows of a batch, the order of positions for an encoder layer without positional encoding
("Without positional information or an order-dependent mask, self-attention is
permutation-equivariant", "Vanilla Transformer"), and repeated calls in evaluation mode (dropout off).
The shift-is-a-rotation identity of the positional encoding lives in ``test_positional_encoding.py``.
"""

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.diagnosis import Question, probe_of
from conformance.diagnosis.message import RANDOM_AT_EVALUATION
from conformance.paper import claims
from conformance.problems import questions
from conformance.problems.questions import pad_columns
from conformance.problems.scenarios import (
    LOADED_MODEL,
    fast_failure,
    layer_sizes,
    loaded_model,
    model_sizes,
    model_weights,
    source_and_target,
    token_ids,
)
from conformance.tolerances import LAYER, MODEL, for_candidate

SECTION = "Invariances (§3.2.3 masks, §3.5 positions, §5.4 dropout)"
FORWARD = (*LOADED_MODEL, "model.forward")



def problem(candidate, sizes):
    """The candidate's model with ``questions.model_problem``'s weights, its inputs, and the rng after them."""
    rng = sizes.rng()
    weights = model_weights(sizes.config, rng)
    src, tgt_in = source_and_target(sizes, rng)  # as questions.model_problem draws them
    return loaded_model(candidate, sizes.config, weights), src, tgt_in, rng


def source_padding_probe(sizes):
    """The second problem of the source-padding invariance: ``probe_of``'s, every source sentence one token long.
    A model whose encoder mask is as wide as its longest sentence, not the source (OpenNMT-py 3.0.4), raises on
    a padded source wider than that unless the width is 1; there it answers (the mask broadcasts over every
    key), and every catalogue bug this invariance catches still answers unlike the paper and unlike the others."""
    return dataclasses.replace(probe_of(sizes), S=1)


def logits_question(sizes) -> Question:
    """The logits of the drawn problem (questions.model_problem): what each model invariance's diagnosis asks."""
    return Question(questions.logits, sizes)


@claims.CAUSAL_MASK
@pytest.mark.requires(*FORWARD)
@fast_failure(2 / 3)
@given(sizes=model_sizes().filter(lambda s: s.T >= 2), data=st.data())
def test_logits_up_to_t_ignore_later_target_tokens(candidate, check, sizes, data):
    """Changing the decoder input after position t leaves the logits at positions 0..t unchanged."""
    model, src, _, rng = problem(candidate, sizes)
    cfg, t = sizes.config, data.draw(st.integers(0, sizes.T - 2), label="t")
    tgt_in = token_ids(rng, cfg, sizes.B, sizes.T, start=cfg.bos_id)
    later = tgt_in.copy()
    later[:, t + 1:] = token_ids(rng, cfg, sizes.B, sizes.T - t - 1)
    before, after = model.forward(src, tgt_in), model.forward(src, later)
    check.close(after[:, : t + 1], before[:, : t + 1], for_candidate(MODEL, candidate),
                what=f"logits at positions 0..{t} after changing the decoder input at {t + 1}..{sizes.T - 1}"
                     " (the future must not leak)", ask=logits_question(sizes))


@claims.FULLY_MASKED_ROW
@pytest.mark.requires(*FORWARD)
@fast_failure()
@given(sizes=model_sizes())
def test_fully_masked_source_sentence_is_invisible_to_the_decoder(candidate, check, sizes):
    """A source sentence of padding only (an empty line of a corpus): every query of its encoder self-attention
    and of the decoder's cross-attention has no visible key. By the suite's convention such a row reads nothing,
    so the sentence's logits are finite and do not move when the padding token's embedding does.

    The model-level form of the fully-masked-row convention, for adapters that expose only the model: a -1e9,
    -1e18 or finfo.min fill reads the padding uniformly there, -inf without care gives NaN."""
    pad = sizes.config.pad_id
    check.finite_where_no_row_is_empty(lambda: questions.logits(candidate, sizes),
                                       problem="the same batch without the all-padding sentence")
    before = questions.logits_of_an_empty_source(candidate, sizes)
    check.claim(bool(np.isfinite(before).all()),
                "an all-padding source sentence gave NaN or inf logits (softmax over keys that are all -inf is 0/0;"
                " the suite's convention gives such a row weights 0)", expected="finite logits", actual="NaN/inf")
    after = questions.logits_of_an_empty_source(candidate, sizes, moved=True)
    check.close(after, before, for_candidate(MODEL, candidate),
                what=f"logits of a sentence whose source is all padding, after E[pad] (token {pad}) changed (a"
                     " finite fill of the hidden scores makes its fully masked rows read the padding uniformly; a"
                     " decoder that hides no source padding at all reads it too)",
                ask=Question(functools.partial(questions.logits_of_an_empty_source, moved=True), sizes))
    # code that zeroes the padding's embedding moves nothing with E[pad]: the padding's positions still differ
    longer = questions.logits_of_an_empty_source(candidate, sizes, longer=3)
    check.claim(bool(np.isfinite(longer).all()),
                "an all-padding source sentence of 3 more padding tokens gave NaN or inf logits (softmax over keys"
                " that are all -inf is 0/0; the suite's convention gives such a row weights 0)",
                expected="finite logits", actual="NaN/inf")
    check.close(longer, before, for_candidate(MODEL, candidate),
                what="logits of a sentence whose source is all padding, with 3 more padding tokens (a finite fill"
                     " makes its fully masked rows read the padding's positional encodings uniformly; a decoder that"
                     " hides no source padding at all reads them too)",
                ask=Question(functools.partial(questions.logits_of_an_empty_source, longer=3), sizes))


@claims.KEY_PADDING
@pytest.mark.requires(*FORWARD)
@fast_failure(2 / 3)
@given(sizes=model_sizes(), k=st.integers(1, 3))
def test_appending_source_padding_leaves_logits_unchanged(candidate, check, sizes, k):
    """Padding the source with k more padding tokens leaves every logit unchanged."""
    model, src, tgt_in, _ = problem(candidate, sizes)
    before = model.forward(src, tgt_in)
    after = model.forward(pad_columns(src, k, sizes.config.pad_id), tgt_in)
    check.close(after, before, for_candidate(MODEL, candidate),
                what=f"logits after appending {k} source padding tokens (the"
                " padding mask, built from pad_id, hides them)",
                ask=Question(functools.partial(questions.logits_after_source_padding, k=k), sizes,
                             source_padding_probe(sizes)))


@claims.KEY_PADDING
@pytest.mark.requires(*FORWARD)
@fast_failure(2 / 3)
@given(sizes=model_sizes(), k=st.integers(1, 3))
def test_appending_target_padding_leaves_real_logits_unchanged(candidate, check, sizes, k):
    """Padding the decoder input with k more padding tokens leaves the logits at its real positions unchanged."""
    model, src, tgt_in, _ = problem(candidate, sizes)
    before = model.forward(src, tgt_in)
    after = model.forward(src, pad_columns(tgt_in, k, sizes.config.pad_id))
    real = tgt_in != sizes.config.pad_id  # the claim is about real positions; padded ones are never read
    check.close(after[:, : sizes.T][real], before[real], for_candidate(MODEL, candidate),
                what=f"logits at the real positions among the first {sizes.T} after appending {k} target padding"
                     " tokens", ask=Question(functools.partial(questions.real_logits_after_target_padding, k=k), sizes))


@claims.KEY_PADDING
@pytest.mark.requires(*FORWARD)
@fast_failure(2 / 3)
@given(sizes=model_sizes())
def test_batch_equals_rows_run_one_at_a_time(candidate, check, sizes):
    """Each row of a padded batch gets the logits it gets alone, without its padding."""
    model, src, tgt_in, _ = problem(candidate, sizes)
    pad = sizes.config.pad_id
    # one more padding column each side: every row has padding to hide, whatever lengths were drawn
    src, tgt_in = pad_columns(src, 1, pad), pad_columns(tgt_in, 1, pad)
    batch = model.forward(src, tgt_in)
    for b in range(sizes.B):
        S, T = int((src[b] != pad).sum()), int((tgt_in[b] != pad).sum())
        alone = model.forward(src[b: b + 1, :S], tgt_in[b: b + 1, :T])
        check.close(batch[b, :T], alone[0], for_candidate(MODEL, candidate),
                    what=f"row {b} of the batch (source {S}, target {T} real tokens) vs the row alone",
                    ask=logits_question(sizes))


@claims.PERMUTATION_EQUIVARIANT
@pytest.mark.requires("encoder_layer")
@fast_failure()
@given(sizes=layer_sizes(), data=st.data())
def test_encoder_layer_is_permutation_equivariant(candidate, check, sizes, data):
    """An encoder layer is permutation-equivariant: permuting x and its mask permutes the output alike.

    No positional encoding enters a layer, and the encoder has no order-dependent mask."""
    check.published("vanilla.permutation_equivariant")  # the claim this property states, for the candidate
    weights, x, keep = questions.encoder_layer_problem(sizes)
    order = np.asarray(data.draw(st.permutations(range(sizes.S)), label="permutation"))
    out = candidate.encoder_layer(x, weights, sizes.h, sizes.eps, keep)
    permuted = candidate.encoder_layer(x[:, order], weights, sizes.h, sizes.eps, keep[:, order])
    check.close(permuted, out[:, order], for_candidate(LAYER, candidate),
                what=f"encoder_layer(x[:, {order.tolist()}]) vs encoder_layer(x)[:, {order.tolist()}]",
                ask=Question(questions.encoder_layer_output, sizes))


@claims.DROPOUT_IN_TRAINING_ONLY
@pytest.mark.requires(*FORWARD)
@fast_failure(1 / 3)
@given(sizes=model_sizes())
def test_evaluation_is_deterministic(candidate, check, sizes):
    """In evaluation mode (dropout 0.1 configured, switched off) two forward calls give identical logits."""
    model, src, tgt_in, _ = problem(candidate, sizes)
    first, second = model.forward(src, tgt_in), model.forward(src, tgt_in)
    worst = float(np.abs(first.astype(np.float64) - second).max())
    check.claim(worst == 0.0, f"two forward calls on the same input differ by up to {worst:.3g} (evaluation mode"
                " is deterministic: no dropout at inference)", expected="identical logits",
                actual=f"max difference {worst:.3g}", likely_cause=RANDOM_AT_EVALUATION)
