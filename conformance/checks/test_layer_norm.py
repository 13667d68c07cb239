"""§3.1 Add & Norm: LayerNorm(x) = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta, over d_model.

sigma^2 divides by d, not d - 1, and eps sits inside the square root ("The original transformer,
step by step", Step 3). The published example is x = (1, 2, 3, 6).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import claims, formulas, published
from conformance.strategies import arrays, seeds
from conformance.tolerances import ELEMENTWISE, for_dtype

SECTION = "§3.1 Layer normalization (Add & Norm)"
pytestmark = pytest.mark.requires("layer_norm")


@claims.LAYER_NORM_BY_HAND
def test_layer_norm_matches_published_example(candidate, check):
    """LayerNorm(1, 2, 3, 6) with gamma = 1, beta = 0 is (-1.069, -0.535, 0.000, 1.604)."""
    x = np.asarray(published.value("layernorm.example.x"), dtype=np.float64)
    got = candidate.layer_norm(x, np.ones(4), np.zeros(4), 1e-5)
    fact_id = "layernorm.example.normalized"
    check.close(
        got,
        published.value(fact_id),
        published.tolerance(fact_id),
        what="LayerNorm(1, 2, 3, 6)",
        alternatives=formulas.layer_norm_alternatives(x, np.ones(4), np.zeros(4), 1e-5),
        rerun=lambda other: other.layer_norm(x, np.ones(4), np.zeros(4), 1e-5),
    )


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
    rng = np.random.default_rng(seed)
    x = arrays(seed, shape, scale=scale) + rng.normal(0, 3 * scale)
    d = shape[-1]
    gamma, beta = 1 + rng.choice([-1, 1], d) * rng.uniform(0.3, 0.8, d), rng.uniform(-0.5, 0.5, d)
    got = candidate.layer_norm(x, gamma, beta, eps)
    x32 = x.astype(candidate.conventions.dtype)  # compare against the formula on the inputs it saw
    check.close(
        got,
        formulas.layer_norm(x32, gamma.astype(x32.dtype), beta.astype(x32.dtype), eps),
        for_dtype(ELEMENTWISE, candidate.conventions.dtype),
        what=f"LayerNorm(x{shape}, eps={eps:g})",
        alternatives=formulas.layer_norm_alternatives(x32, gamma, beta, eps),
        rerun=lambda other: other.layer_norm(x, gamma, beta, eps),
    )


@claims.LAYER_NORM
@given(rows=st.integers(1, 4), d=st.integers(2, 64), seed=seeds)
def test_layer_norm_normalises_each_row_over_its_own_features(candidate, check, rows, d, seed):
    """With gamma = 1, beta = 0 every row has mean 0 and (biased) variance sigma^2 / (sigma^2 + eps)."""
    x = arrays(seed, (rows, d), scale=2.0)
    got = candidate.layer_norm(x, np.ones(d), np.zeros(d), 1e-5).astype(np.float64)
    var = x.astype(candidate.conventions.dtype).astype(np.float64).var(-1)
    tol = for_dtype(ELEMENTWISE, candidate.conventions.dtype)
    check.close(got.mean(-1), np.zeros(rows), tol, what="row means of LayerNorm(x)")
    check.close(got.var(-1), var / (var + 1e-5), tol, what="row variances of LayerNorm(x)")
