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
from conformance.judging.check import Holds
from conformance.paper import claims, formulas
from conformance.problems.scenarios import keep_masks, seeds
from conformance.tolerances import ELEMENTWISE, LAYER, Tolerance, for_candidate, half

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


# -- Every printed number of "Vanilla Transformer"'s single head: its shapes, its scale, its mask
# One head of the base model (d_k = d_v = 64), and a V of 32 columns: "d_v need not equal d_k".
SINGLE_HEAD = {"Lq": 4, "Lkv": 3, "d_k": 64, "d_v": 32}

# The scale read back through the log of the ratio of two float weights: ~1e-7 relative in float32, 1e-5 leaves a
# factor 100 and is far below sqrt(d_k) against d_k (a factor 8). In half precision each weight is off by 2u.
SCALE_READ_BACK = {"float32": Tolerance(1e-5, 0.0, "scale read back through log(w0 / w1) of float32 weights"),
                   "float64": Tolerance(1e-5, 0.0, "scale read back through log(w0 / w1) of float weights"),
                   **half(4, "weights read back through log(w0 / w1)")}


@claims.ATTENTION
def test_published_attention_numbers(candidate, check):
    """One head: softmax(Q K^T) V is L_q x d_v, with d_v = 32 as well as d_k = 64; the scores divided by
    sqrt(d_k) = 8; M adds 0 where allowed (the rest stays a softmax) and -inf where forbidden (weight exactly 0)."""
    dtype = candidate.conventions.dtype
    rng = np.random.default_rng(2017)
    q, k, v = (cast(rng.normal(0, 1, shape), dtype) for shape in ((1, SINGLE_HEAD["Lq"], SINGLE_HEAD["d_k"]),
                                                                    (1, SINGLE_HEAD["Lkv"], SINGLE_HEAD["d_k"]),
                                                                    (1, SINGLE_HEAD["Lkv"], SINGLE_HEAD["d_v"])))
    shape, Lq, d_v = raw_attention(candidate, q, k, v, None)[0].shape, SINGLE_HEAD["Lq"], SINGLE_HEAD["d_v"]
    check.published_values([
        ("vanilla.general.output_shape", Holds(shape == (1, Lq, d_v), f"output {shape} for L_q = {Lq}, d_v = {d_v}")),
        ("vanilla.general.dk_ne_dv", as_formula(candidate, (q, k, v, None), "d_k = 64, d_v = 32")),
        ("vanilla.scale_by_d_k", score_divisor(candidate, SINGLE_HEAD["d_k"]),
         for_candidate(SCALE_READ_BACK, candidate)),
        ("vanilla.mask.values", as_formula(candidate, (q, q, q, np.tril(np.ones((1, 4, 4), bool))), "a causal mask",
                                           masked_exactly_zero=True)),
    ], what="§3.2.1 one attention head")


def raw_attention(candidate, q, k, v, keep) -> tuple[np.ndarray, np.ndarray]:
    """(output, weights) as the candidate returns them, in float64: a wrong shape is its answer, not an error."""
    c = candidate
    out, weights = c.expect_pair(c.call("scaled_dot_product_attention", c.adapter, c.cast(q), c.cast(k), c.cast(v),
                                        c.to_mask(keep)), "scaled_dot_product_attention")
    return np.asarray(out, np.float64), np.asarray(weights, np.float64)


def as_formula(candidate, problem, where: str, *, masked_exactly_zero: bool = False) -> Holds:
    """The candidate's output and weights on ``problem`` = (q, k, v, keep) equal the formula's (and its masked weights
    are exactly 0)."""
    got, want = raw_attention(candidate, *problem), formulas.attention(*problem)
    if [a.shape for a in got] != [w.shape for w in want]:
        return Holds(False, f"with {where}: output {got[0].shape} and weights {got[1].shape}, the formula's"
                            f" {want[0].shape} and {want[1].shape}")
    tol = for_candidate(LAYER, candidate)
    worst = max(float((np.abs(a - w) - tol.allowed(np.abs(w))).max()) for a, w in zip(got, want, strict=True))
    leaked = float(np.abs(got[1][~problem[3]]).max()) if masked_exactly_zero else 0.0
    return Holds(worst <= 0 and leaked == 0.0, f"with {where}: output and weights off the formula's by up to"
                 f" {worst:+.3g} beyond the tolerance" + (f", masked weights up to {leaked:.3g}" if masked_exactly_zero
                                                          else ""))


def score_divisor(candidate, d_k: int) -> float:
    """What the candidate divides Q K^T by: one query q = 4 e_0 against keys 4 e_0 and 0 scores 16 / s and 0, so
    s = 16 / log(w0 / w1)."""
    q, k, v = np.zeros((1, 1, d_k)), np.zeros((1, 2, d_k)), np.ones((1, 2, 1))
    q[0, 0, 0] = k[0, 0, 0] = 4.0
    w = raw_attention(candidate, q, k, v, None)[1].reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(16.0 / np.log(w[0] / w[1])) if w.size == 2 else float("nan")
