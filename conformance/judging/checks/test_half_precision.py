"""Half precision: the claims float16 and bfloat16 break in real code, asked where they break (``--dtype``).

These checks run only in a half-precision run (``--dtype float16`` or ``bfloat16``; ``half_precision`` marker);
every other check runs there too, with the dtype's tolerances. Each rests on a claim of the paper or the lessons
and puts it where half precision breaks real code: scores of the magnitudes trained models reach (float16's
largest number is 65,504, e^11.1), dot products larger than float16 holds, positions beyond 2,048 (float16 holds
integers exactly up to 2,048, bfloat16 up to 256), rows far from zero and constant rows in LayerNorm (an eps of
1e-12 is 0 in float16), the first warm-up steps (lrate(1) = 1.7e-7, below float16's normal range), the base
model at full depth. Every input is handed over rounded to the dtype, and the float64 reference answers on those
rounded values: what is judged is the computation, not the rounding of the question (docs/half-precision.md).
A NaN or inf here is the hazard itself, not a bad output: it fails the check, and the diagnosis compares where each
known bug puts its NaN and inf (``tolerant``), so that an overflow is named like any other deviation.
"""

import numpy as np
import pytest

from conformance.boundary.candidate import non_finite_allowed
from conformance.config import base_config
from conformance.diagnosis import Question
from conformance.diagnosis.localise import locate_forward
from conformance.paper import claims, formulas
from conformance.problems import oracle, questions
from conformance.problems.scenarios import ModelSizes, keep_masks, loaded_model
from conformance.tolerances import ELEMENTWISE, LARGEST, LAYER, MODEL, Tolerance, for_candidate

SECTION = "Half precision: float16 and bfloat16"
pytestmark = pytest.mark.half_precision

# Scores of a trained model: the toy's sharp layer puts 0.999 on one of 6 keys (a margin of ln(999 * 5) = 8.5);
# larger models reach 20 and more. exp(24) is 2.6e10, far beyond float16.
SCORE = 24.0
# Dot products of length d_k = 64 up to 2^17, twice float16's largest number; scaled by 1/8 they are 2^14.
DOT = 2.0**17
PE_POSITIONS = 5000  # the table real code precomputes (max_len=5000: the annotated transformer, PyTorch's tutorial)


# NaN, +inf and -inf as finite marks: answers compared where each one has them (and a marked answer that is all
# NaN is constant, no evidence of any bug in particular: diagnosis.degenerate).
MARKS = {"nan": 1e30, "posinf": 2e30, "neginf": -2e30}


def tolerant(answer):
    """``answer(candidate, problem)`` with its NaN and inf let through and marked (``MARKS``): the question a
    half-precision check puts to a known bug, whose overflow must land where the candidate's did."""
    def ask(candidate, problem):
        with non_finite_allowed():
            return np.nan_to_num(np.asarray(answer(candidate, problem), np.float64), **MARKS)
    return ask


def finite(check, answer, candidate, problem, *, what: str, ask: Question) -> np.ndarray:
    """The candidate's answer, claimed finite: where half precision overflows, this is the failure."""
    got = tolerant(answer)(candidate, problem)
    bad = np.abs(got) >= MARKS["nan"]
    if bad.any():
        kinds = {name: int((got == mark).sum()) for name, mark in MARKS.items() if (got == mark).any()}
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        dtype = candidate.conventions.dtype
        largest = f"; the largest {dtype} number is {LARGEST[dtype]:,.6g}" if dtype in LARGEST else ""
        check.claim(False, f"{what}: {int(bad.sum())} of {got.size} values are not finite"
                           f" ({', '.join(f'{n} {k}' for k, n in kinds.items())}; first at {first}{largest})", ask=ask,
                    expected="finite values", actual=f"{int(bad.sum())} NaN/inf")
    return got


def attention_problem(seed: int, *, magnitude: float, d_k: int = 64, scaled: bool = True):
    """Q, K, V (2, 5, d_k), (2, 7, d_k), (2, 7, 16) and a keep mask; the first batch element's scores (scaled by
    1/sqrt(d_k) unless ``scaled`` is False) reach ``magnitude`` at their largest, the second's 4 (scaled): where
    the dtype holds every score, a scale missing or wrong shows, so that an overflow is not taken for it."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 5, d_k)), rng.normal(size=(2, 7, d_k))
    v = rng.normal(size=(2, 7, 16))
    keep = keep_masks(rng, (2, 5, 7), p_keep=0.5)
    for b, (top, is_scaled) in enumerate(((magnitude, scaled), (4.0, True))):
        dots = q[b] @ k[b].T
        i, j = np.unravel_index(np.abs(dots).argmax(), dots.shape)
        gain = np.sqrt(top / np.abs(dots[i, j]) * (np.sqrt(d_k) if is_scaled else 1.0))
        # the largest score positive and visible: where e^s and an overflowing Q K^T do their harm
        q[b], k[b] = q[b] * gain, k[b] * gain * np.sign(dots[i, j])
        keep[b, i, j] = True
    return q, k, v, keep


def attention_weights(candidate, problem):
    return candidate.scaled_dot_product_attention(*problem)[1]


def attention_output(candidate, problem):
    return candidate.scaled_dot_product_attention(*problem)[0]


def expected_attention(candidate, problem):
    """The float64 formula on the inputs as the candidate received them (rounded to its dtype)."""
    q, k, v, keep = (candidate.cast(a) if a.dtype != bool else a for a in problem)
    return formulas.attention(q, k, v, keep)


@claims.MASKED_WEIGHTS_ZERO
@pytest.mark.requires("scaled_dot_product_attention")
def test_masked_weights_stay_zero_at_trained_score_magnitudes(candidate, check, rng):
    """With scores up to +-24 (trained attention is that sharp), masked weights are exactly 0 and the rest match
    softmax(Q K^T / sqrt(d_k)) V: a softmax without its max subtracted overflows float16 (e^11.1 = 65,504), and an
    additive mask built in float16 turns -1e9 into -inf and 0 x -inf into NaN."""
    problem = attention_problem(int(rng.integers(2**31)), magnitude=SCORE)
    probe = attention_problem(20261, magnitude=SCORE)
    tol = for_candidate(LAYER, candidate)
    ask = Question(tolerant(attention_weights), problem, probe=probe, tol=tol)
    weights = finite(check, attention_weights, candidate, problem, ask=ask,
                     what=f"attention weights with scores up to {SCORE:g}")
    want_out, want_weights = expected_attention(candidate, problem)
    leaked = np.abs(weights[~problem[3]])
    worst = float(leaked.max()) if leaked.size else 0.0
    check.claim(worst == 0.0, f"masked positions got weight up to {worst:.3g} with scores up to {SCORE:g}",
                ask=ask, tol=tol, expected="0 at every masked position", actual=f"max {worst:.3g}")
    check.close(weights, want_weights, tol, what=f"attention weights with scores up to {SCORE:g}", ask=ask)
    out_ask = Question(tolerant(attention_output), problem, probe=probe, tol=tol)
    out = finite(check, attention_output, candidate, problem, ask=out_ask,
                 what=f"attention output with scores up to {SCORE:g}")
    check.close(out, want_out, tol, what=f"attention output with scores up to {SCORE:g}", ask=out_ask)


@claims.ATTENTION
@pytest.mark.requires("scaled_dot_product_attention")
def test_scaled_scores_survive_dot_products_beyond_the_dtype(candidate, check, rng):
    """§3.2.1 scales by 1/sqrt(d_k) because "the dot products grow large in magnitude": at d_k = 64, dot products up
    to 2^17 (float16 holds 65,504) whose scaled scores (2^14) it holds give the formula's answer. Scaling after the
    matmul overflows to inf first; scaling Q (or Q and K) before it does not."""
    problem = attention_problem(int(rng.integers(2**31)), magnitude=DOT, scaled=False)
    probe = attention_problem(20262, magnitude=DOT, scaled=False)
    tol = for_candidate(LAYER, candidate)
    want_out, want_weights = expected_attention(candidate, problem)
    for answer, want, name in ((attention_weights, want_weights, "weights"), (attention_output, want_out, "output")):
        ask = Question(tolerant(answer), problem, probe=probe, tol=tol)
        what = f"attention {name} with dot products up to 2^17"
        check.close(finite(check, answer, candidate, problem, ask=ask, what=what), want, tol, what=what, ask=ask)


def positional_table(candidate, n: int) -> np.ndarray:
    return candidate.positional_encoding(n, 512)


@claims.POSITIONAL_ENCODING
@pytest.mark.requires("positional_encoding")
def test_positional_encoding_holds_up_to_5000_positions(candidate, check):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) at every position of a 5,000-row table, d_model 512, to the
    dtype's rounding: positions and angles computed in float16 (integers exact only up to 2,048, an angle of
    4,999 rad off by up to 2) or bfloat16 (exact only up to 256) give other sines."""
    n = candidate.longest(PE_POSITIONS)
    ask = Question(tolerant(positional_table), n, probe=min(n, 3000))
    what = f"PE({n} positions, d_model=512)"
    got = finite(check, positional_table, candidate, n, ask=ask, what=what)
    check.close(got, formulas.positional_encoding(n, 512), for_candidate(ELEMENTWISE, candidate), what=what, ask=ask)


def layer_norm_answer(candidate, problem):
    x, gamma, beta, eps = problem
    return candidate.layer_norm(x, gamma, beta, eps)


def far_rows(seed: int, offset: float):
    """Rows of 512 features with mean ``offset`` and spread 1, gamma and beta of the usual size, eps 1e-5."""
    rng = np.random.default_rng(seed)
    x = offset + rng.normal(size=(3, 512))
    return x, 1.0 + 0.1 * rng.normal(size=512), 0.1 * rng.normal(size=512), 1e-5


@claims.LAYER_NORM
@pytest.mark.requires("layer_norm")
def test_layer_norm_of_rows_far_from_zero(candidate, check, rng):
    """LayerNorm subtracts the row's mean before it squares: rows of mean 200 and spread 1 normalise to the formula's
    values. Statistics taken in one pass (mean of x^2 minus the squared mean) in half precision overflow float16
    (200^2 x 512 > 65,504) and cancel to noise in bfloat16."""
    problem = far_rows(int(rng.integers(2**31)), 200.0)
    x, gamma, beta, eps = (candidate.cast(a) if isinstance(a, np.ndarray) else a for a in problem)
    ask = Question(tolerant(layer_norm_answer), problem, probe=far_rows(20263, 120.0))
    what = "LayerNorm of rows with mean 200 and spread 1"
    check.close(finite(check, layer_norm_answer, candidate, problem, ask=ask, what=what),
                formulas.layer_norm(x, gamma, beta, eps), for_candidate(ELEMENTWISE, candidate), what=what, ask=ask)


def constant_rows(value: float, eps: float):
    beta = np.linspace(-1.0, 1.0, 64)
    return np.full((2, 64), value), np.full(64, 1.5), beta, eps


@claims.LAYER_NORM
@pytest.mark.requires("layer_norm")
def test_layer_norm_of_a_constant_row_is_beta(candidate, check):
    """A constant row has sigma^2 = 0, and eps keeps sqrt(sigma^2 + eps) above 0: the output is beta, finite, for
    every eps real code uses (1e-5, 1e-6, BERT's 1e-12). 1e-12 is 0 in float16: added in float16, it leaves 0 / 0."""
    for eps in (1e-5, 1e-6, 1e-12):
        problem = constant_rows(0.75, eps)
        ask = Question(tolerant(layer_norm_answer), problem, probe=constant_rows(-2.0, eps))
        what = f"LayerNorm of a constant row, eps={eps:g}"
        check.close(finite(check, layer_norm_answer, candidate, problem, ask=ask, what=what),
                    np.broadcast_to(candidate.cast(problem[2]), (2, 64)), for_candidate(ELEMENTWISE, candidate),
                    what=what, ask=ask)


# The float64 formula at the first warm-up steps is 1.7e-7 x step: a rate held in float16 is a subnormal number
# (steps of 6e-8: 2.4 % off at step 1), in bfloat16 off by up to 0.2 %. Rates are Python floats: float32's precision.
FIRST_STEPS = Tolerance(1e-6, 0.0, "a rate returned as a Python float: float32's precision at worst")


@claims.LEARNING_RATE
@pytest.mark.requires("learning_rate")
def test_learning_rate_of_the_first_warmup_steps(candidate, check):
    """lrate(step) = 512^-0.5 x step x 4000^-1.5 for steps 1 to 8 (1.7e-7 to 1.4e-6), to float32's precision: a rate
    computed or kept in the model's half dtype is rounded far more (float16's normal range starts at 6.1e-5)."""
    steps = np.arange(1, 9)
    got = np.array([candidate.learning_rate(int(step), 512, 4000) for step in steps])
    check.close(got, np.array([formulas.lrate(int(step), 512, 4000) for step in steps]), FIRST_STEPS,
                what="lrate(step=1..8, d_model=512, warmup=4000)")


@claims.OUTPUT_LAYER
@pytest.mark.requires("build_model", "model.load_weights", "model.forward")
def test_base_model_forward_is_finite_and_close_at_full_depth(candidate, check, rng):
    """The base model at full depth (N = 6, d_model 512, h 8, d_ff 2048; a 1,000-token vocabulary) gives finite
    logits equal to the float64 reference's on the same rounded weights: twelve post-norm layers in half precision."""
    config = base_config().replace(src_vocab=1000, tgt_vocab=1000)
    sizes = candidate.fit(ModelSizes(config, B=2, S=6, T=5, seed=int(rng.integers(2**31))))
    cfg = sizes.config
    weights, src, tgt_in = questions.model_problem(sizes)
    held = {name: candidate.cast(value).astype(np.float64) for name, value in weights.items()}
    model = loaded_model(candidate, cfg, weights)
    what = f"logits of the base model at full depth (N={cfg.N}), src{src.shape}, tgt_in{tgt_in.shape}"
    ask = Question(tolerant(questions.logits), sizes)
    got = finite(check, lambda c, p: model.forward(src, tgt_in), candidate, sizes, ask=ask, what=what)
    check.close(got, oracle.OracleModel(cfg, held).forward(src, tgt_in), for_candidate(MODEL, candidate), what=what,
                ask=ask, locate=lambda: locate_forward(candidate, model, cfg, held, src, tgt_in))

