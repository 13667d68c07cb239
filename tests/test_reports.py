"""The renderings of the JSON report (reports/): each is validated against its format's schema and reads
only the report; the JSON report itself is validated against the JSON Schema shipped in the package."""

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import xmlschema
from conftest import PICTURED_RUN, adapter_path, certify_quietly, shared_run

from conformance.compare import DIFFERENCE_WINDOW, difference_window
from conformance.reports import badge, html_report, junit_report, markdown_report, view
from conformance.results import FAILING
from conformance.tolerances import Tolerance

JUNIT_XSD = Path(__file__).parent / "schemas" / "junit.xsd"


@pytest.fixture(scope="module")
def failing(tmp_path_factory) -> dict:
    return shared_run(tmp_path_factory, "mutant:attention_no_scaling", *PICTURED_RUN).report  # and test_browser's


@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> dict:
    return certify_quietly(tmp_path_factory.mktemp("passing"), "numpy", "--no-training", "-k", "pe_ or layer_norm")


def validator():
    return jsonschema.Draft202012Validator(view.schema(), format_checker=jsonschema.FormatChecker())


# -- the JSON Schema ---------------------------------------------------------------------------------


def test_schema_ships_in_the_package_and_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(view.schema())
    assert view.schema()["properties"]["schema_version"] == {"const": 1}


@pytest.mark.parametrize("which", ["failing", "passing"])
def test_reports_of_real_runs_validate_against_the_schema(which, request):
    report = request.getfixturevalue(which)
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator().iter_errors(report)]
    assert errors == []


def test_schema_rejects_a_report_whose_check_lacks_a_status(failing):
    broken = copy.deepcopy(failing)
    del broken["checks"][0]["status"]
    messages = [e.message for e in validator().iter_errors(broken)]
    assert any("'status' is a required property" in m for m in messages), messages


def test_schema_rejects_a_malformed_difference(failing):
    broken = copy.deepcopy(failing)
    check = next(c for c in broken["checks"] if c.get("difference"))
    check["difference"]["worst"] = [1]
    assert not validator().is_valid(broken)


def test_loading_refuses_another_schema_version(tmp_path, failing):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**failing, "schema_version": 2}))
    with pytest.raises(view.ReportError, match="schema_version 2, this suite renders version 1"):
        view.load(path)


# -- what the checks record for the pictures -----------------------------------------------------


def test_a_failing_tensor_check_records_its_difference_around_the_worst_index(failing):
    check = next(c for c in failing["checks"] if c["id"] == "multi_head_attention_matches_reference_at_base_size")
    diff = check["difference"]
    r, c = diff["worst"]
    worst = abs(diff["values"][r][c])
    assert worst == pytest.approx(check["max_abs"], rel=1e-3)
    assert diff["slice"][:2] == check["index"][:2] and diff["slice"][2:] == [None, None]


def test_difference_window_is_cut_around_the_worst_index():
    actual, expected = np.zeros((3, 100, 200)), np.zeros((3, 100, 200))
    actual[2, 90, 150] = 5.0
    diff = difference_window(actual, expected, (2, 90, 150), Tolerance(0, 1e-3, "test"))
    rows, cols = DIFFERENCE_WINDOW
    assert diff["rows"] == [100 - rows, 100] and diff["cols"] == [150 - cols // 2, 150 + cols // 2]
    assert np.array(diff["values"]).shape == (rows, cols)
    assert diff["values"][diff["worst"][0]][diff["worst"][1]] == 5.0 and diff["slice"] == [2, None, None]
    assert difference_window(np.array([1.0]), np.array([0.0]), (0,), Tolerance(0, 0, "")) is None


def test_pictures_data_is_recorded_whatever_the_verdict(failing):
    recorded = {name for c in failing["checks"] for name in (c["data"] or {})}
    assert {"pe", "attention", "schedule"} <= recorded
    attention = view.data_of(failing, "mutant:attention_no_scaling", "attention")[1]
    assert attention["source"] == ["c", "a", "b", "e", "d"] and len(attention["layers"]) == 6


# -- order and statuses --------------------------------------------------------------------------


def test_sections_follow_the_paper_then_the_rest():
    names = ["Shapes", "§5.4 Regularization", "§3.2.2 Multi-head", "§3.1 Encoder stack", "§3.2.1 Scaled",
             "§3 Model architecture: golden outputs", "§5.3-5.4 Training", "Invariances (§3.2.3 masks)"]
    assert sorted(names, key=view.section_key) == [
        "§3 Model architecture: golden outputs", "§3.1 Encoder stack", "§3.2.1 Scaled", "§3.2.2 Multi-head",
        "§5.3-5.4 Training", "§5.4 Regularization", "Invariances (§3.2.3 masks)", "Shapes"]


def test_an_unknown_status_renders_with_a_neutral_style(failing):
    report = copy.deepcopy(failing)
    report["checks"][0]["status"] = "flaky"
    assert view.style("flaky").label == "FLAKY" and not view.style("flaky").counted
    assert "FLAKY" in html_report.render(report) and 'type="flaky"' in junit_report.render(report)


# -- HTML ----------------------------------------------------------------------------------------


def test_html_is_self_contained(failing):
    page = html_report.render(failing)
    assert not re.search(r"""(src|href)=["'](https?:)?//""", page), "a resource outside the file"
    assert "<script" not in page and "@import" not in page
    assert page.count("data:image/png;base64,") >= 2 * (1 + 6) + 1  # PE pair, 6 attention pairs, a difference


def test_html_puts_failures_first_in_the_papers_order(failing):
    page = html_report.render(failing)
    cards = re.findall(r'<article class="card failure" id="[^"]+" data-status="(\w+)"', page)
    assert cards and all(status in FAILING for status in cards)
    first_card, first_row = page.index('class="card failure"'), page.index('class="check-row"')
    assert first_card < first_row
    sections = re.findall(r'<section class="paper-section"><h3>([^<]+?) <span', page)
    assert sections == sorted(sections, key=view.section_key)


# -- JUnit XML -----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["failing", "passing"])
def test_junit_validates_against_the_junit_xsd(which, request):
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(junit_report.render(request.getfixturevalue(which)))


def test_junit_has_one_testcase_per_check_classed_by_section(failing):
    root = ET.fromstring(junit_report.render(failing))
    cases = root.findall(".//testcase")
    assert len(cases) == len(failing["checks"])
    by_id = {case.get("name"): case for case in cases}
    for check in failing["checks"]:
        case = by_id[check["id"]]
        assert case.get("classname") == check["section"]
        assert (case.find("failure") is not None) == (check["status"] == "failed")
    failure = by_id["multi_head_attention_matches_reference_at_base_size"].find("failure")
    assert "likely cause: Attention scores not scaled" in failure.text
    assert int(root.get("failures")) == sum(c["status"] == "failed" for c in failing["checks"])


def test_junit_reports_not_implemented_and_blocked_as_skipped_with_reason(tmp_path):
    report = certify_quietly(tmp_path, adapter_path("only_pe"), "--no-training")
    root = ET.fromstring(junit_report.render(report))
    skipped = {case.get("name"): case.find("skipped") for case in root.iter("testcase")}
    not_implemented = [c["id"] for c in report["checks"] if c["status"] == "not_implemented"]
    assert not_implemented
    for check_id in not_implemented:
        assert skipped[check_id] is not None and skipped[check_id].get("message").startswith("not implemented: ")


# -- Markdown and badge --------------------------------------------------------------------------


def test_markdown_lists_failures_with_diagnosis(failing):
    text = markdown_report.render(failing)
    assert "| `mutant:attention_no_scaling` | not conformant |" in text
    assert "**likely cause:** Attention scores not scaled" in text
    assert "**diagnosis** (matches these known bugs, closest first): `mutant:attention_no_scaling`" in text


def test_markdown_stays_under_65000_characters_however_many_checks_fail(failing):
    check = next(c for c in failing["checks"] if c["status"] == "failed")
    many = [{**check, "id": f"check_{i}", "message": "x" * 5000 + "\n" * 200} for i in range(3000)]
    report = {**failing, "checks": many, "summary": {"mutant:attention_no_scaling": {"passed": 0, "failed": 3000}}}
    text = markdown_report.render(report)
    assert len(text) < 65_000
    assert re.search(r"\d+ more failures left out to stay under 65,000 characters", text)


def test_badge_says_how_many_failed_or_passed(failing, passing):
    def label(svg: str) -> str:
        return ET.fromstring(svg).get("aria-label")

    failed = sum(c["status"] in FAILING for c in failing["checks"])
    assert label(badge.render(failing)) == f"conformance: {failed} failed"
    assert badge.message(failing)[1] == badge.RED
    passed = len(passing["checks"])
    assert label(badge.render(passing)) == f"conformance: {passed}/{passed}"
    assert badge.message(passing)[1] == badge.GREEN


def test_the_profile_says_each_cause_once_in_every_rendering(failing):
    """A heading that counts, then one line per cause: the causes are not said again in a paragraph above them."""
    name = next(iter(failing["profile"]))
    found = failing["profile"][name]
    texts = [cause["text"] for cause in found["causes"]]
    assert texts, found
    terminal = "\n".join(view.profile_lines(failing, name))
    markdown = markdown_report.render(failing)
    markdown = markdown[markdown.index("profile: "):].split("\n\n")[0]
    html = html_report.render(failing)
    html = re.search(r'<div class="profile">.*?</div>', html, re.S).group(0)
    for text in texts:
        assert terminal.count(text) == 1, terminal
        assert markdown.count(text) == 1, markdown
        assert html.count(html_report.escape(text)) == 1, html
    heading = view.profile_heading(found)
    assert f"{found['failures']} failures" in heading and heading in terminal and heading in markdown


def test_a_failure_card_says_its_cause_once(failing):
    """The card's message, its fields and its diagnosis table would each say the known bug: the card says it once."""
    html = html_report.render(failing)
    cards = re.findall(r'<article class="card failure".*?</article>', html, re.S)
    named = [check for check in failing["checks"] if check.get("diagnosis")]
    assert named and len(cards) >= len(named)
    for check in named:
        card = next(c for c in cards if f"<code>{html_report.escape(check['id'])}</code>" in c)
        bug = html_report.escape(check["diagnosis"][0]["bug"].rstrip("."))
        assert card.count(bug) == 1, card


def test_the_card_s_message_keeps_everything_but_the_stated_causes():
    message = ("layer (x(1, 4)): 4 of 4 values outside tolerance\n  ACTUAL [1]\n"
               "  likely cause: pre-norm (mutant:pre_norm)\n"
               "  measured (no known bug matches): §3.3 feed_forward: the term b2 counted twice, confirmed:\n"
               "      computes a\n      where the paper computes b\n  first divergence: encoder.0")
    assert html_report.without_stated_causes(message) == (
        "layer (x(1, 4)): 4 of 4 values outside tolerance\n  ACTUAL [1]\n  first divergence: encoder.0")


def test_an_aggregate_of_published_numbers_inherits_the_causes_of_its_section():
    """An aggregate of printed counts has no question of its own: it is counted under what explains the checks of
    the same numbers (else of its section), and its card says so, so that the card and the profile agree."""
    from conformance.results import CheckResult
    from conformance.run.report import build_report

    section = "Table 3 Model size: parameter count"
    measured = {"key": "count:+2048", "text": "parameter count difference +2,048 = extra LayerNorm x 2",
                "kind": "measured"}
    results = [
        CheckResult("count_total", "impl", "t", section, "failed", facts=["params.total"], descriptions=[measured],
                    likely_cause=f"measured: {measured['text']}"),
        CheckResult("published_counts", "impl", "t", section, "failed", facts=["params.prose", "limits.count"]),
        CheckResult("a_lone_fact", "impl", "t", "§3.5 Positional encoding", "failed", facts=["pe.row1"]),
        CheckResult("printed_totals", "impl", "t", "elsewhere", "failed", facts=["params.total", "recap.count"]),
    ]
    report = build_report(results, {"implementations": [{"name": "impl"}]})
    (cause,) = report["profile"]["impl"]["causes"]
    assert cause["checks"] == ["count_total", "published_counts", "printed_totals"]
    assert report["profile"]["impl"]["unexplained"] == ["a_lone_fact"]  # one fact, another section: nothing to inherit
    cards = {c["id"]: c["likely_cause"] for c in report["checks"]}
    assert cards["published_counts"].startswith("the other checks of its section fail, for: measured:")  # its section
    assert cards["printed_totals"].startswith("the numbers it reads fail in their own checks too, for: measured:")


# -- Published numbers: in all, by paper section, and the unreproduced beside the checks that read them ----------


def test_every_rendering_says_the_published_numbers_reproduced_by_section(failing):
    from conformance.reports import terminal

    published = view.published_of(failing, "mutant:attention_no_scaling")
    assert sum(row["reproducible"] for row in published["sections"]) == published["reproducible"]
    attention = next(row for row in published["sections"] if row["section"].startswith("§3.2.1"))
    assert attention["reproduced"] < attention["reproducible"]  # the scores' scale, printed as sqrt(d_k) = 8
    said = f"{attention['reproduced']}/{attention['reproducible']}"
    assert re.search(rf"by paper section:\n(.*\n)*  §3\.2\.1 Scaled dot-product attention +{said}\n",
                     terminal.render(failing))
    page = html_report.render(failing)
    assert f"<td>§3.2.1 Scaled dot-product attention</td><td class=\"margin\">{said}</td>" in page
    assert re.search(rf"\| §3\.2\.1 Scaled dot-product attention \| \d+ \| {said} \|", markdown_report.render(failing))


def test_a_failure_card_lists_the_published_numbers_it_leaves_unreproduced(failing):
    """An aggregate names the numbers that differ: its card lists them, as printed, and not the ones it reproduced."""
    missed = view.published_of(failing, "mutant:attention_no_scaling")["unreproduced"]["published_attention_numbers"]
    assert "vanilla.scale_by_d_k" in missed and "vanilla.general.output_shape" not in missed
    page = html_report.render(failing)
    card = page[page.index('id="i0-published-attention-numbers"'):]
    card = card[: card.index("</article>")]
    assert f"<b>published numbers not reproduced</b> ({len(missed)})" in card
    assert "<code>vanilla.scale_by_d_k</code>: printed <q>$\\sqrt{d_k}$</q>" in card
    assert "vanilla.general.output_shape" not in card
    assert "**published numbers not reproduced** (" in markdown_report.render(failing)


def test_a_check_that_names_no_fact_leaves_every_fact_it_reads_unreproduced():
    from conformance.results import CheckResult
    from conformance.run.coverage import homes, reproduced, unreproduced_by_check

    section = "§5.3 Optimizer: learning-rate schedule"
    named = CheckResult("published_learning_rates", "impl", "t", section, "failed",
                        facts=["lrate.paper.d_factor", "lrate.paper.warmup_factor"],
                        facts_missed=["lrate.paper.d_factor"])
    silent = CheckResult("lrate_matches_published_toy_values", "impl", "t", section, "failed",
                         facts=["practice.lrate.step100", "toy_run.peak_lrate"])
    passing = CheckResult("lrate_matches_the_toy_training_log", "impl", "t", section, "passed",
                          facts=["toy_run.log.step1.lr"])
    # out of the facts these checks are the homes of: the rates they read, and those they did not get to
    asked = {fact_id for fact_id, home in homes().items() if home["check"] in (named.id, silent.id, passing.id)}
    assert reproduced([named, silent, passing], selected=True) == (2, len(asked))  # the warmup factor, step 1's rate
    missed = unreproduced_by_check([named, silent, passing])
    assert "lrate.paper.d_factor" in missed["published_learning_rates"]
    assert "lrate.paper.warmup_factor" not in missed["published_learning_rates"]  # compared, and equal
    # named none: every fact it read, and those it is the home of that it did not get to read
    assert missed["lrate_matches_published_toy_values"] == ["practice.lrate.step100", "practice.lrate.step1600",
                                                            "toy_run.peak_lrate"]
