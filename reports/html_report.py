"""The HTML report: one self-contained file (HTML Living Standard; no script, no external resource,
pictures as inline SVG with PNG data URIs) rendered from the JSON report (docs/report-format.md).

Order of the page: the verdict and counts; the run (conventions, environment); the failures, expanded,
in the paper's order; the pictures (reports/figures.py); every check by paper section (§3.1 ... §5.4,
then the rest), failures first within each. Readable from phone width up (CSS only).
"""

from __future__ import annotations

from conformance.reports import figures
from conformance.reports.safe_text import html_text as escape
from conformance.reports.svg import fmt_number
from conformance.reports.view import (
    cause_label,
    checks_of,
    counted_total,
    data_of,
    first_line,
    impl_names,
    in_paper_order,
    is_failing,
    listed,
    profile_heading,
    profile_of,
    provenance_of,
    published_of,
    sections,
    sources,
    style,
    unreproduced_of,
)

CSS = """
:root { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #212121; }
body { margin: 0 auto; max-width: 1100px; padding: 12px; line-height: 1.4; overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; margin: 0.2em 0; } h2 { font-size: 1.25rem; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin: 1.2em 0 0.4em; overflow-wrap: anywhere; }
.pill { display: inline-block; color: #fff; border-radius: 4px; padding: 0 6px; font-size: 0.8rem;
        font-weight: 600; white-space: nowrap; }
.verdict { font-size: 1.1rem; padding: 2px 10px; }
.counts { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
dl.run dt { font-weight: 600; } dl.run dd { margin: 0; overflow-wrap: anywhere; }
.card { border: 1px solid #e0e0e0; border-left: 5px solid var(--status); border-radius: 4px;
        padding: 8px 12px; margin: 10px 0; }
.card h3 { margin: 0 0 4px; overflow-wrap: anywhere; }
pre { background: #f5f5f5; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.82rem;
      margin: 6px 0; }
code { overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; font-size: 0.88rem; }
td, th { border-bottom: 1px solid #eee; padding: 3px 6px; text-align: left; vertical-align: top; }
td.id { overflow-wrap: anywhere; width: 100%; }
th, td.margin, tr.check-row td:first-child { overflow-wrap: normal; white-space: nowrap; }
.check-row details summary { cursor: pointer; }
.muted { color: #616161; overflow-wrap: anywhere; }
figure { margin: 12px 0; } figcaption { font-size: 0.85rem; color: #424242; }
.pair { display: flex; flex-wrap: wrap; gap: 12px; }
.panel { flex: 1 1 280px; max-width: 560px; }
svg.figure { width: 100%; height: auto; max-width: 560px; display: block; background: #fff; }
svg image { image-rendering: pixelated; }
svg .title { font-size: 12px; font-weight: 600; } svg .tick { font-size: 10px; fill: #424242; }
svg .label { font-size: 11px; fill: #212121; } svg .end { text-anchor: end; } svg .mid { text-anchor: middle; }
svg .frame { fill: none; stroke: #757575; stroke-width: 0.8; } svg .axis { stroke: #757575; }
svg .worst { fill: none; stroke: #000; stroke-width: 2; } svg .expected { fill: #fff; stroke: #000; stroke-width: 0.8; }
@media (max-width: 600px) { body { padding: 6px; } td.margin, th.margin { display: none; } }
"""


def render(report: dict) -> str:
    body = "".join(_implementation(report, name, i) for i, name in enumerate(impl_names(report)))
    title = "transformer-conformance: " + ", ".join(impl_names(report))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"{body}{_footer(report)}</body></html>\n"
    )


def pill(status: str, text: str | None = None, *, extra: str = "") -> str:
    s = style(status)
    return f'<span class="pill{extra}" style="background:{s.colour}">{escape(text or s.label)}</span>'


def _implementation(report: dict, name: str, n: int) -> str:
    checks = checks_of(report, name)
    failing = [c for c in in_paper_order(checks) if is_failing(c)]
    parts = [_header(report, name), _profile(report, name), _provenance(report, name), _run(report, name)]
    if failing:
        parts.append(f"<h2>Failures ({len(failing)})</h2>")
        parts += [_card(report, check, n) for check in failing]
    parts.append(_pictures(report, name))
    parts.append("<h2>Checks by paper section</h2>")
    parts += [_section(report, section, group, n) for section, group in sections(checks)]
    return f'<section class="implementation" id="impl-{n}">{"".join(parts)}</section>'


def _header(report: dict, name: str) -> str:
    verdict = report["verdict"].get(name, "?")
    counts = report["summary"].get(name, {})
    status = "passed" if verdict == "conformant" else "failed" if verdict == "not conformant" else "not_implemented"
    chips = "".join(pill(s, f"{n} {s.replace('_', ' ')}") for s, n in counts.items() if n)
    published = published_of(report, name)
    return (f"<h1>transformer-conformance: {escape(name)}</h1>"
            f'<p>{pill(status, verdict, extra=" verdict")} {counts.get("passed", 0)} of {counted_total(counts)}'
            f" counted checks passed</p>"
            f'<div class="counts">{chips}</div><p class="muted">{escape(published.get("line", ""))}</p>'
            + _published_sections(published))


def _published_sections(published: dict) -> str:
    """The published numbers reproduced by paper section, a table folded under the count."""
    rows = "".join(f"<tr><td>{escape(row['section'])}</td><td class=\"margin\">{row['reproduced']}/"
                   f"{row['reproducible']}</td></tr>" for row in published.get("sections") or [])
    if not rows:
        return ""
    return ('<details class="run-info"><summary>Published numbers reproduced, by paper section</summary>'
            f'<table><tr><th>paper section</th><th class="margin">reproduced</th></tr>{rows}</table></details>')


def _unreproduced(report: dict, check: dict) -> list[str]:
    """The published numbers this check leaves unreproduced, each as printed and where."""
    missed = unreproduced_of(report, check)
    if not missed:
        return []
    items = "".join(f"<li><code>{escape(f['id'])}</code>: printed <q>{escape(f['printed'])}</q>"
                    f' <span class="muted">({escape(f["document"])}, {escape(f["section"])})</span></li>'
                    for f in missed)
    return [f"<p><b>published numbers not reproduced</b> ({len(missed)})</p><ul class=\"unreproduced\">{items}</ul>"]


def _profile(report: dict, name: str) -> str:
    """The implementation's profile under the counts: each confirmed deviation with the failures it explains."""
    found = profile_of(report, name)
    if found is None:
        return ""
    total = found["failures"]
    rows = [f"<li><b>{escape(cause_label(cause))}</b>: {'describes' if cause.get('kind') == 'measured' else 'explains'}"
            f" {cause['explains']} of {total} failures"
            f' <span class="muted">({escape(cause["text"])}: {escape(listed(cause["checks"]))})</span></li>'
            for cause in found["causes"]]
    if found["unexplained"]:
        rows.append(f"<li><b>no known cause</b>: {len(found['unexplained'])} of {total} failures"
                    f' <span class="muted">({escape(listed(found["unexplained"]))})</span></li>')
    return f'<div class="profile"><p><b>Profile</b>: {escape(profile_heading(found))}</p><ul>{"".join(rows)}</ul></div>'


def _provenance(report: dict, name: str) -> str:
    """Whose code answered: what the suite supplied (not credited to the implementation), what was converted."""
    found = provenance_of(report, name)
    if found is None:
        return ""
    rows = [f"<li>supplied by the suite: <code>{escape(part)}</code>: {escape(rec.get('note') or rec.get('by'))}</li>"
            for part, rec in found["supplied"].items()]
    rows += [f"<li>converted by the adapter: <code>{escape(e['part'])}</code>: {escape(e['converter'])}"
             f" ({escape(e['what'])})" + (f"; its own convention: {escape(e['deviation'])}" if e.get("deviation")
                                          else "") + "</li>" for e in found["converted"]]
    return (f'<div class="provenance"><p><b>Whose code</b>: {escape(found["line"])}</p><ul>{"".join(rows)}</ul>'
            "</div>")


def _run(report: dict, name: str) -> str:
    impl = next(i for i in report["implementations"] if i["name"] == name)
    env, conv = report.get("environment", {}), impl.get("conventions", {})
    versions = ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items() if v)
    rows = [
        ("conventions", ", ".join(f"{k}={v}" for k, v in conv.items())),
        ("parts provided", ", ".join(impl.get("provided_parts", [])) or "none"),
        ("seed, profile", f"{report.get('seed')}{', dtype ' + report['dtype'] if report.get('dtype') else ''},"
                          f" hypothesis {report.get('hypothesis_profile')},"
                          f" torch threads {report.get('torch_threads')}"),
        ("environment", f"Python {env.get('python')} on {env.get('platform')}; {versions}"),
        ("suite", f"{report.get('suite', {}).get('version')} ({report.get('suite', {}).get('git_sha') or 'installed'}),"
                  f" fixtures sha256 {str(report.get('fixtures_sha256', ''))[:12]}"),
        ("run", f"{report.get('created')}, {report.get('duration_s', 0):.1f} s"),
    ]
    rows += [("load warning", warning) for warning in impl.get("load_warnings", [])]
    cells = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in rows)
    return (f'<details class="run-info" open><summary>Run and conventions</summary><dl class="run">{cells}</dl>'
            "</details>")


def _anchor(check: dict, n: int) -> str:
    return f"i{n}-" + "".join(ch if ch.isalnum() else "-" for ch in check["id"])


def _card(report: dict, check: dict, n: int) -> str:
    s = style(check["status"])
    body = [f'<h3>{pill(check["status"])} <code>{escape(check["id"])}</code></h3>',
            f'<p>{escape(check["title"])} <span class="muted">({escape(check["section"])})</span></p>',
            *_claim_lines(report, check)]
    if check.get("message"):
        body.append(f"<pre>{escape(without_stated_causes(check['message']))}</pre>")
    body += _unreproduced(report, check) + _detail_lines(check)
    body.append(figures.difference_figure(check))
    return (f'<article class="card failure" id="{_anchor(check, n)}" data-status="{escape(check["status"])}"'
            f' style="--status:{s.colour}">{"".join(body)}</article>')


def without_stated_causes(message: str) -> str:
    """The message less its diagnosis lines ("likely cause: ...", "measured (no known bug matches): ..." and its
    two formulas), which the card states once, in its own fields below: a cause said once per card."""
    kept, formula = [], False
    for line in message.split("\n"):
        stripped = line.strip()
        if stripped.startswith(("likely cause:", "measured (no known bug matches):")):
            formula = stripped.endswith(":")  # a formula's statement: its two lines follow
            continue
        if formula and stripped.startswith(("computes ", "where the paper computes ")):
            continue
        formula = False
        kept.append(line)
    return "\n".join(kept)


def _claim_lines(report: dict, check: dict) -> list[str]:
    lines = []
    claim = check.get("claim")
    if claim:
        lines.append(f'<p><b>claim</b> ({escape(str(claim.get("source", "")))}, {escape(str(claim.get("where", "")))}):'
                     f' {escape(str(claim.get("text", "")))}</p>')
    cited = sources(report, check)
    if cited:
        lines.append("<p><b>golden values from</b> " + "; ".join(escape(c) for c in cited) + "</p>")
    return lines


def _described(description: dict) -> str:
    """A description; a generated neighbour's as its two formulas, one under the other, the changed piece marked."""
    text = escape(description["text"])
    if description.get("kind") != "formula" or text.count("⟦") != text.count("⟧") or ": computes " not in text:
        return text
    text = text.replace("⟦", "<mark>").replace("⟧", "</mark>")
    text = text.replace(": computes ", ":<br><code>computes ").replace(" where the paper computes ",
                                                                      "</code><br><code>the paper computes ")
    return text.replace("; or ", "</code><br>or ") + "</code>"


def _detail_lines(check: dict) -> list[str]:
    items = []
    if check.get("margin") is not None:
        items.append(("margin", f"{fmt_number(check['margin'])} (worst error / allowed; ≤ 1 passes)"))
    if check.get("likely_cause") and not check.get("descriptions"):  # measured: the list below says it, marked
        items.append(("likely cause", check["likely_cause"]))
    if check.get("part"):
        items.append(("adapter part", check["part"]))
    if check.get("blocked_by"):
        items.append(("blocked by", check["blocked_by"]))
    deviation = check.get("deviation")
    if deviation:
        confirmed = "confirmed by the diagnosis" if deviation.get("confirmed") else "not confirmed by the diagnosis"
        items.append(("declared deviation", f"{deviation.get('name')}: {deviation.get('reason')} ({confirmed})"))
    examples = check.get("examples")
    if examples:
        reasons = "; ".join(examples.get("reasons") or [])
        items.append(("examples", f"{examples.get('ran')} ran, {examples.get('skipped')} skipped"
                                  + (f" ({reasons})" if reasons else "")))
    out = [f"<p><b>{escape(k)}</b>: {escape(str(v))}</p>" for k, v in items]
    if len(check.get("diagnosis") or []) > 1:  # one known bug: the likely cause above names it
        rows = "".join(f"<tr><td><code>mutant:{escape(d['mutant'])}</code></td><td>{escape(d.get('bug') or '')}</td>"
                       f"<td>{fmt_number(d['max_abs']) if d.get('max_abs') is not None else ''}</td></tr>"
                       for d in check["diagnosis"])
        out.append("<p><b>diagnosis</b>: the output matches these known bugs, closest first</p>"
                   f"<table><tr><th>mutant</th><th>bug</th><th>max diff</th></tr>{rows}</table>")
    if check.get("descriptions"):
        rows = "".join(f"<li>{_described(d)} <span class=\"muted\">({escape(d['measurement'])},"
                       f" {escape(d['kind'])})</span></li>" for d in check["descriptions"])
        out.append("<p><b>measured</b> (no known bug matches; each confirmed on a second problem)</p>"
                   f"<ul>{rows}</ul>")
    if check.get("reproduction"):
        out.append(f"<p><b>reproduce</b>: <code>{escape(check['reproduction'])}</code></p>")
    return out


def _pictures(report: dict, name: str) -> str:
    drawn = []
    for key, draw in (("pe", figures.pe_figure), ("attention", figures.attention_figures),
                      ("schedule", figures.schedule_figure), ("training", figures.training_figures)):
        found = data_of(report, name, key)
        if found:
            check, data = found
            drawn.append(f'<h3>{escape(check["section"])} <span class="muted">({escape(check["id"])},'
                         f" {escape(check['status'])})</span></h3>{draw(data)}")
    if not drawn:
        return ""
    return '<h2>Pictures</h2><div class="pictures">' + "".join(drawn) + "</div>"


def _section(report: dict, section: str, group: list[dict], n: int) -> str:
    counts: dict[str, int] = {}
    for check in group:
        counts[check["status"]] = counts.get(check["status"], 0) + 1
    chips = " ".join(pill(s, f"{k} {style(s).label.lower()}") for s, k in counts.items())
    rows = "".join(_row(report, check, n) for check in group)
    return (f'<section class="paper-section"><h3>{escape(section)} {chips}</h3>'
            f'<table><tr><th>status</th><th>check</th><th class="margin">margin</th></tr>{rows}</table></section>')


def _row(report: dict, check: dict, n: int) -> str:
    margin = fmt_number(check["margin"]) if check.get("margin") is not None else ""
    if is_failing(check):
        label = f'<a href="#{_anchor(check, n)}"><code>{escape(check["id"])}</code></a> {escape(check["title"])}'
    else:
        details = _claim_lines(report, check) + _detail_lines(check)
        if check.get("message"):
            details.insert(0, f"<pre>{escape(check['message'])}</pre>")
        measured = "".join(f"<li>{escape(m['what'])}: margin {fmt_number(m['margin'])}</li>"
                           for m in (check.get("measurements") or [])[:12] if m.get("margin") is not None)
        if measured:
            details.append(f"<ul>{measured}</ul>")
        label = (f"<details><summary><code>{escape(check['id'])}</code> {escape(first_line(check['title']))}"
                 f"</summary>{''.join(details)}</details>")
    return (f'<tr class="check-row" data-status="{escape(check["status"])}"><td>{pill(check["status"])}</td>'
            f'<td class="id">{label}</td><td class="margin">{margin}</td></tr>')


def _footer(report: dict) -> str:
    return (f'<p class="muted">Rendered from the JSON report ({escape(report["schema"])} version'
            f' {report["schema_version"]}); every rendering reads the same file.</p>')
