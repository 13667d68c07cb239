"""Every rendering of the JSON report by its CLI flag (``certify`` and ``report`` take the same ones):
``--html``, ``--junit``, ``--markdown``, ``--badge``; each renders from the report dict alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from conformance.reports import (
    add_flags,  # noqa: F401 - the flags of FORMATS, declared without the renderers
    badge,
    html_report,
    junit_report,
    markdown_report,
)
from conformance.reports.safe_text import visible_text

FORMATS = {
    "html": ("HTML report", html_report.render),
    "junit": ("JUnit XML", junit_report.render),
    "markdown": ("Markdown summary", markdown_report.render),
    "badge": ("badge", badge.render),
}


@dataclass
class Written:
    format: str
    path: str
    size: int  # bytes
    seconds: float  # rendering and writing

    def line(self) -> str:
        return (f"{FORMATS[self.format][0]} written to {self.path} ({self.size / 1024:,.1f} kB,"
                f" {self.seconds * 1000:,.0f} ms)")


def requested(args) -> dict[str, str]:
    return {name: getattr(args, name) for name in FORMATS if getattr(args, name, None)}


def write(report: dict, paths: dict[str, str]) -> list[Written]:
    written = []
    for name, path in paths.items():
        started = time.perf_counter()
        data = visible_text(FORMATS[name][1](report)).encode("utf-8")  # encoded before the file is opened
        Path(path).write_bytes(data)
        written.append(Written(name, path, len(data), time.perf_counter() - started))
    return written
