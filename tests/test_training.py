"""The training check (conformance/judging/training.py, conformance/judging/checks/test_training.py) and its mutants.

Fast tests first: the data, the formulas, the verdict logic on scripted candidates (no torch, no
learning), the progress line. Then the cheap training checks against the reference and every
training mutant (a few updates each). The full convergence check runs once, on the reference, in
``test_reference_passes_every_training_check``; the mutants that learn anyway are not trained to a
verdict here (docs/training-check.md lists what each one does in a full run).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TRAINED_REFERENCE_RUN, TRAINING_CHECKS, adapter_path, shared_run

from conformance.adapter import Conventions
from conformance.boundary.candidate import Candidate
from conformance.boundary.loading import load
from conformance.config import toy_config
from conformance.implementations import mutants
from conformance.judging import training

CONFIG = toy_config()
CHEAP = (
    "rate_used_at_each_step_is_lrate",
    "reported_loss_is_label_smoothed_cross_entropy",
    "adam_steps_match_reference",
    "evaluation_mode_has_no_dropout",
    "dropout_acts_on_every_sublayer_output_and_embedding_sum",
    "dropout_acts_nowhere_else",
)
LEARNED = (
    "smoothed_loss_approaches_its_floor_from_above",
    "greedy_decoding_reverses_cabed",
    "last_layer_cross_attention_reads_mirrored_positions",
    "top_probabilities_stay_near_the_smoothed_target",
)
ALL_CHECKS = CHEAP + ("reversal_task_is_learned",) + LEARNED
# conformance/judging/checks/test_training.py's
TRAINING_SECTIONS = ("§5.3-5.4 Training", "The toy run: learned behaviour")
TRAINING_MUTANTS = (
    "train_no_warmup",
    "train_adam_default_betas",
    "train_gradient_cut_at_residual",
    "train_loss_counts_padding",
    "dropout_at_evaluation",
    "dropout_missing_on_embeddings",
    "dropout_on_attention_weights",
    "dropout_on_ffn_hidden",
    "dropout_after_layer_norm",
)


def keyword(*checks: str) -> str:
    return " or ".join(checks)


# --------------------------------------------------------------------------------------------------
# The data
# --------------------------------------------------------------------------------------------------


def test_batches_reverse_3_to_8_letters_with_teacher_forcing():
    batch = training.reversal_batch(np.random.default_rng(0), 1000, CONFIG)
    src, tgt_in, tgt_out, lengths = batch.src, batch.tgt_in, batch.tgt_out, batch.lengths
    assert set(np.unique(lengths)) == set(range(3, 9))
    assert src.shape == (1000, 8) and tgt_in.shape == tgt_out.shape == (1000, 9)
    for i in range(0, 1000, 37):
        L = lengths[i]
        letters = src[i, :L]
        assert ((letters >= 3) & (letters <= 12)).all() and (src[i, L:] == 0).all()
        assert tgt_in[i, 0] == 1 and (tgt_in[i, 1:L + 1] == letters[::-1]).all() and (tgt_in[i, L + 1:] == 0).all()
        assert (tgt_out[i, :L] == letters[::-1]).all() and tgt_out[i, L] == 2 and (tgt_out[i, L + 1:] == 0).all()
    # teacher forcing: the decoder input is the target shifted right by one, starting with <s>
    assert (tgt_in[:, 1:][tgt_out[:, :-1] != 2] == tgt_out[:, :-1][tgt_out[:, :-1] != 2]).all()


def test_batches_are_padded_to_their_longest_sequence():
    rng = np.random.default_rng(3)
    batch = training.reversal_batch(rng, 5, CONFIG, min_len=3, max_len=4)
    assert batch.src.shape[1] == batch.lengths.max()


def test_training_and_held_out_data_come_from_different_streams_of_the_seed():
    plan = training.DEFAULT_PLAN
    train_rng, _ = training.data_streams(0, plan)
    first = training.reversal_batch(train_rng, plan.test_size, CONFIG)
    test = training.held_out_set(CONFIG, 0, plan)
    assert not np.array_equal(first.src, test.src)
    assert np.array_equal(test.src, training.held_out_set(CONFIG, 0, plan).src)  # reproducible
    assert not np.array_equal(test.src, training.held_out_set(CONFIG, 1, plan).src)  # the seed matters
    assert len(test) == 500


def test_published_example_and_token_names():
    assert training.encode_letters("cabed", CONFIG).tolist() == [[5, 3, 4, 7, 6]]
    names = training.token_names(CONFIG)
    assert names[:4] == ["<pad>", "<s>", "</s>", "a"] and names[12] == "j"


def test_exact_match_counts_up_to_the_first_end_token():
    batch = training.reversal_batch(np.random.default_rng(1), 6, CONFIG)
    right = batch.tgt_out.copy()
    assert training.exact_match(right, batch, 2, 0).all()
    noisy = np.where(np.arange(right.shape[1])[None] <= batch.lengths[:, None], right, 7)
    assert training.exact_match(noisy, batch, 2, 0).all()  # what follows </s> does not count
    wrong = right.copy()
    wrong[0, 0] = 3 if wrong[0, 0] != 3 else 4
    assert training.exact_match(wrong, batch, 2, 0).tolist() == [False] + [True] * 5
    assert not training.exact_match(right[:, :2], batch, 2, 0).any()  # too short: no </s>


# --------------------------------------------------------------------------------------------------
# The formulas against the lesson's numbers and PyTorch
# --------------------------------------------------------------------------------------------------


def test_published_log_rates_are_the_next_steps_lrate():
    for point in training.PUBLISHED_LOG:
        assert f"{training.lrate(point['step'] + 1, 64, 400):.2e}" == f"{point['lr_next']:.2e}"
    assert math.isclose(training.lrate(100, 64, 400), 0.0015625)
    assert math.isclose(training.lrate(1600, 64, 400), 0.003125)


def test_smoothed_loss_equals_torch_cross_entropy_and_its_floor_is_0_537():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, (40, 13)).astype(np.float32)
    targets = rng.integers(0, 13, 40)
    want = torch.nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)(torch.as_tensor(logits),
                                                                          torch.as_tensor(targets))
    assert math.isclose(training.smoothed_loss(logits, targets, 0.1, 0), want.item(), rel_tol=1e-6)
    assert round(training.smoothed_loss_floor(13, 0.1), 3) == 0.537
    q = training.smoothed_target(13, 0.1, 5)
    assert round(q[5], 4) == 0.9077 and round(q[0], 4) == 0.0077
    # the floor is reached by predicting q exactly, and a model 100% sure pays 1.846 (the lesson's check)
    floor = training.smoothed_loss_floor(13, 0.1)
    assert math.isclose(training.smoothed_loss(np.log(q)[None], np.array([5]), 0.1, 0), floor)
    sure = np.zeros((1, 13))
    sure[0, 5] = 20.0
    assert round(training.smoothed_loss(sure, np.array([5]), 0.1, 0), 3) == 1.846


# --------------------------------------------------------------------------------------------------
# The verdict, on scripted candidates: no learning, only what train_step and greedy_decode return
# --------------------------------------------------------------------------------------------------


class Script:
    """What a scripted model does at each step: its loss, its rate, its exact match."""

    def __init__(self, *, loss=lambda s: 1.0, lr=lambda s: training.lrate(s, 64, 400), accuracy=lambda s: 0.0,
                 raise_at=None):
        self.loss, self.lr, self.accuracy, self.raise_at = loss, lr, accuracy, raise_at


class ScriptedModel:
    def __init__(self, config, script: Script):
        self.config, self.script, self.step = config, script, 0

    def train_step(self, src, tgt_in, tgt_out):
        self.step += 1
        if self.step == self.script.raise_at:
            raise RuntimeError("CUDA out of memory (scripted)")
        return {"loss": self.script.loss(self.step), "lr": self.script.lr(self.step)}

    def greedy_decode(self, src, max_len):
        lengths = (src != 0).sum(1)
        out = np.zeros((len(src), max_len), dtype=np.int64)
        for i, L in enumerate(lengths):
            out[i, :L] = src[i, :L][::-1]
            out[i, L] = 2
        wrong = np.arange(len(src)) >= round(self.script.accuracy(self.step) * len(src))
        out[wrong, 0] = np.where(out[wrong, 0] == 3, 4, 3)
        return out


class ScriptedAdapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="scripted")

    def __init__(self, script: Script):
        self.script = script

    def build_model(self, config, seed):
        return ScriptedModel(config, self.script)


def scripted(script: Script, name="scripted") -> Candidate:
    return Candidate(ScriptedAdapter(script), name=name, timeout_s=None)


QUIET = training.Progress("test", 1000, enabled=False)


def test_passes_at_the_first_evaluation_over_the_threshold():
    run = training.train(scripted(Script(accuracy=lambda s: min(1.0, s / 600))), 0, progress=QUIET)
    threshold = training.DEFAULT_PLAN.pass_exact_match
    first = next(s for s in training.DEFAULT_PLAN.eval_steps() if s / 600 >= threshold)
    assert run.status == "passed" and run.stopped_at == first == len(run.losses) == len(run.rates)
    assert [s for s, _ in run.evals] == list(range(300, first + 1, 100))


def test_fails_at_the_deadline_when_the_threshold_is_not_reached():
    plan = training.DEFAULT_PLAN
    run = training.train(scripted(Script(accuracy=lambda s: plan.pass_exact_match - 0.01)), 0, progress=QUIET)
    assert run.status == "failed" and run.stopped_at == plan.deadline
    assert "by step" in run.reason and f"{plan.pass_exact_match - 0.01:.1%}" in run.reason


def test_a_model_without_load_weights_trains_from_its_own_init_and_a_failure_says_so():
    """The paper specifies no initialisation: a failing run from the candidate's own names it as a possible cause."""
    plan = training.DEFAULT_PLAN
    run = training.train(scripted(Script(accuracy=lambda s: plan.pass_exact_match - 0.01)), 0, progress=QUIET)
    assert run.initialisation.startswith(training.OWN_INIT) and "load_weights is not provided" in run.initialisation
    assert run.status == "failed" and "own initialisation, which the paper does not specify" in run.reason
    assert run.curves()["initialisation"] == run.initialisation


class LoadsWeights(ScriptedModel):
    loaded = None

    def load_weights(self, weights):
        LoadsWeights.loaded = weights


class LoadingAdapter(ScriptedAdapter):
    def build_model(self, config, seed):
        return LoadsWeights(config, self.script)


def test_a_model_that_loads_weights_starts_from_the_reference_init_of_the_seed():
    """Every candidate that can load weights starts where the reference starts: the check certifies the recipe."""
    from conformance.problems import oracle
    from conformance.weights import model_shapes

    run = training.train(Candidate(LoadingAdapter(Script(accuracy=lambda s: 1.0)), name="loads", timeout_s=None), 3,
                         progress=QUIET)
    assert run.status == "passed" and run.initialisation == training.REFERENCE_INIT
    want = oracle.initial_weights(CONFIG, 3)
    assert list(LoadsWeights.loaded) == list(model_shapes(CONFIG)) == list(want)
    assert all(np.array_equal(LoadsWeights.loaded[name], want[name]) for name in want)
    assert not np.array_equal(want["E"], oracle.initial_weights(CONFIG, 4)["E"])  # the seed matters
    assert abs(want["E"].std() - CONFIG.d_model ** -0.5) < 0.01  # the lesson's spread, not nn.Embedding's N(0, 1)
    reference = load("reference").build_model(CONFIG, seed=3).dump_weights()
    assert all(np.array_equal(reference[name], want[name]) for name in want)  # the reference's own start, bit for bit


def test_fails_at_once_on_a_non_finite_loss():
    run = training.train(scripted(Script(loss=lambda s: math.nan if s == 42 else 1.0)), 0, progress=QUIET)
    assert run.status == "failed" and run.stopped_at == 42 and "not finite" in run.reason


def test_fails_when_the_loss_is_no_better_than_uniform_guessing():
    run = training.train(scripted(Script(loss=lambda s: 2.6)), 0, progress=QUIET)
    assert run.status == "failed" and run.stopped_at == training.DEFAULT_PLAN.first_eval and "diverged" in run.reason


def test_a_rate_that_is_not_lrate_fails_and_the_run_says_whether_its_own_schedule_learns():
    """The first step whose rate is not lrate(step) fails the run; it goes on with the code's own schedule and says
    whether the model learns with it. The run names no cause itself: rate_used_at_each_step_is_lrate diagnoses."""
    run = training.train(scripted(Script(lr=lambda s: 64**-0.5 * s**-0.5)), 0, progress=QUIET)
    assert run.status == "failed" and run.rate_mismatch["step"] == 1 and run.stopped_at > 1
    assert run.likely_cause is None and "rate_used_at_each_step_is_lrate" in run.reason
    assert "with its own schedule, it does not learn the task" in run.reason and not run.rate_mismatch["learns"]
    learns = training.train(scripted(Script(lr=lambda s: training.lrate(s + 1, 64, 400),
                                                   accuracy=lambda s: float(s >= 200))), 0,
                            progress=QUIET)
    assert learns.status == "failed" and learns.rate_mismatch["step"] == 1 and learns.rate_mismatch["learns"]
    assert "with its own schedule, it learns (exact match" in learns.reason


def test_an_adapter_error_is_kept_for_every_check_that_needs_the_run():
    run = training.train(scripted(Script(raise_at=7)), 0, progress=QUIET)
    assert run.status == "error" and run.stopped_at == 6 and "CUDA out of memory" in run.error.message


def test_runs_are_cached_per_candidate_adapter_and_seed():
    candidate = scripted(Script(accuracy=lambda s: 1.0), name="cached")
    training.forget_runs()
    first = training.cached_run(candidate, 0)
    assert training.cached_run(candidate, 0) is first
    assert training.cached_run(candidate, 1) is not first
    other_adapter = scripted(Script(accuracy=lambda s: 1.0), name="cached")
    assert training.cached_run(other_adapter, 0) is not first
    training.forget_runs()


def test_curves_hold_every_step_and_the_published_points():
    run = training.train(scripted(Script(accuracy=lambda s: s / 1000, loss=lambda s: 1.0 / s)), 0, progress=QUIET)
    curves = run.curves()
    n = run.stopped_at
    assert curves["step"] == list(range(1, n + 1)) and len(curves["loss"]) == len(curves["lr"]) == n
    assert curves["lr"] == curves["lr_expected"]
    assert [p["step"] for p in curves["published"]["points"]] == [1, 500, 1000, 2000, 3000]
    assert curves["ours_at_published_steps"]["500"]["exact_match"] == 0.5
    assert curves["ours_at_published_steps"]["3000"]["train_loss"] is None  # not run that far


def test_progress_line_is_rewritten_in_place_and_can_be_switched_off(monkeypatch):
    stream = io.StringIO()
    progress = training.Progress("training x seed 0", 1000, stream=stream, enabled=True, interval_s=0.0)
    progress.update(10, 2.5, None)
    progress.update(300, 0.7, (300, 0.75))
    progress.finish("passed")
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n")
    assert "step   300/1000" in text and "75.0%" in text and "left" in text
    monkeypatch.setenv(training.PROGRESS_ENV, "0")
    assert not training.Progress("x", 10, stream=stream).enabled
    monkeypatch.setenv(training.PROGRESS_ENV, "1")
    assert training.Progress("x", 10, stream=io.StringIO()).enabled
    monkeypatch.delenv(training.PROGRESS_ENV)
    assert not training.Progress("x", 10, stream=io.StringIO()).enabled  # not a terminal


# --------------------------------------------------------------------------------------------------
# The checks, through the CLI
# --------------------------------------------------------------------------------------------------


def test_cheap_training_checks_pass_on_the_reference(certify):
    run = certify("reference", "-k", keyword(*CHEAP))
    assert run.code == 0, run.out
    assert run.statuses() == dict.fromkeys(CHEAP, "passed")


def test_adam_steps_are_compared_on_the_problem_the_candidate_was_given(certify):
    """A candidate that builds d_ff = 2 d_model only gets the toy config with d_ff 128, and the weights drawn
    for it; the reference must take the same steps from the same weights, not its own d_ff 256 problem (and
    the loss check, too, draws its weights for the config the candidate builds)."""
    run = certify(f"{adapter_path('views')}:half_ffn_reference", "-k", keyword(*CHEAP))
    assert set(run.statuses()) == set(CHEAP) and run.with_status("passed") == set(CHEAP), run.out[-3000:]


def test_no_training_deselects_every_training_check(certify):
    run = certify("reference", "--no-training", "-k", keyword(*ALL_CHECKS))
    assert run.report["checks"] == []


# What each mutant fails among the cheap checks (a few updates each); tests/test_mutant_catalogue.py runs the rest.
CHEAP_CATCHES = {
    "train_no_warmup": {"rate_used_at_each_step_is_lrate", "adam_steps_match_reference"},
    "train_adam_default_betas": {"adam_steps_match_reference"},
    "train_gradient_cut_at_residual": {"adam_steps_match_reference"},
    "train_loss_counts_padding": {"reported_loss_is_label_smoothed_cross_entropy", "adam_steps_match_reference"},
    "dropout_at_evaluation": {"evaluation_mode_has_no_dropout"},
    "dropout_missing_on_embeddings": {"dropout_acts_on_every_sublayer_output_and_embedding_sum"},
    "dropout_on_attention_weights": {"dropout_acts_nowhere_else"},
    "dropout_on_ffn_hidden": {"dropout_acts_nowhere_else"},
    "dropout_after_layer_norm": {"dropout_acts_nowhere_else"},
}


# The check whose diagnosis must name each mutant (the catalogue's confirmed match names the mutant itself).
LIKELY = {
    "train_no_warmup": "rate_used_at_each_step_is_lrate",
    "train_adam_default_betas": "adam_steps_match_reference",
    "train_gradient_cut_at_residual": "adam_steps_match_reference",
    "train_loss_counts_padding": "reported_loss_is_label_smoothed_cross_entropy",
}


def promised(name: str) -> set[str]:
    """The training checks that catch a mutant, as implementations/mutants/expected.toml declares them
    (caught_by, or caught_by_training for a mutant whose caught_by lists what a run without training catches)."""
    declared = mutants.expected()[name]
    return set(declared.caught_by if declared.caught_by_training is None else declared.caught_by_training)


@pytest.mark.parametrize("name", TRAINING_MUTANTS)
def test_cheap_checks_catch_each_training_mutant(certify, name):
    """Each mutant fails exactly the cheap checks its file promises, with a message naming the bug."""
    assert promised(name) & set(CHEAP) == CHEAP_CATCHES[name]
    run = certify(f"mutant:{name}", "-k", keyword(*CHEAP))
    assert run.code == 1, run.out
    failed = run.with_status("failed")
    assert failed == CHEAP_CATCHES[name], run.out
    assert run.with_status("passed") == set(CHEAP) - failed
    by_id = {c["id"]: c for c in run.report["checks"]}
    if name in LIKELY:  # dropout at evaluation gives random outputs: no known bug's answer can match them
        check = by_id[LIKELY[name]]
        assert [m["mutant"] for m in check["diagnosis"]][:1] == [name], check["message"]
        assert check["likely_cause"].endswith(f"(mutant:{name})")


@pytest.mark.slow  # it trains with the mutant's own schedule after the failure, to say whether the model learns
def test_no_warmup_fails_the_convergence_check_and_says_what_its_own_schedule_did(certify):
    run = certify("mutant:train_no_warmup", "-k", "reversal_task_is_learned")
    (result,) = run.report["checks"]
    assert result["status"] == "failed" and "does not follow §5.3's schedule" in result["message"]
    assert "with its own schedule" in result["message"]  # and whether the model learns with it


@pytest.mark.slow  # the toy run trains for 900 steps: the default selection covers the run with the unit
# tests above and the cheap checks; .ci/run's slow step runs this one
def test_reference_passes_every_training_check(tmp_path_factory):
    """The one full convergence run of the test suite; the learned-behaviour checks reuse its model. The run is the
    session's (conftest.TRAINED_REFERENCE_RUN): tests/test_browser.py opens its HTML report, with the pictured
    checks it also selects, which pass too."""
    assert set(TRAINING_CHECKS) == set(ALL_CHECKS)
    run = shared_run(tmp_path_factory, "reference", *TRAINED_REFERENCE_RUN)
    assert run.code == 0, run.out
    statuses = run.statuses()
    assert set(statuses.values()) == {"passed"}, run.out
    sections = {c["id"]: c["section"] for c in run.report["checks"]}
    assert {cid for cid in statuses if sections[cid] in TRAINING_SECTIONS} == set(ALL_CHECKS)
    by_id = {c["id"]: c for c in run.report["checks"]}
    curves = by_id["reversal_task_is_learned"]["data"]["training"]
    plan = training.DEFAULT_PLAN
    assert curves["status"] == "passed" and curves["stopped_at"] <= plan.deadline
    assert curves["exact_match"][-1]["value"] >= plan.pass_exact_match
    assert len(curves["loss"]) == len(curves["lr"]) == curves["stopped_at"]
    assert curves["published"]["points"][1] == {"step": 500, "lr_next": 5.58e-03, "train_loss": 0.741,
                                                "exact_match": 0.888}
    example = by_id["greedy_decoding_reverses_cabed"]["data"]["example"]
    assert example["greedy"] == ["d", "e", "b", "a", "c", "</s>"]
    assert len(example["table"]) == 6 and len(example["table"][0]["top3"]) == 3


def test_dropout_probes_count_values_up_to_a_relative_difference():
    from conformance.judging import dropout

    assert dropout.distinct([]) == 0
    assert dropout.distinct([2.0, 2.0 + 1e-9, 2.0]) == 1  # bitwise noise of a deterministic framework: one value
    assert dropout.distinct([2.0, 2.1, 2.0, 2.2]) == 3
    probes = dropout.probes(CONFIG)
    places = [probe.place for probe in probes]
    assert len(places) == len(set(places)) == 4 + 2 * (2 * 2 + 2 * 3)  # 2 sums, 2 outside, 10 sublayers twice
    assert sum(probe.paper for probe in probes) == 12
    # a bias-free attention outputs nothing on a zero input: a stack's first self-attention is not studied then, and
    # the report says so (its place with the reason)
    unstudied = [p for p in dropout.probes(CONFIG.replace(attention_bias=False)) if p.unstudied]
    assert len(unstudied) == 4 and all("first self-attention" in p.unstudied for p in unstudied)
    assert not any(p.unstudied for p in probes)


def test_dropout_checks_are_blocked_where_a_layer_norm_with_gamma_0_erases_nothing(certify):
    """Pre-norm: gamma 0 in a norm does not erase the residual stream, so the probes would say nothing true."""
    run = certify("mutant:pre_norm", "-k", "dropout_acts")
    statuses = run.statuses()
    assert statuses == {"dropout_acts_on_every_sublayer_output_and_embedding_sum": "blocked",
                        "dropout_acts_nowhere_else": "blocked"}, run.out
    assert all("not post-norm" in c["message"] for c in run.report["checks"])


def test_a_loss_reported_after_the_update_is_said_so_and_blocks_the_dropout_probes(certify):
    """A train_step that reports the batch's loss after its update (a held-out attack on the dropout checks): the
    reported-loss check says so with both losses, and the dropout probes, which count the loss before the update,
    are blocked instead of naming a place the model does not drop."""
    case = Path(__file__).parent / "heldout_dropout" / "red_team_1" / "loss_after_update.py"
    run = certify(str(case), "-k", "reported_loss or dropout_acts")
    assert run.statuses() == {"reported_loss_is_label_smoothed_cross_entropy": "failed",
                              "dropout_acts_on_every_sublayer_output_and_embedding_sum": "blocked",
                              "dropout_acts_nowhere_else": "blocked"}, run.out
    messages = {c["id"]: c["message"] for c in run.report["checks"]}
    assert messages["reported_loss_is_label_smoothed_cross_entropy"].startswith(
        "train_step reports the batch's loss after its update")
    assert all("reports the batch's loss after its update" in messages[check] for check in messages
               if check.startswith("dropout_acts"))
