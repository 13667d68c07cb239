"""One check's result as plain data, and the run's metadata: what every report is rendered from."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("passed", "failed", "error", "advisory", "deviation", "supplied", "not_implemented", "blocked")
"""What a check can end in (docs/report-format.md):

- passed: the claim holds;
- failed / error: the candidate's answer violates a claim of the paper or the lessons, or cannot be compared;
- advisory: a convention the suite adds where the paper and the lessons are silent (a fully masked row) did
  not hold; printed apart, and the exit code ignores it unless ``--strict``;
- deviation: failed or errored, but the maintainer declared it a known, intentional deviation
  (``--deviations FILE``), or passed only through a conversion that stands for one (a loss summed over tokens,
  converted by ``mean_from_sum``); the exit code ignores it;
- supplied: passed, but on code the suite's helpers supplied (``TorchModel``'s greedy loop, the paper's training
  recipe, ``torch_layer_norm``): not credited to the implementation, and not counted against it;
- not_implemented: the adapter does not provide a part, or no configuration, the check needs;
- blocked: a prerequisite did not pass, so this check's verdict would say nothing new.
"""
FAILING = ("failed", "error")
"""The statuses that make a run "not conformant" (exit code 1)."""
RAN = ("passed", "advisory", "deviation")
"""The statuses of a check that ran to a verdict without counting against conformance."""
SCHEMA_VERSION = 1


@dataclass
class CheckResult:
    id: str
    impl: str
    title: str
    section: str
    status: str
    message: str = ""
    part: str | None = None
    expected: Any = None
    actual: Any = None
    index: list[int] | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    tolerance: dict | None = None
    margin: float | None = None
    likely_cause: str | None = None
    blocked_by: str | None = None
    reproduction: str | None = None
    duration_s: float = 0.0
    measurements: list[dict] = field(default_factory=list)
    diagnosis: list[dict] = field(default_factory=list)  # mutants whose output the failing output matches
    patterns: list[str] = field(default_factory=list)  # structural patterns the probe found (diagnosis.PATTERNS)
    descriptions: list[dict] = field(default_factory=list)  # what was measured where no known bug matches
    facts: list[str] = field(default_factory=list)  # ids of the published facts the check compared against
    facts_missed: list[str] = field(default_factory=list)  # those it compared and found not reproduced, named
    claim: dict | None = None  # {source: paper | lesson | convention, text, where}: what the verdict rests on
    examples: dict | None = None  # property checks: {ran, skipped, reasons}: examples run, and skipped as unsupported
    deviation: dict | None = None  # {name, reason, confirmed}: the declared deviation a non-passing check matches
    difference: dict | None = None  # a failing tensor's actual - expected around the worst index (compare.py)
    data: dict | None = None  # what a check recorded beyond comparisons (check.record): curves, tables
    provenance: dict | None = None  # {supplied: {part: record}, converted: [...]}: whose code answered (provenance.py)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CheckResult:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def unsupported(results: list[CheckResult]) -> list[dict]:
    """The configurations the candidate could not build, in its own words: [{reason, checks, examples_skipped}],
    gathered from the examples each check skipped."""
    found: dict[str, dict] = {}
    for result in results:
        examples = result.examples or {}
        for reason in examples.get("reasons", []):
            entry = found.setdefault(reason, {"reason": reason, "checks": 0, "examples_skipped": 0})
            entry["checks"] += 1
            entry["examples_skipped"] += examples.get("skipped", 0) // max(1, len(examples["reasons"]))
    return sorted(found.values(), key=lambda entry: -entry["checks"])


def plain(value):
    """A value made JSON- and xdist-serialisable: numpy scalars and arrays as Python numbers and lists."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def count_statuses(results: list[CheckResult]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for result in results:
        counts[result.status] += 1
    return counts


def suite_version() -> str:
    try:
        return importlib.metadata.version("transformer-conformance")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def git_sha() -> str | None:
    """The suite's own commit, when it runs from a checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def fixtures_sha256() -> str:
    """One hash over every golden file, so a report says which fixtures certified it."""
    import conformance.fixtures as fixtures

    root = Path(fixtures.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in {".toml", ".npz", ".json"} and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def environment() -> dict:
    versions = {}
    for package in ("numpy", "torch", "pytest", "hypothesis", "jax"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "versions": versions,
    }
