"""Table 3 and the lesson's Step 7: how many parameters the model has.

Attention 4d^2 + 4d (with biases), FFN 2 d d_ff + d_ff + d, LayerNorm 2d; an encoder layer has one
attention and two norms, a decoder layer two and three; one shared embedding, tied to the output.
The lesson counts 63,082,496 for the base model with 37,000 tokens, 82,026,496 with a separate
output matrix, 234,304 for the toy and 76,906,496 for the German variant; the paper's attention
formulas have no biases, which removes 36,864.
"""

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.compare import assert_true
from conformance.config import ModelConfig, base_config, german_config, toy_config
from conformance.diagnosis import Question
from conformance.diagnosis.counts import (
    confirmed_at_third,
    explain_count,
    second_size,
    third_size,
    variant_differences,
    variants_of,
)
from conformance.errors import PartNotImplemented
from conformance.paper import claims, published
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


def assert_count(candidate, check, config: ModelConfig, expected: int, what: str):
    got = count(candidate, config)
    second = candidate.fit(second_size(config))  # a second size the candidate declares it builds
    check.claim(got == expected, f"{what}: got {got:,}, expected {expected:,} (difference {got - expected:+,})",
                ask=Question(count, config, probe=second, tol=EXACT, variants=variants_of(config)),
                locate=lambda: as_terms(candidate, config, got, second), expected=expected, actual=got)


def as_terms(candidate, config: ModelConfig, got: int, second: ModelConfig) -> str | None:
    """The count's difference as a sum of known terms, the same at the second size and a third, a tie cut where the
    configuration's variants part its terms (``counts``)."""
    ask = functools.partial(count, candidate)
    third = candidate.fit(third_size(config))
    explain = functools.partial(explain_count, variants=variant_differences(ask, config, candidate.fit))
    return confirmed_at_third(explain, config, got, second, ask(second), third, ask(third))


@claims.PARAMETER_COUNT
@pytest.mark.parametrize("fact_id", list(PUBLISHED))
def test_parameter_count_matches_published_value(candidate, check, fact_id):
    """Base 63,082,496; untied 82,026,496; toy 234,304; German 76,906,496."""
    assert_count(candidate, check, PUBLISHED[fact_id], check.published(fact_id), f"parameter_count [{fact_id}]")


@claims.PARAMETER_COUNT_WITHOUT_BIASES
def test_parameter_count_without_attention_biases(candidate, check):
    """The paper's attention formulas have no biases: 36,864 fewer for the base model."""
    # 63,082,496 is the input here (parameter_count_matches_published_value owns it); 36,864 is the claim
    expected = published.fact("params.total")["value"] - check.published("params.attention_biases")
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


# The base model's sizes (d_model 512, h 8, d_ff 2,048) with one layer of each stack and 13 tokens: a layer's parts do
# not depend on N or on the vocabulary, and a table of 37,000 x 512 would only cost time.
ONE_LAYER = {"base": base_config(N=1, src_vocab=13, tgt_vocab=13),
             "german": german_config(N=1, src_vocab=13, tgt_vocab=13)}


def counted_by_part(weights: dict) -> dict:
    """The parameters of the first encoder and decoder layer of a model's canonical weights, by part, and how many
    attentions and LayerNorms each layer holds."""
    def size(prefix: str) -> int:
        return sum(int(np.size(value)) for name, value in weights.items() if name.startswith(prefix))

    def sublayers(stack: str) -> set[str]:
        return {name.split(".")[2] for name in weights if name.startswith(f"{stack}.0.")}

    parts = [(len({s for s in sublayers(stack) if s.endswith("attn")}), len({s for s in sublayers(stack)
                                                                             if s.startswith("norm")}))
             for stack in ("encoder", "decoder")]
    return {"attention": size("encoder.0.self_attn."), "ffn": size("encoder.0.ffn."),
            "encoder_layer": size("encoder.0."), "decoder_layer": size("decoder.0."),
            "layer_parts": [n for pair in parts for n in pair]}


@claims.PARAMETER_COUNT
@pytest.mark.requires("build_model", "model.dump_weights")
def test_published_counts_by_part(candidate, check):
    """The listing's attention 1,050,624, FFN 2,099,712, encoder layer 3,152,384 and decoder layer 4,204,032 (a third
    larger), 1 attention and 2 norms per encoder layer, 2 and 3 per decoder layer, and the German model's same
    layers: counted in the candidate's own model at the base size. Its own count of a layer pair agrees."""
    candidate.require("build_model", attention_bias=True)  # the lesson counts them: a model without has other counts
    config = candidate.fit(ONE_LAYER["base"])
    base, german = (counted_by_part(candidate.build_model(c, seed=0).dump_weights())
                    for c in (config, candidate.fit(ONE_LAYER["german"])))
    check.record("counted_by_part", base)
    check.published_values([
        ("params.attention", base["attention"]), ("params.attention.torch", base["attention"]),
        ("params.ffn", base["ffn"]), ("params.encoder_layer", base["encoder_layer"]),
        ("params.decoder_layer", base["decoder_layer"]),
        ("params.decoder_third_larger", base["decoder_layer"] / max(base["encoder_layer"], 1) - 1),
        ("params.layer_parts", base["layer_parts"]),
        ("german.layers.encoder_term", german["encoder_layer"]),
        ("german.layers.decoder_term", german["decoder_layer"]),
    ], what="Table 3 (§6.2) parameters counted in the candidate's model")
    # parameter_count's one layer pair (what N = 1 adds to N = 0) is the model's own
    pair = count(candidate, config) - count(candidate, config.replace(N=0))
    held = base["encoder_layer"] + base["decoder_layer"]
    check.claim(pair == held, f"Table 3 (§6.2): parameter_count counts {pair:,} parameters in one encoder and one"
                f" decoder layer; the candidate's model holds {held:,} there", expected=f"{held:,}", actual=f"{pair:,}")


OWNED = {*PUBLISHED, "params.attention_biases"}


# -- Every other printed count: each fact has one home, the checks above own theirs
def count_part(candidate, part: str, a: dict) -> int | None:
    """A published count the candidate can be asked for through whole-model configurations."""
    d, d_ff, N, V = a["d"], a["d_ff"], a["N"], a["vocab"]
    config = ModelConfig(src_vocab=V, tgt_vocab=V, d_model=d, h=8, d_ff=d_ff, N=N)
    counts = {
        "total": lambda: candidate.parameter_count(config),
        "total_separate_output": lambda: candidate.parameter_count(config.replace(tie_output=False)),
        "total_two_vocabularies": lambda: candidate.parameter_count(
            config.replace(share_embeddings=False, tgt_vocab=V)
        ),
        "embedding": lambda: candidate.parameter_count(config.replace(N=0)),
        "layers": lambda: candidate.parameter_count(config) - candidate.parameter_count(config.replace(N=0)),
        "attention_biases": lambda: (
            candidate.parameter_count(config) - candidate.parameter_count(config.replace(attention_bias=False))
        ),
    }
    return counts[part]() if part in counts else None


@claims.PARAMETER_COUNT
@pytest.mark.requires("parameter_count")
def test_published_parameter_counts(candidate, check):
    """Every other printed count: "about 63 million", 44,138,496 in the layers, 18.9 M in E, PyTorch's own counts."""
    count = candidate.parameter_count
    asked = [(entry["id"], lambda a=entry["args"]: count_part(candidate, a["part"], a))
             for entry in published.of_kind("param_count") if entry["id"] not in OWNED]
    base = base_config()
    asked += [
        # PyTorch's own count of the lesson's toy model (nn.Transformer layers without final norms, plus E)
        ("toy.parameters.torch", lambda: count(toy_config())),
        ("german.layers.torch", lambda: count(base) - count(base.replace(N=0))),
        ("params.attention_biases.torch", lambda: count(base) - count(base.replace(attention_bias=False))),
        ("german.embeddings", lambda: count(german_config(N=0))),  # two tables of 32,000 x 512, no layer
    ]
    totals, = published.listing_lines("parameter count")[1:]  # "63,082,496 82,026,496"
    asked.append((totals, lambda: [count(base), count(base.replace(tie_output=False))]))
    pairs = [(fact_id, got) for fact_id, got in answerable(check, asked) if got is not None]
    # (per-sublayer counts, attention, FFN, one layer, are not observable from outside: count_part gives None)
    # One encoder plus one decoder layer (the listing's third and fourth counts) is what N = 1 adds to N = 0.
    per_layer = published.listing_lines("parameter count")[0]
    encoder_layer, decoder_layer = "params.encoder_layer.torch", "params.decoder_layer.torch"
    one_pair = count(base.replace(N=1)) - count(base.replace(N=0))
    layers = check.published(per_layer)
    expected_pair = check.published(encoder_layer) + check.published(decoder_layer)
    assert_true(one_pair == layers[2] + layers[3] == expected_pair,
                f"one encoder layer plus one decoder layer: {one_pair:,} parameters; the lesson prints"
                f" {layers[2]:,} + {layers[3]:,} [{per_layer}, {encoder_layer}, {decoder_layer}]",
                expected=f"{layers[2] + layers[3]:,}", actual=f"{one_pair:,}")
    check.published_values(pairs, what="Table 3 (§6.2) parameter_count")


def answerable(check, asked):
    """[(fact_id, value)] for the questions the candidate can answer; a fact whose configuration it cannot
    build (untied tables, no biases) is left out and listed in the check's data, not the whole check."""
    answered, unanswerable = [], {}
    for fact_id, ask in asked:
        try:
            answered.append((fact_id, ask()))
        except PartNotImplemented as exc:
            unanswerable[fact_id] = exc.fields.get("reason") or exc.message
    if unanswerable:
        check.record("facts_not_asked", unanswerable)
    if not answered:
        raise PartNotImplemented("none of these published facts is a configuration the candidate supports"
                                 f" ({'; '.join(sorted(set(unanswerable.values())))})")
    return answered
