"""`transformer-conformance report` and the same flags on `certify`: every rendering from one JSON report."""

import json
import xml.etree.ElementTree as ET

from conftest import FAILING_RUN

from conformance.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

FLAGS = ("html", "junit", "markdown", "badge")


def render_flags(folder) -> list[str]:
    return [arg for name in FLAGS for arg in (f"--{name}", str(folder / f"r.{name}"))]


def test_certify_writes_every_rendering_it_is_asked_for(certify, tmp_path):
    run = certify("mutant:layer_norm_unbiased_variance", *FAILING_RUN, *render_flags(tmp_path))
    assert run.code == EXIT_FAILED
    for name in FLAGS:
        assert (tmp_path / f"r.{name}").stat().st_size > 0
        assert f"written to {tmp_path / f'r.{name}'}" in run.out
    assert "failed" in ET.parse(tmp_path / "r.badge").getroot().get("aria-label")


def test_report_renders_a_saved_report_like_certify_does(certify, tmp_path, capsys):
    run = certify("mutant:layer_norm_unbiased_variance", *FAILING_RUN, "--junit", str(tmp_path / "a.xml"))
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(run.report))
    assert main(["report", str(saved), *render_flags(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert all(f"r.{name}" in out for name in FLAGS)
    assert (tmp_path / "r.junit").read_text() == (tmp_path / "a.xml").read_text()


def test_report_without_flags_prints_the_terminal_summary(certify, tmp_path, capsys):
    run = certify("numpy", "--no-training", "-k", "layer_norm")
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(run.report))
    assert main(["report", str(saved)]) == EXIT_OK
    assert capsys.readouterr().out == run.out.replace(f"JSON report written to {tmp_path / 'report.json'}\n", "")


def test_report_of_a_file_that_is_not_a_report_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}')
    assert main(["report", str(path), "--html", str(tmp_path / "r.html")]) == EXIT_USAGE
    assert "is not a transformer-conformance report" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
