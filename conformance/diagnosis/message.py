"""One writer for the tail of a failure message: likely cause, first divergence, structure, in that order."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.diagnosis.structure import PATTERNS


def named(match: dict) -> str:
    """"<bug> (mutant:x)"; for a combination of known bugs "<bug a>; and <bug b> (mutant:a + mutant:b)"."""
    mutants = " + ".join(f"mutant:{name}" for name in match.get("mutants") or [match["mutant"]])
    return f"{match['bug'].rstrip('.')} ({mutants})"


def fmt_matches(matches: list[dict], *, limit: int = 3) -> str | None:
    """"likely cause: <bug> (mutant:x), confirmed on a second probe (max diff 2e-08, 3e-08 on the probe)"."""
    if not matches:
        return None
    shown = [named(m) for m in matches[:limit]]
    more = f" (+{len(matches) - limit} more)" if len(matches) > limit else ""
    best = matches[0]
    confirmed = (f"confirmed on a second, bigger problem (max diff {best['max_abs']:.1g} here,"
                 f" {best['probe_max_abs']:.1g} there)")
    if len(shown) == 1:
        return f"likely cause: {shown[0]}, {confirmed}"
    return f"likely cause, one of (identical answers): {'; '.join(shown)}{more}, {confirmed}"


def fmt_structure(patterns: list[str]) -> str | None:
    return "likely cause (structure): " + "; and ".join(PATTERNS[name] for name in patterns) if patterns else None


def fmt_descriptions(descriptions: list[dict]) -> list[str]:
    """"  measured (no known bug matches): <text>, confirmed ...", one line per description."""
    lines = []
    for found in descriptions:
        where = ""
        if found.get("kind") == "formula":
            problems = (found.get("facts") or {}).get("problems", 2)
            after = ", the last drawn after the search" if problems > 2 else ""
            where = f", confirmed on {problems} problems{after}"
        elif found.get("max_abs") is not None:
            where = (f", reproduced on a second, bigger problem (max diff {found['max_abs']:.1g} here,"
                     f" {found['probe_max_abs']:.1g} there)")
        two = formula_lines(found)
        if two is None:
            lines.append(f"  measured (no known bug matches): {found['text']}{where}")
        else:
            head, computes, paper = two
            lines += [f"  measured (no known bug matches): {head}{where}:", f"      computes {computes}",
                      f"      where the paper computes {paper}"]
    return lines


def formula_lines(found: dict) -> tuple[str, str, str] | None:
    """A generated neighbour's statement as (what changed, the candidate's formula, the paper's), for a reader who
    compares the two formulas line by line; None for any other description, or a tie of several."""
    text = found.get("text", "")
    if found.get("kind") != "formula" or text.startswith("equally") or ": computes " not in text:
        return None
    head, rest = text.split(": computes ", 1)
    if " where the paper computes " not in rest:
        return None
    computes, paper = rest.split(" where the paper computes ", 1)
    return head, computes, paper


# Said by the ablation of a model-only adapter and by any failing check whose question gets two answers.
RANDOM_AT_EVALUATION = ("two identical calls give different outputs: dropout (or other randomness) at evaluation"
                        " suspected (model.eval() not called?)")
# The same of a part that holds no model (a schedule, a loss, a count): what varies is state kept between calls.
STATEFUL_CALLS = ("two identical calls give different outputs: the answer depends on more than its arguments (state"
                  " kept between calls, such as a counter of calls, or randomness)")


def varying_answers(parts) -> str:
    """What two different answers to one question say, for a question that calls ``parts``."""
    model = any(part.startswith(("build_model", "model.", "encoder_layer", "decoder_layer", "multi_head_attention",
                                 "scaled_dot_product_attention", "feed_forward", "layer_norm")) for part in parts)
    return RANDOM_AT_EVALUATION if model or not parts else STATEFUL_CALLS


@dataclass(frozen=True)
class Clause:
    """Words about one known bug (``bug``: its catalogue entry), kept apart from the rest of a line so that the
    message can leave them out where another line already names that bug."""

    text: str
    bug: str


class Location(str):
    """A localisation line built from two parts: where the layers diverge (``layers``), and what was found after
    the stack (``after_stack``, a ``Clause``), joined by "; ". ``tail`` composes the line again from its parts,
    without the second where a confirmed match or a structural pattern already names its bug: never cut by
    pattern, so it stays well formed whichever parts it has."""

    layers: str
    after_stack: Clause | None

    def __new__(cls, layers: str, after_stack: Clause | None = None) -> Location:
        line = super().__new__(cls, "; ".join(part for part in (layers, after_stack and after_stack.text) if part))
        line.layers, line.after_stack = layers, after_stack
        return line

    def after(self, prefix: str) -> Location:
        """The same parts, ``prefix`` before the layers' part ("the memory (model.encode) already differs; ")."""
        return Location(prefix + self.layers, self.after_stack)

    def without(self, named: set[str]) -> str:
        """The line without its clause after the stack when that clause's bug is among ``named``."""
        return self.layers if self.after_stack is not None and self.after_stack.bug in named else self


def tail(matches: list[dict], where: str | None, patterns: list[str]) -> list[str]:
    """The lines after a failure's own: each bug named once (a pattern a confirmed match already names is
    not repeated, nor a localisation's clause whose bug either names: the likely cause says it, with its advice)."""
    names = {name for m in matches for name in m.get("mutants") or [m["mutant"]]}
    if isinstance(where, Location):
        where = where.without(names | set(patterns))
    lines = [fmt_matches(matches), where, fmt_structure([p for p in patterns if p not in names])]
    return [f"  {line}" for line in lines if line]


def fmt_layers(stack: str, layers: list[int]) -> str:
    """[1, 2, 3, 5] -> "encoder.1-3, encoder.5": consecutive layers as one run."""
    runs: list[list[int]] = []
    for layer in layers:
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return ", ".join(f"{stack}.{run[0]}" + (f"-{run[-1]}" if len(run) > 1 else "") for run in runs)
