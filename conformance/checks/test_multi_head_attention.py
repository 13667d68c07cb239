"""§3.2.2 Multi-head attention: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O,
head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i), with d_k = d_model / h.

Compared with the reference run in float64 (``conformance.oracle``) on random canonical weights:
self-attention (Q, K and V from one sequence) and cross-attention (queries from the decoder, keys and
values from the memory, so the weights are (B, h, T, S) and need not be square), with key padding.
Head i reads columns [i*d_k:(i+1)*d_k] of X W_Q, X W_K, X W_V and rows [i*d_k:(i+1)*d_k] of W_O
(``conformance.weights``). "The original transformer, step by step", Steps 3-4.
"""

import numpy as np
import pytest
from hypothesis import given

from conformance import claims, diagnose, oracle
from conformance.compare import assert_true
from conformance.scenarios import LayerSizes, activations, fast_failure, key_padding, layer_sizes, trailing_keep
from conformance.tolerances import LAYER, for_dtype
from conformance.weights import attention_shapes, random_weights

SECTION = "§3.2.2 Multi-head attention"
pytestmark = pytest.mark.requires("multi_head_attention")


def tol(candidate):
    return for_dtype(LAYER, candidate.conventions.dtype)


def problem(sizes: LayerSizes, *, cross: bool):
    """Weights, queries, keys (= values) and a key-padding mask (B, Lq, Lk)."""
    rng = sizes.rng()
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    query = activations(rng, sizes.B, sizes.T, sizes.d_model)
    key = activations(rng, sizes.B, sizes.S, sizes.d_model) if cross else query
    keep = key_padding(trailing_keep(rng, sizes.B, key.shape[1]), query.shape[1])
    return weights, query, key, keep


def alternatives(query, key, weights, h, keep, index):
    """What known bugs output (index 0: the output, 1: the weights), computed only on failure."""

    def compute():
        run = lambda v: oracle.multi_head_attention(query, key, key, weights, h, keep, variant=v)[index]  # noqa: E731
        found = diagnose.variant_outputs("multi_head_attention", run)
        found["the mask ignored"] = oracle.multi_head_attention(query, key, key, weights, h, None)[index]
        return found

    return compute


def assert_matches_oracle(candidate, check, query, key, weights, h, keep, *, what):
    out, attn = candidate.multi_head_attention(query, key, key, weights, h, keep)
    want_out, want_attn = oracle.multi_head_attention(query, key, key, weights, h, keep)
    diagnose.close(check, attn, want_attn, tol(candidate), what=f"{what} weights {attn.shape}",
                   alternatives=alternatives(query, key, weights, h, keep, 1),
                   rerun=lambda other: other.multi_head_attention(query, key, key, weights, h, keep)[1])
    diagnose.close(check, out, want_out, tol(candidate), what=f"{what} output {out.shape}",
                   alternatives=alternatives(query, key, weights, h, keep, 0),
                   rerun=lambda other: other.multi_head_attention(query, key, key, weights, h, keep)[0])


@claims.MULTI_HEAD
@fast_failure()
@given(sizes=layer_sizes())
def test_self_attention_matches_reference(candidate, check, sizes):
    """Self-attention with key padding equals the reference: output (B, L, d_model), weights (B, h, L, L)."""
    weights, x, _, keep = problem(sizes, cross=False)
    assert_matches_oracle(candidate, check, x, x, weights, sizes.h, keep, what="self-attention")


@claims.CROSS_ATTENTION
@fast_failure()
@given(sizes=layer_sizes())
def test_cross_attention_matches_reference(candidate, check, sizes):
    """Cross-attention (queries T, keys and values S, padded) equals the reference; weights (B, h, T, S)."""
    weights, query, memory, keep = problem(sizes, cross=True)
    assert_matches_oracle(candidate, check, query, memory, weights, sizes.h, keep, what="cross-attention")


@claims.MULTI_HEAD
def test_multi_head_attention_matches_reference_at_base_size(candidate, check):
    """At the paper's base size (d_model 512, h 8, d_k 64) cross-attention equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=7, T=10, h=8, d_k=64, d_ff=2048, bias=True, seed=512))
    weights, query, memory, keep = problem(sizes, cross=True)
    assert_matches_oracle(candidate, check, query, memory, weights, 8, keep, what="base-size cross-attention")


@claims.HEADS_OWN_PROJECTIONS
@fast_failure()
@given(sizes=layer_sizes().filter(lambda s: s.h >= 2 and s.S >= 2))
def test_head_i_reads_only_its_own_columns_of_W_Q_and_W_K(candidate, check, sizes):
    """Changing head 1's columns of W_Q and W_K changes head 1's weights and leaves every other head's."""
    rng, d_k = sizes.rng(), sizes.d_k
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    x = activations(rng, sizes.B, sizes.S, sizes.d_model)
    changed = {name: value.copy() for name, value in weights.items()}
    for name in ("W_Q", "W_K"):
        changed[name][:, :d_k] = activations(rng, sizes.d_model, d_k, scale=2.0)
    _, before = candidate.multi_head_attention(x, x, x, weights, sizes.h, None)
    _, after = candidate.multi_head_attention(x, x, x, changed, sizes.h, None)
    likely = "heads split by reshaping (B, L, d_model) -> (B, h, L, d_k) without the transpose"
    diagnose.close(check, after[:, 1:], before[:, 1:], tol(candidate),
                   what=f"weights of heads 2..{sizes.h} after changing head 1's columns [0:{d_k}] of W_Q, W_K",
                   likely=likely)
    moved = float(np.abs(after[:, 0].astype(np.float64) - before[:, 0]).max())
    assert_true(moved > 10 * tol(candidate).atol,
                f"head 1's weights did not change (max change {moved:.3g}) when its columns of W_Q and W_K did",
                likely=f"{likely}, or W_Q / W_K read as (out, in) instead of x @ W",
                expected="a visible change in head 1", actual=f"max change {moved:.3g}")
