"""The Python API (``conformance.certify`` -> ``Report``): what the command line takes, and live objects of this
process (an adapter, an adapter class, a model class or instance drafted on the fly); the command line's verdicts
and reports are the API's (one path); the report object's views, renderings and notebook representations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conformance import DraftIncomplete, LoadError, Report, certify  # noqa: E402
from conformance.implementations.reference.adapter import ReferenceAdapter, adapter  # noqa: E402

DRAFTING = Path(__file__).parent / "drafting"
LAYER_NORM = "layer_norm"
MODEL = "logits_match_reference or decode_matches_reference"


@pytest.fixture
def drafting_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(DRAFTING))


def test_a_built_in_certifies_to_a_report_whose_views_read_its_dict():
    report = certify("reference", select=LAYER_NORM, progress="off")
    assert isinstance(report, Report) and report.passed and report.verdict == "conformant"
    assert report.failures == [] and report.counts["passed"] == len(report.checks) > 0
    assert json.loads(report.to_json()) == report.data and report.profile is None
    assert repr(report) == f"<Report 'reference': conformant ({len(report.checks)} passed)>"


def test_a_failing_run_lists_each_failure_with_its_claim_numbers_and_likely_cause():
    report = certify("mutant:pe_sine_cosine_swapped", select="pe_matches_published_values", progress="off")
    assert not report.passed and report.verdict == "not conformant"
    (failure,) = report.failures
    assert failure.id == "pe_matches_published_values" and failure.status == "failed"
    assert failure.claim["text"] and failure.max_abs > 0.25
    assert failure.likely_cause.endswith("(mutant:pe_sine_cosine_swapped)")
    assert report.profile["failures"] == 1


def test_the_command_line_and_the_api_give_the_same_verdicts(tmp_path):
    """One path: the command line's report is the API's, printed."""
    command = [sys.executable, "-m", "conformance", "certify", "mutant:layer_norm_unbiased_variance", "-k", LAYER_NORM,
               "--progress", "off", "--json", str(tmp_path / "cli.json")]
    assert subprocess.run(command, capture_output=True, text=True).returncode == 1
    cli = json.loads((tmp_path / "cli.json").read_text())
    api = certify("mutant:layer_norm_unbiased_variance", select=LAYER_NORM, progress="off")
    assert {c["id"]: (c["status"], c["likely_cause"]) for c in cli["checks"]} == \
        {c.id: (c.status, c.likely_cause) for c in api.checks}


def test_live_adapters_run_in_this_process_under_their_own_names():
    assert certify(adapter, select=LAYER_NORM, progress="off").name == "reference"
    built = certify(ReferenceAdapter, select=LAYER_NORM, progress="off")
    assert built.passed and built.name.endswith(":ReferenceAdapter")
    with pytest.raises(ValueError, match="cannot be isolated"):
        certify(adapter, isolate=True, select=LAYER_NORM)


def test_a_model_class_or_instance_is_drafted_on_the_fly_and_its_guesses_are_reported(drafting_on_path):
    from tying_switch_model import SwitchedTransformer
    from untied_model import UntiedTransformer

    report = certify(UntiedTransformer, select=MODEL, progress="off")
    assert report.passed and report.name == "untied_model:UntiedTransformer"
    instance = UntiedTransformer(23, 29, d_model=16, nhead=2, dim_feedforward=40, num_layers=1)
    assert certify(instance, select=MODEL, progress="off").passed  # drafted from its class
    switched = certify(SwitchedTransformer, select=MODEL, progress="off")
    (warning,) = switched.data["implementations"][0]["load_warnings"]
    assert warning.startswith("drafted on the fly") and "(trg_emb_prj_weight_sharing) ties or unties" in warning


def test_a_draft_only_its_author_can_finish_is_refused_with_the_draft(drafting_on_path):
    from blocked_model import NeedsTokenizer

    with pytest.raises(DraftIncomplete, match=r"NeedsTokenizer\(tokenizer\): no config key has this name") as caught:
        certify(NeedsTokenizer, progress="off")
    assert caught.value.draft.startswith('"""Adapter draft for blocked_model.NeedsTokenizer.')


def test_an_implementation_that_cannot_be_loaded_raises_with_the_fix_and_writes_its_report(tmp_path):
    with pytest.raises(LoadError, match=r"no file .*missing\.py.\. Fix: check the path"):
        certify(str(tmp_path / "missing.py"), json=str(tmp_path / "report.json"))
    assert json.loads((tmp_path / "report.json").read_text())["checks"][0]["id"] == "implementation_loads"


class Interrupting(ReferenceAdapter):
    """Ctrl-C (a notebook's stop button) while the second check runs."""

    calls = 0

    def build_model(self, config, seed):
        Interrupting.calls += 1
        if Interrupting.calls == 2:
            raise KeyboardInterrupt
        return super().build_model(config, seed)


def test_an_interrupted_run_raises_keyboard_interrupt_with_the_report_of_the_checks_that_ran():
    with pytest.raises(KeyboardInterrupt) as caught:
        certify(Interrupting(name="interrupted"), select=MODEL, progress="off")
    stopped = caught.value.report
    assert stopped.interrupted and not stopped.passed and "interrupted" in repr(stopped)
    assert len(stopped.checks) < 2


def test_save_writes_the_rendering_its_suffix_names(tmp_path):
    report = certify("mutant:layer_norm_unbiased_variance", select=LAYER_NORM, progress="off")
    for suffix, start in ((".json", "{"), (".html", "<!DOCTYPE html>"), (".md", "## transformer-conformance"),
                          (".xml", "<?xml"), (".svg", "<svg"), (".txt", "\n== transformer-conformance")):
        assert report.save(tmp_path / f"r{suffix}").read_text().startswith(start), suffix
    with pytest.raises(ValueError, match="cannot tell the format of"):
        report.save(tmp_path / "r.pdf")


def test_in_a_notebook_the_report_shows_as_the_html_report_in_a_frame_or_as_markdown():
    report = certify("mutant:layer_norm_unbiased_variance", select=LAYER_NORM, progress="off")
    shown = report._repr_html_()
    assert shown.startswith("<iframe srcdoc=\"&lt;!DOCTYPE html&gt;") and "height:640px" in shown
    assert '"' not in shown.split('srcdoc="', 1)[1].split('" title=', 1)[0]  # the document stays inside the frame
    assert report._repr_markdown_() == report.to_markdown() and "not conformant" in report._repr_markdown_()
