"""Progress while the checks run: a small pytest plugin that ``transformer-conformance certify`` registers.

It shows how many checks are done out of how many, how many fail, the running check and its section,
while the training check runs, its step, loss and exact match (``conformance.judging.training.Progress``
reports them here through ``Progress.sink``), and while JAX compiles for the candidate, for how long (a
compilation can take minutes with no check moving: a line says so every 30 s in plain mode; the end line says
how long JAX compiled in all). On a terminal it is one line rewritten in place at most 4
times a second; when stderr is not a terminal or under CI (``CI`` set), plain lines: one as each paper
section's checks begin, the training check's step every 30 s, and the end. It writes to a duplicate of the
process's stderr, so pytest's output capture does not hide it.

Under ``--workers N`` the checks run in worker processes: the count and the running check still show
(xdist forwards both), the training steps do not (they happen in a worker).
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable

import pytest

from conformance.results import FAILING
from conformance.run.plugin import RESULTS_KEY

INTERVAL_S = {"live": 0.25, "plain": 30.0}  # plain: the training check's steps; the checks by section (below)
NOTEBOOK_WIDTH = 120  # characters of the line a notebook cell shows (it has no terminal size)
COMPILE_SHOWN_AFTER_S = 2.0  # a compilation shorter than this is not worth a word


class ProgressDisplay:
    def __init__(self, mode: str, stream, *, clock=time.monotonic, width: int | None = None):
        self.mode, self.stream, self.clock = mode, stream, clock
        self.width = width
        self.total, self.done, self.failing = 0, 0, 0
        self.running, self.training = "", ""
        self.names: dict[str, str] = {}
        self.sections: dict[str, str] = {}  # plain lines: one as each section begins, not one per check
        self.section: str | None = None
        self.started = clock()
        self.last_drawn = -float("inf")
        self._owned = False
        self.erase = "\x1b[K"  # after the carriage return, what clears the line (a terminal's code)
        # the clocks of the JAX compilations the run's candidates make (``frameworks.compile_clock_of``), asked
        # when drawn: JAX may be imported only once a check runs
        self.compile_clocks: Callable[[], list] = list
        self._lock = threading.Lock()  # the ticker's thread writes too
        self._stop_ticking = threading.Event()
        self._ticker_thread: threading.Thread | None = None

    # -- choosing the mode and the stream --------------------------------------------------------

    @classmethod
    def for_terminal(cls, choice: str) -> ProgressDisplay:
        """``auto``: live on a terminal unless ``CI`` is set, in a Jupyter kernel live in the cell's output (its stream
        rewrites a line after a carriage return), else plain; ``live``, ``plain``, ``off``."""
        if choice == "auto" and in_kernel():  # the kernel's stream, which reaches the cell; no terminal's codes
            display = cls("live", sys.stderr, width=NOTEBOOK_WIDTH)
            display.erase = " " * NOTEBOOK_WIDTH + "\r"  # a cell's output has no code to erase a line: blanks do
            return display
        stream, owned = _stderr_duplicate()
        if choice == "auto":
            choice = "live" if _isatty(stream) and not os.environ.get("CI") else "plain"
        display = cls(choice, stream)
        display._owned = owned
        return display

    @property
    def enabled(self) -> bool:
        return self.mode in INTERVAL_S

    def __enter__(self) -> ProgressDisplay:
        from conformance.judging import training

        if self.enabled:
            training.Progress.sink = self.training_step
            self._ticker_thread = threading.Thread(target=self._ticker, name="progress-ticker", daemon=True)
            self._ticker_thread.start()
        return self

    def __exit__(self, *exc) -> None:
        from conformance.judging import training

        if self._ticker_thread is not None:  # ended here, not a second later in whatever runs next
            self._stop_ticking.set()
            self._ticker_thread.join()
        if training.Progress.sink == self.training_step:
            training.Progress.sink = None
        if self._owned:
            self.stream.close()

    # -- pytest hooks ----------------------------------------------------------------------------

    def pytest_collection_finish(self, session) -> None:
        from conformance.run.plugin import check_id, check_section

        self.total = max(self.total, len(session.items))
        for item in session.items:
            self.names[item.nodeid] = f"{check_id(item)} ({check_section(item)})"
            self.sections[item.nodeid] = check_section(item)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.total = max(self.total, len(ids))

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.running = self.names.get(nodeid) or nodeid.rsplit("::", 1)[-1]
        if self.mode == "plain":  # a log, a notebook's cell, CI: a line as each section begins
            section = self.sections.get(nodeid, self.running)
            if section != self.section:
                self.section = section
                self._emit(self.line())
            return
        self.draw()

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "teardown":  # the result rides on the setup (not implemented) or call report
            self.failing += sum(key == RESULTS_KEY and value.get("status") in FAILING
                                for key, value in report.user_properties)
        if report.when == "teardown":
            self.done += 1
            self.draw()

    def pytest_sessionfinish(self, session) -> None:
        if not self.enabled:
            return
        compiled = sum(clock.total for clock in self.compile_clocks())
        text = f"{self.done}/{self.total or self.done} checks done, {self.failing} failing," \
               f" {self.clock() - self.started:.1f} s"
        text += f" (JAX compiling {compiled:.1f} s of it)" if compiled else ""
        self._emit(text, final=True)

    # -- JAX's compilations ----------------------------------------------------------------------

    def compiling_s(self) -> float | None:
        """How long the compilation running now has run, when one has for COMPILE_SHOWN_AFTER_S; else None."""
        now = time.monotonic()
        running = [now - clock.since for clock in self.compile_clocks() if clock.since is not None]
        longest = max(running, default=0.0)
        return longest if longest >= COMPILE_SHOWN_AFTER_S else None

    def tick(self) -> None:
        """While JAX compiles: the live line redrawn with it; in plain mode, a line (at most one per interval)."""
        seconds = self.compiling_s()
        if seconds is None:
            return
        if self.mode == "plain":
            now = self.clock()
            if now - self.last_drawn >= INTERVAL_S["plain"]:
                self.last_drawn = now
                self._emit(f"JAX compiling for {seconds:.0f} s ({self.running or 'the run'})")
            return
        self.draw()

    def _ticker(self) -> None:
        while not self._stop_ticking.wait(1.0):
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - progress is optional: a clock that cannot be read shows nothing
                return

    # -- the training check ----------------------------------------------------------------------

    def training_step(self, event: dict) -> None:
        if "done" in event:
            self.training = ""
            self._emit(f"{event['label']}: {event['done']}", final=self.mode == "plain")
            return
        exact = event.get("exact")
        em = f", exact match {exact[1]:.1%} at step {exact[0]}" if exact else ""
        self.training = f"step {event['step']}/{event['deadline']} loss {event['loss']:.3f}{em}"
        self.draw()

    # -- drawing ---------------------------------------------------------------------------------

    def line(self) -> str:
        total = self.total or "?"
        text = f"[{self.done}/{total}] {self.failing} failing"
        if self.training:  # first: the part that moves, before a long check name is cut at the edge
            text += f" | training {self.training}"
        seconds = self.compiling_s()
        if seconds is not None:  # before the check's name, which the edge may cut
            text += f" | JAX compiling {seconds:.0f} s"
        if self.running:
            text += f" | running {self.running}"
        return text

    def draw(self) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.last_drawn < INTERVAL_S[self.mode]:
            return
        self.last_drawn = now
        self._emit(self.line())

    def _emit(self, text: str, *, final: bool = False) -> None:
        if self.mode == "live":
            width = self.width or shutil.get_terminal_size((100, 24)).columns - 1
            out = "\r" + self.erase + text[:width] + ("\n" if final else "")
        else:
            out = f"progress: {text}\n"
        try:
            with self._lock:
                self.stream.write(out)
                self.stream.flush()
        except (OSError, ValueError):  # a closed or detached stream: progress is optional
            self.mode = "off"


def in_kernel() -> bool:
    """Running in a Jupyter kernel (ipykernel's shell), where stderr is the cell's output stream."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


def _stderr_duplicate():
    """(stream, owned): a line-buffered duplicate of fd 2, which pytest's capture leaves alone; or
    ``sys.stderr`` itself when it has no file descriptor (a test capturing it)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return sys.stderr, False
    return os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace"), True


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
