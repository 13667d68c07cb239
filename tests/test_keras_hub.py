"""The keras-hub built-ins (``keras-hub-jax``, ``keras-hub-torch``): what the suite says about keras-hub's layers
(docs/third-party.md).

A process holds one Keras backend, the one keras is first imported with, so nothing here imports keras: each
certify, and each probe of the model, runs in a process of its own. Skipped where keras-hub is not installed (the
default test run); ``.ci/run`` installs it after that run.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import shared_once

if importlib.util.find_spec("keras_hub") is None:  # importorskip would import keras, and with it a backend
    pytest.skip("keras-hub is not installed: pip install 'transformer-conformance[keras]' and"
                " pip install --no-deps -r requirements-keras-hub.txt", allow_module_level=True)

BACKENDS = {"keras-hub-jax": "jax", "keras-hub-torch": "torch"}
FIX = "pip install 'transformer-conformance[keras]'"
KERAS_HUB_FIX = "pip install --no-deps -r requirements-keras-hub.txt"
# What keras-hub has no separate function for (scaled dot-product attention, the FFN, LayerNorm, the smoothed loss,
# the schedule), what the adapter leaves out (training), and the bias-free count its layers cannot build.
NOT_IMPLEMENTED = 25


def python(code: str, *, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def statuses(report: dict) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["checks"]}


# --------------------------------------------------------------------------------------------------
# Loading: the extra named, one backend per process
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "hidden"), [("keras-hub-jax", "keras_hub"), ("keras-hub-torch", "keras_hub"),
                                              ("keras-hub-jax", "jax"), ("keras-hub-jax", "keras")])
def test_a_missing_package_names_the_extra_to_install(name, hidden):
    run = python(f"""
        import sys
        sys.modules[{hidden!r}] = None  # import {hidden} -> ModuleNotFoundError
        from conformance.cli import main
        sys.exit(main(["certify", {name!r}, "--no-training", "-k", "pe_position_0"]))
    """)
    fix = f"adapts {hidden}, which is not installed. Fix: {KERAS_HUB_FIX if hidden == 'keras_hub' else FIX}"
    assert run.returncode == 2 and fix in run.stdout + run.stderr, run.stderr


def test_the_two_backends_cannot_share_a_process():
    run = python("""
        import conformance.implementations.thirdparty.keras_hub_jax
        try:
            import conformance.implementations.thirdparty.keras_hub_torch
        except ImportError as exc:
            print(exc)
    """)
    assert "keras-hub-jax and keras-hub-torch cannot share a process. Run one per process, or certify with --isolate" \
        in run.stdout, run.stderr


# --------------------------------------------------------------------------------------------------
# The certify runs (slow), one process each
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """reports[name]: the built-in's ``certify --no-training`` report, run once in its own process."""

    class Reports(dict):
        def __missing__(self, name):
            self[name] = shared_report(tmp_path_factory, name)
            return self[name]

    return Reports()


def shared_report(tmp_path_factory, name: str) -> dict:
    """One certify run per session for a built-in, whichever xdist worker asks first, in a process of its own for
    its backend (``conftest.shared_once``)."""

    def certify(folder: Path) -> dict:
        path = folder / "report.json"
        subprocess.run([sys.executable, "-m", "conformance", "certify", name, "--no-training", "--workers", "1",
                        "--progress", "off", "--json", str(path)], capture_output=True, timeout=3600)
        return json.loads(path.read_text())

    return shared_once(tmp_path_factory, ("keras-hub", name), certify)


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_every_check_it_can_run_passes(name, reports):
    counts = reports[name]["summary"][name]
    assert (counts["failed"], counts["error"], counts["advisory"]) == (0, 0, 0), counts
    assert counts["not_implemented"] == NOT_IMPLEMENTED, counts


@pytest.mark.slow
def test_both_backends_give_the_same_verdict_on_every_check(reports):
    assert statuses(reports["keras-hub-jax"]) == statuses(reports["keras-hub-torch"])


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_biases_on_every_projection_are_declared_not_failed(name, reports):
    """MultiHeadAttention's use_bias=True, which keras-hub's layers do not expose (row 1)."""
    found = statuses(reports[name])
    assert found["parameter_count_without_attention_biases"] == "not_implemented"
    assert found["model_has_no_parameters_beyond_the_paper"] == "passed"
    assert found["parameter_count_matches_formula_for_any_config"] == "passed"


# -- a fully masked row: weights 0 on Keras' masked softmax, uniform on its fused attention (row 3) ---------------

EMPTY_SOURCE = """
    import json, os
    os.environ["KERAS_BACKEND"] = {backend!r}
    import numpy as np
    from conformance.config import toy_config
    from conformance.implementations.thirdparty.keras_hub_{backend} import adapter

    src, tgt = np.array([[3, 4, 5], [0, 0, 0]]), np.array([[1, 3, 4], [1, 5, 6]])
    moved = {{}}
    for dropout in (0.0, 0.1):
        model = adapter.build_model(toy_config(dropout=dropout).as_dict(), 0)
        weights = adapter.build_model(toy_config().as_dict(), 1).dump_weights()
        model.load_weights(weights)
        before = model.forward(src, tgt)[1]
        weights["E"][0] += 1.0  # the padding token's row
        model.load_weights(weights)
        moved[dropout] = float(np.abs(model.forward(src, tgt)[1] - before).max())
    print(json.dumps(moved))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", BACKENDS)
def test_an_all_padding_source_is_read_uniformly_only_without_dropout(name):
    """In evaluation mode the same weights give other logits for an all-padding source sentence at dropout 0 (Keras'
    fused ``dot_product_attention``, a finite fill: uniform rows) than at dropout 0.1 (its masked softmax, which
    zeroes a fully masked row): the sentence reads E[pad] only at dropout 0."""
    run = python(EMPTY_SOURCE.format(backend=BACKENDS[name]))
    moved = json.loads(run.stdout.splitlines()[-1])
    assert moved["0.0"] > 0.1 and moved["0.1"] < 1e-5, moved


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="the model checks build every model at dropout 0.1: Keras' fused attention,"
                                       " used at dropout 0, is never certified")
@pytest.mark.parametrize("name", BACKENDS)
def test_the_uniform_rows_at_dropout_0_are_an_advisory(name, reports):
    assert statuses(reports[name])["fully_masked_source_sentence_is_invisible_to_the_decoder"] == "advisory"
