"""docs/walkthrough-jax.md, followed literally: its commands run as written, its adapter is the page's code, on
docs/walkthrough/my_flax_transformer.py. Needs the ``[jax]`` extra (the default run skips this file). Step 1
(``pip install``) is the one step not run: the package is installed already, and these machines have no network."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flax")

DOCS = Path(__file__).parents[1] / "docs"
PAGE = (DOCS / "walkthrough-jax.md").read_text()
STEPS = re.findall(r"```bash\n(.*?)```", PAGE, re.S)
ADAPTER = next(block for block in re.findall(r"```python\n(.*?)```", PAGE, re.S) if block.startswith('"""Adapter of'))


def run(command: str, folder: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, shell=True, cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=1500)


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copy(DOCS / "walkthrough" / "my_flax_transformer.py", tmp_path)
    return tmp_path


def test_the_page_has_the_steps_this_test_follows():
    assert [step.split()[0:2] for step in STEPS] == [["pip", "install"], ["transformer-conformance", "template"],
                                                    ["transformer-conformance", "certify"]]
    assert ADAPTER == (DOCS / "walkthrough" / "my_flax_adapter.py").read_text()  # the copy a reader can run


def without_todos(draft: str) -> list[str]:
    """The draft's code, its TODO lines (step 3 deletes them) and its header aside."""
    code = draft.split('"""', 2)[2]
    return [line for line in code.splitlines() if "TODO" not in line and line != "# Check these guesses:"
            and not line.lstrip().startswith(("# greedy", "# train_step"))]


def test_step_2_drafts_the_pages_adapter(folder):
    drafted = run(STEPS[1], folder)
    assert drafted.returncode == 0, drafted.stderr
    assert without_todos((folder / "my_flax_adapter.py").read_text()) == without_todos(ADAPTER)
    assert "TODO encoder layer norms" in (folder / "my_flax_adapter.py").read_text()  # the guesses step 3 reads


@pytest.mark.slow
def test_step_4_certifies_the_pages_adapter_with_the_counts_the_page_gives(folder):
    (folder / "my_flax_adapter.py").write_text(ADAPTER)
    certified = run(STEPS[2], folder)
    assert certified.returncode == 0, certified.stdout[-3000:] + certified.stderr[-3000:]
    found = {check["id"]: check["status"] for check in json.loads((folder / "report.json").read_text())["checks"]}
    statuses = sorted(set(found.values()))
    assert set(statuses) <= {"passed", "not_implemented", "advisory"}, statuses
    announced = int(re.search(r"(\d+) checks pass and none fails", PAGE).group(1))
    assert sum(status == "passed" for status in found.values()) == announced
