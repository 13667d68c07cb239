"""Declared support honoured by every check and every diagnosis probe.

The reference, declaring one limit of real code (``tests/adapters/views.py``: ``Declared``) and raising an error for
any call outside it: projections without biases, eps 1e-6 in the layers, d_ff = 4 d_model, learned positions for 100
positions, label smoothing fixed at 0.1 inside the loss; each alone and all together, with every part and model-only.
A check that calls outside the declaration ends *error* (never a skipped example): so 0 errors says every check asked
only what was declared. What each declaration excludes is ``EXCLUDED``: the checks whose claim is about a fixed
configuration the declaration rules out. The reference fails nothing, so its runs start no diagnosis: mutants under
every declaration at once do (``FAILING``), with every call outside the declaration logged, since a diagnosis never
lets an error through.
"""

import pytest
from conftest import adapter_path, shared_run

from conformance.boundary.loading import import_target
from conformance.config import ModelConfig, toy_config
from conformance.problems import supports
from conformance.problems.scenarios import LayerSizes, ModelSizes, SmoothedLossProblem
from conformance.reports import view as report_view

VIEWS = adapter_path("views")

# Fixed configurations a declaration can rule out, and what they are.
PUBLISHED_COUNTS = {f"parameter_count_matches_published_value[fact_id={fact}]"
                    for fact in ("params.total", "params.total_separate_output", "toy.parameters", "german.total")}
# The base-size golden outputs and the trained checkpoint: models with attention biases and eps 1e-5.
FIXED_MODELS = {"base_size_forward_matches_golden", "trained_checkpoint_outputs_match_golden",
                "trained_checkpoint_matches_reference_on_fresh_inputs", "trained_checkpoint_decodes_like_the_reference",
                "trained_checkpoint_attention_matches_golden"}
LONG_SOURCE = {"source_longer_than_1024_tokens_is_encoded"}  # 1,100 positions
EXCLUDED = {
    # the lesson's counts (63,082,496, ...) and its listing's per-layer counts include the attention biases
    "bias_free": {"attention_bias": PUBLISHED_COUNTS | {"published_parameter_counts", "published_counts_by_part"}
                  | FIXED_MODELS},
    "eps_1e6": {"eps": FIXED_MODELS},
    "ffn_4x": {},  # every fixed configuration is the paper's d_ff = 4 d_model
    "max_len_100": {"max_len": LONG_SOURCE},
    "loss_eps_01": {},  # every published loss is at eps 0.1
}
EXCLUDED["all"] = {feature: checks for excluded in EXCLUDED.values() for feature, checks in excluded.items()}
# An epsilon of its own declared: the convention on the lesson's epsilon advises on it (never counted).
ADVISED = {"eps": {"layers_use_the_lessons_layer_norm_epsilon"}}


def advised(name: str) -> set[str]:
    return set().union(*(ADVISED.get(feature, set()) for feature in EXCLUDED[name]))


def excluded(name: str) -> set[str]:
    return set().union(*EXCLUDED[name].values())


def not_implemented_beyond_the_parts(run, baseline) -> dict[str, str]:
    """The checks the view ends not implemented that the undeclared adapter of its parts does not: id -> message."""
    lacking = baseline.with_status("not_implemented")
    return {c["id"]: c["message"] for c in run.report["checks"]
            if c["status"] == "not_implemented" and c["id"] not in lacking}


def assert_honoured(run, baseline, name: str):
    assert run.report is not None, run.err
    statuses = run.statuses()
    assert not run.with_status("error") and not run.with_status("failed"), \
        {c["id"]: c["message"].splitlines()[0] for c in run.report["checks"] if c["status"] in ("error", "failed")}
    assert run.with_status("advisory") == advised(name), statuses
    assert set(statuses.values()) <= {"passed", "not_implemented", "advisory"}, statuses
    refused = not_implemented_beyond_the_parts(run, baseline)
    assert set(refused) == excluded(name) - baseline.with_status("not_implemented"), refused
    _, reasons = import_target(f"{VIEWS}:DECLARATIONS")[name]
    for check, message in refused.items():  # each with a declaration that excludes it, in the adapter's own words
        features = [feature for feature, checks in EXCLUDED[name].items() if check in checks]
        assert any(f"declares {f}" in message and reasons[f] in message for f in features), message


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["", "_model_only"], ids=["every-part", "model-only"])
@pytest.mark.parametrize("name", list(EXCLUDED))
def test_a_declared_view_of_the_reference_runs_every_check_it_can(tmp_path_factory, name, shape):
    """The whole catalogue (--no-training): 0 errors, 0 failures, and not implemented only what the declaration
    excludes (beyond the parts a model-only adapter lacks, measured on the undeclared ModelOnly(reference))."""
    run = shared_run(tmp_path_factory, f"{VIEWS}:declared_{name}{shape}", "--no-training")
    baseline = shared_run(tmp_path_factory, f"{VIEWS}:model_only_reference" if shape else "reference",
                          "--no-training")
    assert_honoured(run, baseline, name)
    assert run.code == 0


@pytest.mark.slow
def test_the_training_checks_run_through_a_declared_view(certify):
    """Every declaration at once, with the training checks: the toy run and its learned behaviour in the declared
    configuration (no biases, eps 1e-6, loss eps 0.1)."""
    run = certify(f"{VIEWS}:declared_all", "-k", "training or adam or rate_used or reported_loss or evaluation_mode"
                  " or reversal or floor or cabed or mirrored or top_probabilities")
    training = {c["id"] for c in run.report["checks"] if c["section"].startswith(("§5.3-5.4", "The toy run"))}
    assert len(training) == 9 and training <= run.with_status("passed"), run.out


# -- Each fix, on the checks it changed (the default selection) ----------------------------------------------------


def test_greedy_and_shape_checks_load_weights_of_the_declared_configuration(certify):
    """Biases declared off: the greedy problem's weights, the shapes' attention and decoder-layer weights are drawn
    without them (they were drawn with, an error on a correct adapter)."""
    run = certify(f"{VIEWS}:declared_bias_free", "--no-training", "--no-isolate", "-k",
                  "greedy or shape or hides_28_cells")
    assert len(run.statuses()) == 22 and set(run.statuses().values()) == {"passed"}, run.out


def test_the_layers_eps_leaves_the_layer_norm_function_and_the_counts_alone(certify):
    """eps 1e-6 declared for the layers: the layer_norm function (eps an argument) and the parameter counts (eps
    counts nothing) still run, at the published eps 1e-5; the layers run at 1e-6, and the lesson's epsilon is
    advised on (never counted)."""
    run = certify(f"{VIEWS}:declared_eps_1e6", "--no-training", "--no-isolate", "-k",
                  "layer_norm or parameter_count or encoder_layer")
    statuses = run.statuses()
    assert statuses.pop("layers_use_the_lessons_layer_norm_epsilon") == "advisory", run.out
    assert set(statuses.values()) == {"passed"}, run.out
    assert {"layer_norm_matches_published_example", "parameter_count_matches_published_value[fact_id=params.total]",
            "encoder_layer_matches_reference"} <= run.with_status("passed")


def test_a_counts_second_size_is_one_the_candidate_builds(certify):
    """d_ff = 4 d_model declared: the count decomposition's second size has d_ff 96 (not 40), so a wrong count's
    separate output matrix is named, confirmed at the second size."""
    run = certify(f"{VIEWS}:separate_output_count_ffn_4x", "--no-training", "--no-isolate", "-k",
                  "parameter_count_matches_published_value and params.total]")
    check, = run.report["checks"]
    assert check["status"] == "failed"
    assert "separate output matrix (not tied to the embedding) (37,000 x 512: +18,944,000)" in check["message"]
    assert "at a second size (V=53, d_model=24, d_ff=96" in check["message"]


def test_the_long_source_check_needs_only_the_model(certify):
    """It exists for learned and fixed positional tables: a model-only adapter is checked; a declared max_len below
    1,100 makes it not implemented, with the declared reason."""
    run = certify(f"{VIEWS}:model_only_reference", "--no-training", "--no-isolate", "-k", "source_longer")
    assert run.statuses() == {"source_longer_than_1024_tokens_is_encoded": "passed"}, run.out
    run = certify(f"{VIEWS}:declared_max_len_100_model_only", "--no-training", "--no-isolate", "-k", "source_longer")
    check, = run.report["checks"]
    assert check["status"] == "not_implemented"
    assert "declares max_len 100 (asked for 1100): learned positions for 100 positions" in check["message"]


def test_a_declared_max_len_bounds_every_sequence_drawn(certify):
    """max_len 3: the model's and the positional encoding's problems are cut to 3 positions; none asks more (the view
    raises an error then), and the checks whose fixed sequences are longer are not implemented, with the reason."""
    run = certify(f"{VIEWS}:declared_max_len_3", "--no-training", "--no-isolate", "-k",
                  "logits_match_reference or pe_matches_formula or greedy or explorer_shape and memory")
    assert run.statuses() == {"pe_matches_formula_for_any_size": "passed", "logits_match_reference": "passed",
                              "logits_match_reference_at_base_size": "passed",
                              "greedy_decoding_picks_the_argmax_at_every_step": "passed",
                              "greedy_decoding_stops_at_the_end_token_then_pads": "passed",
                              "explorer_shape[step=memory]": "not_implemented"}, run.out
    memory, = (c for c in run.report["checks"] if c["id"] == "explorer_shape[step=memory]")  # c a b e d
    assert "declares max_len 3 (asked for 5): three positions" in memory["message"]
    assert "supports only: max_len <= 3: three positions" in run.out


def test_a_loss_with_its_eps_fixed_is_asked_that_eps_only(certify):
    """label_smoothing (0.1,): every drawn loss problem is at 0.1 (none skipped), and the published 0.537 floor
    still checks."""
    run = certify(f"{VIEWS}:declared_loss_eps_01", "--no-training", "--no-isolate", "-k", "smoothed or label_smoothing")
    assert set(run.statuses().values()) == {"passed"} and len(run.statuses()) == 4, run.out
    checks = {c["id"]: c for c in run.report["checks"]}
    examples = checks["smoothed_loss_matches_formula_with_padding"]["examples"]
    assert examples["ran"] > 0 and examples["skipped"] == 0
    assert "ls.best_loss" in checks["smoothed_loss_matches_published_floor_and_sure_model"]["facts"]
    assert ("supports only: label_smoothing in (0.1,): label smoothing is fixed at 0.1 inside the loss"
            in run.out)


def test_greedy_argmax_is_judged_on_what_the_loop_read(certify):
    """The loop's argmax is judged on the batch's tokens up to each row's </s>, without the padding the loop returned
    after it: a right loop in a model whose forward reads trailing padding fails the padding claim only, the
    reference's passes, and a loop that does not feed its output back still fails."""
    run = certify(f"{VIEWS}:reads_trailing_padding_reference", "--no-training", "--no-isolate", "--no-diagnosis",
                  "-k", "greedy_decoding_picks or appending_target_padding")
    assert run.statuses() == {"greedy_decoding_picks_the_argmax_at_every_step": "passed",
                              "appending_target_padding_leaves_real_logits_unchanged": "failed"}, run.out
    for impl, verdict in (("reference", "passed"), ("mutant:greedy_does_not_feed_back", "failed"),
                          ("mutant:greedy_reads_first_position", "failed")):
        run = certify(impl, "--no-training", "--no-diagnosis", "-k", "greedy_decoding_picks")
        assert run.statuses() == {"greedy_decoding_picks_the_argmax_at_every_step": verdict}, run.out


# -- supports: the two new features ---------------------------------------------------------------------------------


def test_max_len_and_the_losss_eps_are_declarable_and_validated():
    assert supports.validate({"max_len": 100, "label_smoothing": (0.1,)}) == []
    assert supports.validate({"max_len": (100,)}) == [
        "max_len: give one integer, the most allowed, at least 2, not (100,)"]
    assert supports.validate({"max_len": 1})
    assert supports.validate({"max_len": True})
    assert supports.validate({"label_smoothing": (1.0,)}) == [
        "label_smoothing: [1.0] must lie in [0, 1) (eps of q = (1 - eps) one_hot + eps / V)"]
    assert report_view.declared_supports({"max_len": 100, "label_smoothing": (0.1,)}, {"max_len": "learned"}) == [
        "max_len <= 100: learned", "label_smoothing in (0.1,)"]


def test_fit_cuts_a_model_problem_to_max_len_and_moves_the_losss_eps():
    sizes = ModelSizes(toy_config(), B=2, S=9, T=4, seed=1)
    fitted = supports.fit(sizes, {"max_len": 5, "label_smoothing": (0.2,)})
    assert (fitted.S, fitted.T, fitted.B, fitted.config.recipe.label_smoothing) == (5, 4, 2, 0.2)
    layer = LayerSizes(B=2, S=9, T=9, h=2, d_k=4, d_ff=8, bias=True, seed=0)
    assert supports.fit(layer, {"max_len": 5}) == layer  # a layer takes any length: no positions in it
    problem = SmoothedLossProblem(None, None, 0.0, 0)
    assert supports.fit(problem, {"label_smoothing": (0.1,)}).eps == 0.1
    assert supports.fit(problem, {"eps": (1e-6,)}) is problem


def test_a_count_is_asked_in_the_declared_eps_and_nothing_else_moves():
    config = ModelConfig(src_vocab=9, tgt_vocab=9, d_model=8, h=2, d_ff=3, N=1, attention_bias=True)
    fitted = supports.fit_uncounted(config, {"eps": (1e-6,), "attention_bias": (False,), "label_smoothing": (0.2,)})
    assert (fitted.eps, fitted.recipe.label_smoothing, fitted.attention_bias, fitted.d_ff) == (1e-6, 0.2, True, 3)


def test_a_sequence_longer_than_max_len_is_not_implemented_with_the_declared_reason():
    why = supports.violation({"max_len": 100}, {"max_len": "learned positions"}, max_len=1100)
    assert why == "declares max_len 100 (asked for 1100): learned positions"
    assert supports.violation({"max_len": 100}, {}, max_len=100) is None


# -- The diagnosis of a failure asks within the declaration too -----------------------------------------------------

FAILING = {  # a view of a mutant under every declaration at once -> the mutant its diagnosis must name somewhere
    "declared_pre_norm": "pre_norm", "declared_pre_norm_model_only": "pre_norm",
    # Every step decodes from <s> alone, so each row is one token repeated; the greedy question's second problem is
    # one where every row of the paper's output ends with </s> at its own step, whose answer is not collapsed: named.
    "declared_greedy_does_not_feed_back": "greedy_does_not_feed_back",
    "declared_label_smoothing_over_wrong_tokens": "label_smoothing_over_wrong_tokens",
    "declared_separate_output_count": "parameter_count_separate_output_matrix",
}


def diagnosed_within_the_declaration(certify, monkeypatch, tmp_path, view: str, *selection: str):
    """certify the view in-process with every call outside its declaration logged (a diagnosis swallows errors):
    nothing logged, no error, and the failures' diagnoses name the mutant."""
    log = tmp_path / "outside.log"
    monkeypatch.setenv(import_target(f"{VIEWS}:OUTSIDE_LOG"), str(log))
    run = certify(f"{VIEWS}:{view}", "--no-training", "--no-isolate", *selection)
    assert not log.exists(), log.read_text()
    assert run.with_status("failed") and not run.with_status("error"), run.out
    causes = [c.get("likely_cause") or "" for c in run.report["checks"] if c["status"] == "failed"]
    if FAILING[view] is None:  # nothing may be named on a collapsed answer, least of all another bug
        assert not any("mutant:" in cause for cause in causes), causes
    else:
        assert any(f"mutant:{FAILING[view]}" in cause for cause in causes), causes
    return run


def test_a_diagnosis_asks_its_second_problem_and_localises_within_the_declaration(certify, monkeypatch, tmp_path):
    """pre_norm under every declaration: the catalogue's second problem, the layer-by-layer localisation (every
    part) and the ablation through load_weights (model-only) run in the declared configurations, and name it."""
    for view in ("declared_pre_norm", "declared_pre_norm_model_only"):
        run = diagnosed_within_the_declaration(certify, monkeypatch, tmp_path, view, "-k",
                                               "logits_match_reference and not base_size")
        message = run.report["checks"][0]["message"]
        assert ("first divergence: encoder.0" if view == "declared_pre_norm" else "model-only localisation") \
            in message, message


@pytest.mark.slow
@pytest.mark.parametrize("view", list(FAILING))
def test_every_diagnosis_of_a_failing_catalogue_asks_within_the_declaration(certify, monkeypatch, tmp_path, view):
    """The whole catalogue (--no-training) of a mutant under every declaration: no call outside it, checks and
    diagnoses alike (a second problem, the catalogue, localisation, ablation, the count decomposition)."""
    diagnosed_within_the_declaration(certify, monkeypatch, tmp_path, view)
