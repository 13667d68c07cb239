"""§3.3 Position-wise feed-forward networks: FFN(x) = max(0, x W1 + b1) W2 + b2.

"Applied to each position separately and identically" (§3.3): d_model -> d_ff -> d_model with a ReLU,
512 -> 2048 -> 512 in the base model, 64 -> 256 -> 64 in the lesson's toy ("The original transformer,
step by step", Step 3). Compared with the reference run in float64 on random canonical weights.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.diagnosis import Question
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LayerSizes, activations, fast_failure, layer_sizes
from conformance.tolerances import LAYER, for_candidate

SECTION = "§3.3 Position-wise feed-forward networks"
pytestmark = pytest.mark.requires("feed_forward")



def assert_matches_oracle(candidate, check, sizes: LayerSizes, *, what: str):
    weights, x, _ = questions.feed_forward_problem(sizes)
    check.close(candidate.feed_forward(x, weights), oracle.feed_forward(x, weights), for_candidate(LAYER, candidate),
                what=what,
                ask=Question(questions.feed_forward_output, sizes))


@claims.FEED_FORWARD
@fast_failure()
@given(sizes=layer_sizes())
def test_feed_forward_matches_reference(candidate, check, sizes):
    """For any d_model and d_ff (1 included), FFN(x) equals max(0, x W1 + b1) W2 + b2 from the reference."""
    assert_matches_oracle(candidate, check, sizes, what=f"FFN(x{(sizes.B, sizes.S, sizes.d_model)}), d_ff={sizes.d_ff}")


@claims.FEED_FORWARD
def test_feed_forward_matches_reference_at_base_size(candidate, check):
    """At the paper's base size, 512 -> 2048 -> 512, the FFN equals the reference."""
    sizes = candidate.fit(LayerSizes(B=2, S=6, T=6, h=8, d_k=64, d_ff=2048, bias=True, seed=2048))
    assert_matches_oracle(candidate, check, sizes, what="base-size FFN(x(2, 6, 512)), d_ff=2048")


@claims.FEED_FORWARD
@fast_failure()
@given(sizes=layer_sizes(), data=st.data())
def test_feed_forward_acts_on_each_position_alone(candidate, check, sizes, data):
    """Position i's output depends on x_i only: changing every other position leaves it unchanged."""
    weights, x, rng = questions.feed_forward_problem(sizes)
    i = data.draw(st.integers(0, sizes.S - 1), label="i")
    other = activations(rng, *x.shape, scale=2.0)
    other[:, i] = x[:, i]
    alone = candidate.feed_forward(x[:, i: i + 1], weights)[:, 0]
    for name, seq in (("x", x), ("x with every other position changed", other)):
        got = candidate.feed_forward(seq, weights)
        check.close(got[:, i], alone, for_candidate(LAYER, candidate),
                    what=f"FFN({name})[:, {i}] vs FFN(x[:, {i}]) alone"
                    " (§3.3: two convolutions with kernel size 1)", ask=Question(questions.feed_forward_output, sizes))
