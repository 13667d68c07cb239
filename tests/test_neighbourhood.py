"""The generated neighbourhood of the paper's formulas: how it is generated, searched, confirmed and said.

A neighbour is the NumPy implementation with one formula mutated by one operator (``diagnosis.neighbourhood``); the
file that lists them is reproducible from the oracle; a failing question that no known bug explains is searched
for the neighbours that answer as the candidate, confirmed on a third problem drawn after the search, and said as
the two formulas with the changed piece marked.
"""

import ast
import json

import numpy as np
import pytest
from conftest import adapter_path, certify_quietly

from conformance.boundary.loading import load
from conformance.config import ModelConfig
from conformance.diagnosis.evidence import withdraw_contradicted
from conformance.diagnosis.measurements.confirm import Asked
from conformance.diagnosis.neighbourhood import generate, operators, search, words
from conformance.diagnosis.question import Question
from conformance.problems import questions
from conformance.problems.scenarios import LayerSizes, ModelSizes
from conformance.results import CheckResult
from conformance.tolerances import LAYER, MODEL, for_dtype

TOL = for_dtype(LAYER, "float64")  # the tolerance a float64 candidate's layer checks judge with


def proposals(expression: str, operator, **context) -> list[str]:
    node = ast.parse(expression, mode="eval").body
    context = {"names": ["x", "y", "eps"], "keys": ["W1", "W2"], "owner": "adapter", "returned": set(), **context}
    return [ast.unparse(new) for new, _ in operator(node, context)]


# -- the operators ----------------------------------------------------------------------------------------------


def test_each_operator_family_proposes_its_slips():
    assert {"0.0", "1.0", "-1e-06", "2e-06"} <= set(proposals("1e-06", operators.constant))
    assert "y" in proposals("x", operators.variable) and "'W2'" in proposals("'W1'", operators.variable)
    assert "np.sqrt(x) + eps" in proposals("np.sqrt(x + eps)", operators.order) or \
        "eps + np.sqrt(x)" in proposals("np.sqrt(x + eps)", operators.order)
    assert {"x", "x - eps", "x + 2 * eps"} <= set(proposals("x + eps", operators.term))
    assert "x.sum(-1)" in proposals("x.mean(-1)", operators.confusion)
    assert "x.sum(-1) / (x.shape[-1] - 1)" in proposals("x.mean(-1)", operators.confusion)
    assert "np.tril(x)" in proposals("np.triu(x)", operators.confusion)
    assert "x.mean(-1, keepdims=False)" in proposals("x.mean(-1, keepdims=True)", operators.axis)
    assert "bhqd,bhkd->bhkq" in " ".join(proposals("'bhqd,bhkd->bhqk'", operators.variable))
    # an operation moved across its neighbour, also where the neighbour is another formula of the oracle
    assert "self.scale_scores(self.attention_weights(qk, m), d_k=d)" in proposals(
        "self.attention_weights(self.scale_scores(qk, d_k=d), m)", operators.order)
    # a reshape's order: a split into strided groups, a merge that reads them so
    assert "y.reshape(B, L, -1, h).swapaxes(-1, -2)" in proposals("y.reshape(B, L, h, -1)", operators.axis)
    assert "out.swapaxes(-1, -2).reshape(shape)" in proposals("out.reshape(shape)", operators.axis)
    assert "np.exp(log_p)" in proposals("log_p", operators.confusion)  # probabilities for their logarithm


def test_new_families_are_said_in_words():
    def said(old: str, new: str, family: str) -> str:
        return words.change(ast.parse(old, mode="eval").body, ast.parse(new, mode="eval").body, family, "f")

    assert said("self.attention_weights(self.scale_scores(qk), m)", "self.scale_scores(self.attention_weights(qk, m))",
                "order") == "the scaling of the scores applied after the masked softmax, where the paper applies it" \
                           " before"
    assert "strided" in said("y.reshape(B, L, h, -1)", "y.reshape(B, L, -1, h).swapaxes(-1, -2)", "axis")
    assert "probabilities where the paper uses log-probabilities" in said("log_p", "np.exp(log_p)", "confusion")


def test_an_operation_is_applied_again_only_to_what_a_formula_returns():
    node = ast.parse("self.activation(x) @ W", mode="eval").body
    context = {"names": [], "keys": [], "returned": {id(node)}}
    again = [ast.unparse(new) for new, _ in operators.again(node, context)]
    assert again == ["self.activation(self.activation(x) @ W)"]
    assert list(operators.again(node, {**context, "returned": set()})) == []


def test_a_name_is_added_once_more_only_to_what_a_formula_returns():
    node = ast.parse("self.layer_norm(x + out, g, b, eps)", mode="eval").body
    context = {"names": ["x", "out"], "keys": [], "returned": {id(node)}}
    assert [ast.unparse(new) for new, _ in operators.added(node, context)] == [
        "self.layer_norm(x + out, g, b, eps) + x", "self.layer_norm(x + out, g, b, eps) + out"]
    assert list(operators.added(node, {**context, "returned": set()})) == []
    assert words.change(node, ast.parse("self.layer_norm(x + out, g, b, eps) + x", mode="eval").body, "term",
                        "_sublayer") == "x (the residual) added once more, to the result"


def test_a_negative_number_is_changed_whole_and_an_axis_is_said_as_one():
    assert {"0", "1", "-2"} <= set(proposals("-1", operators.constant))
    node = ast.parse("-1", mode="eval").body
    assert list(operators.constant(node.operand, {"negated": {id(node.operand)}})) == []  # never -1 -> -0
    form = {"family": "constant", "paper": "_softmax(masked, axis=⟦-1⟧)", "found": "_softmax(masked, axis=⟦0⟧)",
            "paper_piece": "-1", "found_piece": "0", "formula": "softmax", "words": "0 in place of -1"}
    assert words.statement(form).startswith("softmax: over axis 0 where the paper reduces over axis -1: computes")


def test_usual_slips_of_division_masks_tokens_and_linear_maps_are_proposed_and_said():
    def said(expression: str, operator, found: str, **context) -> str:
        node = ast.parse(expression, mode="eval").body
        full = {"names": ["x"], "keys": [], "owner": "model", "returned": set(), **context}
        (new,) = [new for new, _ in operator(node, full) if ast.unparse(new) == found]
        return words.change(node, new, operator.__name__ if operator is not operators.term else "term", "f")

    assert said("step / warmup", operators.term, "step // warmup") == "// (integer division) in place of /"
    assert said("cfg.pad_id", operators.variable, "cfg.bos_id") == \
        "reads bos_id (the id of <s>) where the paper reads pad_id (the padding token's id)"
    assert said("src_mask", operators.term, "None") == \
        "src_mask (the source padding mask) left out (None: no position hidden)"
    node = ast.parse("self.activation(x @ W1 + b1)", mode="eval").body
    moved = [new for new, family in operators.term(node, {"names": []}) if family == "order"]
    assert [ast.unparse(new) for new in moved] == ["self.activation(x) @ W1 + b1"]
    assert words.change(node, moved[0], "order", "f") == \
        "ReLU applied to x, what the linear map reads, rather than to its result"
    assert said("(c ** 2).mean(-1, keepdims=True)", operators.confusion, "(c ** 2).sum(-1, keepdims=True) /"
                " (c ** 2).shape[0]") == "the sum divided by the size of axis 0, where the paper takes the mean"
    # the n - 1 variance keeps its own words (a confusion written as a division is not the sigmoid)
    assert "sigmoid" not in said("(c ** 2).mean(-1, keepdims=True)", operators.confusion,
                                 "(c ** 2).sum(-1, keepdims=True) / ((c ** 2).shape[-1] - 1)")


def test_softmax_is_confused_with_the_sigmoid():
    (sigmoid,) = proposals("_softmax(masked, axis=-1)", operators.confusion)
    assert sigmoid == "1.0 / (1.0 + np.exp(-masked))"
    assert "the sigmoid" in words.change(ast.parse("_softmax(m, axis=-1)", mode="eval").body,
                                         ast.parse(sigmoid, mode="eval").body, "confusion", "softmax")


# -- the file ---------------------------------------------------------------------------------------------------


def test_the_neighbourhood_file_was_generated_from_the_oracle_as_it_is():
    assert generate.stale() is None, generate.stale()


def test_every_neighbour_is_rebuilt_from_its_recorded_change_and_computes_something_else():
    battery = generate._battery()
    paper = generate.fingerprint(generate._module().NumpyAdapter(), battery)
    neighbours = search.neighbourhood()
    assert len(neighbours) > 500
    for neighbour in neighbours[::25]:  # a sample: building all is the slow test below
        form = neighbour["forms"][0]
        source = generate.mutated_source(neighbour["owner"], neighbour["formula"], form)
        built = generate.build(neighbour["owner"], neighbour["formula"], source, form.get("at"))
        assert generate._differs(generate.fingerprint(built, battery), paper), neighbour["id"]


def test_a_stale_change_is_refused_rather_than_computing_something_else():
    neighbour = search.neighbourhood()[0]
    form = {**neighbour["forms"][0], "paper_piece": "not what is there"}
    with pytest.raises(LookupError, match="does not fit"):
        generate.mutated_source(neighbour["owner"], neighbour["formula"], form)


@pytest.mark.slow
def test_the_neighbourhood_file_is_what_the_oracle_generates(tmp_path):
    stored = json.loads(generate.PATH.read_text(encoding="utf-8"))
    assert json.loads(json.dumps(generate.generate(), ensure_ascii=False)) == stored


# -- the search -------------------------------------------------------------------------------------------------


def _asked(name: str, question=questions.feed_forward_output):
    candidate = load(adapter_path(name), isolate=False)
    ask = Question(question, LayerSizes(B=2, S=3, T=3, h=2, d_k=4, d_ff=16, bias=True, seed=5))
    return Asked.of(candidate, ask, TOL)


def test_a_bug_nobody_catalogued_is_stated_as_the_formula_it_computes():
    (found,) = search.formula_differences(_asked("ffn_second_bias_doubled"))
    assert found["kind"] == "formula"
    assert "the term b2 counted twice" in found["text"]
    assert "computes ⟦ReLU(x @ W1 + b1) @ W2 + 2 * b2⟧ where the paper computes ⟦ReLU(x @ W1 + b1) @ W2 + b2⟧" \
        in found["text"]
    assert found["facts"]["forms"][0]["formula"] == "feed_forward"


def test_a_finalist_the_third_problem_refutes_is_not_stated(monkeypatch):
    asked = _asked("ffn_second_bias_doubled")
    from conformance.diagnosis.question import probe_of

    # the candidate's answer on the third problem moved off every neighbour's: the finalists of the first two
    # problems are refuted there, and none is stated
    monkeypatch.setattr(search, "_answer", lambda question, candidate, problem: np.asarray(
        question.answer(search._paper(asked), problem), np.float64) + 1.0)
    assert probe_of(asked.second) is not None
    assert search.formula_differences(asked) == []


def test_a_tie_of_more_changes_than_a_statement_shows_is_not_stated():
    """Six forms that answer alike (a softmax without exp, a sublayer reading its input, a mask subtracted, where
    every key is hidden) share a collapse, not a change: stated, each would be a false claim."""
    def neighbour(i, formula):
        return {"id": f"n{i}", "formula": formula, "section": "§", "forms": [{"key": f"k{i}"}]}

    answer = np.zeros(3)
    kept = [(neighbour(i, formula), answer, 0.0, 0.0, 0.0)
            for i, formula in enumerate(["_softmax", "_softmax", "encoder_layer", "encoder_layer", "mask_scores",
                                         "mask_scores"])]
    assert search._ties(kept) == []


def test_a_faithful_part_is_searched_for_nothing():
    candidate = load("numpy", isolate=False)
    ask = Question(questions.feed_forward_output, LayerSizes(B=2, S=3, T=3, h=2, d_k=4, d_ff=16, bias=True, seed=5))
    assert Asked.of(candidate, ask, TOL) is None


# -- the words --------------------------------------------------------------------------------------------------


def test_a_statement_shows_both_formulas_with_the_changed_piece_marked():
    form = {"section": "§3.1 LayerNorm", "formula": "layer_norm_denominator", "family": "term",
            "words": "the square root left out", "paper": "⟦np.sqrt(variance + eps)⟧", "found": "⟦variance + eps⟧",
            "paper_piece": "np.sqrt(variance + eps)", "found_piece": "variance + eps"}
    assert words.statement(form) == ("§3.1 LayerNorm, layer_norm_denominator: the square root left out: computes"
                                     " ⟦variance + ε⟧ where the paper computes ⟦√(variance + ε)⟧")


def test_a_piece_without_variables_is_evaluated():
    form = {"formula": "pe_frequencies", "family": "confusion", "words": "log10 in place of the natural log",
            "paper": "⟦math.log(10000.0)⟧", "found": "⟦math.log10(10000.0)⟧", "paper_piece": "math.log(10000.0)",
            "found_piece": "math.log10(10000.0)"}
    assert "(= 4, the paper's 9.21034 (÷2.303))" in words.statement(form)


# -- evidence ---------------------------------------------------------------------------------------------------


def _result(check_id: str, status: str, diagnosis=None, cause=None) -> CheckResult:
    return CheckResult(check_id, "impl", check_id, "§", status, message="failed", diagnosis=diagnosis or [],
                       likely_cause=cause)


def test_a_name_a_passing_check_contradicts_is_withdrawn():
    named = _result("parameter_count_matches_published_value", "failed",
                    [{"mutant": "greedy_never_stops", "bug": "never stops"}], "never stops (mutant:greedy_never_stops)")
    results = [named, _result("greedy_decoding_stops_at_the_end_token_then_pads", "passed")]
    withdraw_contradicted(results)
    assert named.likely_cause is None
    assert named.diagnosis[0]["contradicted_by"] == ["greedy_decoding_stops_at_the_end_token_then_pads"]
    assert "withdrawn: mutant:greedy_never_stops fails greedy_decoding_stops_at_the_end_token_then_pads, which passed" \
        in named.message
    withdraw_contradicted(results)
    assert named.message.count("withdrawn") == 1


def test_a_withdrawn_name_gives_way_to_an_alike_match_no_passing_check_contradicts():
    """On an encoder's call, ignoring every mask and ignoring the padding mask answer alike; the causal checks
    passed: the first is withdrawn, its line no longer says "likely cause", and the second stands."""
    named = _result("encode_matches_reference", "failed",
                    [{"mutant": "attention_mask_ignored", "bug": "Attention ignores its mask"},
                     {"mutant": "padding_mask_ignored", "bug": "No padding mask"}],
                    "Attention ignores its mask (mutant:attention_mask_ignored)")
    named.message = ("memory differs\n  likely cause: Attention ignores its mask (mutant:attention_mask_ignored),"
                     " confirmed on a second, bigger problem (max diff 0 here, 0 there)")
    withdraw_contradicted([named, _result("logits_up_to_t_ignore_later_target_tokens", "passed")])
    assert named.likely_cause == "No padding mask (mutant:padding_mask_ignored)"
    assert "likely cause: Attention" not in named.message
    assert "answers this check as Attention ignores its mask (mutant:attention_mask_ignored)" in named.message
    assert named.message.endswith("that no passing check contradicts: No padding mask (mutant:padding_mask_ignored)")


def test_a_name_no_passing_check_contradicts_stands_and_a_combination_is_not_judged():
    single = _result("a", "failed", [{"mutant": "greedy_never_stops", "bug": "b"}], "b (mutant:greedy_never_stops)")
    combined = _result("b", "failed", [{"mutant": "greedy_never_stops+pre_norm",
                                        "mutants": ["greedy_never_stops", "pre_norm"], "bug": "c"}], "c")
    other = _result("greedy_decoding_stops_at_the_end_token_then_pads", "passed")
    other.impl = "another implementation"
    withdraw_contradicted([single, combined, other])
    assert single.likely_cause == "b (mutant:greedy_never_stops)" and "contradicted_by" not in single.diagnosis[0]
    assert combined.likely_cause == "c"


def test_reports_show_the_two_formulas_one_under_the_other_with_the_piece_marked():
    from conformance.diagnosis.message import fmt_descriptions
    from conformance.reports.html_report import _described

    found = {"kind": "formula", "measurement": "generated_neighbourhood", "facts": {"problems": 3},
             "text": "§3.3 FFN, feed_forward: the term b2 counted twice: computes ⟦ReLU(x) + 2 * b2⟧ where the paper"
                     " computes ⟦ReLU(x) + b2⟧"}
    assert fmt_descriptions([found]) == [
        "  measured (no known bug matches): §3.3 FFN, feed_forward: the term b2 counted twice, confirmed on 3"
        " problems, the last drawn after the search:", "      computes ⟦ReLU(x) + 2 * b2⟧",
        "      where the paper computes ⟦ReLU(x) + b2⟧"]
    assert _described(found) == ("§3.3 FFN, feed_forward: the term b2 counted twice:<br><code>computes"
                                  " <mark>ReLU(x) + 2 * b2</mark></code><br><code>the paper computes"
                                  " <mark>ReLU(x) + b2</mark></code>")
    hostile = {**found, "kind": "probe", "text": "⟦<script>⟧"}
    assert _described(hostile) == "⟦&lt;script&gt;⟧"  # only a generated formula is marked up, and always escaped


def test_a_model_only_adapter_is_profiled_once_on_a_fixed_question_and_its_checks_ask_the_profile():
    candidate = load(adapter_path("model_ffn_second_bias_doubled"), isolate=False)
    profile = search.model_profile(candidate)
    assert [n["formula"] for n in profile] == ["feed_forward"]
    assert search.model_profile(candidate) is profile  # once per candidate, whichever check asks first
    assert search.model_profile(load("numpy", isolate=False)) == []  # the paper's logits: nothing to profile
    sizes = ModelSizes(ModelConfig(src_vocab=12, tgt_vocab=12, d_model=8, h=2, d_ff=16, N=2), B=2, S=6, T=5, seed=3)
    asked = Asked.of(candidate, Question(questions.decoded, sizes), for_dtype(MODEL, "float64"))
    (found,) = search.formula_differences(asked)
    assert "feed_forward: the term b2 counted twice" in found["text"]


@pytest.mark.slow
def test_a_decoder_that_stops_but_never_pads_is_not_named_one_that_never_stops(tmp_path, monkeypatch):
    """Where some row runs to max_len, a decoder that leaves the finished rows unpadded answers as greedy_never_stops:
    the greedy question's second problem is one where every row ends, which tells them apart. Its search meets
    neighbours that loop for ever (a loop condition mutated): each is abandoned after its time."""
    monkeypatch.setattr(search, "NEIGHBOUR_TIMEOUT_S", 1.0)
    search.neighbour_candidate.cache_clear()
    report = certify_quietly(tmp_path, adapter_path("greedy_unpadded_after_eos"), "--no-training", "--no-isolate",
                             "-k", "greedy_decoding_stops or trained_checkpoint_decodes")
    failed = [c for c in report["checks"] if c["status"] == "failed"]
    assert len(failed) == 2  # the random weights' greedy question and the trained checkpoint's
    for check in failed:
        assert not check.get("diagnosis")  # was: greedy_never_stops, confirmed on problems that could not tell
        assert "a row is not stopped at </s>" in check["likely_cause"]


def test_a_composite_sublayer_is_asked_as_a_question_and_its_formula_stated(tmp_path):
    """The composite parts (LayerNorm(x + Sublayer(x)) in one call) hand the diagnosis their question: a residual
    added after the LayerNorm is stated as the formula it computes."""
    report = certify_quietly(tmp_path, adapter_path("ffn_sublayer_residual_outside_norm"), "--no-training",
                             "--no-isolate", "-k", "ffn_sublayer_matches_reference")
    (check,) = report["checks"]
    assert check["status"] == "failed"
    assert "x (the residual) added after LayerNorm, not inside it" in check["likely_cause"]
