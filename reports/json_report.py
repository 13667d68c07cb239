"""The JSON report: the report model (``conformance.run.report``) written as JSON.

Schema ``transformer-conformance/report`` version 1 (docs/report-format.md); the JSON Schema of this format
ships beside this module: ``report.schema.json``.
"""

from __future__ import annotations

import json


def render(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
