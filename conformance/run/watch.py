"""``transformer-conformance watch ADAPTER``: a verdict on every save.

The watch process imports what a run needs once (``warmup``) and, for an isolated adapter, starts one warm
process for its workers (``boundary/isolation/warm.py``). It polls the adapter's files every ``POLL_S``: the
``.py`` files of its own folder and of the folders ``--allow-read`` names, which are all an isolated worker can
import besides the Python installation; on a change it forks a fresh run of the checks: pytest
in a child of this process, the adapter in a fresh sandboxed worker forked from the warm process (or imported
anew by the child, for an adapter run in-process). Nothing of a run outlives it: the next save gets a new child
and a new worker, which import the files as they are now.

The checks that failed or erred in the last run go first (with the prerequisites they depend on), then the rest;
``-k`` selects as in ``certify``; the training checks are left out unless ``--training``. While a run goes on,
one status line counts the verdicts; when it ends, the screen shows one summary: the counts, the failures with
their likely causes, and how long after the save the first previously failing check had its verdict and the
whole catalogue. A save during a run stops that run and starts the next. Ctrl-C stops the run (its worker's
supervisor then ends the worker), the warm process and the watch: nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

POLL_S = 0.1  # how often the files are looked at: a save is seen within this
SETTLE_S, SETTLE_MAX_S = 0.03, 1.0  # a save is complete once the files hold still this long
MAX_FILES = 2000  # a folder with more .py files than this (a whole project): only the adapter's file is watched
SKIPPED = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache", ".tox"}
FAILING = ("failed", "error")
EXIT_INTERRUPTED = 130
SHOWN = 12  # failures listed in the summary; the rest counted


# -- what is watched ----------------------------------------------------------------------------------
def watched_roots(spec: str, allow_read: tuple[str, ...] = ()) -> list[Path]:
    """The folders whose ``.py`` files are the adapter's: its file's folder, or its module's package folder (none
    for a built-in), and the folders it may read besides (``--allow-read``)."""
    from conformance.boundary.isolation import reads
    from conformance.boundary.loading import is_builtin

    own = None if is_builtin(spec) else \
        reads.own_folder(spec.partition(":")[0]) if not spec.endswith(".py") else Path(spec).resolve().parent
    return [path for path in (own, *map(Path, allow_read)) if path is not None]


def python_files(roots: list[Path], spec: str) -> list[Path]:
    """The ``.py`` files under ``roots`` (not in virtual environments, caches or version control folders)."""
    found: list[Path] = []
    todo = list(roots)
    while todo and len(found) <= MAX_FILES:
        with contextlib.suppress(OSError), os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED:
                    todo.append(Path(entry.path))
                elif entry.name.endswith(".py") and entry.is_file():
                    found.append(Path(entry.path))
    if len(found) > MAX_FILES and spec.endswith(".py"):
        return [Path(spec).resolve()]
    return sorted(set(found))


def snapshot(roots: list[Path], spec: str) -> dict[str, tuple[int, int]]:
    """Each watched file's (modification time in ns, size): a save changes one of them, or adds or removes a file."""
    state = {}
    for path in python_files(roots, spec):
        with contextlib.suppress(OSError):
            stat = path.stat()
            state[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return state


def changed_files(before: dict, after: dict) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


# -- one run, in a forked child -------------------------------------------------------------------------
class FailedFirst:
    """A pytest plugin of a watch run: the checks that failed last time first, with their prerequisites (a check
    run before its prerequisite would not be blocked by it), in the catalogue's order; then the rest."""

    def __init__(self, failed: set[str]):
        self.failed = failed

    @pytest.hookimpl(trylast=True)  # after the suite's own ordering and selection
    def pytest_collection_modifyitems(self, items):
        from conformance.run.plugin import check_id

        if not self.failed:
            return
        wanted = {check_id(item) for item in items if check_id(item) in self.failed}
        growing = True
        while growing:  # the prerequisites of what is wanted, and theirs
            needed = {prerequisite for item in items if check_id(item) in wanted
                      for marker in item.iter_markers("depends_on") for prerequisite in marker.args}
            more = {check_id(item) for item in items if check_id(item).partition("[")[0] in needed} - wanted
            wanted |= more
            growing = bool(more)
        items.sort(key=lambda item: check_id(item) not in wanted)  # stable: each group keeps its order


class VerdictStream:
    """A pytest plugin of a watch run: one JSON line per check as its verdict is known, on a pipe to the watch."""

    def __init__(self, fd: int):
        self.fd = fd

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":  # a failed or skipped setup is the verdict too
            name = report.nodeid.rpartition("::")[2].partition("[")[0].removeprefix("test_")
            line = json.dumps({"check": name, "outcome": report.outcome, "when": report.when, "t": time.time()})
            with contextlib.suppress(OSError):
                os.write(self.fd, (line + "\n").encode())


def run_once(args, warm, failed: set[str], stream_fd: int, report_path: str) -> int:
    """One run of the checks on ``args.impl`` (in the forked child): its JSON report at ``report_path``."""
    import dataclasses

    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.loading import load
    from conformance.errors import LoadError
    from conformance.run.options import Options
    from conformance.run.runs import Run
    from conformance.run.session import AwaitWorker, run_checks, unloadable_candidate

    options = dataclasses.replace(Options.from_namespace(args), json=report_path, progress="off", workers=1,
                                  verbose=False)
    run = Run([args.impl], options, warm=warm, plugins=[FailedFirst(failed), VerdictStream(stream_fd)])
    try:
        candidate = load(args.impl, **run.load_options(), wait=False)
    except LoadError as exc:  # a save in the middle of an edit: every check an error naming why
        candidate = unloadable_candidate(args.impl, str(exc))
    run.candidates[args.impl] = candidate
    run.plugins.append(AwaitWorker(candidate, on_failure="replace"))
    try:
        return run_checks(run)
    finally:
        stop_all_workers()


STOPPING = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def stops_held():
    """Ctrl-C and SIGTERM held back while a run is forked and recorded: one that came between the fork and
    ``running`` would leave the run unstopped. Delivered when the block ends. The mask is the calling thread's:
    the watch's other threads are born with the signals blocked (``watch``), so none takes them meanwhile."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def fork_run(args, warm, failed: set[str], report_path: str) -> tuple[int, int]:
    """A child of this process running the checks once, in a process group of its own (the watch stops it,
    Ctrl-C does not reach it); (its pid, the read end of its verdict stream). Call it inside ``stops_held``."""
    stream_r, stream_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(stream_w)
        # Its group made here too (as a shell does): until the child has run its own setpgid, a stop_run would
        # find no group to kill and wait for the whole run.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        return pid, stream_r
    code = 3
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        os.close(stream_r)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):  # the watch draws the screen; the run's own report goes to the JSON file
            os.dup2(null, target)
        code = run_once(args, warm, failed, stream_w, report_path)
    except BaseException:  # noqa: BLE001, S110 - the watch reports a run that ended without its report
        pass
    finally:
        os._exit(code)


def stop_run(pid: int) -> None:
    """End a run: its process group at once (its worker's supervisor sees the run gone and ends the worker), and the
    run itself, whatever its group: the wait that follows never waits for a process left alive."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


# -- the watch ------------------------------------------------------------------------------------------
@dataclass
class Round:
    """One run: why it started, when the save was, what it has heard so far."""

    number: int
    trigger: str
    saved_at: float  # the newest modification time of the changed files (the start, for the first run)
    failed_before: set[str]
    verdicts: dict[str, str] = field(default_factory=dict)
    first_failing_s: float | None = None  # the save to the first verdict of a check that failed last time
    all_s: float | None = None

    def heard(self, event: dict) -> None:
        self.verdicts[event["check"]] = event["outcome"]
        if self.first_failing_s is None and event["check"] in {name.partition("[")[0] for name in self.failed_before}:
            self.first_failing_s = max(0.0, event["t"] - self.saved_at)


class Screen:
    """The terminal: a live line during a run, then the summary in place of the last one (a terminal), or plain
    lines (a pipe, a log)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()

    def status(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K" + text[: os.get_terminal_size(self.stream.fileno()).columns - 1])
            self.stream.flush()

    def summary(self, lines: list[str]) -> None:
        if self.live:
            self.stream.write("\x1b[2J\x1b[H")  # one summary on the screen: the last run's
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()


def summary_lines(spec: str, round_: Round, report: dict | None, files: int) -> list[str]:
    when = time.strftime("%H:%M:%S")
    head = f"[{when}] run {round_.number} ({round_.trigger}) of {spec}"
    if report is None:
        return [head, "  the run ended without a report (stopped, or the suite itself failed)"]
    checks = report.get("checks", [])
    counts: dict[str, int] = {}
    for check in checks:
        counts[check["status"]] = counts.get(check["status"], 0) + 1
    shown = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    verdict = (report.get("verdict") or {}).get(spec, "?") if isinstance(report.get("verdict"), dict) else "?"
    lines = [head, f"  {len(checks)} checks: {shown}; verdict: {verdict}"]
    own = sum(check.get("duration_s") or 0.0 for check in checks)
    timing = [f"all verdicts {round_.all_s:.2f} s after the save (the checks' own time {own:.2f} s)"] \
        if round_.all_s is not None else []
    if round_.first_failing_s is not None:
        timing.insert(0, f"first previously failing check {round_.first_failing_s:.2f} s after the save")
    if timing:
        lines.append("  " + "; ".join(timing))
    failing = [check for check in checks if check["status"] in FAILING]
    for check in failing[:SHOWN]:
        lines.append(f"  {check['status'].upper():<6} {check['id']}: {first_line(check.get('message'))}")
        if check.get("likely_cause"):
            lines.append(f"         likely cause: {check['likely_cause']}")
    if len(failing) > SHOWN:
        lines.append(f"  ... and {len(failing) - SHOWN} more (certify {spec} for the whole report)")
    lines.append(f"watching {files} file{'s' if files != 1 else ''}; Ctrl-C to stop")
    return lines


def first_line(text) -> str:
    line = str(text or "").strip().splitlines()[0] if text else ""
    return line if len(line) <= 160 else line[:157] + "..."


def watch(args) -> int:
    """Rerun the checks on every save of the adapter's files until Ctrl-C."""
    from conformance.boundary.isolation.supervisor import stop_all_workers
    from conformance.boundary.isolation.warm import WarmWorkers
    from conformance.boundary.loading import should_isolate
    from conformance.run.warmup import import_ahead

    roots = watched_roots(args.impl, tuple(args.allow_read))
    signal.signal(signal.SIGTERM, interrupted)  # `kill` stops it as Ctrl-C does: nothing left running
    # Ctrl-C stops it even when it was started ignoring SIGINT (a parent that ignores it passes that on: a test
    # runner's worker, a script's background job), which Python would otherwise leave ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # The threads the imports start (OpenBLAS's pool) are born with Ctrl-C and SIGTERM blocked, so that only this
    # thread takes them, and stops_held holds them back; the warm process, started after, gets neither mask.
    with stops_held():
        import_ahead()
    screen, running = Screen(), None
    with WarmWorkers() as warm, tempfile.TemporaryDirectory(prefix="watch-") as tmp:
        if should_isolate(args.impl, args.isolate):
            warm.start(threads=args.threads, pass_env=tuple(args.pass_env))
        state, report, number = snapshot(roots, args.impl), None, 0
        trigger, saved_at = "start", time.time()
        try:
            while True:
                number += 1
                failed = {c["id"] for c in (report or {}).get("checks", []) if c["status"] in FAILING}
                round_ = Round(number, trigger, saved_at, failed)
                report_path = str(Path(tmp) / f"run{number}.json")
                with stops_held():
                    running, stream = fork_run(args, warm, failed, report_path)
                change = follow(running, stream, round_, screen, roots, args.impl, state)
                os.close(stream)
                if change is not None:  # saved again during the run: that run is stale
                    stop_run(running)
                    running = None
                    state, trigger, saved_at = change
                    continue
                ended, running = running, None  # it closed its stream: it is ending, and is never stopped now
                os.waitpid(ended, 0)
                round_.all_s = time.time() - round_.saved_at
                finished = read_report(report_path)
                report = finished or report
                screen.summary(summary_lines(args.impl, round_, finished, len(state)))
                state, trigger, saved_at = wait_for_change(roots, args.impl, state)
        except KeyboardInterrupt:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)  # a second Ctrl-C does not cut the stopping short
            if running is not None:
                stop_run(running)
            stop_all_workers()
            print("\nwatch stopped", flush=True)
            return EXIT_INTERRUPTED


def interrupted(signum, frame):
    raise KeyboardInterrupt


def follow(pid: int, stream: int, round_: Round, screen: Screen, roots, spec: str, state: dict):
    """Read the run's verdicts until it ends (None), or until a file changes: (new state, trigger, save time)."""
    buffer = b""
    while True:
        ready, _, _ = select.select([stream], [], [], POLL_S)
        if ready:
            chunk = os.read(stream, 65536)
            if not chunk:  # the run closed its end: it is over
                return None
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                with contextlib.suppress(ValueError, KeyError):
                    round_.heard(json.loads(line))
            failing = sum(outcome == "failed" for outcome in round_.verdicts.values())
            screen.status(f"run {round_.number}: {len(round_.verdicts)} checks, {failing} failing ...")
        change = look_for_change(roots, spec, state)
        if change is not None:
            return change


def look_for_change(roots, spec: str, state: dict):
    """(the files' new state, the trigger, the save's time) once they changed and settled; None if unchanged."""
    after = snapshot(roots, spec)
    changed = changed_files(state, after)
    if not changed:
        return None
    after = settled(roots, spec, after)
    changed = changed_files(state, after)
    if not changed:  # changed and changed back
        return None
    saved_at = max((after[name][0] / 1e9 for name in changed if name in after), default=time.time())
    names = ", ".join(Path(name).name for name in changed[:3]) + (" ..." if len(changed) > 3 else "")
    return after, f"{names} saved", saved_at


def settled(roots, spec: str, state: dict) -> dict:
    """The files' state once it holds still for ``SETTLE_S`` (at most ``SETTLE_MAX_S``): an editor's save is often
    a truncation then a write, or a new file then a rename, and one save must make one run."""
    deadline = time.monotonic() + SETTLE_MAX_S
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        again = snapshot(roots, spec)
        if again == state:
            break
        state = again
    return state


def wait_for_change(roots, spec: str, state: dict):
    while True:
        time.sleep(POLL_S)
        change = look_for_change(roots, spec, state)
        if change is not None:
            return change


def read_report(path: str) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
