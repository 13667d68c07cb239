"""Each hostile submission of tests/hostile, graded isolated: its outcome and how long the run took.

    python benchmarks/attacks.py

Each attack runs as ``transformer-conformance certify tests/hostile/NAME.py -k SELECTION --json``
(isolated: a path) in a fresh process, from a fresh working directory; the attacks on what a graded
submission may read or see run as ``grade`` on a submission folder in a course laid out around it
(``course/reference.py``, the instructor's solution; ``course/class/bob``, an honest classmate;
``course/class/mallory``, the attack; a home folder with a key and a token). Printed per attack: the exit
code, the statuses, the first error's message and the wall time; then whether any process the
attacks started is left, whether any forged report exists outside the workers' temporary
directories, whether any secret of the home folder reached a file, and whether the course folder changed.
The last line is the figure: ``attacks contained: <k>/<n>, total <s> s``.
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

from conformance.reports.safe_text import visible_text

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
    "detects_grader": ("lrate_matches", [], "passed"),  # it finds no grader to detect: it computes
    "kills_grader": (PE, [], "passed"),
    # a submission sees only itself: graded, in a course (its own code drops 1/sqrt(d_k), counts positions from 1)
    "copies_a_classmate": (f"{PE} or attention_matches_formula", [], "failed"),
    "imports_the_solution": (f"{PE} or attention_matches_formula", [], "failed"),
    "reads_home": (PE, ["--pass-env", "INSTRUCTOR_HOME"], "passed"),
    "inspects_its_stack": (f"{PE} or attention_matches_formula", [], "failed"),
    "reads_command_lines": (f"{PE} or attention_matches_formula", [], "failed"),
    "raises_a_lone_surrogate": (f"{PE} or layer_norm_matches_published_example", [], "error+passed"),
    "terminal_escapes": (f"{PE} or layer_norm_matches_published_example", [], "error+passed"),
}


GRADED = {"reads_golden_files"}  # a submission's view: the suite's implementations and oracle are hidden too
IN_A_COURSE = {"copies_a_classmate", "imports_the_solution", "reads_home", "inspects_its_stack", "reads_command_lines"}
SECRET = "SECRET-OF-THE-INSTRUCTOR"
HONEST = """
import _honest
from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")
    positional_encoding = staticmethod(_honest.positional_encoding)
    scaled_dot_product_attention = staticmethod(_honest.attention)


adapter = Adapter()
"""
SOLUTION = "import _honest\npositional_encoding = _honest.positional_encoding\nattention = _honest.attention\n"


def outcome(code: int, report: dict | None) -> str:
    if report is None or report["checks"][0]["id"] == "implementation_loads":
        return "load error" if code == 2 else f"no report (exit {code})"
    statuses = sorted(set(c["status"] for c in report["checks"]))
    return "+".join(statuses)


def course(tmp: Path, name: str) -> Path:
    """tmp/NAME-course: the solution, an honest classmate, the attack (mallory); the attack's folder."""
    root = tmp / f"{name}-course"
    for student, source in (("bob", HONEST), ("mallory", (HOSTILE / f"{name}.py").read_text())):
        (root / "class" / student).mkdir(parents=True)
        (root / "class" / student / "adapter.py").write_text(source)
        (root / "class" / student / "_honest.py").write_text((HOSTILE / "_honest.py").read_text())
    (root / "reference.py").write_text(SOLUTION)
    (root / "_honest.py").write_text((HOSTILE / "_honest.py").read_text())
    return root / "class" / "mallory"


def home(tmp: Path) -> Path:
    (tmp / "home" / ".ssh").mkdir(parents=True, exist_ok=True)
    (tmp / "home" / ".ssh" / "id_ed25519").write_text(SECRET + "-KEY")
    (tmp / "home" / "token.txt").write_text(SECRET + "-TOKEN")
    return tmp / "home"


def run_attack(name: str, selection: str, extra: list[str], tmp: Path) -> tuple[str, int, str, float, str]:
    workdir, report = tmp / name.replace("/", "_"), tmp / f"{name.replace('/', '_')}.json"
    workdir.mkdir()
    verb = "grade" if name in GRADED | IN_A_COURSE else "certify"
    target = course(tmp, name) if name in IN_A_COURSE else HOSTILE / f"{name}.py"
    before = files_under(tmp / f"{name}-course") if name in IN_A_COURSE else {}
    command = [sys.executable, "-m", "conformance", verb, str(target), "--json", str(report),
               *(["-k", selection] if selection else []), *extra]
    started = time.perf_counter()
    env = {**os.environ, "INSTRUCTOR_HOME": str(home(tmp))}
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600, env=env)
    wall = time.perf_counter() - started
    data = json.loads(report.read_text()) if report.exists() else None
    messages = [c["message"] for c in (data or {"checks": []})["checks"] if c["status"] != "passed" and c["message"]]
    first = visible_text(messages[0]).split("\n")[0].strip() if messages else ""  # the attack's words, shown safely
    statuses = Counter(c["status"] for c in (data or {"checks": []})["checks"])
    if name in IN_A_COURSE and files_under(tmp / f"{name}-course") != before:
        CHANGED.append(f"changed {tmp / f'{name}-course'}")
    return outcome(done.returncode, data), done.returncode, first, wall, dict(statuses)


CHANGED: list[str] = []  # course folders a graded attack changed


def leftovers(tmp: Path) -> list[str]:
    found = [f"process {p.name}" for p in Path("/proc").iterdir()
             if p.name.isdigit() and b"313.1415" in _read(p / "cmdline")]
    for path in [*tmp.rglob("*"), *map(Path, ("/tmp/report.json", "/tmp/results.json", "/tmp/junit.xml"))]:
        if path.is_file() and b"FORGED-BY-HOSTILE-ADAPTER" in _read(path):
            found.append(f"forged {path}")
        if path.is_file() and not path.is_relative_to(tmp / "home") and SECRET.encode() in _read(path):
            found.append(f"a secret of the home folder in {path}")
    return found + CHANGED


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


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
    print("left behind: " + (", ".join(left) if left else "nothing (no process, no forged report, no secret, no"
                                                            " course folder changed)"))
    print(f"attacks contained: {contained if not left else 0}/{len(ATTACKS)}, total {total:.0f} s")
    return 0 if contained == len(ATTACKS) and not left else 1


if __name__ == "__main__":
    sys.exit(main())
