"""The JSON report: the report model (``conformance.run.report``) written as JSON.

Schema ``transformer-conformance/report`` version 1 (docs/report-format.md); the JSON Schema of this format
ships beside this module: ``report.schema.json``.
"""

from __future__ import annotations

from conformance.reports.safe_text import json_text


def render(report: dict) -> str:
    return json_text(report, indent=2, sort_keys=False) + "\n"  # valid UTF-8 whatever a submission sent
