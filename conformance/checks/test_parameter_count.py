"""Table 3 and the lesson's Step 7: how many parameters the model has.

Attention 4d^2 + 4d (with biases), FFN 2 d d_ff + d_ff + d, LayerNorm 2d; an encoder layer has one
attention and two norms, a decoder layer two and three; one shared embedding, tied to the output.
The lesson counts 63,082,496 for the base model with 37,000 tokens, 82,026,496 with a separate
output matrix, 234,304 for the toy and 76,906,496 for the German variant; the paper's attention
formulas have no biases, which removes 36,864.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import claims, published
from conformance.config import ModelConfig, base_config, german_config, toy_config
from conformance.diagnosis import Question
from conformance.tolerances import Tolerance
from conformance.weights import parameter_count

SECTION = "Table 3 Model size: parameter count"
pytestmark = pytest.mark.requires("parameter_count")

PUBLISHED = {
    "params.total": base_config(),
    "params.total_separate_output": base_config(tie_output=False),
    "toy.parameters": toy_config(),
    "german.total": german_config(),
}


EXACT = Tolerance(0, 0, "parameter counts are exact")


def count(candidate, config: ModelConfig) -> int:
    """The candidate's parameter count for ``config``: the question every check here asks."""
    return candidate.parameter_count(config)


def probe(config: ModelConfig) -> ModelConfig:
    """A second configuration of the same kind (tied or not, shared or not, biases or not), other sizes, so
    that a difference of one size's worth (V, d, d_ff) shows as what it is."""
    return config.replace(src_vocab=53, tgt_vocab=53 if config.share_embeddings else 61, d_model=24, h=3,
                          d_ff=40, N=3)


def assert_count(candidate, check, config: ModelConfig, expected: int, what: str):
    got = count(candidate, config)
    check.claim(got == expected, f"{what}: got {got:,}, expected {expected:,} (difference {got - expected:+,})",
                ask=Question(count, config, probe=probe(config), tol=EXACT), expected=expected, actual=got)


@claims.PARAMETER_COUNT
@pytest.mark.parametrize("fact_id", list(PUBLISHED))
def test_parameter_count_matches_published_value(candidate, check, fact_id):
    """Base 63,082,496; untied 82,026,496; toy 234,304; German 76,906,496."""
    assert_count(candidate, check, PUBLISHED[fact_id], published.value(fact_id), f"parameter_count [{fact_id}]")


@claims.PARAMETER_COUNT_WITHOUT_BIASES
def test_parameter_count_without_attention_biases(candidate, check):
    """The paper's attention formulas have no biases: 36,864 fewer for the base model."""
    expected = published.value("params.total") - published.value("params.attention_biases")
    assert_count(candidate, check, base_config(attention_bias=False), expected,
                 "parameter_count without attention biases")


configs = st.builds(
    lambda h, d_k, d_ff, N, V, tie, bias, share, V2: ModelConfig(
        src_vocab=V,
        tgt_vocab=V if share else V2,
        d_model=h * d_k,
        h=h,
        d_ff=d_ff or 4 * h * d_k,  # 0: the paper's 4 d_model
        N=N,
        tie_output=tie,
        attention_bias=bias,
        share_embeddings=share,
    ),
    h=st.integers(1, 8),
    d_k=st.integers(1, 16).map(lambda k: 2 * k),
    d_ff=st.one_of(st.integers(1, 300), st.just(0)),
    N=st.integers(1, 4),
    V=st.integers(4, 500),
    tie=st.booleans(),
    bias=st.booleans(),
    share=st.booleans(),
    V2=st.integers(4, 500),
)


@claims.PARAMETER_COUNT
@given(config=configs)
def test_parameter_count_matches_formula_for_any_config(candidate, check, config):
    """For any size, tied or untied, shared or separate vocabularies, with or without attention biases."""
    assert_count(candidate, check, config, parameter_count(config), f"parameter_count({config})")


@claims.PARAMETER_COUNT
@pytest.mark.requires("build_model", "model.unmapped_parameters")
def test_model_has_no_parameters_beyond_the_paper(candidate, check):
    """Every parameter of the model has a canonical name: no output bias, final LayerNorm or learned position.

    The adapter lists what has none (``model.unmapped_parameters``); ``load_weights`` leaves them at
    their identity values, so the other checks see the paper's numbers, and this check sees the extras."""
    model = candidate.build_model(candidate.fit(toy_config()), seed=0)
    extra = model.unmapped_parameters()
    check.record("unmapped_parameters", extra)
    listed = ", ".join(f"{name} ({n:,})" for name, n in extra.items())
    check.claim(not extra, f"the model has {sum(extra.values()):,} parameters the paper's model has not: {listed}",
                expected="no parameter without a canonical name", actual=listed or "none")
