"""§3.2.1 Scaled dot-product attention: softmax(Q K^T / sqrt(d_k) + M) V, softmax over the keys.

M adds 0 where attention is allowed and -inf where it is forbidden ("Vanilla Transformer"), so
masked weights are exactly 0 and every row of weights sums to 1. A query row whose keys are all
masked has no defined softmax; this suite's convention gives it weights 0 and output 0 (finite, and it
carries no information), and checks that as advisory (docs/claims.md).

Each check asks its question as a function of the problem (``Question``), so that a failure can be put
to the catalogue of known bugs and confirmed on a second, bigger problem.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.boundary.isolation.frameworks import cast
from conformance.diagnosis import PROBE_SEED, Question
from conformance.paper import claims, formulas
from conformance.problems.scenarios import keep_masks, seeds
from conformance.tolerances import ELEMENTWISE, LAYER, for_candidate

SECTION = "§3.2.1 Scaled dot-product attention"
pytestmark = pytest.mark.requires("scaled_dot_product_attention")

sizes = st.fixed_dictionaries(
    {"B": st.integers(1, 3), "Lq": st.integers(1, 7), "Lk": st.integers(1, 7), "d_k": st.integers(1, 32),
     "d_v": st.integers(1, 16), "seed": seeds}
)


def qkv(B, Lq, Lk, d_k, d_v, seed, dtype, scale=1.5):
    rng = np.random.default_rng(seed)
    q, k, v = (cast(rng.normal(0, scale, s), dtype) for s in ((B, Lq, d_k), (B, Lk, d_k), (B, Lk, d_v)))
    return q, k, v, rng


def problem(size: dict, masked: bool, dtype: str, p_keep: float = 0.7):
    """Q, K, V and a keep mask in which every query keeps at least one key (or None)."""
    q, k, v, rng = qkv(**size, dtype=dtype)
    keep = keep_masks(rng, (size["B"], size["Lq"], size["Lk"]), p_keep=p_keep) if masked else None
    return q, k, v, keep


def probe(size: dict) -> dict:
    """A second problem: several queries and keys, d_k large enough that the scale matters, fresh values."""
    return {"B": 2, "Lq": 5, "Lk": 6, "d_k": 16, "d_v": 8, "seed": size["seed"] + PROBE_SEED}


def attention_question(size, *, masked: bool, dtype: str, which: int, p_keep: float = 0.7) -> Question:
    """The candidate's attention output (``which`` 0) or weights (1) on this problem, for any candidate."""
    def whole(candidate, size):
        return candidate.scaled_dot_product_attention(*problem(size, masked, dtype, p_keep))

    return Question(lambda candidate, size: whole(candidate, size)[which], size, probe(size), whole=whole,
                    part=(which, ("attention output", "attention weights")[which]))



@claims.ATTENTION
@given(size=sizes, masked=st.booleans())
def test_attention_matches_formula(candidate, check, size, masked):
    """Output and weights equal softmax(Q K^T / sqrt(d_k)) V for random Q, K, V, with or without a mask."""
    dtype = candidate.conventions.dtype
    q, k, v, keep = problem(size, masked, dtype)
    out, weights = candidate.scaled_dot_product_attention(q, k, v, keep)
    want_out, want_weights = formulas.attention(q, k, v, keep)
    check.close(weights, want_weights, for_candidate(LAYER, candidate), what=f"attention weights {weights.shape}",
                ask=attention_question(size, masked=masked, dtype=dtype, which=1))
    check.close(out, want_out, for_candidate(LAYER, candidate), what=f"attention output {out.shape}",
                ask=attention_question(size, masked=masked, dtype=dtype, which=0))


@claims.SOFTMAX_OVER_KEYS
@given(size=sizes)
def test_attention_rows_sum_to_one(candidate, check, size):
    """Each query's weights over the keys sum to 1 (softmax along the key axis), masked or not."""
    dtype = candidate.conventions.dtype
    _, weights = candidate.scaled_dot_product_attention(*problem(size, True, dtype))
    sums = weights.astype(np.float64).sum(-1)
    check.close(sums, np.ones_like(sums), for_candidate(ELEMENTWISE, candidate),
                what="row sums of the attention weights",
                ask=attention_question(size, masked=True, dtype=dtype, which=1))


@claims.MASKED_WEIGHTS_ZERO
@given(size=sizes)
def test_masked_weights_are_exactly_zero(candidate, check, size):
    """Where the mask forbids a key, its weight is exactly 0 (e^-inf), not merely small."""
    dtype = candidate.conventions.dtype
    q, k, v, keep = problem(size, True, dtype, p_keep=0.5)
    _, weights = candidate.scaled_dot_product_attention(q, k, v, keep)
    leaked = weights[~keep]
    worst = float(np.abs(leaked).max()) if leaked.size else 0.0
    check.claim(worst == 0.0,
                f"masked positions got weight up to {worst:.3g} ({int((leaked != 0).sum())} of {leaked.size} not 0);"
                " if the masks look inverted, check the polarity the adapter declares (Conventions.mask)",
                ask=attention_question(size, masked=True, dtype=dtype, which=1, p_keep=0.5),
                tol=for_candidate(LAYER, candidate), expected="0 at every masked position", actual=f"max {worst:.3g}")


@claims.FULLY_MASKED_ROW
def test_fully_masked_row_gives_zero_weights_and_output(candidate, check, rng):
    """A query whose keys are all masked gets finite weights 0 and output 0, never NaN (a convention)."""
    q, k, v, _ = qkv(2, 3, 4, 8, 5, seed=int(rng.integers(2**31)), dtype=candidate.conventions.dtype)
    keep = np.ones((2, 3, 4), dtype=bool)
    keep[0, 1, :] = False
    check.finite_where_no_row_is_empty(lambda: candidate.scaled_dot_product_attention(q, k, v, np.ones_like(keep)),
                                       problem="the same Q, K, V with no key masked")
    raw = candidate.call("scaled_dot_product_attention", candidate.adapter, q, k, v, candidate.to_mask(keep))
    out, weights = (np.asarray(a, dtype=np.float64) for a in raw)
    check.claim(bool(np.isfinite(weights).all() and np.isfinite(out).all()),
                "a fully masked query row produced NaN or inf (softmax over a row of -inf is 0/0; the suite's"
                " convention gives such a row weights 0)", expected="finite values", actual="NaN/inf")
    check.close(weights[0, 1], np.zeros(4), for_candidate(ELEMENTWISE, candidate),
                what="weights of the fully masked row")
    check.close(out[0, 1], np.zeros(5), for_candidate(ELEMENTWISE, candidate), what="output of the fully masked row")
    # The other rows are attention_matches_formula's claim (the paper's); this convention judges this row only.
