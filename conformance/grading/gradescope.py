"""Gradescope's ``results.json``, from the JSON report and a points file.

Schema: Gradescope's "Autograder Specifications", output format (``reports/gradescope.schema.json``
transcribes the documented fields): top level ``score``, ``max_score``, ``execution_time``, ``output``,
``output_format``, ``visibility``, ``stdout_visibility``, ``tests``, ``leaderboard``; each test
``name``, ``number``, ``score``, ``max_score``, ``status`` ("passed" / "failed"), ``output``,
``output_format``, ``tags``, ``visibility``.
"""

from __future__ import annotations

from conformance.grading.points import Points, ScoredCheck, totals, withheld_line
from conformance.judging.twins import flagged_look_ups
from conformance.reports.safe_text import visible_text


def build_results(report: dict, points: Points, *, execution_time: float) -> dict:
    """results.json for one submission's report (``conformance.run.report.build_report``, one implementation)."""
    scored = points.score_report(report)
    score, max_score = totals(scored)
    return {
        "score": score,
        "max_score": max_score,
        "execution_time": int(round(execution_time)),
        "output": visible_text(summary_text(report, score, max_score, points)),  # shown to the student
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [test_entry(number, check, detail)
                  for number, (check, detail) in enumerate(zip(scored, report["checks"], strict=True), 1)],
        "leaderboard": leaderboard(report, score),
    }


def test_entry(number: int, check: ScoredCheck, detail: dict) -> dict:
    status = "passed" if check.score >= check.max_score and check.status in ("passed", "advisory") else "failed"
    label = check.status.replace("_", " ")
    output = "\n".join(text for text in (check.withheld, check.message or detail.get("title", "")) if text)
    return {
        "name": visible_text(f"{check.id}: {detail.get('title', '')}".strip(": ")),
        "number": str(number),
        "score": round(check.score, 4),
        "max_score": round(check.max_score, 4),
        "status": status,
        "output": visible_text(f"{label}. {output}".strip() if check.status != "passed" else output),
        "output_format": "text",
        "tags": [visible_text(tag) for tag in (check.section, check.status) if tag],
        "visibility": check.visibility,
    }


def summary_text(report: dict, score: float, max_score: float, points: Points) -> str:
    (impl,) = report["verdict"] or {"": "not graded"}
    counts = report["summary"].get(impl, {})
    counted = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n)
    seed = report.get("seed")
    lines = [
        f"transformer-conformance: {report['verdict'].get(impl, 'not graded')} ({counted})",
        f"score {score:g} / {max_score:g} (points: {points.source})",
        f"seed {seed}: the inputs of this run; the instructor can replay it with --seed {seed}",
    ]
    note = report.get("grade", {}).get("confinement")
    if note:
        lines.append(note)
    walls = report.get("grade", {}).get("walls")
    if walls:
        lines.append(walls)
    hard_coded = [found["check"] for found in flagged_look_ups(report["checks"])]
    if hard_coded:
        lines.append("look-up: matches the published values but not the formula on fresh inputs (hard-coded?): "
                     + ", ".join(hard_coded))
    withheld = [check.id for check in points.score_report(report) if check.withheld]
    if withheld:
        lines.append(withheld_line(withheld))
    return "\n".join(lines)


def leaderboard(report: dict, score: float) -> list[dict]:
    board = [{"name": "score", "value": score, "order": "desc"}]
    for line in report.get("published_numbers", {}).values():
        board.append({"name": "published numbers reproduced", "value": line["reproduced"], "order": "desc"})
    return board
