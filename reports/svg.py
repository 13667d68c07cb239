"""Hand-written inline SVG for the HTML report: heatmaps (a PNG image inside an SVG, with axes, labels,
marks and a colour bar) and line charts (polylines, point markers, horizontal reference lines).

Why not matplotlib: the report must render in well under a second and open offline; a heatmap of a few
thousand cells as one PNG ``<image>`` (``image-rendering: pixelated``) is a few kB and draws at once,
and a chart of a few hundred points is one ``<polyline>``. Specs: SVG 1.1 (W3C, 2011) for the markup,
PNG (RFC 2083, W3C PNG 2nd edition) for the images, written here with ``zlib`` and ``struct``.

Every figure is ``<svg class="figure" viewBox=...>`` scaled by CSS to its container's width, so it stays
readable on a phone; ``data-png-size`` on an image says its pixel size (the browser test decodes it).
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from conformance.reports.safe_text import html_text as escape

# ------------------------------------------------------------------------------------------------
# PNG and colour maps
# ------------------------------------------------------------------------------------------------


def png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (height, width, 3), filter 0 on every row (RFC 2083)."""
    height, width, _ = rgb.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.astype(np.uint8).reshape(height, -1)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) \
        + chunk(b"IEND", b"")


# Anchors of two perceptual colour maps: viridis (sequential, matplotlib's default) and RdBu reversed
# (diverging: blue negative, white zero, red positive).
SEQUENTIAL = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], float)
DIVERGING = np.array([[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]], float)
MISSING = np.array([40, 40, 40], float)  # NaN or null: near black, outside both maps


def colours(values: np.ndarray, anchors: np.ndarray, low: float, high: float) -> np.ndarray:
    """Each value's colour along ``anchors`` from ``low`` to ``high`` (clipped); NaN is ``MISSING``."""
    span = high - low if high > low else 1.0
    t = np.clip((values - low) / span, 0.0, 1.0) * (len(anchors) - 1)
    t = np.nan_to_num(t, nan=0.0)
    lower = np.minimum(np.floor(t).astype(int), len(anchors) - 2)
    frac = (t - lower)[..., None]
    rgb = anchors[lower] * (1 - frac) + anchors[lower + 1] * frac
    rgb[np.isnan(values)] = MISSING
    return np.round(rgb).astype(np.uint8)


def as_array(values) -> np.ndarray:
    """A nested list from the JSON report (null for NaN) as a float array."""
    return np.array([[np.nan if v is None else v for v in row] for row in values], dtype=np.float64)


# ------------------------------------------------------------------------------------------------
# Heatmaps
# ------------------------------------------------------------------------------------------------


@dataclass
class Heatmap:
    values: np.ndarray  # (rows, cols)
    title: str
    diverging: bool = False  # blue-white-red around 0, else viridis from low to high
    low: float | None = None
    high: float | None = None
    row_labels: list[str] | None = None  # one per row; else the first and last row number
    col_labels: list[str] | None = None
    row_offset: int = 0  # the number of the first row/column shown (a window of a larger tensor)
    col_offset: int = 0
    marks: list[tuple[int, int, str]] = field(default_factory=list)  # (row, col, "worst" | "expected")
    x_label: str = ""
    y_label: str = ""

    def limits(self) -> tuple[float, float]:
        finite = self.values[np.isfinite(self.values)]
        if self.diverging:
            bound = self.high if self.high is not None else float(np.abs(finite).max()) if finite.size else 1.0
            return -(bound or 1.0), bound or 1.0
        low = self.low if self.low is not None else float(finite.min()) if finite.size else 0.0
        high = self.high if self.high is not None else float(finite.max()) if finite.size else 1.0
        return low, high


def heatmap(spec: Heatmap, *, width: int = 360) -> str:
    """One heatmap as an SVG: title, the image, labels on both axes, marks, and a colour bar."""
    rows, cols = spec.values.shape
    low, high = spec.limits()
    anchors = DIVERGING if spec.diverging else SEQUENTIAL
    image = png(colours(spec.values, anchors, low, high))
    left = 16 + (7 * max(map(len, spec.row_labels)) if spec.row_labels else 30)
    top, plot_w = 26, width - left - 56
    cell = plot_w / cols
    plot_h = max(cell, 9.0) * rows  # a few rows of a wide window stay visible
    cell_h = plot_h / rows
    bottom = 18 + (14 if spec.col_labels else 12) + (14 if spec.x_label else 0)
    height = top + plot_h + bottom
    parts = [
        f'<svg class="figure heatmap" viewBox="0 0 {width} {height:.0f}" style="max-width:{width}px" role="img"'
        f' aria-label="{escape(spec.title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{left}" y="16" class="title">{escape(spec.title)}</text>',
        f'<image x="{left}" y="{top}" width="{plot_w:.2f}" height="{plot_h:.2f}" preserveAspectRatio="none"'
        f' data-png-size="{cols}x{rows}" href="data:image/png;base64,{base64.b64encode(image).decode()}"/>',
        f'<rect x="{left}" y="{top}" width="{plot_w:.2f}" height="{plot_h:.2f}" class="frame"/>',
        *_axis_labels(spec, left, top, cell, cell_h, plot_w, plot_h),
        *(_mark(kind, left + (c + 0.5) * cell, top + (r + 0.5) * cell_h, cell, cell_h) for r, c, kind in spec.marks),
        *_colour_bar(anchors, low, high, left + plot_w + 10, top, plot_h),
        "</svg>",
    ]
    return "".join(parts)


def _axis_labels(spec: Heatmap, left, top, cell_w, cell_h, plot_w, plot_h) -> list[str]:
    out = []
    if spec.row_labels:
        out += [f'<text x="{left - 4}" y="{top + (i + 0.5) * cell_h + 4:.1f}" class="tick end">{escape(label)}</text>'
                for i, label in enumerate(spec.row_labels)]
    else:
        rows = spec.values.shape[0]
        out += [f'<text x="{left - 4}" y="{top + 9}" class="tick end">{spec.row_offset}</text>',
                f'<text x="{left - 4}" y="{top + plot_h:.1f}" class="tick end">{spec.row_offset + rows - 1}</text>']
    y = top + plot_h + 13
    if spec.col_labels:
        out += [f'<text x="{left + (i + 0.5) * cell_w:.1f}" y="{y:.1f}" class="tick mid">{escape(label)}</text>'
                for i, label in enumerate(spec.col_labels)]
    else:
        cols = spec.values.shape[1]
        out += [f'<text x="{left}" y="{y:.1f}" class="tick">{spec.col_offset}</text>',
                f'<text x="{left + plot_w:.1f}" y="{y:.1f}" class="tick end">{spec.col_offset + cols - 1}</text>']
    if spec.x_label:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{y + 14:.1f}" class="label mid">'
                   f"{escape(spec.x_label)}</text>")
    if spec.y_label:
        out.append(f'<text x="10" y="{top + plot_h / 2:.1f}" class="label mid"'
                   f' transform="rotate(-90 10 {top + plot_h / 2:.1f})">{escape(spec.y_label)}</text>')
    return out


def _mark(kind: str, x: float, y: float, w: float, h: float) -> str:
    radius = max(min(w, h) * 0.45, 3.0)
    if kind == "worst":  # a ring and a cross-hair: findable in a 64-column window
        return (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius + 3:.1f}" class="worst"/>'
                f'<path d="M{x - radius - 8:.1f} {y:.1f}h{2 * radius + 16:.1f}M{x:.1f} {y - radius - 8:.1f}'
                f'v{2 * radius + 16:.1f}" class="worst"/>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius * 0.3:.1f}" class="expected"/>'


def _colour_bar(anchors: np.ndarray, low: float, high: float, x: float, top: float, height: float) -> list[str]:
    ramp = colours(np.linspace(high, low, 32)[:, None], anchors, low, high)
    data = base64.b64encode(png(ramp)).decode()
    return [
        f'<image x="{x:.1f}" y="{top}" width="8" height="{height:.1f}" preserveAspectRatio="none"'
        f' data-png-size="1x32" href="data:image/png;base64,{data}"/>',
        f'<text x="{x + 11:.1f}" y="{top + 8}" class="tick">{fmt_number(high)}</text>',
        f'<text x="{x + 11:.1f}" y="{top + height:.1f}" class="tick">{fmt_number(low)}</text>',
    ]


def fmt_number(value: float) -> str:
    """3 significant digits, no exponent for ordinary magnitudes: 0.537, 1.2e-05, 4,000."""
    if value == 0 or not math.isfinite(value):
        return str(value if math.isfinite(value) else "nan")
    if 1e-3 <= abs(value) < 1e5:
        text = f"{value:.3g}"
        return f"{float(text):,.0f}" if abs(value) >= 1000 else text
    return f"{value:.2g}"


# ------------------------------------------------------------------------------------------------
# Line charts
# ------------------------------------------------------------------------------------------------


@dataclass
class Series:
    name: str
    x: list[float]
    y: list[float | None]
    colour: str
    points: bool = False  # markers only (published values), else a line
    dashed: bool = False


@dataclass
class Chart:
    title: str
    series: list[Series]
    x_label: str
    y_label: str
    levels: list[tuple[float, str, str]] = field(default_factory=list)  # (y, label, colour): reference lines
    y_max: float | None = None


def line_chart(chart: Chart, *, width: int = 560, height: int = 300) -> str:
    """Axes with 5 ticks each, every series, the reference levels, and a legend under the plot."""
    xs = [x for s in chart.series for x in s.x]
    ys = [y for s in chart.series for y in s.y if y is not None and math.isfinite(y)] + [y for y, _, _ in
                                                                                           chart.levels]
    x0, x1 = min(xs, default=0.0), max(xs, default=1.0)
    y0, y1 = min(ys + [0.0]), chart.y_max if chart.y_max is not None else max(ys, default=1.0)
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    left, top, right = 58, 24, 12
    legend_rows = math.ceil((len(chart.series) + len(chart.levels)) / 2)
    plot_w, plot_h = width - left - right, height - top - 40 - 16 * legend_rows

    def px(x):
        return left + (x - x0) / (x1 - x0) * plot_w

    def py(y):
        return top + plot_h - (min(y, y1) - y0) / (y1 - y0) * plot_h

    parts = [f'<svg class="figure chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(chart.title)}"'
             f' xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{left}" y="15" class="title">{escape(chart.title)}</text>',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    parts += _ticks(x0, x1, y0, y1, px, py, left, top, plot_h)
    for y, _, colour in chart.levels:
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="{colour}"'
                     ' stroke-dasharray="2 3" stroke-width="1.2"/>')
    for s in chart.series:
        parts.append(_draw(s, px, py))
    parts += [f'<text x="{left + plot_w / 2:.0f}" y="{top + plot_h + 30}" class="label mid">'
              f"{escape(chart.x_label)}</text>",
              f'<text x="12" y="{top + plot_h / 2:.0f}" class="label mid"'
              f' transform="rotate(-90 12 {top + plot_h / 2:.0f})">{escape(chart.y_label)}</text>']
    parts += _legend(chart, left, top + plot_h + 46, plot_w)
    return "".join(parts) + "</svg>"


def _ticks(x0, x1, y0, y1, px, py, left, top, plot_h) -> list[str]:
    out = []
    for i in range(5):
        x, y = x0 + (x1 - x0) * i / 4, y0 + (y1 - y0) * i / 4
        anchor = ("", "mid", "mid", "mid", "end")[i]
        out.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 13}" class="tick {anchor}">{fmt_number(x)}</text>')
        out.append(f'<text x="{left - 4}" y="{py(y) + 4:.1f}" class="tick end">{fmt_number(y)}</text>')
        out.append(f'<line x1="{left}" x2="{left + 4}" y1="{py(y):.1f}" y2="{py(y):.1f}" class="axis"/>')
    return out


def _draw(s: Series, px, py) -> str:
    pairs = [(x, y) for x, y in zip(s.x, s.y, strict=True) if y is not None and math.isfinite(y)]
    if s.points:
        return "".join(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{s.colour}" class="point">'
                       f"<title>{escape(s.name)}: {fmt_number(y)} at {fmt_number(x)}</title></circle>"
                       for x, y in pairs)
    coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pairs)
    dash = ' stroke-dasharray="6 4"' if s.dashed else ""
    return f'<polyline points="{coords}" fill="none" stroke="{s.colour}" stroke-width="1.6"{dash}/>'


def _legend(chart: Chart, left: float, y: float, plot_w: float) -> list[str]:
    entries = [(s.name, s.colour, "dot" if s.points else "dash" if s.dashed else "line") for s in chart.series]
    entries += [(label, colour, "level") for _, label, colour in chart.levels]
    out, column = [], plot_w / 2
    for i, (name, colour, kind) in enumerate(entries):
        x, row_y = left + (i % 2) * column, y + (i // 2) * 16
        if kind == "dot":
            out.append(f'<circle cx="{x + 8}" cy="{row_y - 4}" r="3.5" fill="{colour}"/>')
        else:
            dash = {"dash": ' stroke-dasharray="6 4"', "level": ' stroke-dasharray="2 3"'}.get(kind, "")
            out.append(f'<line x1="{x}" x2="{x + 16}" y1="{row_y - 4}" y2="{row_y - 4}" stroke="{colour}"'
                       f' stroke-width="2"{dash}/>')
        out.append(f'<text x="{x + 22}" y="{row_y}" class="tick">{escape(name)}</text>')
    return out
