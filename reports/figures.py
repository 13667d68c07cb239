"""The report's pictures, each drawn from what a check recorded in the JSON report (docs/report-format.md):

- ``data.pe`` (pe_has_one_row_per_position): the candidate's PE(50, 64) beside the formula's (§3.5);
- ``data.attention`` (trained_checkpoint_attention_matches_golden): every attention layer of the trained
  toy checkpoint on "c a b e d", mean of heads, beside the reference's, the expected anti-diagonal marked;
- ``data.schedule`` (lrate_matches_published_paper_table): lrate(step) against the formula (§5.3);
- ``data.training`` (reversal_task_is_learned): loss, exact match and rate per step with the lesson's
  published points and the smoothed-loss floor 0.537 (§5.4);
- ``difference`` of any failing tensor comparison: actual - expected around the worst index, marked.

Each function returns an HTML ``<figure>`` (inline SVG, reports/svg.py) or "" when the data is absent.
"""

from __future__ import annotations

from html import escape

import numpy as np

from conformance.reports.svg import Chart, Heatmap, Series, as_array, fmt_number, heatmap, line_chart

CANDIDATE, REFERENCE, PUBLISHED, LEVEL = "#1565c0", "#9e9e9e", "#d84315", "#6a1b9a"


def figure(body: str, caption: str, *, kind: str) -> str:
    return f'<figure class="{kind}">{body}<figcaption>{caption}</figcaption></figure>'


def pair(*svgs: str) -> str:
    return '<div class="pair">' + "".join(f'<div class="panel">{svg}</div>' for svg in svgs) + "</div>"


def pe_figure(data: dict) -> str:
    candidate, golden = as_array(data["candidate"]), as_array(data["golden"])
    n, d_model = data["n"], data["d_model"]
    maps = [heatmap(Heatmap(values, title, diverging=True, high=1.0, x_label="dimension", y_label="position"))
            for values, title in ((candidate, f"candidate PE({n}, {d_model})"),
                                  (golden, f"formula PE({n}, {d_model})"))]
    worst = float(np.nanmax(np.abs(candidate - golden))) if candidate.shape == golden.shape else float("nan")
    caption = (f"§3.5 positional encoding: rows are positions 0-{n - 1}, columns dimensions 0-{d_model - 1}"
               f" (sine in even columns, cosine in odd); blue -1, white 0, red 1. Largest difference"
               f" {fmt_number(worst)}. Table as printed in {escape(data.get('where', 'the lesson'))}.")
    return figure(pair(*maps), caption, kind="pe")


def layer_order(name: str) -> tuple:
    """encoder.0.self_attn, encoder.1.self_attn, decoder.0.self_attn, decoder.0.cross_attn, ..."""
    stack, index, kind = name.split(".")
    return (stack != "encoder", int(index), kind != "self_attn")


def attention_figures(data: dict) -> str:
    source, target = data["source"], data["target"]
    out = []
    for layer in sorted(data["layers"], key=layer_order):
        maps = data["layers"][layer]
        keys = source if layer.startswith("encoder") or "cross" in layer else target
        queries = source if layer.startswith("encoder") else target
        marks = _anti_diagonal(len(source)) if layer == data.get("anti_diagonal") else []
        panels = [heatmap(Heatmap(as_array(np.mean(maps[who], axis=0)), f"{who}: {layer}", low=0.0, high=1.0,
                                  row_labels=queries, col_labels=keys, marks=marks,
                                  x_label="keys", y_label="queries"), width=280)
                  for who in ("candidate", "reference")]
        out.append(figure(pair(*panels), _attention_caption(layer, marks), kind="attention"))
    return "".join(out)


def _anti_diagonal(source_length: int) -> list[tuple[int, int, str]]:
    """Row t (the query that writes output t) should peak on source position S - 1 - t."""
    return [(t, source_length - 1 - t, "expected") for t in range(source_length)]


def _attention_caption(layer: str, marks: list) -> str:
    kind = {"self_attn": "self-attention", "cross_attn": "cross-attention (queries: decoder, keys: source)"}
    text = f"{layer}: {kind[layer.rsplit('.', 1)[1]]}, mean of heads, 0 dark to 1 yellow"
    if layer.startswith("decoder") and "self" in layer:
        text += "; masked: nothing above the diagonal"
    if marks:
        text += "; white dots: the expected anti-diagonal (each row reads the mirrored source letter)"
    return text + "."


def schedule_figure(data: dict) -> str:
    points = data.get("published", [])
    chart = Chart(
        f"lrate(step), d_model {data['d_model']}, warmup {data['warmup']}",
        [Series("candidate", data["step"], data["candidate"], CANDIDATE),
         Series("formula", data["step"], data["formula"], REFERENCE, dashed=True),
         Series("published (lesson's table)", [p["step"] for p in points], [p["value"] for p in points],
                PUBLISHED, points=True)],
        "step", "learning rate")
    return figure(line_chart(chart), "§5.3: lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5); the"
                  " candidate's curve over the formula's, the lesson's printed values as dots.", kind="schedule")


def training_figures(data: dict) -> str:
    published = data.get("published", {})
    points = published.get("points", [])
    floor = published.get("smoothed_loss_floor")
    steps = data["step"]
    loss = Chart("training loss (each step's batch, before its update)",
                 [Series("candidate", steps, data["loss"], CANDIDATE),
                  Series("lesson's log", [p["step"] for p in points], [p["train_loss"] for p in points],
                         PUBLISHED, points=True)],
                 "step", "label-smoothed loss",
                 levels=[(floor, f"smoothing floor {floor}", LEVEL)] if floor is not None else [])
    evals = data.get("exact_match", [])
    needed = data.get("plan", {}).get("pass_exact_match")
    exact = Chart("exact match on the held-out sequences",
                  [Series("candidate", [e["step"] for e in evals], [e["value"] for e in evals], CANDIDATE),
                   Series("candidate (evaluations)", [e["step"] for e in evals], [e["value"] for e in evals],
                          CANDIDATE, points=True),
                   Series("lesson's log", [p["step"] for p in points], [p["exact_match"] for p in points],
                          PUBLISHED, points=True)],
                  "step", "exact match", y_max=1.0,
                  levels=[(needed, f"pass: {needed:.0%}", LEVEL)] if needed is not None else [])
    rate = Chart("learning rate each update used",
                 [Series("candidate", steps[: len(data["lr"])], data["lr"], CANDIDATE),
                  Series("lrate(step)", steps[: len(data["lr_expected"])], data["lr_expected"], REFERENCE,
                         dashed=True),
                  Series("lesson's log (next step's rate)", [p["step"] + 1 for p in points if p.get("lr_next")],
                         [p["lr_next"] for p in points if p.get("lr_next")], PUBLISHED, points=True)],
                 "step", "learning rate")
    caption = (f"§5.3-5.4, the lesson's toy run: {data.get('status', '?')} at step {data.get('stopped_at', '?')}"
               f" ({data.get('wall_s', 0):.1f} s). The lesson's points lie beyond the run's end where it stopped"
               " early (it decides as soon as the verdict is certain).")
    return "".join(figure(line_chart(chart), caption, kind="training") for chart in (loss, exact, rate))


def difference_figure(check: dict) -> str:
    diff = check.get("difference")
    if not diff:
        return ""
    values = as_array(diff["values"])
    rows, cols, worst = diff["rows"], diff["cols"], diff["worst"]
    where = ", ".join(":" if i is None else str(i) for i in diff["slice"])
    spec = Heatmap(values, "actual - expected", diverging=True, row_offset=rows[0], col_offset=cols[0],
                   marks=[(worst[0], worst[1], "worst")], x_label=f"axis {len(diff['shape']) - 1}",
                   y_label=f"axis {len(diff['shape']) - 2}" if len(diff["shape"]) > 1 else "")
    caption = (f"[{where}] of a tensor of shape {tuple(diff['shape'])}, rows {rows[0]}-{rows[1] - 1}, columns"
               f" {cols[0]}-{cols[1] - 1}; ring: the worst index {tuple(check.get('index') or ())}"
               f" (allowed there {fmt_number(diff['allowed'])}); black: NaN.")
    return figure(heatmap(spec, width=min(560, 140 + 14 * values.shape[1])), escape(caption), kind="difference")
