"""``Report``: one run's report as an object, for Python code and notebooks (``conformance.certify`` returns one).

It holds the same dict as the JSON report and reads nothing else: its properties are views of that dict, its
renderings the ones the command line writes (``formats``), and in Jupyter it shows itself as the HTML report, in a
frame sized for a cell (``_repr_html_``), or as the Markdown summary (``_repr_markdown_``).
"""

from __future__ import annotations

import html
from pathlib import Path

from conformance.reports import badge, html_report, json_report, junit_report, markdown_report, terminal
from conformance.reports.view import impl_names, is_failing, profile_of
from conformance.results import CheckResult, count_statuses

# By the file's suffix: what ``Report.save`` writes.
SUFFIXES = {".json": json_report.render, ".html": html_report.render, ".htm": html_report.render,
            ".md": markdown_report.render, ".xml": junit_report.render, ".svg": badge.render,
            ".txt": terminal.render}
CELL_HEIGHT_PX = 640  # the frame a notebook cell shows the HTML report in; it scrolls, and can be resized


class Report:
    """The report of one implementation's run (``data``: the JSON report's dict, ``schema`` in report.schema.json).

    ``verdict`` ("conformant", "not conformant", "nothing implemented"), ``passed`` (conformant), ``counts`` (checks
    per status), ``checks`` and ``failures`` (``CheckResult``s: each with its claim, numbers and likely cause),
    ``profile`` (what the failures have in common), ``interrupted`` (stopped before every check ran);
    ``to_json()``, ``to_html()``, ``to_markdown()``, ``to_junit()``, ``str(report)`` (the terminal's), and
    ``save(path)`` by the path's suffix."""

    def __init__(self, data: dict, *, interrupted: bool = False):
        self.data, self.interrupted = data, interrupted
        names = impl_names(data)
        self.name = names[0] if names else ""

    @property
    def verdict(self) -> str:
        return self.data.get("verdict", {}).get(self.name, "nothing implemented")

    @property
    def passed(self) -> bool:
        return self.verdict == "conformant" and not self.interrupted

    @property
    def checks(self) -> list[CheckResult]:
        return [CheckResult.from_dict(check) for check in self.data.get("checks", []) if check["impl"] == self.name]

    @property
    def failures(self) -> list[CheckResult]:
        """The checks that failed or met an error, in the report's order."""
        return [CheckResult.from_dict(check) for check in self.data.get("checks", [])
                if check["impl"] == self.name and is_failing(check)]

    @property
    def counts(self) -> dict[str, int]:
        return count_statuses(self.checks)

    @property
    def profile(self) -> dict | None:
        return profile_of(self.data, self.name)

    def to_json(self) -> str:
        return json_report.render(self.data)

    def to_html(self) -> str:
        return html_report.render(self.data)

    def to_markdown(self) -> str:
        return markdown_report.render(self.data)

    def to_junit(self) -> str:
        return junit_report.render(self.data)

    def save(self, path: str | Path) -> Path:
        """Write the rendering the path's suffix names (.json, .html, .md, .xml for JUnit, .svg for the badge, .txt
        for the terminal's); the path written."""
        path = Path(path)
        rendering = SUFFIXES.get(path.suffix.lower())
        if rendering is None:
            raise ValueError(f"cannot tell the format of {str(path)!r} from its suffix: expected one of"
                             f" {', '.join(sorted(SUFFIXES))}")
        path.write_text(rendering(self.data), encoding="utf-8")
        return path

    def __str__(self) -> str:
        return terminal.render(self.data)

    def __repr__(self) -> str:
        counts = self.counts
        shown = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n)
        stopped = ", interrupted" if self.interrupted else ""
        return f"<Report {self.name!r}: {self.verdict} ({shown}){stopped}>"

    def _repr_html_(self) -> str:
        """The HTML report in a frame of its own (its styles stay out of the notebook's), sized for a cell."""
        stopped = ("<p><strong>Interrupted:</strong> the report holds the checks that ran before the stop.</p>"
                   if self.interrupted else "")
        return (f'{stopped}<iframe srcdoc="{html.escape(self.to_html(), quote=True)}" title="transformer-conformance'
                f' report" style="width:100%;height:{CELL_HEIGHT_PX}px;border:1px solid #ddd;resize:vertical"'
                ' sandbox="allow-same-origin"></iframe>')

    def _repr_markdown_(self) -> str:
        return self.to_markdown()
