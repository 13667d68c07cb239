"""What ``template --from`` leaves a person to do: for each drafted model, the draft's length, the finished adapter's,
the TODOs and every wrong guess the draft still makes.

    python benchmarks/drafts.py

The models are the public-style ones of tests/drafting/ (each finished by tests/drafting/finishing.py: today's
draft with the answers a user gives its TODOs, certified by tests/test_drafting.py) and the walk-through's
(docs/walkthrough/, finished with four parts added). *Lines*: all the file's lines, and in brackets its code lines
(``adapter_lines.code_lines``: no blank line, comment or docstring). *TODOs*: the draft's TODO comments, and how many
of them block building (``module(c)`` raises until they are resolved) or ask for a function (``encode``/``decode``
that raise). *Wrong guesses*: what the draft states as code that the finished adapter changes: an entry of NAMES or
ATTENTION, a declaration in ``supports``/``reasons``, an argument of the construction (for the drafting models, what
their answers change). docs/walkthrough.md ("How much of the adapter the draft writes") has the table.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRAFTING = ROOT / "tests" / "drafting"
WALKTHROUGH = ROOT / "docs" / "walkthrough"
# shown as, and the case of tests/drafting/finishing.py
DRAFTING_CASES = [("(a) config dataclass", "config"), ("(b) Seq2Seq(encoder, decoder, ...)", "seq2seq"),
                  ("(c) untied output matrix", "untied"), ("(d) bias-free attention, biased FFN", "bias_free"),
                  ("(e) one joint table, tied by assignment", "one_table")]
WALKED = ("walk-through (my_transformer)", WALKTHROUGH / "my_transformer.py", "Transformer",
          WALKTHROUGH / "my_adapter.py")


def literal(text: str, opening: str) -> str | None:
    """The bracketed literal after ``opening`` (its closing bracket the first at the opening's indentation or on its
    line), else None."""
    start = text.find(opening)
    if start < 0:
        return None
    depth, i = 0, start + len(opening) - 1
    for j in range(i, len(text)):
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(text[j], 0)
        if depth == 0:
            return text[start: j + 1]
    return None


def declared(text: str, opening: str) -> dict:
    """The dict literal after ``opening`` (NAMES, ATTENTION, supports, reasons), empty where there is none."""
    block = literal(text, opening)
    return ast.literal_eval(block[block.index("{"):]) if block else {}


def construction(text: str) -> set[str]:
    """The construction's arguments (``name=value``) and calls, wherever the draft writes them."""
    block = literal(text, "lambda c: ") or ""
    if "def module(c):" in text:
        block = text.split("def module(c):")[1].split("\n\n\n")[0]
    code = "\n".join(line for line in block.splitlines() if not line.strip().startswith(("#", "raise", '"')))
    return set(re.findall(r"(\w+)=([^,()\n]+(?:\([^()]*\))?)", code)) | set(re.findall(r"(\w+) = (\w+)\(", code))


def wrong_guesses(draft: str, finished: str) -> list[str]:
    wrong = []
    for opening in ("NAMES = {", "ATTENTION = {", "supports={", "reasons={"):
        was, now = declared(draft, opening), declared(finished, opening)
        what = opening.split()[0].rstrip("={")
        wrong += [f"{what}[{key!r}]: {was.get(key, 'missing')!r} -> {now.get(key, 'removed')!r}"
                  for key in dict.fromkeys([*was, *now]) if was.get(key) != now.get(key)]
    was, now = construction(draft), construction(finished)
    wrong += [f"construction: {'='.join(pair)}" for pair in sorted(was ^ now)]
    return wrong


def todo_counts(draft: str) -> tuple[int, int, int]:
    """(TODO comments, those that block building, functions to write)."""
    todos = sum(bool(re.match(r"\s*#\s*TODO", line)) for line in draft.splitlines())
    module = draft.split("def module(c):")[1].split("\n\n\n")[0] if "def module(c):" in draft else ""
    blocking = sum(bool(re.match(r"\s*#\s*TODO", line)) for line in module.split("raise NotImplementedError")[0]
                   .splitlines()) if "raise NotImplementedError" in module else 0
    functions = len(re.findall(r"^def (encode|decode)\(m, .*\n(?:\s+#.*\n)*\s+raise NotImplementedError", draft, re.M))
    return todos, blocking, functions


def measure(text: str, done: str) -> dict:
    """The figures of one draft (``text``) and its finished adapter (``done``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from adapter_lines import code_lines

    todos, blocking, functions = todo_counts(text)
    return {"draft": len(text.splitlines()), "draft_code": code_lines(text), "finished": len(done.splitlines()),
            "finished_code": code_lines(done), "todos": todos, "blocking": blocking, "functions": functions,
            "wrong": wrong_guesses(text, done)}


def drafts_and_finished() -> list[tuple[str, str, str]]:
    """(shown as, the draft, the finished adapter) of every model."""
    from conformance.adapters.draft import draft

    sys.path.insert(0, str(DRAFTING))
    from finishing import CASES, drafted, finished

    found = []
    for shown, case in DRAFTING_CASES:
        text = drafted(CASES[case])
        found.append((shown, text, finished(CASES[case], text)))
    shown, model, name, adapter = WALKED
    return [*found, (shown, draft(f"{model}:{name}"), adapter.read_text())]


def main() -> None:
    print("| model | draft lines (code) | finished adapter lines (code) | TODOs (blocking, functions to write) |"
          " wrong guesses left in the draft |")
    print("| --- | --- | --- | --- | --- |")
    for shown, text, done in drafts_and_finished():
        m = measure(text, done)
        wrong = "; ".join(m["wrong"]) or "none"
        print(f"| {shown} | {m['draft']} ({m['draft_code']}) | {m['finished']} ({m['finished_code']}) |"
              f" {m['todos']} ({m['blocking']}, {m['functions']}) | {wrong} |")


if __name__ == "__main__":
    main()
