"""Declared deviations: a maintainer lists the known ones; the report separates them from undeclared failures."""

import pytest

from conformance.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

TORCH_NN_DEFAULTS = """
[[deviation]]
name = "extra_final_layer_norm"
reason = "PyTorch's default encoder.norm and decoder.norm"
checks = ["parameter_count*", "published_parameter_counts", "model_has_no_parameters_beyond_the_paper",
          "trained_checkpoint_*", "base_size_forward_matches_golden"]

[[deviation]]
name = "padded_positions_constant"
reason = "the nested-tensor fast path"
"""


@pytest.fixture
def declare(tmp_path):
    def write(text: str) -> str:
        path = tmp_path / "deviations.toml"
        path.write_text(text)
        return str(path)

    return write


# The checks whose deviations the test reads: the logits (both declarations) and the published parameter counts.
DEVIATING = ("-k", "logits_match_reference or parameter_count_matches_published_value")


@pytest.mark.parametrize("selection", [pytest.param(DEVIATING, id="selection"),
                                       pytest.param((), id="catalogue", marks=pytest.mark.slow)])
def test_torch_nn_defaults_declared_are_deviations_confirmed_by_the_diagnosis(certify, declare, selection):
    """On the checks it reads, and (slow) on the whole catalogue: no failure is left undeclared."""
    run = certify("torch-nn-transformer", "--no-training", *selection, "--deviations", declare(TORCH_NN_DEFAULTS))
    checks = {c["id"]: c for c in run.report["checks"]}
    assert run.with_status("failed") == set() and run.with_status("error") == set(), run.out
    assert run.code == EXIT_OK
    logits = checks["logits_match_reference"]["deviation"]
    assert logits["confirmed"] and logits["names"] == ["extra_final_layer_norm", "padded_positions_constant"]
    counts = checks["parameter_count_matches_published_value[fact_id=params.total]"]["deviation"]
    assert counts == {"name": "extra_final_layer_norm", "names": ["extra_final_layer_norm"],
                      "reason": "PyTorch's default encoder.norm and decoder.norm", "confirmed": False}
    declared = {row["name"]: row for row in run.report["declared_deviations"]}
    assert declared["padded_positions_constant"]["observed"] and declared["extra_final_layer_norm"]["confirmed_by"]
    assert "Declared deviations:" in run.out and "observed extra_final_layer_norm" in run.out


def test_a_failure_the_declarations_do_not_explain_stays_a_failure(certify, declare):
    """Only the fast path declared: the checks that also show the final norm are undeclared failures."""
    only_fast_path = TORCH_NN_DEFAULTS.split("[[deviation]]")[2]
    run = certify("torch-nn-transformer", "--no-training", "-k", "logits_match_reference or decode_matches",
                  "--deviations", declare("[[deviation]]" + only_fast_path))
    assert run.statuses() == {"logits_match_reference": "failed", "logits_match_reference_at_base_size": "failed",
                              "decode_matches_reference": "failed"}
    assert run.code == EXIT_FAILED


def test_a_declared_deviation_the_suite_does_not_see_is_reported_and_strict_fails_it(certify, declare):
    path = declare('[[deviation]]\nname = "pre_norm"\nreason = "we were told so"\n')
    run = certify("reference", "-k", "encoder_layer_matches_reference", "--deviations", path)
    assert run.code == EXIT_OK and run.report["declared_deviations"][0]["observed"] is False
    assert "NOT OBSERVED pre_norm" in run.out
    strict = certify("reference", "-k", "encoder_layer_matches_reference", "--deviations", path, "--strict")
    assert strict.code == EXIT_FAILED


def test_an_unknown_deviation_is_a_usage_error_with_a_suggestion(certify, declare):
    run = certify("reference", "--deviations", declare('[[deviation]]\nname = "prenorm"\n'))
    assert run.code == EXIT_USAGE and "unknown deviation 'prenorm'" in run.err and "pre_norm" in run.err


# -- attribution of a diagnosis that names a combination (conformance.judging.deviations.attribute) ---------------

PRE_NORM_AND_FINAL_NORMS = [{"mutant": "extra_final_layer_norm+pre_norm",
                             "mutants": ["extra_final_layer_norm", "pre_norm"]}]


def failing(diagnosis, patterns=(), check_id="encode_matches_reference"):
    from types import SimpleNamespace

    return SimpleNamespace(id=check_id, status="failed", diagnosis=diagnosis, patterns=list(patterns))


def test_a_combination_is_a_confirmed_deviation_when_each_of_its_parts_is_declared():
    from conformance.judging.deviations import Deviation, attribute, named_by_diagnosis

    declared = [Deviation("pre_norm", "OpenNMT-py's layers"), Deviation("extra_final_layer_norm", "its final norms")]
    deviation = attribute(failing(PRE_NORM_AND_FINAL_NORMS), declared)
    assert deviation == {"name": "pre_norm + extra_final_layer_norm", "names": ["pre_norm", "extra_final_layer_norm"],
                         "reason": "OpenNMT-py's layers; its final norms", "confirmed": True}
    assert named_by_diagnosis(failing(PRE_NORM_AND_FINAL_NORMS)) == {"pre_norm", "extra_final_layer_norm"}


def test_a_combination_with_an_undeclared_part_stays_a_failure():
    from conformance.judging.deviations import Deviation, attribute

    assert attribute(failing(PRE_NORM_AND_FINAL_NORMS), [Deviation("pre_norm")]) is None
    # one of two alternatives declared whole explains the output, as for single matches
    alternatives = PRE_NORM_AND_FINAL_NORMS + [{"mutant": "pre_norm"}]
    assert attribute(failing(alternatives), [Deviation("pre_norm")])["names"] == ["pre_norm"]
