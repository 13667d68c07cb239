"""A Jupyter notebook as an implementation: ``NOTEBOOK.ipynb[:ATTR]`` or ``NOTEBOOK.ipynb+ADAPTER.py``.

The notebook's code cells run, in order, in a Jupyter kernel in this process (ipykernel's in-process kernel: the
kernel's own shell, so ``!command``, ``%magics`` and ``%%bash`` behave as in the notebook), then ``ADAPTER.py`` (an
instructor's file mapping the lesson's classes, run as one more cell in the notebook's namespace, so it sees them
by name), and the adapter is the namespace's ``ATTR`` (default ``adapter``). Isolated (the default for a path),
this happens in the sandboxed worker: a shell escape runs as a child of the worker, under the same walls. A cell
tagged ``conformance-skip`` (a cell that trains for an hour, downloads data, or grades itself) is not run; each
cell has its seconds (``--cell-timeout``), then it is stopped, the run going on with the next. What happened to
each cell (ran, skipped, failed, stopped) is said in the load's notes, which the report shows.

Like ``importing``, it imports only the standard library at the top (the worker imports it before the candidate
runs); ipykernel (the ``notebook`` extra) is imported when a notebook is run.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUFFIX = ".ipynb"
SKIP_TAG = "conformance-skip"
NOTES_SHOWN = 40  # cells said one by one; beyond, counted
EXTRA = "pip install 'transformer-conformance[notebook]'"


class NotebookFailed(Exception):
    """The notebook cannot give an adapter: unreadable, no kernel, or no ``ATTR`` in its namespace."""


@dataclass(frozen=True)
class NotebookTarget:
    notebook: str  # the .ipynb file
    adapter_file: str | None  # the Python file run after its cells, if any
    attr: str  # the namespace's name of the adapter

    def spec(self) -> str:
        """The target written back: ``NOTEBOOK.ipynb[+ADAPTER.py][:ATTR]``."""
        with_file = f"{self.notebook}+{self.adapter_file}" if self.adapter_file else self.notebook
        return with_file + (f":{self.attr}" if self.attr != "adapter" else "")


def parse(target: str) -> NotebookTarget | None:
    """The parts of a notebook target; None for anything else (a .py file, a module)."""
    location, colon, attr = target.rpartition(":")
    if not (colon and attr.isidentifier() and SUFFIX in location):
        location, attr = target, "adapter"
    notebook, plus, adapter_file = location.partition(SUFFIX + "+")
    if plus:
        return NotebookTarget(notebook + SUFFIX, adapter_file, attr) if adapter_file.endswith(".py") else None
    return NotebookTarget(location, None, attr) if location.endswith(SUFFIX) else None


def code_cells(path: Path) -> list[tuple[str, list[str]]]:
    """(source, tags) of each code cell, in order: nbformat 4's JSON, or nbformat 3's (its first worksheet's
    cells, their source under ``input``), read without nbformat; a byte-order mark allowed."""
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
        worksheets = document.get("worksheets") if document.get("nbformat") == 3 else None
        cells = worksheets[0]["cells"] if worksheets else document["cells"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise NotebookFailed(f"cannot read {path} as a notebook ({type(exc).__name__}: {exc}). Fix: give an .ipynb"
                             " file saved by Jupyter (nbformat 4, or 3)") from None
    found = []
    for cell in cells if isinstance(cells, list) else ():
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        tags = (cell.get("metadata") or {}).get("tags") or []
        found.append(("".join(source) if isinstance(source, list) else str(source), [str(t) for t in tags]))
    return found


class CellStopped(BaseException):
    """Raised in a cell that ran past its time (a BaseException: the cell's own ``except Exception`` lets it by)."""


GRACE_S = 10.0  # after its time, how long a cell that keeps catching CellStopped may go on before the worker ends
AGAIN_S = 0.5  # after its time, CellStopped is raised again this often (a cell may catch one)
CELL_NOT_STOPPED = 86  # the worker's exit status when a cell could not be stopped (``hard_stop``)


@contextlib.contextmanager
def time_limit(seconds: float, *, what: str = "the cell", hard_stop: bool = False):
    """Stop the code inside after ``seconds`` (SIGALRM, raised again every ``AGAIN_S``: an ``except`` that catches
    everything catches one, not all), where this is the main thread; elsewhere no limit. ``hard_stop`` (the
    sandboxed worker): code still running ``GRACE_S`` after its time ends the process, saying why, so that no
    ``except`` holds a grader for the worker's whole time."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return
    import os
    import time

    ends = time.monotonic() + seconds + GRACE_S

    def stop(signum, frame):
        if hard_stop and time.monotonic() > ends:
            os.write(2, f"\n{what} could not be stopped: it went on {GRACE_S:g} s past its {seconds:g} s (an except"
                        " that catches everything, in a loop?)\n".encode())
            os._exit(CELL_NOT_STOPPED)
        raise CellStopped

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds, AGAIN_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def kernel_shell():
    """The shell of a fresh in-process Jupyter kernel."""
    import os

    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the debugger's warning about frozen modules
    try:
        from ipykernel.inprocess.manager import InProcessKernelManager
    except ImportError as exc:
        raise NotebookFailed(f"running a notebook needs ipykernel ({exc}). Fix: {EXTRA}") from None
    manager = InProcessKernelManager()
    manager.start_kernel()
    shell = manager.kernel.shell
    # ``!command`` through a plain child process, not a pseudo-terminal (which the sandbox does not open)
    shell.system = shell.system_raw
    return shell


def run_cell(shell, source: str, seconds: float, *, what: str, hard_stop: bool) -> str | None:
    """Run one cell; None when it ran, else what stopped it (its error's last line, or the time limit)."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            with time_limit(seconds, what=what, hard_stop=hard_stop):
                result = shell.run_cell(source, store_history=True, silent=False)
        except CellStopped:  # raised between two statements the shell runs
            return f"stopped after {seconds:g} s (the cell time limit)"
    error = result.error_in_exec or result.error_before_exec
    if isinstance(error, CellStopped):
        return f"stopped after {seconds:g} s (the cell time limit)"
    if error is not None:
        return f"{type(error).__name__}: {error}"[:300]
    return None


def run_mapping(namespace: dict, source: str, name: str, seconds: float, *, hard_stop: bool) -> str | None:
    """Run the adapter file in the notebook's namespace: compiled and executed as Python, never through the kernel's
    shell, whose hooks and input transformers the notebook's own cells may have set (to read or rewrite it)."""
    try:
        with time_limit(seconds, what=name, hard_stop=hard_stop):
            exec(compile(source, name, "exec"), namespace)  # noqa: S102 - the instructor's file, in the sandbox
    except CellStopped:
        return f"stopped after {seconds:g} s (the cell time limit)"
    except BaseException as exc:  # noqa: BLE001 - whatever it raises is the load's error, said with its line
        return f"{type(exc).__name__}: {exc}"[:300]
    return None


def load(target: NotebookTarget, *, seconds: float, adapter_source: str | None = None,
         hard_stop: bool = False) -> tuple[Any, list[str]]:
    """(the adapter, the notes: what happened to each cell); ``seconds``: each cell's time (``hard_stop``: see
    ``time_limit``). The cells run in the notebook's folder, as Jupyter runs them. ``adapter_source``:
    ``target.adapter_file``'s text, read by the grader where the worker may not read the file itself."""
    import os

    path = Path(target.notebook)
    if not path.is_file():
        raise NotebookFailed(f"no file {target.notebook!r}. Fix: check the path (relative to {Path.cwd()})")
    cells = code_cells(path)
    shell = kernel_shell()
    folder, before = path.resolve().parent, os.getcwd()
    shell.user_ns["__file__"] = str(path.resolve())
    sys.path.insert(0, str(folder))  # the notebook's own modules import as they would beside it
    os.chdir(folder)  # and its files open by their names (a data file, %run helpers.py)
    outcomes: list[tuple[int, str]] = []
    try:
        for number, (source, tags) in enumerate(cells, start=1):
            if SKIP_TAG in tags:
                outcomes.append((number, f"skipped (tagged {SKIP_TAG})"))
                continue
            stopped = run_cell(shell, source, seconds, what=f"notebook cell {number}", hard_stop=hard_stop)
            outcomes.append((number, f"failed: {stopped}" if stopped else "ran"))
        if target.adapter_file is not None:
            name = Path(target.adapter_file).name
            source = adapter_source if adapter_source is not None else Path(target.adapter_file).read_text()
            stopped = run_mapping(shell.user_ns, source, name, seconds, hard_stop=hard_stop)
            if stopped:
                raise NotebookFailed(f"{name}, run after the notebook's cells, failed: {stopped}. {summary(outcomes)}")
    finally:
        os.chdir(before)
        sys.path.remove(str(folder))
    namespace = shell.user_ns
    if target.attr not in namespace:
        found = [name for name in namespace if "adapter" in name.lower() and not name.startswith("_")]
        raise NotebookFailed(f"the notebook defines no {target.attr!r}. Fix: a cell `{target.attr} = MyAdapter()`,"
                             " or an adapter file run after its cells (certify NOTEBOOK.ipynb --adapter FILE.py)"
                             + (f" (candidates: {', '.join(found)})" if found else "") + f". {summary(outcomes)}")
    return namespace[target.attr], [summary(outcomes), *detail(outcomes)]


def summary(outcomes: list[tuple[int, str]]) -> str:
    counted = {"ran": 0, "skipped": 0, "failed": 0}
    for _, outcome in outcomes:
        counted[outcome.split(" ")[0].rstrip(":")] += 1
    return (f"notebook: {len(outcomes)} code cells: {counted['ran']} ran, {counted['skipped']} skipped,"
            f" {counted['failed']} failed")


def detail(outcomes: list[tuple[int, str]]) -> list[str]:
    """One note per cell that did not simply run (at most ``NOTES_SHOWN``)."""
    odd = [(n, outcome) for n, outcome in outcomes if outcome != "ran"]
    shown = [f"notebook cell {n}: {outcome}" for n, outcome in odd[:NOTES_SHOWN]]
    return shown + ([f"notebook: {len(odd) - NOTES_SHOWN} more cells skipped or failed"] if len(odd) > NOTES_SHOWN
                    else [])
