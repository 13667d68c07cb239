"""Ctrl-C and SIGTERM during a grade: the first one stops the grading, the ones after it are held back.

A grade that is stopped must still say so in its report (incomplete, 0 points) and leave nothing behind, and that
takes a moment after the signal: a second Ctrl-C (or the SIGTERM a class sends its graders as it stops) must not cut
that moment short. ``interrupts()`` turns the first SIGINT or SIGTERM into ``Interrupted`` (a ``KeyboardInterrupt``,
so pytest ends its session as for a Ctrl-C, writing what was judged) and records it; later ones are only counted.
"""

from __future__ import annotations

import contextlib
import signal
import threading

STOPPING = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The grade was stopped by ``signal_name``."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


class Stop:
    """What ``interrupts()`` saw: the first stopping signal, if any."""

    signum: int | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # as a shell reports a command a signal ended: 130 for SIGINT, 143 for SIGTERM

    def __bool__(self) -> bool:
        return self.signum is not None


@contextlib.contextmanager
def interrupts():
    """Within: the first SIGINT or SIGTERM raises ``Interrupted``; the ones after it are held back. Yields the
    ``Stop`` that records it. Outside the main thread (where no handler can be set) it changes nothing."""
    stop = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def on_signal(signum, _frame):
        if stop.signum is None:
            stop.signum = signum
            raise Interrupted(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, on_signal) for signum in STOPPING}
    try:
        yield stop
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held_back():
    """Within: SIGINT and SIGTERM wait (blocked), delivered as the block ends; for a step that must not be cut in
    two (a grader forked and recorded). A process forked within starts with them blocked: ``let_through()``."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


def let_through() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
