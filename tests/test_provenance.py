"""Whose code answered: a report never credits an implementation with what the suite's helpers supplied, and a
converter never turns the implementation's own convention into a silent pass (conformance.provenance)."""

import numpy as np
import pytest
import torch
from torch import nn

from conformance import provenance
from conformance.adapters.torch import on_tensors
from conformance.boundary.candidate import Candidate
from conformance.boundary.loading import load
from conformance.cli import EXIT_NOTHING_RAN
from conformance.config import toy_config
from conformance.paper import formulas
from tests.conftest import adapter_path

HELPERS = adapter_path("with_helpers")
GREEDY = ("greedy_decoding_picks_the_argmax_at_every_step", "greedy_decoding_stops_at_the_end_token_then_pads",
          "trained_checkpoint_decodes_like_the_reference")
GREEDY_K = " or ".join(GREEDY)
LAYER_NORM_K = "layer_norm_matches_formula or layer_norm_matches_published_example"


def in_process(name: str) -> tuple[str, ...]:
    return (f"{HELPERS}:{name}", "--no-isolate", "--no-training", "--progress", "off")


def test_a_helper_supplies_no_part_unless_asked(certify):
    """Without ``supplied=``, a TorchAdapter's model has no greedy decoding and no training step: not implemented,
    with the way to ask for the suite's, never the suite's loop passed as the implementation's."""
    adapter = load(f"{HELPERS}:bare", isolate=False).adapter
    candidate = Candidate(adapter, name="bare")
    assert "model.greedy_decode" not in candidate.provided_parts()
    assert "model.train_step" not in candidate.provided_parts()
    run = certify(*in_process("bare"), "-k", GREEDY_K)
    assert run.statuses() == dict.fromkeys(GREEDY, "not_implemented")
    assert run.report["provenance"][f"{HELPERS}:bare"]["supplied"] == {}
    model = adapter.build_model(toy_config(N=1).as_dict(), 0)
    with pytest.raises(NotImplementedError, match=r'supplied=\("greedy_decode",\)'):
        model.greedy_decode(np.ones((1, 3), dtype=np.int64), 4)


def test_checks_resting_only_on_supplied_code_are_supplied_not_passed(certify):
    """The suite's greedy loop and torch's LayerNorm, asked for: their checks pass, but are reported as supplied, in
    every rendering; the report lists what was supplied, by whom, with which settings."""
    name = f"{HELPERS}:supplied"
    run = certify(*in_process("supplied"), "-k", f"{GREEDY_K} or {LAYER_NORM_K}")
    statuses = run.statuses()
    assert set(statuses.values()) == {"supplied"}, statuses
    assert run.report["verdict"][name] == "nothing implemented"  # nothing failed; nothing is credited either
    assert run.code == EXIT_NOTHING_RAN
    greedy = next(c for c in run.report["checks"] if c["id"] == GREEDY[0])
    assert "the suite's greedy loop" in greedy["message"] and "not credited" in greedy["message"]
    assert greedy["provenance"]["supplied"]["model.greedy_decode"]["by"] == "conformance.adapters.torch.TorchModel"
    supplied = run.report["provenance"][name]["supplied"]
    assert {"layer_norm", "model.greedy_decode", "model.train_step"} <= set(supplied)
    assert supplied["model.train_step"]["supplies"] == ["optimizer", "schedule", "loss", "reported_loss"]
    assert "Adam(betas=(0.9, 0.98), eps=1e-09)" in supplied["model.train_step"]["settings"]["optimizer"]
    assert "SUPPLIED" in run.out and "supplied by the suite: model.greedy_decode" in run.out


def test_an_implementations_own_greedy_loop_is_credited(certify):
    run = certify(*in_process("own"), "-k", GREEDY_K)
    assert run.statuses() == dict.fromkeys(GREEDY, "passed")
    assert run.report["provenance"][f"{HELPERS}:own"]["supplied"] == {}


def test_a_converted_sum_is_a_declared_deviation_and_the_raw_sum_a_named_failure(certify):
    """``mean_from_sum`` makes the numbers right, but the implementation's loss is a sum over tokens: the checks of
    the loss report that deviation (the catalogue's name), never a pass; without the conversion they fail and the
    diagnosis names the same entry."""
    k = ("-k", "smoothed_loss_matches_formula_with_padding")
    converted = certify(*in_process("loss_summed_converted"), *k)
    check = converted.report["checks"][0]
    assert check["status"] == "deviation", check["message"]
    assert check["deviation"]["names"] == ["label_smoothing_summed_over_tokens"]
    assert "mean_from_sum" in check["message"] and "mean_from_sum" in check["deviation"]["reason"]
    profile = converted.report["profile"][f"{HELPERS}:loss_summed_converted"]
    assert profile["causes"][0]["name"] == "label_smoothing_summed_over_tokens"
    raw = certify(*in_process("loss_summed"), *k)
    failed = raw.report["checks"][0]
    assert failed["status"] == "failed"
    assert "label_smoothing_summed_over_tokens" in {d["mutant"] for d in failed["diagnosis"]}


def test_a_converted_kl_loss_is_a_declared_deviation(certify):
    run = certify(*in_process("loss_kl_converted"), "-k", "smoothed_loss_matches_formula_with_padding")
    check = run.report["checks"][0]
    assert check["status"] == "deviation" and check["deviation"]["names"] == ["label_smoothing_as_kl_divergence"]


def test_reading_lambda_lr_from_zero_is_noted_not_a_deviation(certify):
    """LambdaLR counts from 0, as the lesson writes it: the conversion is reported, the check passes."""
    run = certify(*in_process("rate_lambda_lr_converted"), "-k", "lrate_matches_formula")
    assert set(run.statuses().values()) == {"passed"}, run.statuses()
    converted = run.report["provenance"][f"{HELPERS}:rate_lambda_lr_converted"]["converted"]
    assert [(e["converter"], e["part"], e["deviation"]) for e in converted] == [
        ("rate_from_lambda_lr", "learning_rate", None)]


def test_the_isolated_worker_reports_whose_code_answered(certify):
    """Through the sandboxed worker the grader learns the same: supplied parts, and conversions per call."""
    supplied = certify(f"{HELPERS}:supplied", "--isolate", "--no-training", "-k", f"{GREEDY[0]} or {LAYER_NORM_K}")
    assert set(supplied.statuses().values()) == {"supplied"}, supplied.out
    converted = certify(f"{HELPERS}:loss_summed_converted", "--isolate", "-k",
                        "smoothed_loss_matches_formula_with_padding")
    assert converted.report["checks"][0]["status"] == "deviation", converted.out


def test_a_profile_names_each_cause_with_the_failures_it_explains(certify, monkeypatch):
    """The verdict opens with the profile: one line that says how many failures each confirmed deviation explains,
    what was measured where no known bug matches, and which failures nothing explains; in every rendering."""
    args = ("torch-nn-transformer", "--no-training", "-k",
            "logits_match_reference or parameter_count_matches_published_value")
    run = certify(*args)
    profile = run.report["profile"]["torch-nn-transformer"]
    assert profile["failures"] == 6
    causes = {cause["name"]: cause for cause in profile["causes"]}
    assert causes["extra_final_layer_norm"]["explains"] == 2
    counts = {c for c in run.with_status("failed") if c.startswith("parameter_count")}
    # torch.nn.Transformer's final LayerNorms, seen in its parameter count: no known bug is a count, the sizes are
    measured = [cause for cause in profile["causes"] if cause["kind"] == "measured"]
    assert [set(cause["checks"]) for cause in measured] == [counts], measured
    assert "extra LayerNorm" in measured[0]["text"] and "x 2" in measured[0]["text"], measured[0]["text"]
    assert profile["unexplained"] == []
    assert profile["line"].startswith("extra_final_layer_norm: explains 2 of 6 failures")
    assert "measured: parameter count difference +2,048 = extra LayerNorm" in profile["line"]
    assert "profile: 6 failures; 3 causes explain 6" in run.out  # the heading, then each cause once
    assert "  extra_final_layer_norm (2 of 6): " in run.out

    monkeypatch.setenv("CONFORMANCE_DESCRIBE", "0")  # without the measurements, nothing explains the counts
    before = certify(*args).report["profile"]["torch-nn-transformer"]
    assert set(before["unexplained"]) == counts
    assert before["line"].endswith("nothing known explains 4 of 6")


@pytest.mark.parametrize(("judged", "supplies", "expected"), [
    (["model.greedy_decode"], {"model.greedy_decode": ["*"]}, True),
    (["model.train_step:loss"], {"model.train_step": ["optimizer", "loss"]}, True),
    (["model.train_step:gradients"], {"model.train_step": ["optimizer", "schedule", "loss"]}, False),
    (["model.train_step:loss", "model.forward"], {"model.train_step": ["loss"]}, False),
    (["model.train_step"], {"model.train_step": ["optimizer", "schedule", "loss"]}, False),
    ([], {}, False),
])
def test_a_verdict_rests_on_supplied_code_only_when_every_judged_aspect_was_supplied(judged, supplies, expected):
    records = {part: provenance.record("helper", "note", supplies=s) for part, s in supplies.items()}
    assert provenance.rests_on_supplied(judged, records) is expected


def test_a_conversion_declares_a_deviation_only_to_the_checks_that_judge_its_aspect():
    entries = [{"converter": "mean_from_sum", "part": "model.train_step", "aspect": "reported_loss", "what": "a sum",
                "deviation": "label_smoothing_summed_over_tokens"}]
    assert provenance.judged_conversions(["model.train_step:reported_loss"], entries) == entries
    assert provenance.judged_conversions(["model.train_step:gradients"], entries) == []
    assert provenance.judged_conversions(["model.train_step"], entries) == entries


class DroppedOutPositions(nn.Module):
    """The annotated transformer's PositionalEncoding: the table added to x, then dropout."""

    def __init__(self, d_model: int, dropout: float, max_len: int = 64):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", torch.tensor(formulas.positional_encoding(max_len, d_model), dtype=torch.float32))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.shape[1]])


def test_a_function_part_runs_the_modules_it_calls_in_evaluation_mode():
    """A part built from a module starts in training mode (nn.Module's default): it must not drop out when the
    suite asks it, and a module of the model it calls gets its own mode back."""
    part = on_tensors(lambda n, d: DroppedOutPositions(d, 0.5)(torch.zeros(1, n, d))[0])
    np.testing.assert_allclose(part(6, 8), formulas.positional_encoding(6, 8), atol=1e-6)
    models = DroppedOutPositions(8, 0.5)
    on_tensors(lambda n, d: models(torch.zeros(1, n, d))[0])(6, 8)
    assert models.training and models.dropout.training


def test_a_check_that_reads_another_checks_run_is_judged_on_the_parts_that_run_used():
    """The toy is trained once and its learned behaviour read by several checks: a check that judges the loss the
    training reported is looked up in the run's calls (and the adapter's declaration), not only its own."""
    from conformance.boundary.candidate import Ledger
    from conformance.run.plugin import judged_ledger

    class Trained:
        ledger, history = Ledger(), Ledger()

        def supplied_parts(self):
            return {}

    candidate = Trained()
    recipe = provenance.record("PaperRecipe", "the paper's recipe", supplies=["optimizer", "loss", "reported_loss"])

    class Model:
        __conformance_supplied__ = {"model.train_step": recipe}

        def train_step(self):
            provenance.note_conversion("mean_from_sum", "reported_loss", "a sum", deviation="summed")

    model = Model()
    with provenance.conversions() as converted:
        model.train_step()
    candidate.history.note("model.train_step", model.train_step, model, converted)
    ledger = judged_ledger(candidate, ["model.train_step:reported_loss"])
    assert provenance.rests_on_supplied(["model.train_step:reported_loss"], ledger["supplied"])
    assert [e["deviation"] for e in provenance.judged_conversions(["model.train_step:reported_loss"],
                                                                   ledger["converted"])] == ["summed"]
    assert judged_ledger(candidate, ["model.forward"]) is None


BEHIND = adapter_path("smoothing_behind_conversions")


@pytest.mark.parametrize("conversion", ["kl", "sum"])
@pytest.mark.parametrize("bug", ["label_smoothing_over_v_minus_2", "label_smoothing_over_wrong_tokens",
                                 "label_smoothing_missing", "label_smoothing_counts_padding"])
def test_a_converted_loss_still_names_its_known_smoothing_bug(certify, conversion, bug):
    """A conversion carries the code's own quantities (its target's entropy, the tokens its sum ran over): a
    smoothing bug behind it answers as the bug does, and is named (with the paper's H(q) it was "no known cause")."""
    run = certify(f"{BEHIND}:{conversion}_{bug}", "--no-isolate", "--no-training", "--progress", "off",
                  "-k", "smoothed_loss_matches_formula_with_padding")
    (check,) = run.report["checks"]
    assert check["status"] == "failed", check["status"]
    assert bug in [match["mutant"] for match in check["diagnosis"]], check.get("likely_cause")
