"""§3.2.2 Multi-head attention: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i), with d_k = d_model / h.

Compared with the reference run in float64 (``conformance.problems.oracle``) on random canonical weights:
self-attention (Q, K and V from one sequence) and cross-attention (queries from the decoder, keys and
values from the memory, so the weights are (B, h, T, S) and need not be square), with key padding.
Head i reads columns [i*d_k:(i+1)*d_k] of X W_Q, X W_K, X W_V and rows [i*d_k:(i+1)*d_k] of W_O
(``conformance.weights``). "The original transformer, step by step", Steps 3-4.
"""

import numpy as np
import pytest
from hypothesis import given

from conformance.diagnosis import Question
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LayerSizes, activations, fast_failure, layer_sizes
from conformance.tolerances import LAYER, for_candidate, visible
from conformance.weights import attention_shapes, random_weights

SECTION = "§3.2.2 Multi-head attention"
pytestmark = pytest.mark.requires("multi_head_attention")



def assert_matches_oracle(candidate, check, sizes: LayerSizes, *, cross: bool, what: str):
    weights, query, key, keep = questions.attention_problem(sizes, cross=cross)
    out, attn = candidate.multi_head_attention(query, key, key, weights, sizes.h, keep)
    want_out, want_attn = oracle.multi_head_attention(query, key, key, weights, sizes.h, keep)
    side = "cross" if cross else "self"
    weights_q, output_q, whole = (getattr(questions, f"{side}_attention_{part}") for part in ("weights", "output",
                                                                                               "whole"))
    check.close(attn, want_attn, for_candidate(LAYER, candidate), what=f"{what} weights {attn.shape}",
                ask=Question(weights_q, sizes, whole=whole, part=(1, "attention weights")))
    check.close(out, want_out, for_candidate(LAYER, candidate), what=f"{what} output {out.shape}",
                ask=Question(output_q, sizes, whole=whole, part=(0, "attention output")))


@claims.MULTI_HEAD
@fast_failure()
@given(sizes=layer_sizes())
def test_self_attention_matches_reference(candidate, check, sizes):
    """Self-attention with key padding equals the reference: output (B, L, d_model), weights (B, h, L, L)."""
    assert_matches_oracle(candidate, check, sizes, cross=False, what="self-attention")


@claims.CROSS_ATTENTION
@fast_failure()
@given(sizes=layer_sizes())
def test_cross_attention_matches_reference(candidate, check, sizes):
    """Cross-attention (queries T, keys and values S, padded) equals the reference; weights (B, h, T, S)."""
    assert_matches_oracle(candidate, check, sizes, cross=True, what="cross-attention")


@claims.MULTI_HEAD
def test_multi_head_attention_matches_reference_at_base_size(candidate, check):
    """At the paper's base size (d_model 512, h 8, d_k 64) cross-attention equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=7, T=10, h=8, d_k=64, d_ff=2048, bias=True, seed=512))
    assert_matches_oracle(candidate, check, sizes, cross=True, what="base-size cross-attention")


def head_problem(sizes: LayerSizes):
    """Weights, x, and the same weights with head 1's columns of W_Q and W_K redrawn."""
    rng, d_k = sizes.rng(), sizes.d_k
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    x = activations(rng, sizes.B, sizes.S, sizes.d_model)
    changed = {name: value.copy() for name, value in weights.items()}
    for name in ("W_Q", "W_K"):
        changed[name][:, :d_k] = activations(rng, sizes.d_model, d_k, scale=2.0)
    return weights, changed, x


def head_weights(candidate, sizes: LayerSizes) -> np.ndarray:
    """The candidate's (B, h, S, S) weights on x, unmasked: what the per-head claim reads."""
    weights, _, x = head_problem(sizes)
    return candidate.multi_head_attention(x, x, x, weights, sizes.h, None)[1]


@claims.HEADS_OWN_PROJECTIONS
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.h >= 2 and s.S >= 2))
def test_head_i_reads_only_its_own_columns_of_W_Q_and_W_K(candidate, check, sizes):
    """Changing head 1's columns of W_Q and W_K changes head 1's weights and leaves every other head's."""
    weights, changed, x = head_problem(sizes)
    _, before = candidate.multi_head_attention(x, x, x, weights, sizes.h, None)
    _, after = candidate.multi_head_attention(x, x, x, changed, sizes.h, None)
    ask = Question(head_weights, sizes)
    check.close(after[:, 1:], before[:, 1:], for_candidate(LAYER, candidate),
                what=f"weights of heads 2..{sizes.h} after changing head 1's columns [0:{sizes.d_k}] of W_Q, W_K",
                ask=ask)
    moved = float(np.abs(after[:, 0].astype(np.float64) - before[:, 0]).max())
    check.claim(moved > 10 * visible(LAYER, candidate).atol,
                f"head 1's weights did not change (max change {moved:.3g}) when its columns of W_Q and W_K did:"
                " head i must read columns [i*d_k:(i+1)*d_k] of x W_Q and x W_K (orientation x @ W)",
                ask=ask, tol=for_candidate(LAYER, candidate),
                                           expected="a visible change in head 1", actual=f"max change {moved:.3g}")
