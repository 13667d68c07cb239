"""``transformer-conformance watch``: a run at the start and on every save, the checks that failed last time first, the
summary with the likely causes, and Ctrl-C leaves no process of it behind. Run as a user runs it: a process of its
own, a file edited beside it."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cluster import alive, children_of_tree

from conformance.run.watch import SETTLE_S, FailedFirst

SELECTION = "masked_weights_are_exactly_zero or pe_matches_published_values"
BUGGY = "from conformance.implementations.mutants.attention_mask_ignored import adapter  # noqa: F401\n"
FIXED = "from conformance.implementations.reference.adapter import adapter  # noqa: F401\n"
HANGING = """import time

from conformance.implementations.reference.adapter import adapter as reference


class Hanging:
    conventions = reference.conventions

    def positional_encoding(self, n, d_model):
        time.sleep(600)


adapter = Hanging()
"""


class Watch:
    def __init__(self, adapter: Path):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "conformance", "watch", str(adapter), "-k", SELECTION],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []

    def next_summary(self, timeout_s: float = 180) -> list[str]:
        """The lines of the next summary (up to its "watching N files" line)."""
        deadline, summary = time.monotonic() + timeout_s, []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            assert line, "watch ended:\n" + "".join(self.lines)
            self.lines.append(line)
            summary.append(line.rstrip("\n"))
            if line.startswith("watching "):
                return summary
        raise AssertionError("no summary in time:\n" + "".join(self.lines))


def save(path: Path, text: str) -> float:
    """As an editor may: truncate, then write (two changes of the file, one save). Returns the seconds between the
    two, which a loaded machine can stretch past the watch's settling time (then they are two saves)."""
    with open(path, "w") as file:
        file.flush()
        os.utime(path)
        truncated = time.monotonic()
        time.sleep(0.01)
        file.write(text)
        file.flush()
        return time.monotonic() - truncated


def processes_of(pid: int, at_least: int, window_s: float = 2.0, timeout_s: float = 120) -> set[int]:
    """Every process seen below ``pid`` over ``window_s`` and until at least ``at_least`` were seen at once (a loaded
    machine starts the run and its worker late)."""
    seen: set[int] = set()
    start = time.monotonic()
    while time.monotonic() < start + timeout_s:
        now = set(children_of_tree(pid))
        seen |= now
        if len(now) >= at_least and time.monotonic() >= start + window_s:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} processes below the watch after {timeout_s} s: {seen}")


def stopped(watch: Watch, seen: set[int], timeout_s: float = 60) -> int:
    """The watch's exit code once it has stopped; if it has not within ``timeout_s``, a failure that says what was
    still running below it and what it printed last (a stop that hangs must explain itself)."""
    try:
        return watch.process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        table = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,args", "-p",
                                ",".join(str(pid) for pid in {watch.process.pid, *seen})],
                               capture_output=True, text=True).stdout
        os.killpg(watch.process.pid, signal.SIGKILL)
        rest = watch.process.stdout.read()
        raise AssertionError(f"the watch did not stop within {timeout_s:g} s of Ctrl-C.\nprocesses:\n{table}\n"
                             f"its output:\n{''.join(watch.lines)}{rest}") from None


def all_ended(pids: set[int], timeout_s: float = 60) -> list[int]:
    """The pids still alive once all ended or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_watch_reruns_on_save_failing_checks_first_and_ctrl_c_leaves_nothing_running(tmp_path):
    adapter = tmp_path / "adapter.py"
    adapter.write_text(BUGGY)
    watch = Watch(adapter)
    try:
        first = watch.next_summary()
        assert "run 1 (start)" in first[0]
        assert any(line.startswith("  FAILED masked_weights_are_exactly_zero") for line in first), first
        assert any("likely cause: Attention ignores its mask" in line for line in first), first

        save(adapter, FIXED)
        second = watch.next_summary()
        assert "run 2 (adapter.py saved)" in second[0], second
        assert "verdict: conformant" in second[1], second
        assert "first previously failing check" in second[2], second
        assert not any("FAILED" in line for line in second), second

        gap = save(adapter, HANGING)  # Ctrl-C in the middle of a run: the run, its worker and the warm process end
        seen = processes_of(watch.process.pid, 3)  # the warm process, the run, its worker's supervisor (the worker)
        os.kill(watch.process.pid, signal.SIGINT)
        time.sleep(0.02)  # and again, impatiently, while it stops: the stopping is not cut short
        with contextlib.suppress(ProcessLookupError):
            os.kill(watch.process.pid, signal.SIGINT)
        assert stopped(watch, seen) == 130
        assert not all_ended(seen)  # a supervisor ends its worker when it sees its run gone
        rest = watch.process.stdout.read()
        if gap < SETTLE_S:  # one save, one run: the write after the truncation made no second
            assert "run 3 (" not in rest, rest
        assert "watch stopped" in rest
    finally:
        if watch.process.poll() is None:
            os.killpg(watch.process.pid, signal.SIGKILL)
            watch.process.wait()
        watch.process.stdout.close()


class Item:
    def __init__(self, name: str, depends_on: tuple[str, ...] = ()):
        self.name, self.originalname, self.depends_on = f"test_{name}[x]", f"test_{name}", depends_on

    def iter_markers(self, name):
        return [pytest.mark.depends_on(*self.depends_on).mark] if name == "depends_on" and self.depends_on else []


def test_failed_first_puts_the_failures_and_their_prerequisites_first_in_catalogue_order():
    items = [Item("a"), Item("b"), Item("c", depends_on=("b",)), Item("d"), Item("e")]
    FailedFirst({"e", "c"}).pytest_collection_modifyitems(items)
    assert [item.originalname for item in items] == ["test_b", "test_c", "test_e", "test_a", "test_d"]


def test_the_watched_files_are_those_the_worker_can_import_its_folder_and_allow_read(tmp_path):
    from conformance.run.watch import python_files, watched_roots

    own, shared = tmp_path / "submission", tmp_path / "shared"
    for path in (own / "adapter.py", own / "model" / "layers.py", own / ".venv" / "site.py", own / "notes.txt",
                 shared / "helpers.py", tmp_path / "elsewhere.py"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    roots = watched_roots(str(own / "adapter.py"), (str(shared),))
    found = {str(path.relative_to(tmp_path)) for path in python_files(roots, str(own / "adapter.py"))}
    assert found == {"submission/adapter.py", "submission/model/layers.py", "shared/helpers.py"}
    assert watched_roots("reference") == []


def test_watching_a_built_in_is_a_usage_error_naming_the_fix(capsys):
    from conformance.cli import EXIT_USAGE, main

    assert main(["watch", "reference"]) == EXIT_USAGE
    assert "give your adapter's file" in capsys.readouterr().err


def test_stopping_a_run_not_yet_in_its_own_group_does_not_wait_for_it():
    """A run forked the instant before Ctrl-C may not have made its process group yet: stop_run ends it all the
    same (it used to find no group to kill, then wait for the whole run)."""
    from conformance.run.watch import stop_run

    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # in the test's own group
    started = time.monotonic()
    stop_run(run.pid)
    assert run.poll() is not None or run.wait(timeout=5) == -signal.SIGKILL
    assert time.monotonic() - started < 5


def test_ctrl_c_stops_a_watch_started_ignoring_it(tmp_path):
    """A parent that ignores SIGINT passes that on (a test runner's worker, a background job): the watch still stops
    on Ctrl-C, as it says it does."""
    adapter = tmp_path / "adapter.py"
    adapter.write_text(FIXED)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        watch = Watch(adapter)  # born ignoring SIGINT
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert "run 1 (start)" in watch.next_summary()[0]
        os.kill(watch.process.pid, signal.SIGINT)
        assert watch.process.wait(timeout=60) == 130
    finally:
        if watch.process.poll() is None:
            os.killpg(watch.process.pid, signal.SIGKILL)
            watch.process.wait()
        watch.process.stdout.close()
