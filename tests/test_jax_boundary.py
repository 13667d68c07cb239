"""The boundary speaks JAX (``Conventions(arrays="jax")``, ``boundary/isolation/frameworks.py``): jax.Arrays in and
out, in process and in an isolated worker, float64 when declared, clear errors for what cannot come back, and
compilation not counted against a call's time limit. Needs the ``[jax]`` extra (the default run skips this file)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from conformance.boundary.candidate import Candidate  # noqa: E402
from conformance.boundary.isolation.proxy import Limits, load_isolated  # noqa: E402
from conformance.errors import AdapterError, BadOutput  # noqa: E402

ADAPTER = Path(__file__).parent / "adapters" / "jax_parts.py"
X, GAMMA, BETA = np.random.default_rng(0).normal(size=(2, 3, 8)), np.ones(8), np.zeros(8)


def in_process(variant: str, monkeypatch, timeout_s: float = 30.0) -> tuple[Candidate, object]:
    monkeypatch.setenv("JAX_PARTS_VARIANT", variant)
    spec = importlib.util.spec_from_file_location(f"jax_parts_{variant or 'plain'}", ADAPTER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Candidate(module.adapter, name=f"jax_parts[{variant}]", timeout_s=timeout_s), module


def isolated(variant: str, monkeypatch, timeout_s: float = 30.0, call_s: float | None = None) -> Candidate:
    monkeypatch.setenv("JAX_PARTS_VARIANT", variant)
    return load_isolated(str(ADAPTER), timeout_s=timeout_s,
                         limits=Limits(call_s=call_s, pass_env=("JAX_PARTS_VARIANT",), total_s=120))


def expected_layer_norm(x):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5)


def test_jax_arrays_go_in_and_numpy_comes_back(monkeypatch):
    candidate, module = in_process("", monkeypatch)
    out = candidate.layer_norm(X, GAMMA, BETA, 1e-5)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert module.seen["types"] == (type(jax.numpy.zeros(1)), np.dtype("float32"))
    np.testing.assert_allclose(out, expected_layer_norm(X), rtol=1e-5, atol=1e-5)


def test_an_isolated_jax_adapter_answers_like_one_in_process(monkeypatch):
    candidate = isolated("", monkeypatch)
    try:
        out = candidate.layer_norm(X, GAMMA, BETA, 1e-5)
        pe = candidate.positional_encoding(6, 8)
    finally:
        candidate.adapter.close()
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected_layer_norm(X), rtol=1e-5, atol=1e-5)
    assert pe.shape == (6, 8) and pe[0, 1] == 1.0


def test_float64_is_declared_and_delivered_in_a_worker(monkeypatch):
    # 64-bit mode is process-wide: switched on in the worker, never in this test process
    candidate = isolated("float64", monkeypatch)
    try:
        out = candidate.layer_norm(X, GAMMA, BETA, 1e-5)
    finally:
        candidate.adapter.close()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected_layer_norm(X), rtol=1e-12, atol=1e-12)
    assert not jax.config.jax_enable_x64


@pytest.mark.parametrize("variant, what, cause", [
    ("leak", "a traced value", "leaked out of a JAX transformation"),
    ("deleted", "a jax.Array whose buffer was deleted", "donated to a jitted call"),
])
@pytest.mark.parametrize("where", ["in process", "isolated"])
def test_a_value_that_cannot_come_back_is_a_bad_output_naming_why(variant, what, cause, where, monkeypatch):
    candidate = in_process(variant, monkeypatch)[0] if where == "in process" else isolated(variant, monkeypatch)
    try:
        with pytest.raises(BadOutput) as caught:
            candidate.layer_norm(X, GAMMA, BETA, 1e-5)
    finally:
        if where == "isolated":
            candidate.adapter.close()
    assert caught.value.message.startswith(f"layer_norm returned {what}")
    assert cause in caught.value.fields["likely_cause"]


def test_compile_time_is_not_the_calls_time_in_process(monkeypatch):
    # tracing takes 1.5 s (the adapter's Python under jax.jit), the limit is 1 s: the call passes
    candidate, _ = in_process("slow_compile", monkeypatch, timeout_s=1.0)
    out = candidate.layer_norm(X, GAMMA, BETA, 1e-5)
    np.testing.assert_allclose(out, expected_layer_norm(X), rtol=1e-5, atol=1e-5)


def test_running_time_is_the_calls_time_in_process(monkeypatch):
    candidate, _ = in_process("slow", monkeypatch, timeout_s=1.0)
    with pytest.raises(AdapterError, match="layer_norm hung"):
        candidate.layer_norm(X, GAMMA, BETA, 1e-5)


@pytest.mark.parametrize("variant, passes", [("slow_compile", True), ("slow", False)])
def test_compile_time_is_not_the_calls_time_in_a_worker(variant, passes, monkeypatch):
    candidate = isolated(variant, monkeypatch, timeout_s=1.0, call_s=1.0)
    try:
        candidate.positional_encoding(4, 8)  # the worker is up and JAX imported: the limit below times layer_norm
        if passes:
            np.testing.assert_allclose(candidate.layer_norm(X, GAMMA, BETA, 1e-5), expected_layer_norm(X),
                                       rtol=1e-5, atol=1e-5)
        else:
            with pytest.raises(AdapterError, match="hung"):
                candidate.layer_norm(X, GAMMA, BETA, 1e-5)
    finally:
        candidate.adapter.close()


def test_a_numpy_adapter_returning_a_jax_array_is_told_to_declare_it():
    class Undeclared:
        from conformance import Conventions

        conventions = Conventions(framework="jax")

        def layer_norm(self, x, gamma, beta, eps):
            return jax.numpy.asarray(x)

    with pytest.raises(BadOutput, match=r'declare Conventions\(arrays="jax"\)'):
        Candidate(Undeclared(), name="undeclared").layer_norm(X, GAMMA, BETA, 1e-5)


FORK_PROBE = """
import os, sys
os.register_at_fork(before=lambda: print("forked, JAX imported:", "jax" in sys.modules, file=sys.stderr))
from conformance.cli import run
sys.argv = ["transformer-conformance", *sys.argv[1:]]
run()
"""


def test_grading_a_class_of_jax_submissions_never_forks_with_jax_imported(tmp_path):
    """The class process forks one grader per submission: a fork after JAX started its threads can deadlock. The
    submissions run in their workers; the class process never even imports JAX."""
    import subprocess
    import sys

    for name in ("ada", "bo"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "adapter.py").write_text(ADAPTER.read_text())
    done = subprocess.run([sys.executable, "-c", FORK_PROBE, "grade", str(tmp_path / "class"), "--jobs", "2",
                           "--out", str(tmp_path / "grades"), "--no-training", "-k", "layer_norm"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    forks = [line for line in done.stderr.splitlines() if line.startswith("forked, JAX imported:")]
    assert forks and all(line.endswith("False") for line in forks), done.stderr
    rows = (tmp_path / "grades" / "summary.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["ada", "bo"]
    assert all(int(row.split(",")[4]) > 0 for row in rows[1:]), rows  # each graded on its JAX answers
