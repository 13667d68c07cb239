"""The badge: an SVG in the style of shields.io's "flat" badges (a grey label, a coloured value):
"conformance | 104/104" in green when every counted check passed, "conformance | 3 failed" in red when
any check fails or errors (``conformance.results.FAILING``), grey when nothing counted ran.
"""

from __future__ import annotations

from conformance.reports.safe_text import html_text as escape
from conformance.reports.view import counted_total, failing_total

GREEN, RED, GREY, LABEL_GREY = "#4c1", "#e05d44", "#9f9f9f", "#555"


def message(report: dict) -> tuple[str, str]:
    """(text, colour) of the value half, over every implementation of the report."""
    counts: dict[str, int] = {}
    for summary in report["summary"].values():
        for status, n in summary.items():
            counts[status] = counts.get(status, 0) + n
    failing, total = failing_total(counts), counted_total(counts)
    if failing:
        return f"{failing} failed", RED
    if not total:
        return "nothing implemented", GREY
    return f"{counts.get('passed', 0)}/{total}", GREEN


def text_width(text: str) -> int:
    """Verdana 11px advances, as shields.io measures them, rounded up: narrow glyphs 4 px, wide 8."""
    narrow, wide = set("ijlrtf|!.,:;'/ 1()"), set("mwMW%")
    return sum(4 if ch in narrow else 9 if ch in wide else 7 for ch in text) + 10


def render(report: dict, *, label: str = "conformance") -> str:
    value, colour = message(report)
    lw, vw = text_width(label), text_width(value)
    w = lw + vw
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img"'
        f' aria-label="{escape(label)}: {escape(value)}"><title>{escape(label)}: {escape(value)}</title>'
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="{LABEL_GREY}"/>'
        f'<rect x="{lw}" width="{vw}" height="20" fill="{colour}"/><rect width="{w}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{lw / 2:.1f}" y="15" fill="#010101" fill-opacity=".3">{escape(label)}</text>'
        f'<text x="{lw / 2:.1f}" y="14">{escape(label)}</text>'
        f'<text x="{lw + vw / 2:.1f}" y="15" fill="#010101" fill-opacity=".3">{escape(value)}</text>'
        f'<text x="{lw + vw / 2:.1f}" y="14">{escape(value)}</text></g></svg>\n'
    )
