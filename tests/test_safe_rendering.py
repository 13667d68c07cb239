"""Nothing a submission says can break the grader or its terminal (reports/safe_text.py).

A submission's strings (exception messages, reprs, output, file names) reach every rendering: the terminal and
``NAME.txt``, the JSON reports, HTML, JUnit XML, Markdown, ``summary.csv`` and ``summary.md``, Gradescope's
``results.json``. Each is made safe for where it is shown: a lone surrogate cannot crash a write, an escape code
cannot clear the instructor's screen, overwrite a line with a fake score or write the clipboard. And whatever one
submission does, the class goes on: its failure is its own row, and the summary is always written.
"""

import csv
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import adapter_path
from hypothesis import given
from hypothesis import strategies as st
from test_grading import HOSTILE, PE_ONLY, grade_class, submission

from conformance.cli import build_parser, main
from conformance.grading import classroom
from conformance.grading.class_summary import build_summary, render_csv, render_markdown
from conformance.grading.run_record import mark_complete, write_report
from conformance.reports import junit_report
from conformance.reports.safe_text import (
    csv_cell,
    html_text,
    json_safe,
    json_text,
    markdown_cell,
    visible_text,
    xml_text,
)
from conformance.reports.terminal import message_lines

ATTACKERS = ["raises_a_lone_surrogate", "terminal_escapes"]
# what each attacker's message must still say, readably, in the JSON report and on the terminal
READABLE = {"raises_a_lone_surrogate": "bad \\ud800 position",
            "terminal_escapes": "\\x1b[2J\\x1b[H\\x0dscore: 101 / 101"}
FORBIDDEN_BYTES = (b"\x1b", b"\x07", b"\x0d", b"\x9b", b"\xc2\x9b")  # ESC, BEL, CR, C1 CSI (raw, and as UTF-8)


def assert_safe_bytes(data: bytes, where: str) -> None:
    """Valid UTF-8 (so no lone surrogate), and no escape code, bell or carriage return."""
    text = data.decode("utf-8")  # raises on a surrogate written with surrogatepass, or any invalid byte
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text), where
    for byte in FORBIDDEN_BYTES:
        assert byte not in data, f"{byte!r} in {where}"


def assert_safe_file(path: Path) -> None:
    assert path.stat().st_size > 0, f"{path.name} is empty"
    assert_safe_bytes(path.read_bytes(), path.name)


# -- the functions --------------------------------------------------------------------------------------------
CONTROLS = set(range(0x00, 0x20)) - {0x09, 0x0A} | set(range(0x7F, 0xA0))


def has_no_controls(text: str, *, newlines: bool = True) -> bool:
    allowed_breaks = {0x0A} if newlines else set()
    return not any((ord(ch) in CONTROLS and ord(ch) not in allowed_breaks) or 0xD800 <= ord(ch) <= 0xDFFF
                   or ch in "\u2028\u2029\u202e" for ch in text) and (newlines or "\n" not in text)


@given(st.text(alphabet=st.characters(blacklist_categories=())))
def test_any_text_becomes_visible_text_that_encodes_as_utf8(text):
    for render in (visible_text, html_text, xml_text, csv_cell):
        out = render(text)
        out.encode("utf-8")
        assert has_no_controls(out), (render.__name__, out)
    cell = markdown_cell(text)
    cell.encode("utf-8")
    assert has_no_controls(cell, newlines=False) and "|" not in cell.replace("\\|", "")


@given(st.text(alphabet=st.characters(blacklist_categories=())))
def test_any_text_makes_valid_json_that_reads_back_as_it_was_sent_but_for_surrogates(text):
    encoded = json_text({"message": text, text: [text]}).encode("utf-8")
    back = json.loads(encoded)
    assert back == json_safe({"message": text, text: [text]})
    if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        assert back["message"] == text  # faithful: control characters included, JSON escapes them itself
    json.dumps(back, ensure_ascii=False).encode("utf-8")  # no surrogate escape a strict reader would refuse


@given(st.text(alphabet=st.characters(blacklist_categories=())))
def test_any_text_in_an_xml_attribute_and_text_parses(text):
    element = ET.Element("case", message=xml_text(text))
    element.text = xml_text(text)
    ET.fromstring(ET.tostring(element, encoding="unicode"))


def test_each_code_is_shown_as_its_escape():
    assert visible_text("\x1b[2J\rscore: 101 / 101\x07") == "\\x1b[2J\\x0dscore: 101 / 101\\x07"
    assert visible_text("bad \ud800 \u202e") == "bad \\ud800 \\u202e"
    assert visible_text("keeps\ttabs\nand lines, é and 東") == "keeps\ttabs\nand lines, é and 東"
    assert html_text("<b>\x1b</b>") == "&lt;b&gt;\\x1b&lt;/b&gt;"


def test_a_csv_cell_never_starts_a_formula_and_a_markdown_cell_stays_one_cell():
    assert [csv_cell(value) for value in ("=HYPERLINK(\"x\")", "+1", "-1", "@SUM(A1)", "ada", 3, -1.5, None)] == \
        ["'=HYPERLINK(\"x\")", "'+1", "'-1", "'@SUM(A1)", "ada", 3, -1.5, None]
    assert markdown_cell("a | b\nc <img>") == "a \\| b c &lt;img&gt;"


def test_a_message_cannot_write_a_line_of_the_report():
    lines = message_lines("bad\nscore: 2 / 2\n\n\n\n2 passed\n  worst at index 3")
    assert lines == ["bad", "  score: 2 / 2", "", "  2 passed", "  worst at index 3"]


def test_a_message_s_fake_footer_is_indented_in_the_grade_s_output(tmp_path):
    folder = submission(tmp_path, "mallory", str(HOSTILE / "fakes_the_report_footer.py"))
    graded = grade_one(folder)
    lines = graded.stdout.decode().splitlines()
    assert [line for line in lines if line.startswith("score:")] == [lines[-1]]  # the grader's, the last
    fake_sandbox = "sandbox: bubblewrap (read-only files, no network, a 256 MiB tmpfs); Landlock ABI 7"
    assert not any(line.startswith("2 passed") or line == fake_sandbox for line in lines)
    assert "\n\n\n" not in graded.stdout.decode()  # blank lines one at a time


# -- graded alone ------------------------------------------------------------------------------------------------
def grade_one(folder: Path, *options: str) -> subprocess.CompletedProcess:
    """``grade`` as an instructor runs it: its own process, its output in a pipe (bytes, as a terminal gets them)."""
    return subprocess.run([sys.executable, "-m", "conformance", "grade", str(folder), "-k", PE_ONLY, "--seed", "7",
                           *options], capture_output=True, timeout=600)


@pytest.mark.parametrize("attacker", ATTACKERS)
def test_a_submission_s_strings_break_neither_a_single_grade_nor_its_renderings(tmp_path, attacker):
    folder = submission(tmp_path, "mallory", str(HOSTILE / f"{attacker}.py"))
    report, results = tmp_path / "mallory.json", tmp_path / "results.json"
    graded = grade_one(folder, "--json", str(report), "--gradescope", str(results))
    assert graded.returncode == 1, graded.stderr.decode(errors="replace")[-2000:]  # its PE errs: not conformant
    assert_safe_bytes(graded.stdout, "stdout")
    assert_safe_bytes(graded.stderr, "stderr")
    assert b"score: 1 / 3 (seed 7" in graded.stdout.splitlines()[-1]  # the one score line, the last
    assert READABLE[attacker].encode() in graded.stdout
    for path in (report, results):
        assert_safe_file(path)
    checks = {c["id"]: c for c in json.loads(report.read_text())["checks"]}
    message = checks["pe_matches_published_values"]["message"]
    assert checks["pe_matches_published_values"]["status"] == "error"
    if attacker == "terminal_escapes":  # the JSON keeps what was sent: the codes, escaped by JSON itself
        assert "\x1b[2J\x1b[H\rscore: 101 / 101" in message
    else:
        assert "bad \\ud800 position" in message
    assert json.loads(report.read_text())["grade"]["score"] == 1
    assert json.loads(results.read_text())["score"] == 1
    renderings = {flag: tmp_path / f"mallory.{flag}" for flag in ("html", "junit", "markdown", "badge")}
    rendered = subprocess.run([sys.executable, "-m", "conformance", "report", str(report),
                               *(arg for flag, path in renderings.items() for arg in (f"--{flag}", str(path)))],
                              capture_output=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    for path in renderings.values():
        assert_safe_file(path)
    ET.fromstring(renderings["junit"].read_bytes())
    assert READABLE[attacker] in renderings["html"].read_text()


def test_a_report_holding_a_json_escaped_lone_surrogate_still_renders(tmp_path, capsys):
    """An older report (or one from elsewhere) may hold ``"\\ud800"`` as a JSON escape: every rendering of it is
    written, none is left empty."""
    folder = submission(tmp_path, "ada", adapter_path("only_pe"))
    report = tmp_path / "ada.json"
    main(["grade", str(folder), "--json", str(report), "-k", PE_ONLY, "--seed", "7"])
    data = json.loads(report.read_text())
    data["checks"][0]["message"] = "bad \ud800 \x1b[2J"
    data["implementations"][0]["name"] = "ada\ud800\x1b]52;c;eA==\x07"
    report.write_text(json.dumps(data))  # ensure_ascii: the surrogate as "\ud800"
    paths = {flag: tmp_path / f"ada.{flag}" for flag in ("html", "junit", "markdown", "badge")}
    capsys.readouterr()
    assert main(["report", str(report), *(a for flag, path in paths.items() for a in (f"--{flag}", str(path)))]) == 0
    assert main(["report", str(report)]) == 0
    assert_safe_bytes(capsys.readouterr().out.encode("utf-8"), "stdout")
    for path in paths.values():
        assert_safe_file(path)


def test_a_terminal_rendering_that_fails_still_leaves_the_report_the_grade_and_results_json(tmp_path, monkeypatch):
    from conformance.reports import terminal

    def broken(report):
        raise RuntimeError("a rendering the suite got wrong")

    monkeypatch.setattr(terminal, "render", broken)
    folder = submission(tmp_path, "ada", adapter_path("only_pe"))
    report, results = tmp_path / "ada.json", tmp_path / "results.json"
    code = main(["grade", str(folder), "--json", str(report), "--gradescope", str(results), "-k", PE_ONLY])
    assert code == 3  # the suite's own failure, said; the grade is written all the same
    assert json.loads(report.read_text())["grade"]["score"] == 2
    assert json.loads(results.read_text())["score"] == 2


# -- a class -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attacker", ATTACKERS)
def test_an_attacker_in_the_middle_of_a_class_stops_no_one_and_the_summary_is_written(tmp_path, attacker):
    klass = tmp_path / "class"
    submission(klass, "ada", adapter_path("only_pe"))
    submission(klass, "mallory", str(HOSTILE / f"{attacker}.py"))
    submission(klass, "zoe", adapter_path("only_pe"))
    out = tmp_path / "grades"
    code, output = grade_class(klass, out, "--jobs", "1")  # one at a time: zoe is graded after mallory
    assert_safe_bytes(output.encode("utf-8"), "the class's output")
    assert code == 0, output
    rows = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text())))
    assert [(row["student"], row["score"]) for row in rows] == [("ada", "2.0"), ("mallory", "1.0"), ("zoe", "2.0")]
    for name in ("ada", "mallory", "zoe"):
        assert json.loads((out / f"{name}.json").read_text())["grade"]["max_score"] == 3
    for path in out.iterdir():
        assert_safe_file(path)
    assert READABLE[attacker] in (out / "mallory.txt").read_text()


def class_args(klass: Path, out: Path):
    return build_parser().parse_args(["grade", str(klass), "--out", str(out), "--seed", "7"])


def test_the_summary_is_written_when_the_class_s_run_stops_halfway(tmp_path, monkeypatch):
    klass = tmp_path / "class"
    for name in ("ada", "bo", "cy"):
        submission(klass, name, adapter_path("only_pe"))

    def stops_after_the_first(folders, out, identity, args, begun):
        write_report(out / "ada.json", mark_complete({"submission": {"name": "ada"}, "checks": [], "grade": {
            "score": 0, "max_score": 3}}, identity))
        raise RuntimeError("the class's process failed")

    monkeypatch.setattr(classroom, "grade_in_forks", stops_after_the_first)
    with pytest.raises(RuntimeError):
        classroom.grade_class(class_args(klass, tmp_path / "grades"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades" / "summary.csv").read_text())))
    assert [(row["student"], row["verdict"]) for row in rows] == [("ada", "?"), ("bo", "incomplete"),
                                                                  ("cy", "incomplete")]
    assert rows[1]["incomplete"] == "no report" and rows[1]["score"] == "0"


def test_a_report_the_summary_cannot_read_is_that_student_s_error_row(tmp_path):
    (tmp_path / "grades").mkdir()
    (tmp_path / "grades" / "bo.json").write_text("[1, 2]")
    unreadable = [  # each marked complete, as a finished report garbled afterwards would be
        {"submission": {"name": "cy"}, "checks": [{"id": "x"}], "complete": True},  # a check without a status
        {"submission": {"name": "=cmd|' /C calc'!A0"}, "checks": [], "grade": {"score": "=1+1", "max_score": 3},
         "complete": True},
        {"submission": "dee", "checks": None, "complete": True},
    ]
    listed = classroom.read_class_report(Path("bo"), tmp_path / "grades")  # a list, not a report: incomplete
    honest = {"submission": {"name": "ada"}, "checks": [{"id": "x", "section": "s", "status": "passed"}],
              "grade": {"score": 1, "max_score": 1}, "verdict": {"ada": "conformant"}, "complete": True}
    summary = build_summary([honest, listed, *unreadable])
    assert {row["student"]: row["verdict"] for row in summary["students"]} == {
        "ada": "conformant", "bo": "incomplete", "cy": "not graded", "=cmd|' /C calc'!A0": "not graded",
        "?": "not graded"}
    rows = list(csv.DictReader(io.StringIO(render_csv(summary))))
    assert {row["student"] for row in rows} == {"ada", "bo", "cy", "?", "'=cmd|' /C calc'!A0"}
    assert "| =cmd\\|' /C calc'!A0 |" in render_markdown(summary)  # one cell: its pipe escaped
    assert classroom.progress_line(unreadable[1], 1, 5) == "[1/5] =cmd|' /C calc'!A0: a report without a readable score"


def test_the_junit_xml_of_a_hostile_report_parses(tmp_path):
    report = {"implementations": [{"name": "mallory\ud800", "conventions": {"mask": "\x1b[2J"}}],
              "verdict": {"mallory\ud800": "not conformant"}, "checks": [
                  {"id": "pe\x1b", "impl": "mallory\ud800", "section": "§3.5\x00", "status": "error",
                   "message": "\x1b]52;c;eA==\x07\ud800\ufffe"}]}
    text = junit_report.render(report)
    assert_safe_bytes(text.encode("utf-8"), "junit")
    ET.fromstring(text.encode("utf-8"))


def test_the_markdown_heading_shows_an_implementations_name_as_text():
    """A submission's name with HTML or a Markdown link in it: the heading names it, never renders it."""
    from conformance.reports import markdown_report

    name = "class/<img src=x onerror=alert(1)>[x](javascript:alert(1)).ipynb"
    report = {"verdict": {name: "conformant"}, "implementations": [{"name": name}]}
    heading = markdown_report._title(report)
    assert "<img" not in heading and "&lt;img" in heading and "\\[x\\](javascript:" in heading, heading
