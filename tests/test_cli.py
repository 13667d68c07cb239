"""The CLI's documented exit codes and commands."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import adapter_path

from conformance.cli import EXIT_FAILED, EXIT_NOTHING_RAN, EXIT_OK, EXIT_USAGE, main


def test_exit_0_when_every_implemented_check_passes(certify):
    run = certify(adapter_path("only_pe"))
    assert run.code == EXIT_OK, run.out


def test_exit_1_when_a_check_fails(certify):
    run = certify(adapter_path("lr_doubled"))
    assert run.code == EXIT_FAILED


def test_exit_2_for_an_implementation_that_cannot_be_loaded(certify):
    run = certify("no.such.module:adapter")
    assert run.code == EXIT_USAGE
    assert "no module named 'no'" in run.err and "Fix" in run.err or "Fix:" in run.err


def test_exit_2_for_a_missing_file_names_the_path(certify):
    run = certify("missing_adapter.py")
    assert run.code == EXIT_USAGE and "no file 'missing_adapter.py'" in run.err


def test_exit_5_when_nothing_is_implemented(certify):
    run = certify(adapter_path("nothing"))
    assert run.code == EXIT_NOTHING_RAN


# The checks that call each part of the template once (no hypothesis search: a property check draws ~450
# configurations before it gives up on a part that always raises), and one property check that gives up.
TEMPLATE_PARTS_RUN = ("-k", "published or base_size or fully_masked_row_gives_zero_weights_and_output"
                            " or pe_has_one_row or lrate_rises_linearly")
TEMPLATE_PARTS = ("positional_encoding", "layer_norm", "scaled_dot_product_attention", "multi_head_attention",
                  "feed_forward", "encoder_layer", "decoder_layer", "learning_rate", "label_smoothed_loss",
                  "parameter_count")


def test_template_prints_a_loadable_adapter_whose_every_part_is_not_implemented(capsys, tmp_path):
    """Each part of the template raises NotImplementedError, and is reported so; the whole catalogue over the
    template is test_template_prints_a_loadable_adapter (slow)."""
    assert main(["template"]) == EXIT_OK
    path = tmp_path / "my_adapter.py"
    path.write_text(capsys.readouterr().out)
    report = tmp_path / "report.json"
    assert main(["certify", str(path), *TEMPLATE_PARTS_RUN, "--json", str(report)]) == EXIT_NOTHING_RAN
    checks = json.loads(report.read_text())["checks"]
    assert {check["status"] for check in checks} == {"not_implemented", "blocked"}
    messages = "\n".join(check["message"] for check in checks)
    for part in TEMPLATE_PARTS:
        assert f"my_adapter.py.{part} raised NotImplementedError" in messages, part
    assert "does not provide build_model" in messages and "could build none of the" in messages


@pytest.mark.slow
def test_template_prints_a_loadable_adapter(capsys, tmp_path):
    """The whole catalogue (about 30 property checks of ~450 refused examples each): the default selection runs
    test_template_prints_a_loadable_adapter_whose_every_part_is_not_implemented."""
    assert main(["template"]) == EXIT_OK
    path = tmp_path / "my_adapter.py"
    path.write_text(capsys.readouterr().out)
    assert main(["certify", str(path)]) == EXIT_NOTHING_RAN  # every part raises NotImplementedError


def test_template_from_a_class_it_cannot_import_names_the_fix(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["template", "--from", "no_such_module:Transformer"]) == EXIT_USAGE
    assert "Fix: run from the folder that contains the module" in capsys.readouterr().err
    (tmp_path / "tiny.py").write_text("class Transformer:\n    def __init__(self, vocab_size, mystery): ...\n")
    assert main(["template", "--from", "tiny.py:Transformer"]) == EXIT_USAGE
    assert "Transformer is no nn.Module class" in capsys.readouterr().err


CONFIG_MODELS = """
from dataclasses import dataclass

from my_transformer import Transformer


@dataclass
class TinyConfig:
    vocab_size: int
    hidden_size: int = 512
    num_attention_heads: int = 8
    intermediate_size: int = 2048
    num_layers: int = 6
    dropout: float = 0.1


class DataclassConfigured(Transformer):
    def __init__(self, config: TinyConfig):
        super().__init__(config.vocab_size, config.hidden_size, config.num_attention_heads, config.intermediate_size,
                         config.num_layers, config.dropout)


class ArgsConfigured(Transformer):
    def __init__(self, args):
        super().__init__(args.vocab_size, args.d_model, args.n_heads, args.d_ff, args.n_layers, args.dropout)
"""


@pytest.mark.parametrize("cls", ["DataclassConfigured", "ArgsConfigured"])
def test_template_from_a_class_built_from_one_config_object_builds_that_object(cls, capsys, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import numpy as np

    from conformance.boundary.loading import import_target
    from conformance.config import ModelConfig
    from conformance.weights import model_shapes, random_weights

    shutil.copy(Path(__file__).parents[1] / "docs" / "walkthrough" / "my_transformer.py", tmp_path)
    (tmp_path / "config_models.py").write_text(CONFIG_MODELS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("my_transformer", "config_models"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert main(["template", "--from", f"config_models.py:{cls}"]) == EXIT_OK, capsys.readouterr().err
    drafted = capsys.readouterr().out
    building = "TinyConfig(" if cls == "DataclassConfigured" else "SimpleNamespace("
    assert f"model_config = {building}" in drafted and f"return {cls}(model_config)" in drafted
    marked = [line for line in drafted.splitlines() if f"{cls}(" in line and "takes a config object" in line]
    assert len(marked) == 1 and ("TODO" in marked[0]) == (cls == "ArgsConfigured"), marked
    (tmp_path / "drafted_adapter.py").write_text(drafted)
    adapter = import_target(str(tmp_path / "drafted_adapter.py"))
    config = ModelConfig(src_vocab=31, tgt_vocab=31, d_model=24, h=3, d_ff=36, N=3, dropout=0.0)
    model = adapter.build_model(config.as_dict(), 0)
    assert len(model.module.encoder) == 3 and model.module.embedding.weight.shape == (31, 24)
    weights = random_weights(model_shapes(config), np.random.default_rng(0))
    model.load_weights(weights)
    for name, value in model.dump_weights().items():
        np.testing.assert_array_equal(value, weights[name], err_msg=name)


def test_python_dash_m_conformance_is_the_same_command():
    out = subprocess.run([sys.executable, "-m", "conformance", "--help"], capture_output=True, text=True, check=True)
    assert "certify" in out.stdout


def test_k_selects_by_check_id_not_by_implementation_name(certify):
    # The implementation's name contains "layer_norm": pytest's own -k would select every check.
    run = certify("mutant:layer_norm_unbiased_variance", "-k", "layer_norm and not published", "--no-training")
    ids = set(run.statuses())
    assert ids and all("layer_norm" in cid and "published" not in cid for cid in ids), sorted(ids)


def test_a_malformed_k_expression_is_a_usage_error(certify):
    assert certify("reference", "-k", "((").code == EXIT_USAGE


def test_certify_leaves_nothing_in_the_working_directory(certify, tmp_path, monkeypatch):
    """Hypothesis caches constants in ./.hypothesis; a grader's or a student's folder stays as it was."""
    folder = tmp_path / "student"
    folder.mkdir()
    monkeypatch.chdir(folder)
    run = certify("reference", "-k", "attention_rows_sum_to_one", "--no-training")
    assert run.with_status("passed") == {"attention_rows_sum_to_one"}
    assert list(folder.iterdir()) == []


def test_no_diagnosis_gives_the_same_verdicts_without_looking_up_known_bugs(certify):
    """--no-diagnosis (the kill matrix's runs): the statuses of a diagnosed run, no known bug named, and the report
    says the diagnosis was off."""
    selection = "self_attention_matches_reference or layer_norm_matches_formula or encode_matches_reference"
    diagnosed = certify("mutant:attention_no_scaling", "-k", selection)
    bare = certify("mutant:attention_no_scaling", "-k", selection, "--no-diagnosis")
    assert bare.code == diagnosed.code == EXIT_FAILED
    assert bare.statuses() == diagnosed.statuses() and "failed" in bare.statuses().values()
    assert any(c.get("likely_cause") for c in diagnosed.report["checks"]), diagnosed.out
    assert not any(c.get("likely_cause") or c.get("diagnosis") for c in bare.report["checks"]), bare.out
    assert (diagnosed.report["diagnosis"], bare.report["diagnosis"]) == (True, False)


def test_certify_keeps_the_collected_objects_out_of_full_collections_and_hands_them_back():
    """``session.FreezeCollected``: frozen after collection, thawed after pytest; never when another freeze holds."""
    import gc

    from conformance.run.session import FreezeCollected

    held = gc.get_freeze_count()  # the suite's own session freeze (tests/conftest.py)
    gc.unfreeze()
    try:
        freezer = FreezeCollected()
        freezer.pytest_collection_finish(session=None)
        assert freezer.frozen and gc.get_freeze_count() > 0
        freezer.thaw()
        assert not freezer.frozen and gc.get_freeze_count() == 0
        gc.freeze()
        frozen_by_someone_else = gc.get_freeze_count()
        polite = FreezeCollected()
        polite.pytest_collection_finish(session=None)
        polite.thaw()
        assert not polite.frozen and gc.get_freeze_count() == frozen_by_someone_else
    finally:
        gc.unfreeze()
        if held:
            gc.freeze()
