"""§3.1 Residual connection and layer normalisation around each sublayer: LayerNorm(x + Sublayer(x)).

For implementations whose attention and feed-forward modules fold in the residual addition and the
LayerNorm (a common way to write the model: ``x = self.attention(x, mask)`` returns the normalised sum),
so that no bare ``multi_head_attention`` or ``feed_forward`` can be exposed. Their adapters expose
``attention_sublayer`` (x -> LayerNorm(x + MultiHead(x, kv, kv)), kv the memory for cross-attention, else
x) and ``ffn_sublayer`` (x -> LayerNorm(x + FFN(x))), and these checks judge them against the reference
run in float64: the sublayer alone (§3.2.2 or §3.3) and its wiring (§3.1, post-norm) at once.

An adapter that has the bare part is judged by the §3.2.2 and §3.3 checks and its layers by §3.1's: the
checks here are then deselected (``superseded_by``), so no claim is counted twice.
"""

import pytest
from hypothesis import given

from conformance.diagnosis import Question
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LayerSizes, fast_failure, layer_sizes
from conformance.tolerances import LAYER, for_dtype

SECTION = "§3.1 Residual connection and layer normalisation"


def tol(candidate):
    return for_dtype(LAYER, candidate.conventions.dtype)


def assert_attention_matches_oracle(candidate, check, sizes: LayerSizes, *, cross: bool):
    weights, x, memory, keep = questions.attention_sublayer_problem(sizes, cross=cross)
    answer = questions.cross_attention_sublayer_output if cross else questions.self_attention_sublayer_output
    kind = "cross-attention" if cross else "self-attention"
    check.close(answer(candidate, sizes), oracle.attention_sublayer(x, memory, weights, sizes.h, sizes.eps, keep),
                tol(candidate), ask=Question(answer, sizes),
                what=f"{kind} sublayer LayerNorm(x + MultiHead(x, {'memory' if cross else 'x'})) (x{x.shape},"
                     f" h={sizes.h})")


@claims.POST_NORM
@pytest.mark.requires("attention_sublayer")
@pytest.mark.superseded_by("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes())
def test_self_attention_sublayer_matches_reference(candidate, check, sizes):
    """LayerNorm(x + MultiHead(x, x, x)) with key padding equals the reference: post-norm around §3.2.2."""
    assert_attention_matches_oracle(candidate, check, sizes, cross=False)


@claims.POST_NORM
@pytest.mark.requires("attention_sublayer")
@pytest.mark.superseded_by("multi_head_attention")
@fast_failure()
@given(sizes=layer_sizes())
def test_cross_attention_sublayer_matches_reference(candidate, check, sizes):
    """LayerNorm(y + MultiHead(y, memory, memory)) with source padding equals the reference (T queries, S keys)."""
    assert_attention_matches_oracle(candidate, check, sizes, cross=True)


@claims.POST_NORM
@pytest.mark.requires("ffn_sublayer")
@pytest.mark.superseded_by("feed_forward")
@fast_failure()
@given(sizes=layer_sizes())
def test_ffn_sublayer_matches_reference(candidate, check, sizes):
    """LayerNorm(x + FFN(x)) equals the reference: post-norm around §3.3's max(0, x W1 + b1) W2 + b2."""
    weights, x = questions.ffn_sublayer_problem(sizes)
    check.close(questions.ffn_sublayer_output(candidate, sizes), oracle.ffn_sublayer(x, weights, sizes.eps),
                tol(candidate), ask=Question(questions.ffn_sublayer_output, sizes),
                what=f"FFN sublayer LayerNorm(x + FFN(x)) (x{x.shape}, d_ff={sizes.d_ff})")
