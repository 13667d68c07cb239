"""§3.3 Position-wise feed-forward networks: FFN(x) = max(0, x W1 + b1) W2 + b2.

"Applied to each position separately and identically" (§3.3): d_model -> d_ff -> d_model with a ReLU,
512 -> 2048 -> 512 in the base model, 64 -> 256 -> 64 in the lesson's toy ("The original transformer,
step by step", Step 3). Compared with the reference run in float64 on random canonical weights.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.diagnosis import Question
from conformance.paper import claims
from conformance.problems import oracle, questions
from conformance.problems.scenarios import LayerSizes, activations, fast_failure, layer_sizes
from conformance.tolerances import LAYER, for_candidate
from conformance.weights import ffn_shapes, random_weights

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


# -- The printed shape of the hidden layer: read through the candidate's FFN, 64 hidden units at a time
def hidden_layer(candidate, L: int, d_model: int = 64, d_ff: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """The candidate's hidden layer max(0, x W1 + b1) for x (1, L, d_model), read through its output: W2 picks out
    units [64 m, 64 m + 64) into the output's 64 columns (b2 = 0), one call per block; where that reads something
    else than a unit's ReLU, that unit is no unit of the layer's (``hidden_units``). Also the formula's layer."""
    rng = np.random.default_rng(L)
    weights = random_weights(ffn_shapes(d_model, d_ff), rng)
    weights["b2"] = np.zeros(d_model)
    x = activations(rng, 1, L, d_model)
    blocks = []
    for first in range(0, d_ff, d_model):
        picks = np.zeros((d_ff, d_model))
        picks[first + np.arange(min(d_model, d_ff - first)), np.arange(min(d_model, d_ff - first))] = 1.0
        blocks.append(candidate.feed_forward(x, {**weights, "W2": picks})[..., : d_ff - first])
    return np.concatenate(blocks, axis=-1), np.maximum(0, x.astype(np.float64) @ weights["W1"] + weights["b1"])


def hidden_units(candidate, L: int) -> tuple[int, int, int]:
    """(1, L, the number of hidden units whose values are max(0, x W1 + b1)'s): the hidden tensor's shape, each unit
    counted only where the candidate computes it."""
    got, want = hidden_layer(candidate, L)
    tol = for_candidate(LAYER, candidate)
    units = (np.abs(got - want) <= tol.allowed(np.abs(want))).all(axis=(0, 1))
    return (1, L, int(units.sum()))


@claims.FEED_FORWARD
def test_published_hidden_layer_shapes(candidate, check):
    """The toy's hidden tensor: (1, 5, 256) for c a b e d, (1, 7, 256) for the guided practice's 7 letters."""
    explorer, practice = hidden_units(candidate, 5), hidden_units(candidate, 7)
    check.published_values([*((fact_id, explorer) for fact_id in ("explorer.step8.hidden.shape",
                                                                 "explorer.text.step8.hidden.shape",
                                                                 "ffn.toy.hidden.shape")),
                            ("practice.ffn_hidden", practice)], what="§3.3 FFN hidden layer")
