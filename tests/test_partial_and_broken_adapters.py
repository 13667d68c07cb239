"""A partial adapter gets "not implemented", a broken one a clear per-check error; the run always finishes."""

from conftest import adapter_path


def test_only_positional_encoding_leaves_everything_else_not_implemented(certify):
    run = certify(adapter_path("only_pe"))
    published_pe = {"published_positional_encoding_values", "published_wavelengths", "published_rotation_pairs"}
    pe_checks = {cid for cid in run.statuses() if cid.startswith("pe_")} | published_pe
    assert run.with_status("passed") == pe_checks
    assert run.with_status("not_implemented") == set(run.statuses()) - pe_checks
    assert run.code == 0
    assert "not implemented" in run.out


def test_misbehaving_adapter_gets_one_error_per_check_and_a_report(certify):
    run = certify(adapter_path("misbehaving"), "--timeout", "0.5")
    assert run.report is not None, run.err
    checks = {c["id"]: c for c in run.report["checks"]}
    raised = checks["pe_has_one_row_per_position"]
    assert raised["status"] == "error"
    assert "raised ValueError: students forget things" in raised["message"]
    listed = checks["layer_norm_matches_published_example"]
    assert listed["status"] == "error"
    assert "returned list" in listed["message"] and "numpy.ndarray of shape (4,)" in listed["message"]
    shaped = checks["attention_matches_formula"]
    assert shaped["status"] == "error" and "weights.shape=(1, 1), but should be" in shaped["message"]
    assert run.code == 1
    assert run.with_status("passed") == set()


def test_nan_from_a_fully_masked_row_is_advisory_and_says_why(certify):
    """The paper is silent on a query with no visible key: NaN there is the suite's convention broken, not
    the paper's; it is reported (with the cause) but does not fail the run."""
    run = certify(adapter_path("nan_attention"), "-k", "fully_masked")
    check = run.report["checks"][0]
    assert check["status"] == "advisory" and check["claim"]["source"] == "convention"
    assert "softmax over a row of -inf is 0/0" in check["message"]
    assert run.code == 0


def test_a_hanging_part_is_stopped_and_reported(certify):
    run = certify(adapter_path("hanging"), "--timeout", "0.3")
    layer_norm_checks = [c for c in run.report["checks"] if c["id"].startswith("layer_norm")]
    assert layer_norm_checks
    assert all(c["status"] == "error" and "hung" in c["message"] for c in layer_norm_checks)
    assert run.code == 1


def test_a_missing_greedy_loop_of_a_keras_or_jax_adapter_offers_no_torch_helper_line(certify):
    """``supplied=("greedy_decode",)`` is a TorchAdapter option: a Keras or JAX adapter is told only what is missing."""
    run = certify(adapter_path("keras_without_greedy"), "--no-isolate", "-k", "greedy_decoding_picks")
    (check,) = run.report["checks"]
    assert check["status"] == "not_implemented", run.out
    assert check["message"].endswith("does not provide model.greedy_decode"), check["message"]


def test_attention_weights_without_the_protocols_names_are_an_error_naming_what_is_missing(certify):
    run = certify(adapter_path("attention_weights_unnamed"), "--no-isolate", "-k",
                  "published_shapes_of_attention_weights")
    (check,) = run.report["checks"]
    assert check["status"] == "error" and "internal error" not in check["message"], run.out
    assert check["message"].startswith("model.attention_weights gave no encoder.0.self_attn, ")
    assert "(it named layers.decoder.0.cross_attn, " in check["message"] and 'model={"attention"' in check["message"]
