"""Snapshots (syrupy) of the terminal summary, the JSON report, JUnit XML and Markdown of fixed runs, volatile
fields masked.

A change to any format shows up here as a diff; update deliberately with --snapshot-update.
"""

import json
import re

from conftest import adapter_path

FIXED_RUN = ("-k", "layer_norm or fully_masked or pe_has_one_row")
VOLATILE = {"created", "duration_s", "environment", "suite", "fixtures_sha256"}


def mask_text(text: str) -> str:
    text = re.sub(r"\[margin [^\]]+\]", "[margin <masked>]", text)
    text = re.sub(r"JSON report written to .*", "JSON report written to <path>", text)
    return text.replace(adapter_path("nan_attention"), "<adapters>/nan_attention.py")


def mask_report(report: dict) -> dict:
    masked = {k: ("<masked>" if k in VOLATILE else v) for k, v in report.items()}
    for impl in masked["implementations"]:
        impl["name"] = mask_text(impl["name"])
    masked["summary"] = {mask_text(k): v for k, v in masked["summary"].items()}
    masked["verdict"] = {mask_text(k): v for k, v in masked["verdict"].items()}
    masked["checks"] = [
        {
            **check,
            "impl": mask_text(check["impl"]),
            "duration_s": "<masked>",
            "reproduction": mask_text(check["reproduction"] or ""),
            "margin": None if check["margin"] is None else "<masked>",
            # hypothesis's examples (derandomized from the check's source) change with any edit of a check
            "measurements": "<masked>",
            # the pictures' data (tests/test_reports.py reads it): only which names a check recorded
            "data": None if check["data"] is None else sorted(check["data"]),
        }
        for check in masked["checks"]
    ]
    return masked


def test_terminal_summary_of_a_fixed_run(certify, snapshot):
    run = certify("numpy", *FIXED_RUN)
    assert mask_text(run.out) == snapshot


def test_terminal_summary_of_a_failing_run(certify, snapshot):
    run = certify("mutant:layer_norm_unbiased_variance", *FIXED_RUN)
    assert mask_text(run.out) == snapshot


def test_terminal_summary_of_an_advisory_run(certify, snapshot):
    """NaN for a fully masked row: the suite's convention, printed apart, not counted."""
    run = certify(adapter_path("nan_attention"), *FIXED_RUN)
    assert mask_text(run.out) == snapshot


def test_json_report_of_a_fixed_run(certify, snapshot):
    run = certify("numpy", *FIXED_RUN)
    assert json.dumps(mask_report(run.report), indent=1, sort_keys=True) == snapshot


def mask_rendering(text: str) -> str:
    """Times, the run's date and the machine's versions out of the JUnit and Markdown renderings."""
    text = re.sub(r'(time|timestamp)="[^"]*"', r'\1="<masked>"', text)
    text = re.sub(r"<sub>.*</sub>", "<sub><masked></sub>", text)
    return mask_text(text)


def test_junit_of_a_fixed_failing_run(certify, snapshot):
    from conformance.reports import junit_report

    run = certify(adapter_path("nan_attention"), *FIXED_RUN, "--seed", "0")
    assert mask_rendering(junit_report.render(run.report)) == snapshot


def test_markdown_of_a_fixed_failing_run(certify, snapshot):
    from conformance.reports import markdown_report

    run = certify(adapter_path("nan_attention"), *FIXED_RUN, "--seed", "0")
    assert mask_rendering(markdown_report.render(run.report)) == snapshot
