"""Snapshots (syrupy) of the terminal summary, the JSON report, JUnit XML and Markdown of fixed runs, volatile
fields masked.

A change to any format shows up here as a diff; update deliberately with --snapshot-update.
"""

import json
import re

from conftest import adapter_path

FIXED_RUN = ("-k", "layer_norm or fully_masked or pe_has_one_row")
VOLATILE = {"created", "duration_s", "environment", "suite", "fixtures_sha256"}


# Hypothesis's own account of a failing example: its heading and its layout change from release to release.
HYPOTHESIS_EXAMPLE = re.compile(r"^( *)(Failing test case|Falsifying example): .*?^\1\)\n", re.M | re.S)


def mask_text(text: str) -> str:
    text = HYPOTHESIS_EXAMPLE.sub(r"\1<Hypothesis's failing example>\n", text)
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


# What the tests compare a run's text with: a version of anything installed in it, or Hypothesis's wording of a
# failing example, would fail every fresh install once the registry serves the next release. (test_requirements.py
# is about versions, and names the lock's.)
EXPECTED_TEXTS = ("tests/__snapshots__/*.ambr", "tests/heldout/*.toml", "tests/heldout_uncatalogued/*.toml",
                  "implementations/mutants/expected.toml", "tests/*.py")
ABOUT_VERSIONS = {"tests/test_requirements.py", "tests/test_report_snapshots.py"}
HYPOTHESIS_WORDING = ("reproduce_failure", "Failing test case:", "Falsifying example:")


def installed_versions() -> dict[str, str]:
    """{version: distribution} of this environment's distributions, the lock's pins (the extras' too, installed or
    not) and Python, public versions of three parts or more (a two-part version, "4.0", is too often a number)."""
    import platform
    from importlib.metadata import distributions
    from pathlib import Path

    from packaging.version import Version

    versions = {platform.python_version(): "Python"}
    for dist in distributions():
        versions.setdefault(Version(dist.version).public, dist.metadata["Name"])
    lock = Path(__file__).resolve().parents[1] / "requirements-lock.txt"
    for line in lock.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            versions.setdefault(version, name)
    return {version: name for version, name in versions.items() if version.count(".") >= 2}


def versions_in(text: str, versions: dict[str, str]) -> list[str]:
    """The installed versions ``text`` holds, other than as a paper section ("§3.2.1") or part of a longer number,
    and Hypothesis's wording of a failing example."""
    found = [f"{name} {version}" for version, name in versions.items()
             if re.search(rf"(?<![§\d.]){re.escape(version)}(?![\d.])", text)]
    return found + [f"Hypothesis's {words!r}" for words in HYPOTHESIS_WORDING if words in text]


def test_no_expected_text_holds_a_dependency_version():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    versions = installed_versions()
    from importlib.metadata import version

    assert version("hypothesis") in versions  # what is installed (a version two distributions share names one)
    assert any(line.startswith("jax==") and line[5:] in versions  # and the lock's extras, installed or not
               for line in (root / "requirements-lock.txt").read_text().splitlines())
    paths = {path for pattern in EXPECTED_TEXTS for path in root.glob(pattern)}
    offending = {relative: found for path in paths
                 if (relative := str(path.relative_to(root))) not in ABOUT_VERSIONS
                 and (found := versions_in(path.read_text(), versions))}
    assert not offending, f"expected texts naming a dependency's version (mask it in the test): {offending}"


def test_the_version_finder_sees_a_version_and_not_a_section():
    versions = {"6.170.17": "hypothesis", "3.2.1": "something"}
    assert versions_in("adding @reproduce_failure('6.170.17', b'AA==')", versions) == [
        "hypothesis 6.170.17", "Hypothesis's 'reproduce_failure'"]
    assert versions_in("§3.2.1 Scaled dot-product attention; 13.2.10 and 3.2.15 are other numbers", versions) == []
    assert versions_in("Falsifying example: test_x(\n    shape=(2,),\n)\n", versions) == [
        "Hypothesis's 'Falsifying example:'"]


def test_the_masks_hide_hypothesis_s_example_whatever_its_heading():
    for heading in ("Failing test case", "Falsifying example"):
        text = f"  likely cause: x\n  {heading}: test_x(\n      shape=(2,),\n  )\n    reproduce: y\n"
        assert mask_text(text) == "  likely cause: x\n  <Hypothesis's failing example>\n    reproduce: y\n"
