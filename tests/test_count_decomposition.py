"""A wrong parameter count is explained as a sum of known structural differences, confirmed at a second size."""

import pytest

from conformance.config import base_config, german_config, toy_config
from conformance.diagnosis.counts import explain_count, second_size, variant_differences
from conformance.weights import parameter_count


def explained(config, extra):
    """The explanation for a candidate whose count is the paper's plus ``extra(config)`` at every size."""
    return explain_count(config, parameter_count(config) + extra(config), second_size(config),
                         parameter_count(second_size(config)) + extra(second_size(config)))


def test_untied_tables_output_bias_and_final_norms_are_named_together():
    text = explained(base_config(), lambda c: 2 * c.tgt_vocab * c.d_model + c.tgt_vocab + 4 * c.d_model)
    assert text.startswith("difference +37,927,048 = ")
    for term in ("separate target embedding table (the shared table counted twice) (37,000 x 512: +18,944,000)",
                 "separate output matrix (not tied to the embedding) (37,000 x 512: +18,944,000)",
                 "output bias (37,000: +37,000)", "extra LayerNorm (a final one after a stack, or one on the"
                 " embeddings) x 2 (2 x 512 each: +2,048)"):
        assert term in text
    assert "at a second size (V=53, d_model=24" in text


def test_learned_positions_are_solved_for_their_length_and_confirmed_at_the_second_size():
    text = explained(base_config(), lambda c: 2 * 512 * c.d_model + c.tgt_vocab)
    assert "output bias (37,000: +37,000)" in text
    assert "learned positions (or a positional table counted as parameters) (1,024 rows x 512, e.g. 512 per" in text


def test_a_length_that_changes_with_the_size_is_no_positional_table():
    config = base_config()
    got = parameter_count(config) + 1024 * config.d_model
    second = second_size(config)
    assert explain_count(config, got, second, parameter_count(second) + 7 * second.d_model) is None


@pytest.mark.parametrize(("config", "extra", "term"), [
    (base_config(), lambda c: -(c.d_ff + c.d_model) * 2 * c.N, "no feed-forward biases (-12 FFNs x (2,048 + 512)"),
    (base_config(), lambda c: -4 * c.d_model * 3 * c.N, "no attention biases (the config has them)"),
    (base_config(attention_bias=False), lambda c: 4 * c.d_model * 3 * c.N, "attention biases (the config has none)"),
    (toy_config(), lambda c: -c.d_model * 5 * c.N, "LayerNorm without beta"),
    (german_config(), lambda c: c.tgt_vocab, "output bias"),
    (base_config(tie_output=False), lambda c: -c.tgt_vocab * c.d_model, "output matrix tied to the embedding"),
    (base_config(), lambda c: -(4 * c.d_model**2 + 4 * c.d_model) * c.N, "no cross-attention"),
])
def test_each_known_difference_is_named_alone(config, extra, term):
    assert term in explained(config, extra)


def test_a_difference_no_known_terms_give_stays_unexplained():
    assert explained(base_config(), lambda c: 12_345) is None
    assert explained(base_config(), lambda c: 0) is None


def test_a_sum_that_fits_two_sizes_by_coincidence_is_refused_at_a_third():
    """Written by a red team: LayerNorm counted as its gain only and no b_O. At the toy size, two sizes leave room
    for biases + learned positions to fit as well; the third size refuses that sum and keeps the true one."""
    from conftest import adapter_path

    from conformance.boundary.loading import load
    from conformance.diagnosis.counts import confirmed_at_third, explain_more, third_size

    candidate = load(adapter_path("param_count_norm_gain_only_and_no_output_bias"), isolate=False)
    config = toy_config()
    second = candidate.fit(second_size(config))
    third = candidate.fit(third_size(second))
    args = (config, candidate.parameter_count(config), second, candidate.parameter_count(second), third,
            candidate.parameter_count(third))
    assert "learned positions" in explain_count(*args[:4])  # the coincidence, at two sizes
    assert confirmed_at_third(explain_count, *args) is None
    text = confirmed_at_third(explain_more, *args)
    assert "LayerNorm without beta (-10 norms x 64: -640) + a projection's bias missing in every attention" in text


def counted_twice(config) -> int:
    """A count that adds the target's table even where the configuration shares one: V x d_model too many when
    shared, right when separate."""
    return parameter_count(config) + (config.tgt_vocab * config.d_model if config.share_embeddings else 0)


def test_a_tie_of_one_size_is_cut_where_a_declared_choice_parts_its_terms():
    """A second table and an untied output matrix are both V x d_model too many on a shared, tied configuration:
    alone, a tie; the untied variant (where the code's count is still V x d_model too many, and an output matrix
    would be right) keeps only the table."""
    config, second = base_config(), second_size(base_config())
    asked = (config, counted_twice(config), second, counted_twice(second))
    tie = explain_count(*asked)
    assert "one of (same counts)" in tie and "separate output matrix" in tie
    cut = explain_count(*asked, variants=variant_differences(counted_twice, config, lambda c: c))
    assert "one of" not in cut and "the shared table counted twice" in cut and "output matrix" not in cut


def test_variants_the_candidate_does_not_build_cut_nothing():
    config = base_config()
    assert variant_differences(counted_twice, config, lambda c: config) == ()
