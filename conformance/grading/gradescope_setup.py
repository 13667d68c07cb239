"""``grade --init-gradescope DIR``: the files an instructor zips and uploads as a Gradescope autograder.

Gradescope builds an image from ``setup.sh`` (run once, as root, on Ubuntu), then for each submission
copies the student's files to ``/autograder/submission/`` and runs ``run_autograder``, which must leave
``/autograder/results/results.json``. One container per submission: Gradescope is the scheduler.
"""

from __future__ import annotations

from pathlib import Path

from conformance.grading.points import TEMPLATE
from conformance.results import suite_version

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip
python3 -m venv /autograder/venv
# CPU-only torch keeps the image small; the suite needs no GPU.
/autograder/venv/bin/pip install -q --extra-index-url https://download.pytorch.org/whl/cpu \\
    "transformer-conformance[torch]=={version}"
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission; the student's files are in /autograder/submission.
set -uo pipefail
mkdir -p /autograder/results
cd /autograder/source
/autograder/venv/bin/transformer-conformance grade /autograder/submission --one \\
    --adapter-name {adapter_name} --points /autograder/source/points.toml {training}\\
    --gradescope /autograder/results/results.json --json /autograder/results/report.json
status=$?
if [ ! -s /autograder/results/results.json ]; then  # fail closed: never an empty (full-marks) result
    printf '{{"score": 0, "output": "the grader ended without a result (status %s); contact the instructor"}}' \\
        "$status" > /autograder/results/results.json
fi
exit 0
"""

README = """Upload as a Gradescope autograder: zip setup.sh, run_autograder and points.toml (the files, not
this folder): `cd {folder} && zip autograder.zip setup.sh run_autograder points.toml`.
Edit points.toml first (docs/grading.md in transformer-conformance describes it). Students submit
{adapter_name} (and any modules it imports).
"""


def init_gradescope(folder: str, *, adapter_name: str = "adapter.py", points: str | None = None,
                    training: bool = False) -> list[Path]:
    """Write setup.sh, run_autograder, points.toml (a copy of ``points`` or the template), README.txt."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "setup.sh": SETUP.format(version=suite_version()),
        "run_autograder": RUN.format(adapter_name=adapter_name, training="" if training else "--no-training "),
        "points.toml": Path(points).read_text() if points else TEMPLATE,
        "README.txt": README.format(folder=out, adapter_name=adapter_name),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        if name in ("setup.sh", "run_autograder"):
            path.chmod(0o755)
        written.append(path)
    return written
