"""Mutants: single-bug variants of the reference or of the NumPy implementation, one module each (docs/mutants.md).

Every mutant's docstring names its bug on the first line (the kill matrix and the diagnosis show it),
then the paper section it violates, quoted. Each module has ``adapter``; load one as ``mutant:<module name>``.
What certifying it must give lives apart, in ``expected.toml`` (one table per mutant, read by ``expected()``):
the exact checks that fail, error and advise, the message texts pinned, and whether only training shows
the bug. ``tests/test_mutant_catalogue.py`` certifies every mutant and requires exactly those outcomes: a
mutant that survives is a hole in the suite. ``tools/measure_mutants.py`` measures them and rewrites the file.

Two more things each mutant's module is the one home of: the sentences the diagnosis says where it recognises
the bug by its signature without rerunning the mutant (an optional ``SIGNATURES`` dict, read by ``signatures``),
and, through how it is built, whether it composes with another (``compose``, ``_compose.py``).

A component mutant is a ``NumpyAdapter`` subclass (float64, no torch: a NumPy or JAX candidate is diagnosed
without torch); training, layer-wiring and model-structure bugs are the torch reference with one change
(``_build.py``).
"""

from __future__ import annotations

import ast
import json
import pkgutil
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from conformance.implementations.mutants._compose import compose as compose  # how mutants combine

EXPECTED_PATH = Path(__file__).with_name("expected.toml")
HALF_DTYPES = ("float16", "bfloat16")  # a mutant's table for a half-precision run (--dtype), where it has one
# The sets of check ids, by key of expected.toml and the report status each one counts.
OUTCOMES = {"caught_by": "failed", "errored": "error", "advisory": "advisory"}


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _module(name: str) -> ast.Module:
    return ast.parse(Path(__file__).with_name(f"{name}.py").read_text())


def bug(name: str) -> str:
    """The first line of a mutant's docstring, read without importing it (no torch needed)."""
    doc = ast.get_docstring(_module(name)) or name
    return doc.strip().splitlines()[0]


def signatures(name: str) -> dict[str, str]:
    """A mutant's ``SIGNATURES``: what the diagnosis says where it recognises the bug by its signature, without
    rerunning the mutant ({where it is recognised: the sentence}); {} when the module declares none. Read
    without importing it (no torch needed), as ``bug`` is: one home for every sentence about the bug."""
    for node in _module(name).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SIGNATURES" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


@dataclass(frozen=True)
class Expected:
    """What certifying one mutant gives: ``--no-training``, or with training when ``training``.

    ``caught_by`` failed, ``errored`` error, ``advisory`` advisory (a convention of the suite the mutant
    breaks: docs/claims.md; not a kill); ``messages`` {check id: a text its failure message contains};
    ``caught_by_training`` the training checks that catch a forward mutant when it is trained; ``described``
    the words a correct description of the bug must contain, every one (``benchmarks/diagnosis_accuracy.py``,
    with the mutant left out of the catalogue); ``consequences`` phrases of other true descriptions, each what a
    measurement found of this bug's effects (a description that contains neither is counted false)."""

    caught_by: frozenset[str] = frozenset()
    errored: frozenset[str] = frozenset()
    advisory: frozenset[str] = frozenset()
    messages: dict[str, str] = field(default_factory=dict)
    training: bool = False
    caught_by_training: frozenset[str] | None = None
    described: tuple[str, ...] = ()
    consequences: tuple[str, ...] = ()
    dtypes: dict[str, Expected] = field(default_factory=dict)  # {"float16": what certifying it --dtype float16 gives}

    @property
    def caught(self) -> frozenset[str]:
        return self.caught_by | self.errored | self.advisory

    @property
    def caught_in_some_dtype(self) -> bool:
        return bool(self.caught) or any(e.caught for e in self.dtypes.values())

    @classmethod
    def from_table(cls, table: dict) -> Expected:
        unknown = set(table) - {*OUTCOMES, "messages", "training", "caught_by_training", "described", "consequences",
                                *HALF_DTYPES}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        sets = {key: frozenset(table.get(key, ())) for key in OUTCOMES}
        training_set = table.get("caught_by_training")
        dtypes = {dtype: cls.from_dtype_table(table[dtype]) for dtype in HALF_DTYPES if dtype in table}
        return cls(**sets, messages=dict(table.get("messages", {})), training=bool(table.get("training", False)),
                   caught_by_training=None if training_set is None else frozenset(training_set),
                   described=tuple(table.get("described", ())), consequences=tuple(table.get("consequences", ())),
                   dtypes=dtypes)

    @classmethod
    def from_dtype_table(cls, table: dict) -> Expected:
        """A half dtype's table: the sets and the pinned messages of ``certify --dtype`` (``--no-training``)."""
        unknown = set(table) - {*OUTCOMES, "messages"}
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)} in a dtype's table")
        return cls(**{key: frozenset(table.get(key, ())) for key in OUTCOMES}, messages=dict(table.get("messages", {})))


def expected(path: Path = EXPECTED_PATH) -> dict[str, Expected]:
    """{mutant name: Expected}, from ``expected.toml``."""
    tables = tomllib.loads(path.read_text())
    found = {}
    for name, table in tables.items():
        try:
            found[name] = Expected.from_table(table)
        except ValueError as exc:
            raise ValueError(f"{path.name} [{name}]: {exc}") from None
    return found


HEADER = """\
# What certifying each mutant of implementations/mutants/ gives, one table per mutant (docs/mutants.md).
#
#   caught_by           the exact check ids that fail (certified --no-training; with training if training = true)
#   errored             the exact check ids that end in an error (a wrong shape, say)
#   advisory            the exact check ids advised on: a convention of the suite the mutant breaks (not a kill)
#   training            true for a bug only training can show
#   caught_by_training  the training checks that catch a forward mutant when it is trained (tests/test_training.py)
#   messages            {check id: a text its failure message must contain}
#   described           the words a correct description must contain, every one, with the mutant left out of the
#                       catalogue (benchmarks/diagnosis_accuracy.py); consequences: phrases of other true ones
#   [name.float16]      for a half-precision bug: its caught_by, errored, advisory (and messages) certified
#                       --dtype float16 --no-training; [name.bfloat16] likewise
#
# Measured, then reviewed: `python tools/measure_mutants.py [names] [--jobs 2]` prints each difference from this
# file, `--write` rewrites it (the whole file, in this layout: a mutant's story belongs in its docstring).
"""


def _key(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z0-9_-]+", text) else json.dumps(text, ensure_ascii=False)


def _strings(key: str, ids) -> str:
    if not ids:
        return f"{key} = []\n"
    return f"{key} = [\n" + "".join(f"    {json.dumps(i, ensure_ascii=False)},\n" for i in sorted(ids)) + "]\n"


def render(tables: dict[str, Expected]) -> str:
    """The text of ``expected.toml`` for ``tables``, sorted by mutant (``expected(render(t)) == t``)."""
    parts = [HEADER]
    for name in sorted(tables):
        e = tables[name]
        text = f"\n[{name}]\n" + _strings("caught_by", e.caught_by) + _strings("errored", e.errored)
        if e.advisory:
            text += _strings("advisory", e.advisory)
        if e.training:
            text += "training = true\n"
        if e.caught_by_training is not None:
            text += _strings("caught_by_training", e.caught_by_training)
        if e.described:
            text += f"described = {json.dumps(list(e.described), ensure_ascii=False)}\n"
        if e.consequences:
            text += f"consequences = {json.dumps(list(e.consequences), ensure_ascii=False)}\n"
        if e.messages:
            text += f"\n[{name}.messages]\n" + "".join(
                f"{_key(k)} = {json.dumps(v, ensure_ascii=False)}\n"
                for k, v in sorted(e.messages.items()))
        for dtype, d in sorted(e.dtypes.items()):
            text += f"\n[{name}.{dtype}]\n" + _strings("caught_by", d.caught_by) + _strings("errored", d.errored)
            if d.advisory:
                text += _strings("advisory", d.advisory)
            if d.messages:
                text += f"\n[{name}.{dtype}.messages]\n" + "".join(
                    f"{_key(k)} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in sorted(d.messages.items()))
        parts.append(text)
    return "".join(parts)
