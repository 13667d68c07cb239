"""The suite's power, measured: run every check against every mutant and tabulate what is caught.

A mutant is *killed* when at least one check fails or errors on it; its ``CAUGHT_BY`` names the
checks that must. The matrix shows, per mutant, the checks that caught it (x), the checks it names
but that missed it (!), and the unexpected catches (+).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from conformance.implementations import mutants

CAUGHT = ("failed", "error")


@dataclass
class MutantRow:
    name: str
    bug: str
    expected: set[str]
    caught: set[str] = field(default_factory=set)

    @property
    def killed(self) -> bool:
        return bool(self.caught)

    @property
    def missed(self) -> set[str]:
        return self.expected - self.caught

    @property
    def unexpected(self) -> set[str]:
        return self.caught - self.expected


def catalogue() -> list[MutantRow]:
    rows = []
    for name in mutants.names():
        module = importlib.import_module(f"conformance.implementations.mutants.{name}")
        bug = (module.__doc__ or name).strip().splitlines()[0]
        rows.append(MutantRow(name, bug, set(module.CAUGHT_BY)))
    return rows


def tabulate(rows: list[MutantRow], results) -> list[MutantRow]:
    by_impl = {f"mutant:{row.name}": row for row in rows}
    for result in results:
        row = by_impl.get(result.impl)
        if row and result.status in CAUGHT:
            row.caught.add(result.id)
    return rows


def render(rows: list[MutantRow]) -> str:
    lines = [f"{'mutant':<40} {'caught by':>9}  {'missed':>6}  {'extra':>5}  bug"]
    for row in rows:
        status = "KILLED " if row.killed else "SURVIVED"
        lines.append(f"{row.name:<40} {len(row.caught):>9}  {len(row.missed):>6}  {len(row.unexpected):>5}  "
                     f"{status} {row.bug}")
        for check in sorted(row.missed):
            lines.append(f"    ! named in CAUGHT_BY but passed: {check}")
        for check in sorted(row.unexpected):
            lines.append(f"    + also caught by: {check}")
    killed = sum(row.killed for row in rows)
    lines.append("")
    lines.append(f"kill rate: {killed}/{len(rows)} = {killed / max(len(rows), 1):.1%}")
    survivors = [row.name for row in rows if not row.killed]
    lines.append("survivors: " + (", ".join(survivors) if survivors else "none"))
    return "\n".join(lines) + "\n"
