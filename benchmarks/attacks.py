"""Each hostile submission of tests/hostile, graded isolated: its outcome and how long the run took.

    python benchmarks/attacks.py

Each attack runs as ``transformer-conformance certify tests/hostile/NAME.py -k SELECTION --json``
(isolated: a path; ``grade`` for the one that reads the suite's files) in a fresh process, from a
fresh working directory. Printed per attack: the exit
code, the statuses, the first error's message and the wall time; then whether any process the
attacks started is left, and whether any forged report exists outside the workers' temporary
directories. The last line is the figure: ``attacks contained: <k>/<n>, total <s> s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HOSTILE = Path(__file__).parents[1] / "tests" / "hostile"
LAYER_NORM = "layer_norm_matches_published_example or layer_norm_matches_formula"
PE = "pe_matches_published_values or pe_position_0"
ATTACKS = {  # name: (selection, extra arguments, what a contained run ends in)
    "exit_at_import": ("", [], "load error"),
    "os_exit_at_import": ("", [], "load error"),
    "os_exit_mid_call": (f"{PE} or layer_norm_matches_published_example", [], "error+passed"),
    "atexit_exit_zero": ("layer_norm_matches_published_example", [], "failed"),
    "infinite_loop": (LAYER_NORM, ["--timeout", "2"], "error"),
    "memory_bomb": ("layer_norm_matches_published_example", ["--worker-memory", "1024"], "error"),
    "ignores_sigterm": (LAYER_NORM, ["--timeout", "2"], "error"),
    "background_process": (PE, [], "passed"),
    "stdout_flood": ("layer_norm_matches_published_example", [], "error"),
    "patches_numpy": (LAYER_NORM, [], "failed"),
    "patches_torch": (LAYER_NORM, [], "failed"),
    "patches_math": ("lrate_matches_published_paper_table or lrate_matches_formula_for_any_step", [], "failed"),
    "patches_ndarray_eq": ("pe_matches_published_values or pe_matches_formula_for_any_size", [], "failed"),
    "ndarray_subclass": (LAYER_NORM, [], "failed"),
    "tensor_subclass": ("layer_norm_matches_published_example", [], "error"),
    "nan_and_inf": ("layer_norm_matches_published_example or lrate_matches_published_paper_table", [], "error"),
    "wrong_types": ("layer_norm_matches_published_example or lrate_matches_published_paper_table", [], "error"),
    "mutates_inputs": (LAYER_NORM, [], "failed"),
    "output_views_input": (LAYER_NORM, [], "passed"),
    "conftest_marks_passed/adapter": (LAYER_NORM, [], "failed"),
    "forges_reports": ("layer_norm_matches_published_example", [], "failed"),
    "reads_golden_files": ("pe_matches_published_values or layer_norm_matches_published_example", [], "failed"),
    "hard_coded": ("lrate_matches or published_layer_norm_example or layer_norm_matches", [], "failed+passed"),
    "detects_grader": ("lrate_matches", [], "failed+passed"),
    "kills_grader": (PE, [], "passed"),
    "lies_about_its_pid": (LAYER_NORM, [], "passed"),
}


GRADED = {"reads_golden_files"}  # a submission's view: the suite's implementations and oracle are hidden too


def outcome(code: int, report: dict | None) -> str:
    if report is None or report["checks"][0]["id"] == "implementation_loads":
        return "load error" if code == 2 else f"no report (exit {code})"
    statuses = sorted(set(c["status"] for c in report["checks"]))
    return "+".join(statuses)


def run_attack(name: str, selection: str, extra: list[str], tmp: Path) -> tuple[str, int, str, float, str]:
    workdir, report = tmp / name.replace("/", "_"), tmp / f"{name.replace('/', '_')}.json"
    workdir.mkdir()
    verb = "grade" if name in GRADED else "certify"
    command = [sys.executable, "-m", "conformance", verb, str(HOSTILE / f"{name}.py"), "--json", str(report),
               *(["-k", selection] if selection else []), *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    data = json.loads(report.read_text()) if report.exists() else None
    messages = [c["message"] for c in (data or {"checks": []})["checks"] if c["status"] != "passed" and c["message"]]
    first = (messages[0].splitlines()[0] if messages else "").strip()
    statuses = Counter(c["status"] for c in (data or {"checks": []})["checks"])
    return outcome(done.returncode, data), done.returncode, first, wall, dict(statuses)


def leftovers(tmp: Path) -> list[str]:
    found = [f"process {p.name}" for p in Path("/proc").iterdir()
             if p.name.isdigit() and b"313.1415" in _read(p / "cmdline")]
    for path in [*tmp.rglob("*"), *map(Path, ("/tmp/report.json", "/tmp/results.json", "/tmp/junit.xml"))]:
        if path.is_file() and b"FORGED-BY-HOSTILE-ADAPTER" in _read(path):
            found.append(f"forged {path}")
    return found


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def main() -> int:
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    contained, total = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        print(f"{'attack':<30} {'expected':<14} {'outcome':<14} {'exit':>4} {'time':>7}  first message")
        for name, (selection, extra, expected) in ATTACKS.items():
            got, code, first, wall, _ = run_attack(name, selection, extra, tmp)
            ok = got == expected and code != 0 or (got == expected == "passed" and code == 0)
            contained += ok
            total += wall
            print(f"{name:<30} {expected:<14} {got:<14} {code:>4} {wall:>6.1f}s  {first[:110]}", flush=True)
        left = leftovers(tmp)
    print("left behind: " + (", ".join(left) if left else "nothing (no process, no forged report)"))
    print(f"attacks contained: {contained if not left else 0}/{len(ATTACKS)}, total {total:.0f} s")
    return 0 if contained == len(ATTACKS) and not left else 1


if __name__ == "__main__":
    sys.exit(main())
