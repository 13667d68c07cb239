"""Several known bugs at once: when no single mutant matches, the diagnosis names the combination of
catalogue entries whose composed answer equals the candidate's on the failing problem and on a second one
(conformance/diagnosis/combine.py, matching.combined_matches), and never a combination that is not confirmed."""

import functools

import numpy as np
import pytest
from conftest import adapter_path

from conformance.boundary.candidate import Candidate
from conformance.boundary.loading import load
from conformance.config import ModelConfig
from conformance.diagnosis import EXCLUDE_ENV, Question, confirmed_matches
from conformance.diagnosis.combine import combine
from conformance.diagnosis.message import fmt_matches
from conformance.problems import questions
from conformance.problems.scenarios import LayerSizes, ModelSizes
from conformance.tolerances import LAYER, MODEL, for_candidate

LAYER_PROBLEM = LayerSizes(B=2, S=5, T=4, h=2, d_k=4, d_ff=16, bias=True, seed=3)
MODEL_PROBLEM = ModelSizes(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=8, h=2, d_ff=16, N=2), B=2, S=5, T=4,
                           seed=1)
UNBIASED, UNSCALED = "layer_norm_unbiased_variance", "attention_no_scaling"


def diagnose(candidate, answer=questions.encoder_layer_output, problem=LAYER_PROBLEM, tol=LAYER) -> list[dict]:
    return confirmed_matches(candidate, Question(answer, candidate.fit(problem)), for_candidate(tol, candidate))


def composed(*names: str) -> Candidate:
    combo = combine(*names)
    assert combo is not None, f"expected {names} to compose, got None"
    return combo.candidate


def named(matches: list[dict]) -> list[str]:
    return [match["mutant"] for match in matches]


def test_two_numpy_bugs_are_named_together():
    matches = diagnose(composed(UNBIASED, UNSCALED))
    assert named(matches) == [f"{UNSCALED}+{UNBIASED}"], f"expected the pair, got {named(matches)}"
    assert matches[0]["mutants"] == [UNSCALED, UNBIASED]
    line = fmt_matches(matches)
    assert line.startswith("likely cause: Attention scores not scaled") and \
        f"(mutant:{UNSCALED} + mutant:{UNBIASED}), confirmed on a second, bigger problem" in line, line


def test_three_numpy_bugs_are_named_together():
    matches = diagnose(composed(UNBIASED, UNSCALED, "gelu_instead_of_relu"))
    assert named(matches) == [f"{UNSCALED}+gelu_instead_of_relu+{UNBIASED}"], f"got {named(matches)}"


def test_two_torch_bugs_are_named_together():
    matches = diagnose(composed("pre_norm", "embedding_not_scaled"), questions.memory, MODEL_PROBLEM, MODEL)
    assert named(matches) == ["embedding_not_scaled+pre_norm"], f"got {named(matches)}"


@pytest.mark.parametrize("mutant", [UNBIASED, "pre_norm"])
def test_a_single_bug_keeps_its_single_name(mutant):
    candidate = load(f"mutant:{mutant}")
    assert named(diagnose(candidate)) == [mutant]


def test_the_reference_gets_no_name():
    assert diagnose(load("reference"), questions.memory, MODEL_PROBLEM, MODEL) == []


@pytest.mark.parametrize("left_out", [UNBIASED, UNSCALED])
def test_without_one_of_the_two_bugs_in_the_catalogue_nothing_is_named(monkeypatch, left_out):
    """Leave-one-out: no combination without the true bug may be confirmed (nor a single one)."""
    monkeypatch.setenv(EXCLUDE_ENV, left_out)
    matches = diagnose(composed(UNBIASED, UNSCALED))
    assert matches == [], f"expected no name with {left_out} left out, got {named(matches)}"


def test_mutants_of_two_families_or_one_formula_do_not_compose():
    assert combine(UNSCALED, "pre_norm") is None  # NumPy and torch
    assert combine(UNSCALED, "attention_scaled_by_d_k") is None  # both override scale_scores
    assert combine("pre_norm", "missing_residual") is None  # both change the sublayer formula


def test_a_positional_table_bug_crosses_into_the_torch_reference_and_composes_there():
    """A NumPy mutant whose bug is only in the positional table is carried into the reference as its
    ``positional_encoding`` formula: Marian's and FSMT's sines-then-cosines with a finite fill of hidden scores."""
    halves, fill = "pe_halves_concatenated", "masked_scores_filled_with_minus_1e9"
    pair = composed(halves, fill)
    np.testing.assert_allclose(pair.positional_encoding(7, 8), load(f"mutant:{halves}").positional_encoding(7, 8),
                               rtol=0, atol=1e-6)  # the table, in the reference's float32
    # As in a certify run: the logits name the table bug alone (the fill shows only where every key is hidden),
    # then the all-padding source, where no single bug answers like it, names the pair.
    assert named(diagnose(pair, questions.logits, MODEL_PROBLEM, MODEL)) == [halves]
    empty_source = Question(functools.partial(questions.logits_of_an_empty_source, moved=True), MODEL_PROBLEM)
    matches = confirmed_matches(pair, empty_source, for_candidate(MODEL, pair))
    assert named(matches)[0] == f"{fill}+{halves}", f"got {named(matches)}"  # first: it answers exactly alike
    assert all(halves in match["mutants"] and len(match["mutants"]) == 2 for match in matches), named(matches)


def test_only_positional_table_bugs_cross_over():
    fill = "masked_scores_filled_with_minus_1e9"
    assert combine("pe_table_transposed", fill) is None  # the part's table only, not the model's
    assert combine("pe_zero_at_padding", fill) is None  # a model that adds no table at padding
    assert combine("pe_halves_concatenated", "pe_sine_cosine_swapped", fill) is None  # one method, two bugs
    assert combine("pe_positions_from_one", "pe_halves_concatenated", fill) is not None


ANNOTATED = adapter_path("pre_norm_annotated_layer_norm")


@pytest.mark.parametrize("answer", [questions.encoder_layer_output, questions.decoder_layer_output])
def test_pre_norm_behind_the_annotated_transformers_layer_norm_is_named_at_the_layer(answer):
    """The annotated transformer's pre-norm layers with its own LayerNorm (unbiased std, eps added to it): no
    single bug answers like them, and pre_norm (torch) could not compose with a LayerNorm formula (NumPy). The
    LayerNorm's variance and denominator now cross into the reference as its layer_norm formula, so the layer
    names pre-norm with the LayerNorm's formula. Eps outside or inside the root does not show at a layer (a
    variance near 1 against eps 1e-5): the unbiased variance is the part of the formula named there."""
    candidate = load(ANNOTATED, isolate=False)
    matches = diagnose(candidate, answer)
    assert named(matches) == [f"{UNBIASED}+pre_norm"], f"got {named(matches)}"


def test_a_layer_norm_formula_bug_crosses_into_the_torch_reference_and_composes_there():
    triple = composed("pre_norm", "layer_norm_eps_outside_root", UNBIASED)
    x, gamma, beta = np.random.default_rng(0).normal(size=(3, 2, 5)).astype(np.float32)
    np.testing.assert_allclose(triple.layer_norm(x, gamma, beta, 1e-5),
                               composed(UNBIASED, "layer_norm_eps_outside_root").layer_norm(x, gamma, beta, 1e-5),
                               rtol=1e-6, atol=1e-6)  # the NumPy formula, in the reference's float32
    annotated = load(ANNOTATED, isolate=False)  # the same two deviations, written in torch
    np.testing.assert_allclose(questions.encoder_layer_output(triple, LAYER_PROBLEM),
                               questions.encoder_layer_output(annotated, LAYER_PROBLEM), rtol=1e-5, atol=1e-5)
    assert combine("pre_norm", "layer_norm_gamma_beta_swapped") is None  # the whole part overridden: not carried
    assert combine("pre_norm", "layer_norm_over_wrong_axis") is None


def test_certify_names_the_pair_in_the_failure_message(certify):
    run = certify(f"{adapter_path('two_bugs')}:adapter", "-k", "encoder_layer_matches_reference_at_base_size",
                  "--no-training")
    (check,) = run.report["checks"]
    assert check["status"] == "failed", check["status"]
    assert f"(mutant:{UNSCALED} + mutant:{UNBIASED})" in check["message"], check["message"]
    assert [match["mutant"] for match in check["diagnosis"]] == [f"{UNSCALED}+{UNBIASED}"]
    assert check["likely_cause"].endswith(f"(mutant:{UNSCALED} + mutant:{UNBIASED})"), check["likely_cause"]


@pytest.mark.parametrize(("bugs", "answer"), [
    (("embedding_layer_norm", "pre_norm"), questions.memory),
    (("logits_scaled_by_inverse_sqrt_d_model", "pre_norm"), questions.logits),
])
def test_real_codes_structural_choices_are_named_together(bugs, answer):
    """Deviations real code combines (BERT-style embedding norm, T5-style logit scale, pre-norm) compose as
    formula switches on the reference, and are named as one combination from the model's output."""
    matches = diagnose(composed(*bugs), answer, MODEL_PROBLEM, MODEL)
    assert named(matches) == ["+".join(sorted(bugs))], f"got {named(matches)}"


def test_a_bug_the_failing_problem_cannot_show_is_added_from_the_second():
    """One sentence has no padding, so no-encoding-at-padded-positions is invisible there and a single bug
    answers like the candidate; the second problem pads, refutes it, and the search adds the bug that moves only
    what is left unexplained (FSMT's fourth positional deviation, tests/test_third_party.py)."""
    bugs = ("pe_halves_concatenated", "pe_zero_at_padding")
    unpadded = ModelSizes(MODEL_PROBLEM.config, B=1, S=4, T=3, seed=1)
    _, src, _ = questions.model_problem(unpadded)
    assert (src != MODEL_PROBLEM.config.pad_id).all(), "the failing problem must have no padding"
    matches = diagnose(composed(*bugs), questions.memory, unpadded, MODEL)
    assert named(matches) == ["+".join(bugs)], f"got {named(matches)}"


def test_a_part_another_part_undoes_is_dropped_from_the_name():
    """With no causal mask built at all, a causal mask in the encoder changes nothing: a confirmed combination
    that holds it is named without it (leave-one-out, attention_mask_ignored was named with it)."""
    from conformance.diagnosis import matching

    candidate = composed("no_causal_mask", "padding_mask_ignored")
    question = Question(questions.logits, candidate.fit(MODEL_PROBLEM))
    second = matching._Second(candidate, question, matching._same(question, for_candidate(MODEL, candidate)))
    assert second.ready()
    search = matching._CombinationSearch(second, question.problem, question.ask(candidate, question.problem))
    _, kept, _ = search._without_idle_parts(0.0, combine("causal_mask_in_encoder", "no_causal_mask",
                                                         "padding_mask_ignored"), 0.0)
    assert kept.names == ("no_causal_mask", "padding_mask_ignored")
