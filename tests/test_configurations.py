"""Configurations a candidate supports: declared or not, one it cannot build skips an example, not a check.

Real implementations cannot build every configuration the checks draw (biases always on, eps fixed in the
layers, d_ff tied to 4 d_model). The suite fits examples into what a candidate declares, skips (and counts)
the examples an undeclared limit refuses, and a check is *not implemented* only when it needs a configuration
the candidate cannot build at all, never because one drawn example was out of reach.
"""

import pytest
from conftest import adapter_path

from conformance.config import ModelConfig, toy_config
from conformance.problems import supports
from conformance.problems.scenarios import LayerSizes, ModelSizes

VIEWS = adapter_path("views")
# The only checks whose claim needs a configuration beyond the paper's: untied and German counts, no biases.
BEYOND_THE_PAPER = {"parameter_count_matches_published_value[fact_id=params.total_separate_output]",
                    "parameter_count_matches_published_value[fact_id=german.total]",
                    "parameter_count_without_attention_biases"}
SLOW_BUILTINS = ["numpy", "fused_qkv", "torch_nn_fixed"]
# Parts a built-in does not provide at all: the NumPy model has only canonical weights, so it lists no
# parameters beyond them (model.unmapped_parameters) and that check cannot run on it.
LACKS = {"numpy": {"model_has_no_parameters_beyond_the_paper"}}


# The suite's conventions a built-in's model breaks (advisory, exit 0): torch.nn.Transformer's whole model gives NaN
# for a source sentence of padding only (its fully masked rows), although its attention parts are fixed.
ADVISED = {"torch_nn_fixed": {"fully_masked_source_sentence_is_invisible_to_the_decoder"}}
# The parts the suite's helpers supply to a built-in (its adapter opts in): the checks that judge them are
# "supplied", never credited to the implementation (docs/adapter-protocol.md, "Whose code answered").
SUPPLIES = {"fused_qkv": {"layer_norm", "label_smoothed_loss", "model.greedy_decode"},
            "torch_nn_fixed": {"layer_norm", "label_smoothed_loss", "model.greedy_decode",
                               "scaled_dot_product_attention"}}
CONFORMANT = {"passed", "not_implemented", "advisory", "supplied"}


def assert_supplied_only_where_declared(run, builtin):
    for check in run.report["checks"]:
        if check["status"] == "supplied":
            assert set(check["provenance"]["supplied"]) <= SUPPLIES.get(builtin, set()), (check["id"], run.out)


def assert_runs_everything_it_can(run, builtin="reference", refused: frozenset = frozenset()):
    """``refused``: checks whose every example the adapter itself refuses (not declared: raised)."""
    assert run.report is not None, run.err
    assert run.with_status("not_implemented") == BEYOND_THE_PAPER | LACKS.get(builtin, set()) | refused, run.out
    assert run.with_status("advisory") == ADVISED.get(builtin, set()), run.out
    assert set(run.statuses().values()) <= CONFORMANT, run.out
    assert_supplied_only_where_declared(run, builtin)
    assert run.code == 0


# The default selection certifies the reference's views on checks of every kind of problem the suite fits into a
# declaration (a layer's sizes, a model's configuration, a parameter count, a published example) and on those that
# need a configuration beyond the paper; the slow step, on the whole catalogue, for every built-in.
FITTED = ("-k", "parameter_count or layer_norm or feed_forward_matches_reference or encoder_layer_matches_reference"
                " or masked_rows_sum_to_one or logits_match_reference or decode_matches")
MODEL_CHECKS = ("-k", "logits_match_reference or encode_matches or decode_matches or batch_equals_rows"
                      " or trained_checkpoint_outputs or layer_norm_matches_formula")


def views(selection: tuple[str, ...]) -> list:
    """The reference on ``selection``, then (slow) every built-in on the whole catalogue."""
    return [pytest.param("reference", selection, id="reference-selection"),
            *(pytest.param(b, (), id=f"{b}-catalogue", marks=pytest.mark.slow) for b in ["reference", *SLOW_BUILTINS])]


@pytest.mark.parametrize(("builtin", "selection"), views(FITTED))
def test_an_implementation_of_the_paper_configuration_only_is_checked_fully(certify, builtin, selection):
    """Declared: every drawn example is fitted into the paper's configuration, and every check runs."""
    run = certify(f"{VIEWS}:paper_only_{builtin}", "--no-training", *selection)
    assert_runs_everything_it_can(run, builtin)
    assert "supports only: attention_bias in (True,): projections always carry biases" in run.out


@pytest.mark.parametrize("selection", [pytest.param(FITTED, id="selection"),
                                       pytest.param((), id="catalogue", marks=pytest.mark.slow)])
def test_undeclared_limits_skip_examples_and_name_the_adapters_reasons(certify, selection):
    """Not declared, only raised: the examples it refuses are skipped and counted, with its own words."""
    run = certify(f"{VIEWS}:undeclared_reference", "--no-training", *selection)
    # the listing's counts are of a model with two vocabularies, which this adapter raises on ("one vocabulary")
    assert_runs_everything_it_can(run, refused=frozenset({"published_counts_by_part"} if not selection else ()))
    checks = {c["id"]: c for c in run.report["checks"]}
    ffn = checks["feed_forward_matches_reference"]["examples"]
    assert ffn["ran"] >= 15 and ffn["skipped"] > 0 and ffn["reasons"] == ["d_ff is 4 x d_model"]
    reasons = {entry["reason"] for entry in run.report["unsupported"][run.report["implementations"][0]["name"]]}
    assert {"projections always carry biases", "d_ff is 4 x d_model"} <= reasons
    assert "could not build: projections always carry biases" in run.out
    not_implemented = checks["parameter_count_without_attention_biases"]
    assert "raised NotImplementedError: projections always carry biases" in not_implemented["message"]


@pytest.mark.parametrize(("builtin", "selection"), views(MODEL_CHECKS))
def test_an_adapter_that_exposes_only_the_model_passes_every_model_check(certify, builtin, selection):
    run = certify(f"{VIEWS}:model_only_{builtin}", "--no-training", *selection)
    assert run.report is not None, run.err
    passed = run.with_status("passed")
    assert {"logits_match_reference", "encode_matches_reference", "decode_matches_reference",
            "batch_equals_rows_run_one_at_a_time", "trained_checkpoint_outputs_match_golden"} <= passed
    assert run.with_status("advisory") == ADVISED.get(builtin, set()), run.out
    assert set(run.statuses().values()) <= CONFORMANT and run.code == 0, run.out
    assert_supplied_only_where_declared(run, builtin)


def test_a_declaration_naming_an_unknown_feature_is_refused_at_load(certify, tmp_path):
    path = tmp_path / "adapter.py"
    path.write_text("from conformance import Conventions\n"
                    "class A:\n    conventions = Conventions(supports={'heads': (8,)})\n"
                    "    def positional_encoding(self, n, d):\n        raise NotImplementedError\n"
                    "adapter = A()\n")
    run = certify(str(path))
    assert run.code == 2 and "unknown feature 'heads'" in run.err


PAPER = {"attention_bias": (True,), "eps": (1e-6,), "d_ff_ratio": (4,), "share_embeddings": (True,)}


def test_fit_moves_a_drawn_layer_problem_into_the_declared_configurations():
    sizes = LayerSizes(B=2, S=3, T=4, h=2, d_k=3, d_ff=5, bias=False, seed=1)
    fitted = supports.fit(sizes, PAPER)
    assert (fitted.bias, fitted.eps, fitted.d_ff) == (True, 1e-6, 24)
    assert (fitted.B, fitted.S, fitted.T, fitted.h, fitted.d_k, fitted.seed) == (2, 3, 4, 2, 3, 1)
    assert supports.fit(sizes, {}) is sizes


def test_fit_moves_a_model_configuration_and_keeps_it_valid():
    config = ModelConfig(src_vocab=9, tgt_vocab=11, d_model=8, h=2, d_ff=3, N=1, attention_bias=False,
                         share_embeddings=False)
    fitted = supports.fit(ModelSizes(config, B=1, S=2, T=2, seed=0), PAPER).config
    assert (fitted.attention_bias, fitted.eps, fitted.d_ff, fitted.share_embeddings) == (True, 1e-6, 32, True)
    assert fitted.src_vocab == fitted.tgt_vocab == 9


def test_a_call_outside_the_declaration_is_not_implemented_with_the_declared_reason():
    from conformance.boundary.candidate import Candidate
    from conformance.boundary.loading import import_target
    from conformance.errors import PartNotImplemented

    candidate = Candidate(import_target(f"{VIEWS}:paper_only_reference"), name="paper-only")
    with pytest.raises(PartNotImplemented, match=r"declares eps in \(1e-05,\) only \(asked for 1e-06\): eps is fixed"):
        candidate.build_model(toy_config(eps=1e-6))
    # the layer_norm function takes eps as an argument: the declaration (the layers' eps) does not refuse it; the
    # adapter's own refusal of it is an undeclared limit (NotImplementedError: that example is skipped)
    with pytest.raises(PartNotImplemented, match=r"layer_norm raised NotImplementedError: eps is fixed"):
        candidate.layer_norm([[1.0, 2.0]], [1.0, 1.0], [0.0, 0.0], 1e-6)


def test_a_declared_head_count_moves_a_count_only_where_it_divides_d_model():
    """A parameter count does not depend on h at a given width: asked in the declared heads where they split d_model,
    left alone (and refused) where fitting them would change d_model, hence the count."""
    assert supports.fit_uncounted(toy_config(), {"h": (8,)}) == toy_config(h=8)
    narrow = toy_config(d_model=6, h=3, d_ff=24)
    assert supports.fit_uncounted(narrow, {"h": (8,)}) == narrow
    assert "declares h in (8,) only" in supports.violation({"h": (8,)}, {}, **supports.config_features(narrow))
    fitted = supports.fit(narrow, {"h": (8,)})  # a drawn model: the heads as wide as drawn, d_model follows
    assert (fitted.h, fitted.d_model, fitted.d_ff) == (8, 16, 64)
