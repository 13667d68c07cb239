"""What the diagnosis measures where no known bug matches, and what it refuses to claim.

A description is built from measurements of the candidate (a constant of the paper's formulas refitted from its
outputs, an invariance probed on purpose, where non-finite values fall) and confirmed on a second problem like a
name; a degenerate answer confirms nothing; hard-coding is suspected only on evidence of a look-up.
"""

from pathlib import Path

import numpy as np
import pytest
from conftest import adapter_path

from conformance.boundary.loading import load
from conformance.diagnosis import Question, catalogue, confirmed_matches
from conformance.diagnosis.counts import explain_count, explain_sizes, second_size, variant_differences
from conformance.diagnosis.degenerate import degenerate
from conformance.diagnosis.measurements import (
    attention,
    describe,
    feed_forward,
    invariances,
    layer_norm,
    model,
    positional,
    schedule,
    smoothing,
)
from conformance.diagnosis.measurements.nonfinite import describe_nonfinite
from conformance.problems.scenarios import LayerSizes
from conformance.tolerances import LAYER, Tolerance

TOL = Tolerance(0.0, 1e-9, "exact arithmetic")


def texts(found) -> str:
    return " | ".join(getattr(item, "text", None) or item["text"] for item in found)


# -- no claim from degenerate evidence -----------------------------------------------------------------------


def test_a_constant_a_collapsed_or_a_non_finite_answer_is_no_evidence():
    varied = np.arange(12.0)
    assert degenerate(np.zeros(12), varied) == "a constant (0 everywhere)"
    assert "only 2 distinct values" in degenerate(np.tile([0.0, 2.0], 6), varied)
    assert "non-finite" in degenerate(np.full(12, np.nan), varied)
    assert degenerate(varied + 1, varied) is None
    assert degenerate(np.zeros(4), np.zeros(4)) is None  # the paper's answer is constant too: a fully masked row
    assert degenerate(np.array([3.0]), np.array([2.0])) is None  # a scalar (a loss) is judged by its value


class Answers:
    """A stand-in candidate whose answer to a problem (an int) is ``f(problem)``, an array."""

    def __init__(self, f):
        self.f = f

    def fit(self, problem):
        return problem

    def value(self, problem):
        return np.asarray(self.f(problem), dtype=float)


def answer(candidate, problem):
    return candidate.value(problem)


@pytest.fixture
def collapsing(monkeypatch):
    """A catalogue of one bug whose answer is all padding (zeros) on every problem; the paper's varies."""
    paper = Answers(lambda p: np.arange(6) + p)
    monkeypatch.setattr(catalogue, "_loaded", lambda: (
        catalogue.KnownBug("returns_padding", "returns padding", Answers(lambda p: np.zeros(6))),))
    monkeypatch.setattr(catalogue, "paper", lambda: paper)
    monkeypatch.setattr("conformance.diagnosis.matching.paper", lambda: paper)


def test_a_degenerate_answer_names_no_known_bug_even_at_max_diff_0_on_both_problems(collapsing):
    """A decoding that returns only padding equals every bug that also returns only padding, here and there."""
    assert confirmed_matches(Answers(lambda p: np.zeros(6)), Question(answer, 1, probe=5), TOL) == []


def test_a_match_confirmed_on_a_second_problem_that_is_not_degenerate_stands(monkeypatch):
    """The failing example may be too small to be anything but constant (one query's weight is 1 under every
    softmax); the second problem, built not to be, carries the evidence."""
    paper = Answers(lambda p: np.arange(6) + p)
    bug = Answers(lambda p: np.zeros(6) if p == 1 else np.arange(6) * p)
    monkeypatch.setattr(catalogue, "_loaded", lambda: (catalogue.KnownBug("scaled", "scaled", bug),))
    monkeypatch.setattr(catalogue, "paper", lambda: paper)
    monkeypatch.setattr("conformance.diagnosis.matching.paper", lambda: paper)
    assert [m["mutant"] for m in confirmed_matches(bug, Question(answer, 1, probe=5), TOL)] == ["scaled"]


# -- refitted constants of the paper's formulas --------------------------------------------------------------


@pytest.fixture(scope="module")
def candidates():
    return {name: load(name) for name in (
        "reference", "mutant:attention_scaled_by_d_k", "mutant:attention_scaled_by_sqrt_d_model",
        "mutant:softmax_over_queries", "mutant:masked_scores_filled_with_zero", "mutant:pe_frequencies_over_d_minus_2",
        "mutant:pe_halves_concatenated", "mutant:layer_norm_unbiased_variance", "mutant:gelu_instead_of_relu",
        "mutant:ffn_kernel_size_3", "mutant:schedule_warmup_exponent_minus_one", "mutant:schedule_no_warmup",
        "mutant:label_smoothing_over_v_minus_2", "mutant:label_smoothing_as_kl_divergence")}


@pytest.mark.parametrize("name, measure, words", [
    ("mutant:attention_scaled_by_d_k", attention.score_scale, "scores multiplied by d_k^-1 (paper: d_k^-0.5)"),
    ("mutant:attention_scaled_by_sqrt_d_model", attention.score_scale, "d_model^-0.5 = (h d_k)^-0.5"),
    ("mutant:softmax_over_queries", attention.score_scale, "normalised over the queries"),
    ("mutant:masked_scores_filled_with_zero", attention.attention_mask, "scores set to 0 instead of -inf"),
    ("mutant:pe_frequencies_over_d_minus_2", positional.positional_table, "10000^(-2i/(d_model - 2))"),
    ("mutant:pe_halves_concatenated", positional.positional_table, "halves concatenated"),
    ("mutant:layer_norm_unbiased_variance", layer_norm.layer_norm, "the variance divided by d - 1"),
    ("mutant:gelu_instead_of_relu", feed_forward.activation, "is GELU (paper: ReLU)"),
    ("mutant:schedule_warmup_exponent_minus_one", schedule.schedule, "the warm-up peak is at step 252, not 4,000"),
    ("mutant:schedule_no_warmup", schedule.schedule, "no warm-up"),
    ("mutant:label_smoothing_over_v_minus_2", smoothing.smoothing, "eps / (V - 2) on each wrong token; 0 on the"
                                                                  " padding column"),
    ("mutant:label_smoothing_as_kl_divergence", smoothing.smoothing, "KL divergence"),
])
def test_a_constant_of_the_papers_formula_is_refitted_from_the_candidates_outputs(candidates, name, measure, words):
    assert words in texts(measure(candidates[name])), texts(measure(candidates[name]))
    assert measure(candidates["reference"]) == []  # the paper's own outputs refit to the paper: nothing to say


def test_a_part_that_fits_no_neighbouring_formula_gets_no_constant_but_its_invariance(candidates):
    """The FFN of kernel size 3 is no activation and no inner size; what it reads is measured instead."""
    kernel = candidates["mutant:ffn_kernel_size_3"]
    assert feed_forward.activation(kernel) == [] and feed_forward.ffn_inner(kernel) == []
    assert "at t-1, t+1 changes" in texts(feed_forward.ffn_positions(kernel))


def test_a_refitted_formula_describes_a_failing_question_only_when_it_reproduces_its_answer(candidates):
    """The GELU refitted from the FFN part reproduces the candidate's encoder layer on the failing problem and on
    the second one: described, with the max diffs; the paper's own answer is described by nothing."""
    from conformance.problems.questions import encoder_layer_output

    question = Question(encoder_layer_output, LayerSizes(B=2, S=4, T=3, h=2, d_k=3, d_ff=12, bias=True, seed=5))
    tol = Tolerance(1e-9, 1e-9, "float64")
    (found,) = describe(candidates["mutant:gelu_instead_of_relu"], question, tol)
    assert found["kind"] == "refit" and "GELU" in found["text"] and found["probe_max_abs"] < 1e-9
    assert describe(candidates["reference"], question, LAYER["float32"]) == []


def test_the_description_of_a_question_leaves_out_the_knobs_it_does_not_need(candidates):
    """A candidate with two refitted formulas: its LayerNorm question is described by the LayerNorm's alone."""
    from conformance.boundary.candidate import Candidate
    from conformance.implementations.mutants.gelu_instead_of_relu import adapter as gelu
    from conformance.implementations.mutants.layer_norm_unbiased_variance import adapter as unbiased

    both = Candidate(type("Both", (type(gelu), type(unbiased)), {})(), name="both", timeout_s=None)
    x = np.random.default_rng(0).normal(0, 1, (3, 8))
    question = Question(lambda c, p: c.layer_norm(*p), (x, np.ones(8), np.zeros(8), 1e-5),
                        probe=(x[:2] * 3, np.full(8, 2.0), np.ones(8), 1e-5))
    found = describe(both, question, Tolerance(1e-9, 1e-9, "float64"))
    assert [d["measurement"] for d in found] == ["layer_norm"], found


# -- invariances probed on purpose ------------------------------------------------------------------------------


def test_model_invariances_say_what_the_output_depends_on_and_should_not():
    assert "the decoder reads the future" in texts(invariances.model_invariances(load("mutant:no_causal_mask")))
    assert "does not read the source" in texts(invariances.model_invariances(
        load("mutant:cross_attention_on_decoder_states")))
    assert invariances.model_invariances(load("reference")) == []


def test_a_batch_dependence_says_whether_the_row_or_the_other_sentences_are_read():
    """Rows not independent, and why: a mask taken over the batch reads the other sentences (the same sentences in
    another order give a sentence its own logits); a table indexed by the batch axis reads the row. Neither encoder
    is causal, though a position another sentence pads is hidden from all of them."""
    over_batch = texts(invariances.model_invariances(load(adapter_path("model_padding_mask_over_the_batch"),
                                                          isolate=False)))
    assert "depend on the other sentences of the batch" in over_batch and "reads positions 0..i" not in over_batch
    by_row = texts(invariances.model_invariances(load(adapter_path("model_positions_by_batch_row"), isolate=False)))
    assert "depend on its place in the batch, its row index" in by_row


def test_weights_that_stand_out_in_several_sublayers_point_at_none():
    """A model that reads each token's embedding one row early moves every weight's effect a little, five of them
    past 2x in four sublayers at both sizes: no weight is said to stand out."""
    from conformance.diagnosis.measurements import sensitivity

    early = load(adapter_path("model_embedding_row_off_by_one"), isolate=False)
    assert not [f for f in sensitivity.weight_sensitivity(early) if f.key.startswith("weight_sensitivity:out")]


def test_padding_read_through_the_tied_output_layer_alone_is_not_said_to_be_read_by_the_decoder():
    """Probabilities where logits are asked for: E[pad] reaches every probability through the softmax's normaliser,
    yet one more padding token leaves the real positions alone: the decoder reads no padding, and is not said to."""
    probabilities = load(str(Path(__file__).parent / "adapters" / "model_returns_probabilities.py"), isolate=False)
    assert "reads padded positions" not in texts(invariances.model_invariances(probabilities))
    reads = load(str(Path(__file__).parent / "adapters" / "model_cross_attention_reads_source_padding.py"),
                 isolate=False)
    assert "the decoder reads padded positions" in texts(invariances.model_invariances(reads))


def test_model_constants_are_refitted_from_the_logits():
    assert "the logits multiplied by d_model^-0.5" in texts(model.model_scales(
        load("mutant:logits_scaled_by_inverse_sqrt_d_model")))
    unscaled = load("mutant:embedding_not_scaled")
    assert "the embeddings multiplied by 1 (not scaled)" in texts(model.model_scales(unscaled))


# -- non-finite values, parameter counts -----------------------------------------------------------------------


def test_non_finite_values_are_located_with_the_input_that_makes_them():
    (found,) = describe_nonfinite(load(adapter_path("layer_norm_without_eps"), isolate=False), "layer_norm")
    assert "exactly at the rows whose values are all equal" in found["text"]
    assert describe_nonfinite(load("reference"), "layer_norm") == []


def test_a_count_off_by_a_components_size_names_the_size():
    from conformance.config import base_config
    from conformance.weights import parameter_count

    config, probe = base_config(), second_size(base_config())
    text = explain_sizes(config, parameter_count(config.replace(d_ff=64)), probe,
                         parameter_count(probe.replace(d_ff=64)))
    assert "the FFN's inner size is 64 instead of 2,048 (the same at every configuration)" in text


# -- hard-coding only on evidence of a look-up -------------------------------------------------------------------


def test_a_look_up_is_told_from_an_honest_bug_the_published_example_cannot_show():
    from conformance.judging.twins import lookup_evidence

    looked_up = load(str(Path(__file__).parent / "hostile" / "hard_coded.py"), isolate=False)
    assert lookup_evidence(looked_up, "layer_norm_matches_formula")["looked_up"]
    assert lookup_evidence(looked_up, "lrate_matches_formula_for_any_step")["looked_up"]
    for honest, twin in (("mutant:layer_norm_over_wrong_axis", "layer_norm_matches_formula"),
                         ("mutant:schedule_counts_steps_from_zero", "lrate_matches_formula_for_any_step"),
                         ("mutant:pe_positions_from_one", "pe_matches_formula_for_any_size")):
        assert not lookup_evidence(load(honest), twin)["looked_up"], honest


def test_an_honest_bug_the_published_example_cannot_show_is_described_not_called_hard_coded(certify, monkeypatch):
    """LayerNorm over the batch axis passes the published one-row example and fails its twin. With its entry left
    out of the catalogue, the twin is described, not called "hard-coded?"."""
    monkeypatch.setenv(catalogue.EXCLUDE_ENV, "layer_norm_over_wrong_axis")
    run = certify("mutant:layer_norm_over_wrong_axis", "-k", "layer_norm_matches", "--no-training")
    (twin,) = [check for check in run.report["checks"] if check["id"] == "layer_norm_matches_formula"]
    assert twin["status"] == "failed" and "hard-coded?" not in twin["message"]
    assert twin["data"]["lookup"]["looked_up"] is False
    assert "first (batch) axis" in twin["descriptions"][0]["text"]
    (cause,) = [c for c in run.report["profile"]["mutant:layer_norm_over_wrong_axis"]["causes"]]
    assert cause["kind"] == "measured" and cause["checks"] == ["layer_norm_matches_formula"]


def test_a_decoding_is_read_against_the_papers_row_by_row():
    from conformance.diagnosis.measurements.answers import _decoding

    paper = np.array([[5, 2, 0, 0], [5, 6, 7, 2]])
    assert _decoding(np.array([[5, 2, 2, 2], [5, 6, 7, 2]]), paper) == "goes on"
    assert _decoding(paper[:, :2], paper) == "cut"
    assert _decoding(np.array([[5, 3, 0, 0], [5, 6, 7, 2]]), paper) is None  # a wrong token: nothing so simple


def test_a_question_about_one_half_of_the_model_is_described_by_that_halfs_readings_only():
    """encode's memory is not described by what the decoder reads ("the encoder's memory does not" change: said of
    Flax's own example's encode failure, it contradicted itself), nor decode with the paper's memory by the
    encoder's."""
    import functools

    from conformance.diagnosis import Question
    from conformance.diagnosis.measurements import _side
    from conformance.diagnosis.measurements.invariances import MODEL_TEXTS, SIDES
    from conformance.problems import questions

    assert _side(Question(questions.memory)) == "encoder"
    assert _side(Question(functools.partial(questions.decoded))) == "decoder"
    assert _side(Question(questions.logits)) is None
    assert set(SIDES) <= set(MODEL_TEXTS) and SIDES["padding decoder"] == "decoder"


def test_a_constant_answer_is_described_only_by_a_measurement_that_found_the_part_constant(certify):
    """A fixed rate: its schedule refit is a constant law, said as such; a table of zeros: no measurement finds its
    part constant, so nothing describes it (a constant answer is the collapse of many bugs)."""
    run = certify(str(Path(__file__).parent / "adapters" / "constant_rate.py"), "--no-isolate", "--no-training",
                  "-k", "lrate_matches_formula_for_any_step or pe_matches_formula_for_any_size")
    checks = {check["id"]: check for check in run.report["checks"]}
    (rate,) = checks["lrate_matches_formula_for_any_step"]["descriptions"]
    assert "a constant rate, 0.0001 at every step measured" in rate["text"] and rate["kind"] == "refit"
    assert checks["pe_matches_formula_for_any_size"]["status"] == "failed"
    assert checks["pe_matches_formula_for_any_size"]["descriptions"] == []


def test_rows_that_are_log_probabilities_are_said_whatever_else_differs():
    """A log_softmax on the output beside other deviations: no transform of the paper's answer gives the candidate's,
    but its rows' logsumexp is 0 on both problems, where the paper's logits are not normalised."""
    from types import SimpleNamespace

    from conformance.diagnosis.measurements.answers import answer_normalised

    rng = np.random.default_rng(0)
    paper, paper_second = rng.normal(size=(2, 3, 7)), rng.normal(size=(3, 4, 9))
    other = [rng.normal(size=paper.shape), rng.normal(size=paper_second.shape)]  # the other deviations' logits
    log_probabilities = [x - np.log(np.exp(x).sum(-1, keepdims=True)) for x in other]
    asked = SimpleNamespace(mine=log_probabilities[0], mine_second=log_probabilities[1], paper=paper,
                            paper_second=paper_second)
    assert "every row of the answer is log-probabilities" in answer_normalised(asked).text
    asked.mine, asked.mine_second = other  # not normalised: nothing to say
    assert answer_normalised(asked) is None
    probabilities = [np.exp(x) for x in log_probabilities]  # attention weights: the paper's rows sum to 1 too
    assert answer_normalised(SimpleNamespace(mine=probabilities[0], mine_second=probabilities[1],
                                             paper=probabilities[0], paper_second=probabilities[1])) is None


def test_a_known_bug_is_named_only_when_it_answers_the_whole_call_as_the_candidate(certify):
    """Attention that masks what its output reads but returns the map drawn before the mask: its weights are
    attention_mask_ignored's, its output is the paper's. The bug is not named (it would claim an unmasked output);
    the weights are described as what they are, said of the weights alone."""
    run = certify(str(Path(__file__).parent / "adapters" / "attention_map_before_mask.py"), "--no-isolate",
                  "--no-training", "-k", "attention_matches_formula or masked_weights_are_exactly_zero")
    failed = [check for check in run.report["checks"] if check["status"] == "failed"]
    assert {check["id"] for check in failed} == {"attention_matches_formula", "masked_weights_are_exactly_zero"}
    for check in failed:
        assert not check.get("diagnosis"), check["diagnosis"]
        (said,) = check["descriptions"]
        assert said["text"].startswith("in the attention weights it returns only (its other outputs are the paper's)")
        assert "the attention mask is not applied" in said["text"]


def test_what_a_candidate_reads_otherwise_is_generated_from_the_weights_names_and_shapes():
    from conformance.diagnosis.measurements.misread import misreadings

    weights = {f"decoder.{i}.{name}": np.zeros(shape) for i in range(2) for name, shape in (
        ("norm2.gamma", (4,)), ("norm2.beta", (4,)), ("norm3.gamma", (4,)), ("norm3.beta", (4,)),
        ("self_attn.W_Q", (4, 4)), ("self_attn.W_K", (4, 4)), ("ffn.W1", (4, 8)))}
    weights["E"] = np.arange(24.0).reshape(6, 4)
    found = {m.key: m for m in misreadings(weights, special_ids=(0,), model=True)}
    swap = found["swap:decoder.norm2|norm3"]
    assert swap.text == "reads norm3's weights where the paper reads norm2's, and norm2's where it reads norm3's in" \
                        " every decoder layer"
    marked = {**weights, "decoder.1.norm2.gamma": np.ones(4)}
    swapped = swap.weights(marked)
    assert (swapped["decoder.1.norm3.gamma"] == 1).all() and (swapped["decoder.1.norm2.gamma"] == 0).all()
    assert "swap:decoder.self_attn.W_K|self_attn.W_Q" in found and "transpose:decoder.self_attn.W_Q" in found
    assert "swap:decoder.norm2.beta|norm2.gamma" in found  # gamma and beta of one norm
    assert not any(key.startswith("transpose:decoder.ffn.W1") for key in found)  # not square
    assert (found["zero_row:E[0]"].weights(weights)["E"][0] == 0).all()
    read = found["reshape:E"].weights(weights)["E"]
    assert (read.T == weights["E"].reshape(4, 6)).all()  # the paper's E^T is then the candidate's reshape
    assert {"inputs:source_reversed", "inputs:target_reversed"} <= set(found)


def test_weights_read_the_other_way_round_are_said_as_such(certify):
    """Two LayerNorms' weights swapped in an encoder layer: no formula of the paper's neighbourhood reproduces it,
    the paper handed the weights swapped does."""
    run = certify(str(Path(__file__).parent / "adapters" / "encoder_norms_swapped.py"), "--no-isolate",
                  "--no-training", "-k", "encoder_layer_matches_reference")
    (check,) = [c for c in run.report["checks"] if c["id"] == "encoder_layer_matches_reference"]
    (said,) = check["descriptions"]
    assert said["measurement"] == "misread"
    assert said["text"] == "reads norm2's weights where the paper reads norm1's, and norm1's where it reads norm2's"


def test_a_float64_candidate_is_judged_against_the_float64_paper(certify):
    """Multi-head attention whose output is the paper's and whose map is transposed: on a question about its output
    the float32 reference differed from it by its own rounding, so every float64 known bug that leaves attention
    alone 'matched'. Against the float64 paper nothing is named."""
    run = certify(str(Path(__file__).parent / "adapters" / "mha_weights_transposed.py"), "--no-isolate",
                  "--no-training", "-k", "masking_keys_equals_removing_them or self_attention_matches_reference")
    failed = [c for c in run.report["checks"] if c["status"] == "failed"]
    assert {c["id"] for c in failed} == {"masking_keys_equals_removing_them", "self_attention_matches_reference"}
    assert all(not c.get("diagnosis") for c in failed), [c["diagnosis"] for c in failed]


def test_log_probabilities_where_the_paper_gives_probabilities_are_a_log_softmax_in_place_of_the_softmax():
    """Attention weights are a softmax: an answer of log-probabilities there is the softmax's place, not a log_softmax
    after logits; where the paper's answer is not normalised (logits) it still is the latter."""
    from types import SimpleNamespace

    from conformance.diagnosis.measurements.answers import answer_normalised

    rng = np.random.default_rng(0)
    scores, second = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6))

    def log_softmax(x):
        return x - np.log(np.exp(x).sum(-1, keepdims=True))

    weights = SimpleNamespace(mine=log_softmax(scores), mine_second=log_softmax(second),
                              paper=np.exp(log_softmax(scores)), paper_second=np.exp(log_softmax(second)))
    assert "a log_softmax in place of the softmax" in answer_normalised(weights).text
    logits = SimpleNamespace(mine=log_softmax(scores), mine_second=log_softmax(second), paper=scores,
                             paper_second=second)
    assert "a log_softmax on the output (the logits are asked for)" in answer_normalised(logits).text


def test_a_layer_that_reads_no_other_position_is_not_called_causal():
    """A layer whose mask hides every key reads neither later nor earlier positions: it is said to read no other
    position, not 0..i; a layer with a causal mask still reads 0..i."""
    alone = texts(invariances.encoder_layer_invariances(load(adapter_path("encoder_layer_hides_every_key"),
                                                             isolate=False)))
    assert "it reads no other position" in alone and "reads 0..i only" not in alone
    causal = texts(invariances.encoder_layer_invariances(load("mutant:causal_mask_in_encoder")))
    assert "reads 0..i only" in causal and "no other position" not in causal


def test_the_reach_statements_hold_for_every_position_not_two():
    """A red team's three: a layer whose middle position reads another is not said to read no other position; rows
    offset from the third on depend on their place; an encoder hiding two keys from every query is not causal."""
    middle = texts(invariances.encoder_layer_invariances(
        load(adapter_path("encoder_layer_one_middle_position_reads_another"), isolate=False)))
    assert "no other position" not in middle and "reads 0..i only" not in middle
    rows = texts(invariances.model_invariances(load(adapter_path("model_rows_from_the_third_offset"), isolate=False)))
    assert "depend on its place in the batch" in rows
    two = texts(invariances.model_invariances(load(adapter_path("encoder_hides_two_keys_from_every_query"),
                                                   isolate=False)))
    assert "reads positions 0..i only" not in two


def test_a_count_term_that_holds_only_at_the_flags_asked_is_not_stated():
    """V x d_model of a positional buffer of tgt_vocab rows, counted whatever the flags, looks like an output matrix
    (tied) or a second table (shared) at one configuration; the variants refuse both (a red team's count)."""
    from conformance.config import base_config
    from conformance.weights import parameter_count

    def buffer(config):
        return parameter_count(config) + config.tgt_vocab * config.d_model

    config, second = base_config(), second_size(base_config())
    assert explain_count(config, buffer(config), second, buffer(second)) is not None  # alone, a tie of two terms
    assert explain_count(config, buffer(config), second, buffer(second),
                         variants=variant_differences(buffer, config, lambda c: c)) is None
