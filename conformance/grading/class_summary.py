"""A class's summary from its per-submission JSON reports (schema ``transformer-conformance/report``).

CSV: one row per student: ``student, score, max_score, verdict, passed, failed, error, not_implemented,
most_likely_bug, hard_coded, seed``. Markdown: that table, the checks by pass rate (lowest first; the rate
of the submissions that implement the check: one that no submission implements is listed last, not as
failed by all), each with its passed, failed, error and not-implemented counts apart, and the diagnosed bugs
by how many students show them (a failing check names the mutants whose output it matches; a student's most
likely bug is the one their failing checks name most often, else the measured finding their report's profile puts
first). A submission that could not be loaded is counted apart from the pass rates: it implements nothing.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

from conformance.grading.points import Points, report_loaded, totals
from conformance.judging.twins import flagged_look_ups
from conformance.reports.safe_text import csv_cell, markdown_cell
from conformance.results import FAILING

CSV_FIELDS = ("student", "score", "max_score", "verdict", "passed", "failed", "error", "not_implemented",
              "most_likely_bug", "hard_coded", "seed", "incomplete")


def build_summary(reports: list[dict]) -> dict:
    """The summary of ``reports``: a row per student (an incomplete report's row says so and scores 0; one this
    summary cannot read is that student's error row); the pass rates of the complete, readable reports only (an
    interrupted grade's last verdicts are the interrupt's)."""
    from conformance.grading.run_record import is_complete

    rows = {id(report): row_or_error(report) if is_complete(report) else incomplete_row(report)
            for report in reports}
    students = sorted(rows.values(), key=lambda row: str(row["student"]))
    readable = [report for report in reports if rows[id(report)]["verdict"] not in ("not graded", "incomplete")]
    loaded = [report for report in readable if report_loaded(report)]
    return {"students": students, "checks": pass_rates(loaded), "not_loaded": len(readable) - len(loaded),
            "bugs": common_bugs(students)}


def incomplete_row(report: dict) -> dict:
    """The row of a report whose grade did not finish: 0 points, the verdict "incomplete", and why."""
    from conformance.grading.run_record import incomplete_reason

    run = report.get("run") if isinstance(report.get("run"), dict) else {}
    return {**not_graded(submission_name(report), ""), "verdict": "incomplete",
            "seed": run.get("seed", report.get("seed")),
            "incomplete": str(report.get("error") or incomplete_reason(report))}


def row_or_error(report: dict) -> dict:
    """The student's row; a report this summary cannot read (a grader that crashed halfway, a file from elsewhere)
    is that student's error row, never the class's failure."""
    try:
        row = student_row(report)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return not_graded(submission_name(report), f"unreadable report: {type(exc).__name__}: {exc}")
    if not all(isinstance(row[key], int | float) for key in ("score", "max_score") if row[key] is not None):
        return not_graded(row["student"], "unreadable report: its score is not a number")
    return row


def submission_name(report) -> str:
    try:
        return str(report["submission"]["name"])
    except (KeyError, TypeError):
        return "?"


def not_graded(name: str, why: str) -> dict:
    return {"student": name, "score": 0, "max_score": None, "verdict": "not graded", "passed": 0, "failed": 0,
            "error": 0, "not_implemented": 0, "most_likely_bug": why, "hard_coded": "", "seed": None, "incomplete": ""}


def student_row(report: dict) -> dict:
    name = submission_name(report)
    if "checks" not in report:
        return not_graded(name, str(report.get("error", "")))
    grade = report.get("grade") or dict(zip(("score", "max_score"), totals(Points().score_report(report)),
                                            strict=True))
    statuses = Counter(check["status"] for check in report["checks"])
    return {
        "student": name,
        "score": grade["score"],
        "max_score": grade["max_score"],
        "verdict": next(iter(report.get("verdict", {}).values()), "?"),
        **{status: statuses.get(status, 0) for status in ("passed", "failed", "error", "not_implemented")},
        "most_likely_bug": most_likely_bug(report),
        "hard_coded": ", ".join(found["check"] for found in flagged_look_ups(report["checks"])),
        "seed": report.get("seed"),
        "incomplete": "",
    }


def most_likely_bug(report: dict) -> str:
    """The report's best finding: the known bug most failing checks match, else the measured finding (a formula
    difference, a description) that explains most of them in its profile; "" when nothing was found."""
    named = Counter()
    bugs = {}
    for check in report["checks"]:
        if check["status"] in FAILING:
            for match in check.get("diagnosis") or []:
                named[match["mutant"]] += 1
                bugs[match["mutant"]] = match.get("bug", match["mutant"])
    if named:
        mutant, _ = named.most_common(1)[0]
        return f"{bugs[mutant]} (mutant:{mutant})"
    profile = next(iter((report.get("profile") or {}).values()), None) or {}
    measured = [cause for cause in profile.get("causes") or [] if cause.get("kind") == "measured"]
    return f"measured: {measured[0]['text']}" if measured else ""


COUNTED = ("passed", "failed", "error", "not_implemented")  # each a column; the rest (advisory, ...) are "other"


def pass_rates(reports: list[dict]) -> list[dict]:
    """Per check: how many submissions passed, failed, errored, did not implement it, and the rest; ordered by
    the pass rate among the submissions that implement it (lowest first), checks none implements last."""
    seen: dict[str, dict] = {}
    for report in reports:
        for check in report.get("checks", []):
            row = seen.setdefault(check["id"], {"id": check["id"], "section": check["section"], "of": 0,
                                                **dict.fromkeys(COUNTED, 0), "other": 0})
            row["of"] += 1
            row[check["status"] if check["status"] in COUNTED else "other"] += 1
    return sorted(seen.values(), key=lambda row: (_rate(row) is None, _rate(row) or 0.0, row["id"]))


def _rate(row: dict) -> float | None:
    implemented = row["of"] - row["not_implemented"]
    return row["passed"] / implemented if implemented else None


def _fmt_rate(row: dict) -> str:
    implemented = row["of"] - row["not_implemented"]
    return f"{row['passed']}/{implemented}" if implemented else "-"


def common_bugs(students: list[dict]) -> list[tuple[str, int]]:
    return Counter(row["most_likely_bug"] for row in students
                   if row["most_likely_bug"] and row["verdict"] not in ("not graded", "incomplete")).most_common()


def render_csv(summary: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    # names, messages and bugs come from the submissions' reports: no formula for the spreadsheet, no escape code
    writer.writerows({field: csv_cell(value) for field, value in row.items()} for row in summary["students"])
    return out.getvalue()


def render_markdown(summary: dict) -> str:
    lines = ["# Class summary", "", f"{len(summary['students'])} submissions.", "",
             "| student | score | verdict | passed | failed | error | not implemented | most likely bug |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
    for row in summary["students"]:
        score = f"{row['score']:g} / {row['max_score']:g}" if row["max_score"] is not None else "-"
        lines.append(f"| {markdown_cell(row['student'])} | {score} | {markdown_cell(row['verdict'])} |"
                     f" {row['passed']} | {row['failed']} | {row['error']} | {row['not_implemented']} |"
                     f" {markdown_cell(row['most_likely_bug'] or '-')} |")
    unloaded = summary.get("not_loaded", 0)
    apart = (f" The {unloaded} submission(s) that could not be loaded are counted apart: they implement nothing."
             if unloaded else "")
    lines += ["", "## Checks by pass rate", "",
              "Pass rate: of the loaded submissions that implement the check. Other: advisory, deviation, supplied,"
              " blocked." + apart,
              "", "| check | section | pass rate | passed | failed | error | not implemented | other |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {markdown_cell(row['id'])} | {markdown_cell(row['section'])} | {_fmt_rate(row)} | "
              + " | ".join(str(row[column]) for column in (*COUNTED, "other")) + " |" for row in summary["checks"]]
    lines += ["", "## Most common diagnosed bugs", ""]
    if summary["bugs"]:
        lines += ["| bug | students |", "| --- | ---: |"]
        lines += [f"| {markdown_cell(bug)} | {n} |" for bug, n in summary["bugs"]]
    else:
        lines.append("No failing check matched a known bug.")
    return "\n".join(lines) + "\n"
