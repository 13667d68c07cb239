"""Progress on stderr while the checks run (conformance/run/progress.py): a live line on a terminal, plain lines
otherwise, one as each section begins; the training check's step, loss and exact match as it goes."""

import io

from conftest import FAILING_RUN, adapter_path

from conformance.judging import training
from conformance.run.progress import ProgressDisplay


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def display(mode: str) -> tuple[ProgressDisplay, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    shown = ProgressDisplay(mode, stream, clock=clock, width=200)
    shown.total = 10
    return shown, stream, clock


def test_plain_lines_one_as_each_section_begins():
    shown, stream, clock = display("plain")
    for i in range(20):  # 20 checks of two sections
        shown.names[f"test_x.py::test_{i}"] = f"check_{i} ({'§3.5' if i < 12 else '§3.1'})"
        shown.sections[f"test_x.py::test_{i}"] = "§3.5" if i < 12 else "§3.1"
        clock.now = i * 0.1
        shown.pytest_runtest_logstart(f"test_x.py::test_{i}", None)
    assert stream.getvalue().splitlines() == [
        "progress: [0/10] 0 failing | running check_0 (§3.5)",
        "progress: [0/10] 0 failing | running check_12 (§3.1)",
    ]


def test_live_mode_rewrites_one_line():
    shown, stream, clock = display("live")
    shown.pytest_runtest_logstart("test_x.py::test_a", None)
    clock.now = 1.0
    shown.pytest_runtest_logstart("test_x.py::test_b", None)
    assert stream.getvalue() == "\r\x1b[K[0/10] 0 failing | running test_a\r\x1b[K[0/10] 0 failing | running test_b"


def test_training_steps_reach_the_display_while_it_is_active():
    shown, stream, clock = display("plain")
    with shown:
        progress = training.Progress("training reference seed 0", 3000)
        progress.update(100, 1.234, (100, 0.5))
        clock.now = 31.0  # plain: a training line every 30 s
        progress.update(200, 0.9, (200, 0.75))
        progress.finish("passed: exact match 96%")
    assert training.Progress.sink is None
    assert stream.getvalue().splitlines() == [
        "progress: [0/10] 0 failing | training step 100/3000 loss 1.234, exact match 50.0% at step 100",
        "progress: [0/10] 0 failing | training step 200/3000 loss 0.900, exact match 75.0% at step 200",
        "progress: training reference seed 0: passed: exact match 96%",
    ]


def test_off_writes_nothing():
    shown, stream, _ = display("off")
    shown.pytest_runtest_logstart("test_x.py::test_a", None)
    shown.pytest_sessionfinish(None)
    assert stream.getvalue() == ""


def test_certify_shows_plain_progress_when_not_on_a_terminal(certify):
    run = certify(adapter_path("nan_attention"), *FAILING_RUN, "--progress", "plain")
    lines = [line for line in run.err.splitlines() if line.startswith("progress: ")]
    failing = sum(status in ("failed", "error") for status in run.statuses().values())
    assert lines[0].startswith(f"progress: [0/{len(run.statuses())}] 0 failing | running ")
    assert lines[-1].startswith(f"progress: {len(run.statuses())}/{len(run.statuses())} checks done, {failing} failing")


def test_a_long_jax_compilation_is_said_while_it_runs_and_counted_at_the_end():
    """JAX may compile for minutes inside one check: while it does, the live line says so and plain mode prints a
    line every 30 s; the end line says how long JAX compiled in all."""
    from conformance.boundary.isolation import frameworks

    compiles = frameworks.CompileClock()
    shown, stream, clock = display("plain")
    shown.compile_clocks = lambda: [compiles]
    shown.running = "pe_matches_formula_for_any_size (§3.5)"
    shown.tick()
    assert stream.getvalue() == ""  # nothing compiling: nothing to say
    compiles.started()
    compiles.since -= 45.0  # it began 45 s ago
    clock.now = 100.0
    shown.tick()
    clock.now = 110.0
    shown.tick()  # within the interval: no second line
    said = "progress: JAX compiling for 45 s (pe_matches_formula_for_any_size (§3.5))"
    assert stream.getvalue().splitlines() == [said]
    assert "| JAX compiling 45 s | running pe_matches" in shown.line()
    compiles.ended(45.0)
    assert "JAX" not in shown.line()
    shown.pytest_sessionfinish(None)
    assert stream.getvalue().splitlines()[-1].endswith("(JAX compiling 45.0 s of it)")
