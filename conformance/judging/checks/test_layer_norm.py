"""§3.1 Add & Norm: LayerNorm(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, over d_model.

sigma^2 divides by d, not d - 1, and eps sits inside the square root ("The original transformer,
step by step", Step 3). The published example is x = (1, 2, 3, 6).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.diagnosis import PROBE_SEED, Question
from conformance.paper import claims, formulas, published
from conformance.problems.scenarios import arrays, seeds
from conformance.tolerances import ELEMENTWISE, Tolerance, for_candidate, half

SECTION = "§3.1 Layer normalization (Add & Norm)"
pytestmark = pytest.mark.requires("layer_norm")


def normalised(candidate, problem):
    """LayerNorm of ``problem`` = (x, gamma, beta, eps): the question every layer_norm check asks."""
    return candidate.layer_norm(*problem)


def random_problem(shape, seed: int, scale: float, eps: float):
    """x at ``scale`` around a random offset, gamma and beta far from 1 and 0."""
    rng = np.random.default_rng(seed)
    x = arrays(seed, shape, scale=scale) + rng.normal(0, 3 * scale)
    d = shape[-1]
    gamma, beta = 1 + rng.choice([-1, 1], d) * rng.uniform(0.3, 0.8, d), rng.uniform(-0.5, 0.5, d)
    return x, gamma, beta, eps


def probe(seed: int, eps: float = 1e-5):
    """A second problem: several rows of 16 features, small enough a scale that eps's place shows."""
    return random_problem((3, 16), seed + PROBE_SEED, 0.01, eps)


@claims.LAYER_NORM_BY_HAND
def test_layer_norm_matches_published_example(candidate, check):
    """LayerNorm(1, 2, 3, 6) with gamma = 1, beta = 0 is (-1.069, -0.535, 0.000, 1.604)."""
    x = np.asarray(check.published("layernorm.example.x"), dtype=np.float64)
    example = (x, np.ones(4), np.zeros(4), 1e-5)
    fact_id = "layernorm.example.normalized"
    check.close(normalised(candidate, example), check.published(fact_id), check.printed(fact_id),
                what="LayerNorm(1, 2, 3, 6)", ask=Question(normalised, example, probe(0)))


shapes = st.lists(st.integers(1, 5), min_size=0, max_size=2).flatmap(
    lambda lead: st.integers(1, 64).map(lambda d: (*lead, d))
)


@claims.LAYER_NORM
@given(
    shape=shapes, seed=seeds, scale=st.sampled_from([1e-3, 1e-2, 1.0, 30.0]), eps=st.sampled_from([1e-5, 1e-6, 1e-3])
)
def test_layer_norm_matches_formula(candidate, check, shape, seed, scale, eps):
    """For any shape, scale and eps, with gamma and beta far from 1 and 0, LayerNorm equals the formula.

    Small scales make sigma^2 comparable to eps, where "eps outside the square root" shows."""
    problem = random_problem(shape, seed, scale, eps)
    x, gamma, beta, _ = problem
    x32 = candidate.cast(x)  # compare against the formula on the inputs it saw
    check.close(normalised(candidate, problem),
                formulas.layer_norm(x32, candidate.cast(gamma), candidate.cast(beta), eps),
                for_candidate(ELEMENTWISE, candidate), what=f"LayerNorm(x{shape}, eps={eps:g})",
                ask=Question(normalised, problem, probe(seed, eps)))


@claims.LAYER_NORM
@given(rows=st.integers(1, 4), d=st.integers(2, 64), seed=seeds)
def test_layer_norm_normalises_each_row_over_its_own_features(candidate, check, rows, d, seed):
    """With gamma = 1, beta = 0 every row has mean 0 and (biased) variance sigma^2 / (sigma^2 + eps)."""
    problem = (arrays(seed, (rows, d), scale=2.0), np.ones(d), np.zeros(d), 1e-5)
    got = normalised(candidate, problem).astype(np.float64)
    var = candidate.cast(problem[0]).astype(np.float64).var(-1)
    tol = for_candidate(ELEMENTWISE, candidate)
    ask = Question(normalised, problem, probe(seed))
    check.close(got.mean(-1), np.zeros(rows), tol, what="row means of LayerNorm(x)", ask=ask)
    check.close(got.var(-1), var / (var + 1e-5), tol, what="row variances of LayerNorm(x)", ask=ask)


# -- Every other printed number of the example: its two ends, the listing, the mean and variance it used
@claims.LAYER_NORM_BY_HAND
@pytest.mark.requires("layer_norm")
def test_published_layer_norm_example(candidate, check):
    """LayerNorm(1, 2, 3, 6) = (-1.069, -0.535, 0, 1.604), and its two hand-checked ends."""
    x = np.asarray(published.fact("layernorm.example.x")["value"], dtype=np.float64)  # the input, not a claim
    got = candidate.layer_norm(x, np.ones(4), np.zeros(4), 1e-5)
    # The mean and spread the candidate used, read back from its output: y = (x - mean) / sqrt(var + eps).
    y = np.asarray(got, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant output reads back inf: a failure, not an error
        sigma = (x[-1] - x[0]) / (y[-1] - y[0])
        mean = float(np.mean(x - sigma * y))
        implied = {"mean": mean, "std": sigma, "variance": sigma**2 - 1e-5, "squared_deviations": (sigma * y) ** 2}
    read_back = for_candidate(IMPLIED, candidate)
    statistics = [(fact_id, implied[published.fact(fact_id)["args"]["quantity"]], read_back)
                  for fact_id in ("layernorm.example.mean", "layernorm.example.variance", "layernorm.example.std",
                                  "layernorm.example.squared_deviations")]
    means_line, *output_lines = published.listing_lines("layer norm")  # "3.0 3.5", then the normalised row twice
    check.published_values(
        # x4 twice: the normalised 6, and the hand check's "3 / 1.871" (the printed 1.604 is the exact 3 / sqrt(3.5))
        [("layernorm.example.x1", got[0]), ("layernorm.example.x4", got[3]),
         ("layernorm.example.x4.hand_division", got[3]),
         *((line, got) for line in output_lines), *statistics, (means_line, [mean, sigma**2 - 1e-5], read_back)],
        what="§3.1 LayerNorm(1, 2, 3, 6), and the mean and variance it used",
    )


# Statistics read back from a float32 LayerNorm through a difference quotient: y's relative error
# ~1e-7 grows to ~1e-6 in sigma^2; 1e-5 keeps a margin of 10 and is far below the unbiased variance's 33 %.
# In half precision y's 2u grows the same way, by 4 in sigma^2 and again in the mean: 16u.
IMPLIED = {"float32": Tolerance(1e-5, 1e-6, "read back from float32 outputs through (x4 - x1) / (y4 - y1)"),
           **half(16, "outputs read back through (x4 - x1) / (y4 - y1)")}
