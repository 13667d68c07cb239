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
from conformance.compare import assert_true
from conformance.config import ModelConfig, base_config, german_config, toy_config
from conformance.weights import parameter_count

SECTION = "Table 3 Model size: parameter count"
pytestmark = pytest.mark.requires("parameter_count")

PUBLISHED = {
    "params.total": base_config(),
    "params.total_separate_output": base_config(tie_output=False),
    "toy.parameters": toy_config(),
    "german.total": german_config(),
}


def count_alternatives(config: ModelConfig) -> dict[str, int]:
    d, V = config.d_model, config.tgt_vocab
    attention_biases = 4 * d * 3 * config.N
    alternatives = {
        "a bias on the output projection": parameter_count(config) + V,
        "decoder layers counted without their cross-attention": parameter_count(config)
        - config.N * (4 * d * d + 6 * d),
    }
    if config.tie_output:
        alternatives["a separate output matrix (output not tied to the embedding)"] = parameter_count(config) + d * V
    if config.attention_bias:
        alternatives["attention without biases"] = parameter_count(config) - attention_biases
    else:
        alternatives["attention biases counted although the config has none"] = (
            parameter_count(config) + 12 * d * config.N
        )
    return alternatives


def assert_count(candidate, config: ModelConfig, expected: int, what: str):
    got = candidate.parameter_count(config)
    causes = [cause for cause, n in count_alternatives(config).items() if n == got]
    assert_true(
        got == expected,
        f"{what}: got {got:,}, expected {expected:,} (difference {got - expected:+,})",
        likely=causes[0] if causes else None,
        expected=expected,
        actual=got,
    )


@claims.PARAMETER_COUNT
@pytest.mark.parametrize("fact_id", list(PUBLISHED))
def test_parameter_count_matches_published_value(candidate, fact_id):
    """Base 63,082,496; untied 82,026,496; toy 234,304; German 76,906,496."""
    assert_count(candidate, PUBLISHED[fact_id], published.value(fact_id), f"parameter_count [{fact_id}]")


@claims.PARAMETER_COUNT_WITHOUT_BIASES
def test_parameter_count_without_attention_biases(candidate):
    """The paper's attention formulas have no biases: 36,864 fewer for the base model."""
    expected = published.value("params.total") - published.value("params.attention_biases")
    assert_count(candidate, base_config(attention_bias=False), expected, "parameter_count without attention biases")


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
def test_parameter_count_matches_formula_for_any_config(candidate, config):
    """For any size, tied or untied, shared or separate vocabularies, with or without attention biases."""
    assert_count(candidate, config, parameter_count(config), f"parameter_count({config})")


@claims.PARAMETER_COUNT
@pytest.mark.requires("build_model", "model.unmapped_parameters")
def test_model_has_no_parameters_beyond_the_paper(candidate, check):
    """Every parameter of the model has a canonical name: no output bias, final LayerNorm or learned position.

    The adapter lists what has none (``model.unmapped_parameters``); ``load_weights`` leaves them at
    their identity values, so the other checks see the paper's numbers, and this check sees the extras."""
    model = candidate.build_model(candidate.fit(toy_config()), seed=0)
    extra = model.unmapped_parameters()
    check.record("unmapped_parameters", extra)
    listed = ", ".join(f"{name} ({count:,})" for name, count in extra.items())
    assert_true(not extra, f"the model has {sum(extra.values()):,} parameters the paper's model has not: {listed}",
                expected="no parameter without a canonical name", actual=listed or "none")
