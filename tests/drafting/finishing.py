"""The finished adapters of the drafting models: each model's draft (``template --from``) with what a user fills in.

A case stores only the user's part: an answer to each TODO of the draft (the code that replaces the stub's ``raise
NotImplementedError``, or None where the draft's guess is right and the TODO is deleted) and a note for the top.
``finished`` builds the adapter from today's draft, so a draft that no longer takes these answers (a TODO without
an answer, an answer without its TODO, a stub without its raise) fails where it is built: tests/test_drafting.py
certifies the result and benchmarks/drafts.py measures it. The drafting folder must be on ``sys.path``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.adapters.draft import SUPPLIED_HINT, draft

DRAFTING = Path(__file__).parent
TODO = re.compile(r"(\s*)#\s*TODO (.*)")
CONTINUED = re.compile(r"\s*#\s{4,}\S")  # a wrapped TODO's next line
GUESSES = "# Check these guesses:"
# The draft's closing comments on greedy decoding and training: the finished adapters ask the suite for neither.
HINT = "".join(f"    {line}\n" for line in SUPPLIED_HINT)


@dataclass(frozen=True)
class Case:
    module: str  # the model's file in tests/drafting/, without .py
    name: str  # its class (or factory function)
    note: str = ""  # what finishing it took, written under the draft's first line
    answers: dict[str, str | None] = field(default_factory=dict)  # a TODO's opening words -> its code, or None


CASES = {
    "config": Case("config_model", "ConfiguredTransformer",
                   "its one TODO (max_len=1024, a length no config key gives) checked and deleted.",
                   {"TranslationConfig(max_len)": None}),
    "seq2seq": Case("seq2seq_model", "Seq2Seq",
                    "encode and decode written from Seq2Seq.forward; the two LayerNorm guesses checked and deleted.",
                    {"encoder layer norms": None, "decoder layer norms": None,
                     "Seq2Seq has no encode(src)": "return m.encoder(src, m.make_src_mask(src))",
                     "Seq2Seq has no decode(tgt_in, memory, src)":
                         "return m.decoder(tgt_in, memory, m.make_trg_mask(tgt_in), m.make_src_mask(src))[0]"}),
    "untied": Case("untied_model", "UntiedTransformer"),
    "bias_free": Case("bias_free_model", "BiasFreeTransformer"),
    "one_table": Case("one_table_model", "JointVocabTransformer"),
}


def drafted(case: Case) -> str:
    return draft(f"{DRAFTING / case.module}.py:{case.name}")


def finished(case: Case, text: str | None = None) -> str:
    """The case's draft (``text``, else drafted now) with its TODOs answered, its note on top and the closing hint
    deleted."""
    text = fill(drafted(case) if text is None else text, case.answers)
    if HINT not in text:
        raise ValueError(f"the draft of {case.module}:{case.name} no longer ends its adapter with the hint"
                         f" {SUPPLIED_HINT[0]!r}...: update HINT in {__file__}")
    text = text.replace(HINT, "")
    if case.note:
        first, rest = text.split("\n", 1)
        text = f"{first}\n\nFinished: {case.note}\n{rest}"
    return text


def fill(text: str, answers: dict[str, str | None]) -> str:
    """``text`` with each TODO comment (its wrapped lines too) deleted; where its answer is code, the
    ``raise NotImplementedError(...)`` after it becomes that code. Every TODO needs an answer, every answer its TODO."""
    lines, out, used = text.split("\n"), [], set()
    i = 0
    while i < len(lines):
        todo = TODO.match(lines[i])
        if not todo:
            out.append(lines[i])
            i += 1
            continue
        key = next((key for key in answers if todo.group(2).startswith(key)), None)
        if key is None:
            raise ValueError(f"a TODO without an answer: {lines[i].strip()!r}; answers: {list(answers)}")
        used.add(key)
        i += 1
        while i < len(lines) and CONTINUED.match(lines[i]):
            i += 1
        if answers[key] is not None:
            i = _past_raise(lines, i, key)
            out.append(todo.group(1) + answers[key])
    if set(answers) - used:
        raise ValueError(f"answers to no TODO of the draft: {sorted(set(answers) - used)}")
    # a heading left without its guesses goes too
    return "\n".join(line for j, line in enumerate(out)
                     if line != GUESSES or j + 1 < len(out) and out[j + 1].startswith("#"))


def _past_raise(lines: list[str], i: int, key: str) -> int:
    """The index after the ``raise NotImplementedError(...)`` statement at ``lines[i]`` (one line, or string
    literals on the lines after it up to the closing parenthesis)."""
    if i == len(lines) or not lines[i].strip().startswith("raise NotImplementedError("):
        raise ValueError(f"the TODO {key!r} is answered with code, but no raise NotImplementedError follows it")
    while not lines[i].rstrip().endswith(")"):
        i += 1
    return i + 1
