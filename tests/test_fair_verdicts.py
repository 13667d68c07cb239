"""A check fails only for the claim it makes: a layer bug is not a mask bug, a padded position is not a real one, an
adapter's own error is not a verdict about the paper, a declared configuration is not asked outside itself."""

from conftest import adapter_path


def test_padded_query_rows_are_judged_only_where_the_layer_is_right(certify):
    """Pre-norm is a layer bug with correct masks: the mask check is blocked, not failed. A layer that is
    right at real positions and masks padded rows too still fails it."""
    pre_norm = certify("mutant:pre_norm", "-k", "padded_query_rows", "--no-training")
    assert pre_norm.statuses() == {"padded_query_rows_still_follow_the_formula": "blocked"}
    assert pre_norm.report["checks"][0]["blocked_by"] == "encoder_layer_matches_reference"
    masked_rows = certify("mutant:query_rows_also_masked", "-k", "padded_query_rows", "--no-training")
    assert masked_rows.statuses() == {"padded_query_rows_still_follow_the_formula": "failed"}


def test_target_padding_invariance_looks_at_real_positions_only(certify):
    """Its claim is about the real logits: an implementation that also masks padded query rows (uniform
    rows with a finite fill) changes only padded positions, and passes it."""
    run = certify("mutant:query_rows_also_masked", "-k", "appending_target_padding", "--no-training")
    assert run.statuses() == {"appending_target_padding_leaves_real_logits_unchanged": "passed"}, run.out


def test_a_declared_output_matrix_is_not_asked_about_the_tying(certify):
    """A candidate that declares an output matrix of its own (tie_output False only) cannot be asked about §3.4's
    tying: not implemented, the declaration the reason; one that declares separate source and target tables is
    asked about its target table, and passes as the reference."""
    untied = certify(adapter_path("untied_tables"), "-k", "changing_an_unused", "--no-training")
    check = untied.report["checks"][0]
    assert check["status"] == "not_implemented", check
    assert "declares tie_output in (False,) only" in check["message"], check["message"]
    separate = certify(adapter_path("separate_tables_tied_output"), "-k", "changing_an_unused", "--no-training")
    assert separate.statuses() == {"changing_an_unused_embedding_row_changes_only_its_logit": "passed"}, separate.out


def test_the_long_source_check_reads_only_the_long_sources_refusal(certify):
    """The adapter's own error (load_weights cannot place a name) is this check's error, not a table's length; a
    table of 512 rows is found and measured: 512 tokens encode, 1,100 do not."""
    broken = certify(adapter_path("load_weights_name_error"), "-k", "longer_than_1024", "--no-training")
    check = broken.report["checks"][0]
    assert check["status"] == "error", check
    assert "KeyError" in check["message"] and "fixed length" not in check["message"], check["message"]
    table = certify(adapter_path("positions_table_512"), "-k", "longer_than_1024", "--no-training")
    check = table.report["checks"][0]
    assert check["status"] == "advisory", check
    assert "and 512 tokens encode" in check["message"], check["message"]


def test_the_dropout_twin_differs_from_its_model_in_dropout_only(certify):
    """A trained parameter outside the canonical names (a learned logit offset, as an output bias) is no dropout:
    the twin and the model both load the same canonical weights, and a model whose dropout is the paper's passes."""
    run = certify(adapter_path("trained_parameter_beyond_the_paper"), "-k", "evaluation_mode_has_no_dropout")
    assert run.statuses() == {"evaluation_mode_has_no_dropout": "passed"}, run.out


def test_the_failing_example_is_the_one_the_check_ran(certify):
    """Hypothesis draws a bias-free layer first; the candidate declares biases, so the layer ran with them: the
    printed example says bias=True, and that it was fitted."""
    run = certify(adapter_path("pre_norm_with_biases_declared"), "-k", "encoder_layer_matches_reference and not base",
                  "--no-training", "--no-diagnosis")
    message = run.report["checks"][0]["message"]
    example = message[message.index("sizes=LayerSizes("):]  # the drawn example, in the wording of the Hypothesis run
    assert "bias=True" in example and "bias=False" not in example, example
    assert "(sizes as run: fitted to the configurations the candidate declares)" in message, message
    # the suite's words, not Hypothesis's: no heading of its own, no call of the test function with the fixtures
    assert not any(word in message for word in ("Failing test case", "Falsifying example", "candidate=", "check="))


def test_a_check_no_configuration_of_which_is_declared_ends_early(certify):
    """Every configuration the tying check draws asks tie_output True, which the candidate excludes: not implemented
    after the first refusals, not after the hundreds Hypothesis would draw."""
    run = certify(adapter_path("untied_tables"), "-k", "changing_an_unused", "--no-training")
    examples = run.report["checks"][0]["examples"]
    assert examples["ran"] == 0 and examples["skipped"] <= 25, examples


def test_a_declared_epsilon_other_than_the_lessons_is_said_and_never_counted(certify):
    """ε 1e-12, declared: the layers pass at it, and the epsilon check says the value and its reason, advisory
    (the paper gives no ε); the reference, which declares none, passes it."""
    run = certify(adapter_path("eps_of_bert"), "-k", "lessons_layer_norm_epsilon or encoder_layer_matches_reference_at",
                  "--no-training")
    assert run.statuses() == {"layers_use_the_lessons_layer_norm_epsilon": "advisory",
                              "encoder_layer_matches_reference_at_base_size": "passed"}, run.out
    message = {c["id"]: c["message"] for c in run.report["checks"]}["layers_use_the_lessons_layer_norm_epsilon"]
    assert message.startswith("the layers' LayerNorm epsilon is declared 1e-12 (LayerNorm(d_model, eps=1e-12) in"
                              " every layer, as ported from TensorFlow), where the lesson's is 1e-05"), message
    assert run.code == 0
    reference = certify("reference", "-k", "lessons_layer_norm_epsilon", "--no-training")
    assert reference.statuses() == {"layers_use_the_lessons_layer_norm_epsilon": "passed"}


def test_an_epsilon_fixed_in_the_code_and_declared_nowhere_is_measured_and_said(certify):
    """ε 1e-6 fixed in every LayerNorm, undeclared: no check on random weights sees it, the epsilon check measures
    it (the encoder made to normalise rows of variance 1e-6 and 1e-9) and says it, advisory; pre-norm, where the
    probe's construction does not hold, measures nothing and passes."""
    run = certify(adapter_path("eps_fixed_undeclared"), "-k", "lessons_layer_norm_epsilon", "--no-training")
    (check,) = run.report["checks"]
    assert check["status"] == "advisory" and check["data"]["measured_eps"] == [1e-06], run.out
    assert check["message"].startswith("the layers' LayerNorm epsilon measures 1e-06, undeclared, where the config"
                                       " asks the lesson's 1e-05")
    bert = certify("mutant:layer_norm_eps_of_bert", "-k", "lessons_layer_norm_epsilon", "--no-training")
    assert bert.statuses() == {"layers_use_the_lessons_layer_norm_epsilon": "advisory"}
    pre_norm = certify("mutant:pre_norm", "-k", "lessons_layer_norm_epsilon", "--no-training")
    assert pre_norm.statuses() == {"layers_use_the_lessons_layer_norm_epsilon": "passed"}


def test_a_pair_that_does_not_turn_fails_the_wavelengths_instead_of_crashing_the_check(certify):
    """Its wavelength 2 pi / 0 is infinite: a failure naming the numbers, not an internal error in the check."""
    run = certify(adapter_path("pe_pairs_that_do_not_turn"), "-k", "published_wavelengths", "--no-training")
    (check,) = run.report["checks"]
    assert check["status"] == "failed", check["message"]
    assert "got inf" in check["message"]
