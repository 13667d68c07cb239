"""What identifies a grading run, and whether a report of it is complete.

A grade's JSON report carries ``run`` = ``{suite_version, seed, options}`` and ``complete``. Two reports of the same
``run`` were judged by the same checks on the same inputs and scored by the same points, so they may sit in one
summary and a finished one need not be graded again (``grade CLASS --resume``). ``options`` holds exactly what can
change a verdict or a score (``VERDICT_OPTIONS``); what only changes where or how fast a class is graded (``--jobs``,
``--out``, ``--scheduler``) or what is also written (``--json``, ``--gradescope``) is left out.

``complete`` is written last, in one atomic replace of the report (``write_atomically``): a report without it (one
cut short by SIGKILL, or written before completeness was recorded) counts as incomplete, and so does one marked
``complete: false`` with the reason in ``incomplete`` (an interrupted grade). An incomplete report earns nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

# The options of ``grade`` that can change a verdict or a score. select, no_training: which checks run. timeout,
# worker_total_timeout, worker_memory: what is judged hung or out of memory. threads: torch's reductions, hence the
# last bits of an answer. isolate, allow_read, pass_env: what the code may read, hence whether it loads at all.
# adapter_name, notebook_adapter: which file is graded, and the instructor's mapping a notebook runs with (by its
# content, as points), cell_timeout: which cells of a notebook finish. dtype: the tolerances. points: the score
# itself (by its content: the same file edited scores differently).
VERDICT_OPTIONS = ("select", "no_training", "timeout", "worker_total_timeout", "worker_memory", "threads", "isolate",
                   "allow_read", "pass_env", "adapter_name", "notebook_adapter", "cell_timeout", "dtype")


def run_identity(args, seed: int) -> dict:
    """What identifies the run that grades with ``args`` and ``seed``: reports of equal identities may be mixed."""
    from conformance.results import suite_version

    options = {name: _plain(getattr(args, name, None)) for name in VERDICT_OPTIONS}
    options["points"] = file_identity(getattr(args, "points", None))
    if options.get("notebook_adapter"):  # the mapping by its content: the same file edited grades differently
        options["notebook_adapter"] = file_identity(options["notebook_adapter"])
    return {"suite_version": suite_version(), "seed": seed, "options": options}


def file_identity(path: str | None) -> str:
    """A file by its content (sha256: the points, a notebook's mapping), or "default"; "unreadable" if it cannot be
    read."""
    if not path:
        return "default"
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _plain(value):
    return list(value) if isinstance(value, tuple | list) else value


def is_complete(report: dict) -> bool:
    """Only a report that says so is complete: one without the mark was cut short or written by an older grade."""
    return report.get("complete") is True


def incomplete_reason(report: dict) -> str:
    if report.get("complete") is False:
        return report.get("incomplete") or "marked incomplete"
    return "not marked complete (cut short before it was finished, or written by an older grade)"


def differences(identity: dict | None, wanted: dict | None) -> str:
    """How ``identity`` (a report's ``run``) differs from ``wanted``, in words; "" when they are the same run."""
    if identity == wanted:
        return ""
    if not isinstance(wanted, dict):
        return "a run recorded (the reports of this summary have none: written by an older grade)"
    if not isinstance(identity, dict):
        return "no run recorded (written by an older grade)"
    said = []
    for key, label in (("suite_version", "suite version"), ("seed", "seed")):
        if identity.get(key) != wanted[key]:
            said.append(f"{label} {identity.get(key)} (this run: {wanted[key]})")
    theirs, ours = identity.get("options") or {}, wanted["options"]
    said += [f"{flag(name)} {theirs.get(name)!r} (this run: {ours.get(name)!r})"
             for name in sorted(set(theirs) | set(ours)) if theirs.get(name) != ours.get(name)]
    return ", ".join(said) or "another run"


def flag(option: str) -> str:
    """The command-line flag of an option of ``run.options``."""
    return "-k" if option == "select" else f"--{option.replace('_', '-')}"


def mark_complete(report: dict, identity: dict) -> dict:
    report["run"] = identity
    report["complete"] = True
    report.pop("incomplete", None)
    return report


def mark_incomplete(report: dict, identity: dict, reason: str) -> dict:
    """``report`` marked incomplete: it earns nothing (score 0), and says why."""
    report["run"] = identity
    report["complete"] = False
    report["incomplete"] = reason
    grade = report.get("grade") or {}
    report["grade"] = {"points": "none: an incomplete grade scores 0", **grade, "score": 0, "max_score": None,
                       "incomplete": reason}
    return report


def stand_in_report(name: str, path: str, identity: dict, reason: str) -> dict:
    """The report of a submission whose grader left none: no checks, incomplete, 0 points, with why."""
    report = {"schema": "transformer-conformance/report", "submission": {"name": name, "path": path},
              "seed": identity["seed"], "checks": [], "verdict": {}}
    return mark_incomplete(report, identity, reason)


def read_report(path: Path) -> dict | None:
    """The report at ``path``; None if there is none or it is not a report (half written, not JSON)."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def write_atomically(path: Path, text: str) -> None:
    """``text`` to ``path`` in one rename: a reader (or a kill) never finds it half written. The temporary file sits
    beside it (a rename does not cross file systems), named so that no ``*.json`` search picks it up."""
    path = Path(path)
    # short: a report's own name may already be as long as a file name gets
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".writing-", suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_report(path: Path, report: dict) -> None:
    from conformance.reports.json_report import render

    write_atomically(path, render(report))  # valid UTF-8 whatever a submission sent
