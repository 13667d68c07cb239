"""Failure messages say what differs and where, with every figure readable, and claim nothing unconfirmed."""

from conftest import adapter_path


def test_published_number_messages_keep_small_values_significant(certify):
    """A rate of 3.49e-07 printed as "got 0.0" said nothing; six significant digits whatever the magnitude."""
    run = certify(adapter_path("lr_doubled"), "-k", "published_learning_rates", "--no-training")
    message = run.report["checks"][0]["message"]
    assert "got 0.00315625, published '1.58e-03'" in message  # the practice's logged rate, doubled
    assert "got 0.0," not in message
    table = certify(adapter_path("lr_doubled"), "-k", "lrate_matches_published_paper_table", "--no-training")
    assert "got 3.49386e-07, expected 1.747e-07" in table.report["checks"][0]["message"]


def test_decoder_wiring_suspects_name_the_padding_masks(certify):
    """A decoder layer whose sublayers agree but whose padding is wrong: the suspects include the padding
    masks (they were missing from the decoder's list)."""
    run = certify("mutant:padding_on_queries", "-k", "decoder_layer_matches_reference and not base", "--no-training")
    message = run.report["checks"][0]["message"]
    assert "layer's wiring is suspected" in message and "the padding masks" in message


def test_the_structural_probe_also_looks_at_bias_free_implementations(certify):
    """The probe batch used attention biases (torch.nn's fast path needs them); a bias-free implementation
    refused it and got no structural explanation. It now gets the probe without biases."""
    from conftest import adapter_path

    run = certify(f"{adapter_path('views')}:bias_free_extra_final_norm", "-k", "encode_matches_reference",
                  "--no-training")
    check = run.report["checks"][0]
    assert check["status"] == "failed" and check["examples"]["ran"] >= 1
    assert "extra_final_layer_norm" in check["patterns"]


def balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


EXTRA_NORM_MATCH = {"mutant": "extra_final_layer_norm", "bug": "An extra LayerNorm after the stacks.", "max_abs": 0.0,
                    "probe_max_abs": 0.0}


def test_a_localisation_line_stays_well_formed_when_the_extra_norm_clause_is_left_out():
    """The localisation's "after encoder.1: an extra LayerNorm ... (...; the post-norm paper has none)" clause was cut
    out by a pattern that stopped at its inner "; ": "... (every layer); the post-norm paper has none)" was left."""
    from test_localise_stack import candidate, locate

    from conformance.diagnosis.message import tail

    for name in (adapter_path("pre_norm_final_norm"), "mutant:extra_final_layer_norm"):
        where = locate("encode", candidate(name))
        assert "extra LayerNorm" in where and balanced(where), where
        for matches, patterns in [([EXTRA_NORM_MATCH], []), ([], ["extra_final_layer_norm"])]:
            lines = tail(matches, where, patterns)
            text = "\n".join(lines)
            assert all(balanced(line) for line in lines), text
            located = [line for line in lines if "divergence" in line or "agrees" in line]
            assert located and "paper has none" not in located[0], text  # the clause left whole, not its end
            assert text.count("extra LayerNorm") == 1, text


def test_an_alternative_identical_to_the_cause_wherever_the_question_looks_is_not_offered():
    """padding_mask_ignored (no padding mask built) and attention_mask_ignored (no mask applied at all) answer an
    encoder's call the same way: the encoder has no causal mask, the one place they differ. Both match, the message
    offers the first alone; on the decoder's call, where they differ, the other stays an alternative."""
    from conformance.boundary.loading import load
    from conformance.config import ModelConfig
    from conformance.diagnosis import Question
    from conformance.errors import CheckFailure
    from conformance.judging.check import Check
    from conformance.problems import questions
    from conformance.problems.scenarios import ModelSizes
    from conformance.tolerances import MODEL, for_dtype

    tol = for_dtype(MODEL, "float32")
    candidate = load("mutant:padding_mask_ignored")
    sizes = ModelSizes(ModelConfig(src_vocab=11, tgt_vocab=11, d_model=8, h=2, d_ff=16, N=2), B=2, S=5, T=4, seed=3)
    assert (questions.model_problem(sizes)[1] == sizes.config.pad_id).any()  # a padded source: the bug shows
    failure = CheckFailure("memory differs")
    Check(candidate).explain(failure, tol, ask=Question(questions.memory, sizes))
    assert [match["mutant"] for match in failure.fields["diagnosis"]] == ["padding_mask_ignored",
                                                                          "attention_mask_ignored"]
    assert "mutant:padding_mask_ignored" in failure.message, failure.message
    assert "attention_mask_ignored" not in failure.message and "one of" not in failure.message, failure.message
    from conformance.diagnosis.matching import offered

    both = failure.fields["diagnosis"]
    assert offered(candidate, Question(questions.decoded, sizes), tol, both) == both  # the causal mask shows there
