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
from conformance.tolerances import ELEMENTWISE, LAYER, for_candidate, visible
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


# -- Every other printed number of §3.2.2: the heads' widths at both sizes, the cross-attention listing's
def head_map(candidate, d_model: int, h: int, bias: bool, positions: int = 5) -> tuple[list[int], list[int]]:
    """For each column j of X W_Q (= X W_K, = X W_V): the head whose weights read it, and the head whose weights its
    values are read with (-1: no single head). W_Q = W_K = W_V = W_O = I and x has one row 3 e_j per column of a
    batch of ``positions``: head i's row p is peaked on p exactly when column j_p is one of head i's, and the output's
    column j_p is 3 x that head's weights of position p."""
    eye, zero = np.eye(d_model), np.zeros(d_model)
    weights = {name: eye for name in ("W_Q", "W_K", "W_V", "W_O")} | \
        ({name: zero for name in ("b_Q", "b_K", "b_V", "b_O")} if bias else {})
    by_weights, by_values = [-1] * d_model, [-1] * d_model
    for first in range(0, d_model, positions):
        columns = list(range(first, min(first + positions, d_model)))
        x = np.zeros((1, len(columns), d_model))
        x[0, range(len(columns)), columns] = 3.0
        out, attn = (np.asarray(a, np.float64) for a in candidate.multi_head_attention(x, x, x, weights, h, None))
        uniform = 1.0 / len(columns)
        for p, j in enumerate(columns):
            peaked = [i for i in range(h) if attn[0, i, p, p] > uniform + 0.05]
            by_weights[j] = peaked[0] if len(peaked) == 1 else -1
            misses = [float(np.abs(out[0, :, j] - 3 * attn[0, i, :, p]).max()) for i in range(h)]
            by_values[j] = int(np.argmin(misses)) if min(misses) < 0.05 else -1
    return by_weights, by_values


def head_widths(candidate, sizes: LayerSizes) -> dict:
    """The heads and the columns each reads, as the candidate computes them: how many heads read any column, the width
    d_k they share (-1 if not one width), the same for the values (d_v), and how many columns are read at all."""
    by_weights, by_values = head_map(candidate, sizes.d_model, sizes.h, sizes.bias)
    widths = {}
    for name, owners in (("d_k", by_weights), ("d_v", by_values)):
        counts = {head: owners.count(head) for head in set(owners) - {-1}}
        widths[name] = counts.popitem()[1] if len(set(counts.values())) == 1 and -1 not in owners else -1
        widths[f"{name}_heads"] = len(set(owners) - {-1})
    widths["joined"] = sum(owner != -1 for owner in by_values)
    return widths


EXPLORER_HEADS = LayerSizes(B=1, S=5, T=6, h=4, d_k=16, d_ff=256, bias=True, seed=0)  # the toy's encoder, c a b e d
BASE_HEADS = LayerSizes(B=1, S=5, T=6, h=8, d_k=64, d_ff=2048, bias=True, seed=0)  # Table 3's base model


@claims.MULTI_HEAD
def test_published_multi_head_attention_numbers(candidate, check):
    """4 heads of 16 numbers in the toy (Q, K, V per head (1, 4, 5, 16) for c a b e d, joined back to 4 x 16 = 64),
    d_k = d_v = 64 in the base model; the cross-attention listing's (1, 6, 64) and (1, 4, 6, 5), each row summing to
    1 over source positions 1 to 5."""
    toy, base = (head_widths(candidate, candidate.fit(sizes)) for sizes in (EXPLORER_HEADS, BASE_HEADS))
    check.record("heads", {"toy": toy, "base": base})
    per_head = (1, toy["d_k_heads"], EXPLORER_HEADS.S, toy["d_k"])  # (batch, heads, positions, d_k) of c a b e d
    pairs = [("explorer.step5.heads", [toy["d_k_heads"], toy["d_k"]]), ("diagram.head_width", toy["d_k"]),
             ("layer.d_k.toy", toy["d_k"]), ("explorer.step7.joined_heads", toy["joined"]),
             *((fact_id, per_head) for fact_id in ("explorer.step5.shape", "explorer.text.step5.shape")),
             ("encoder_layer.listing.heads_shape", per_head),
             *((fact_id, base["d_k"]) for fact_id in ("layer.d_k.paper", "vanilla.d_k", "params.table3.d_k",
                                                     "changes.base.d_k")),
             ("vanilla.d_k_d_v", base["d_v"] if base["d_v"] == base["d_k"] else -1)]
    check.published_values(pairs + cross_attention_listing(candidate), what="§3.2.2 multi-head attention",
                           floor=for_candidate(ELEMENTWISE, candidate))


def cross_attention_listing(candidate) -> list[tuple]:
    """Step 4's listing through the candidate: queries from 6 decoder positions, keys and values from 5 memory rows,
    d_model 64 and 4 heads, on weights drawn here (the listing's own come from torch.manual_seed(0))."""
    sizes = candidate.fit(LayerSizes(B=1, S=5, T=6, h=4, d_k=16, d_ff=256, bias=True, seed=4))
    rng = sizes.rng()
    weights = random_weights(attention_shapes(sizes.d_model, bias=sizes.bias), rng)
    y, memory = activations(rng, 1, sizes.T, sizes.d_model), activations(rng, 1, sizes.S, sizes.d_model)
    c = candidate
    out, attn = c.expect_pair(c.call("multi_head_attention", c.adapter, c.to_layout(c.cast(y)),
                                     c.to_layout(c.cast(memory)), c.to_layout(c.cast(memory)), c.cast_weights(weights),
                                     sizes.h, None), "multi_head_attention")
    out, attn = np.asarray(c.from_layout(out)), np.asarray(attn, np.float64)
    sums = attn.sum(-1)
    return [("cross.listing.out_shape", out.shape), ("listing.cross.line1", out.shape),
            ("cross.listing.weights_shape", attn.shape), ("listing.cross.line2", attn.shape),
            ("cross.listing.row_sum", sums[0, 0, 0] if sums.ndim == 3 else np.nan),
            ("kc.cross.row_sum", sums.flat[int(np.abs(sums - 1).argmax())]),  # the row farthest from 1
            ("cross_chart.source_positions", [1, attn.shape[-1]])]
