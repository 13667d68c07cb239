"""``grade --init-gradescope DIR``: the files an instructor zips and uploads as a Gradescope autograder.

Gradescope builds an image from ``setup.sh`` (run once, as root, on Ubuntu), then for each submission
copies the student's files to ``/autograder/submission/`` and runs ``run_autograder``, which must leave
``/autograder/results/results.json``. One container per submission: Gradescope is the scheduler.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.grading.points import TEMPLATE

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
# bubblewrap: the sandbox each submission's code runs in (docs/grading.md, "Walls").
apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
# The suite from the wheel uploaded beside this script, never a name looked up on a package index. CPU-only torch
# keeps the image small; the suite needs no GPU.
/autograder/venv/bin/pip install -q --extra-index-url https://download.pytorch.org/whl/cpu \\
    "/autograder/source/{wheel}[{extras}]"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission; the student's files are in /autograder/submission.
set -uo pipefail
mkdir -p /autograder/results
cd /autograder/source
/autograder/venv/bin/transformer-conformance grade /autograder/submission --one \\
    --adapter-name {adapter_name}{notebook} --points /autograder/source/points.toml {training}\\
    --gradescope /autograder/results/results.json --json /autograder/results/report.json
status=$?
if [ ! -s /autograder/results/results.json ]; then  # fail closed: never an empty (full-marks) result
    printf '{{"score": 0, "output": "the grader ended without a result (status %s); contact the instructor"}}' \\
        "$status" > /autograder/results/results.json
fi
exit 0
"""

README = """Upload as a Gradescope autograder: zip setup.sh, run_autograder, points.toml and the suite's wheel (the
files, not this folder): `cd {folder} && zip autograder.zip setup.sh run_autograder points.toml {wheel}`.
Edit points.toml first (docs/grading.md in transformer-conformance describes it). Students submit
{submits}.
"""


def init_gradescope(folder: str, *, adapter_name: str = "adapter.py", points: str | None = None,
                    training: bool = False, notebook_adapter: str | None = None) -> list[Path]:
    """Write setup.sh, run_autograder, points.toml (a copy of ``points`` or the template), README.txt and the suite's
    wheel, built from this copy of the suite. ``notebook_adapter``: students submit notebooks, and this file (the
    instructor's mapping, copied beside the others) runs after each one's cells."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(out)
    mapping = Path(notebook_adapter).name if notebook_adapter else None
    files = {
        "setup.sh": SETUP.format(wheel=wheel.name, extras="torch,notebook" if mapping else "torch"),
        "run_autograder": RUN.format(adapter_name=adapter_name, training="" if training else "--no-training ",
                                     notebook=f" --adapter /autograder/source/{mapping}" if mapping else ""),
        "points.toml": Path(points).read_text() if points else TEMPLATE,
        "README.txt": README.format(folder=out, wheel=wheel.name + (f" {mapping}" if mapping else ""),
                                    submits="a notebook (.ipynb)" if mapping else
                                    f"{adapter_name} (and any modules it imports)"),
        **({mapping: Path(notebook_adapter).read_text()} if mapping else {}),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        if name in ("setup.sh", "run_autograder"):
            path.chmod(0o755)
        written.append(path)
    return [*written, wheel]


# The files of the source tree a wheel is built from (pyproject.toml's package-dir maps the last four).
SOURCE = ("pyproject.toml", "README.md", "conformance", "implementations", "reports", "fixtures")


def build_wheel(out: Path) -> Path:
    """The suite's wheel in ``out``, built (pip, without fetching anything) from a copy of the source tree this
    suite runs from, so that the checkout gets no build folder. ``GradescopeSetupError`` where this suite was
    installed from a wheel (no source tree beside it)."""
    root = Path(__file__).resolve().parents[2]
    if not all((root / name).exists() for name in SOURCE):
        raise GradescopeSetupError(
            f"expected the suite's source tree at {root} (pyproject.toml, conformance/, ...), to build the wheel the"
            " autograder installs; got an installed copy. Fix: run --init-gradescope from a checkout of the suite")
    for old in out.glob("transformer_conformance-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="conformance-wheel-") as tmp:
        for name in SOURCE:
            source, target = root / name, Path(tmp) / name
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, target)
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                                "-w", str(out), tmp], capture_output=True, text=True, check=False)
    wheels = sorted(out.glob("transformer_conformance-*.whl"))
    if built.returncode != 0 or not wheels:
        raise GradescopeSetupError(f"building the suite's wheel failed (pip exited {built.returncode}):"
                                   f" {built.stderr.strip()[-800:]}. Fix: pip install setuptools wheel")
    return wheels[-1]


class GradescopeSetupError(RuntimeError):
    """The autograder's files could not be written; the message says why and the fix."""
