"""The built-in ``jax`` (Flax NNX and optax, implementations/jax_impl): certified like any candidate.

Skipped where the ``jax`` extra is not installed (the default install); CI installs it and runs this file with
``-m 'slow or not slow'``.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from conftest import certify_quietly

from conformance.boundary.candidate import Candidate
from conformance.boundary.isolation.frameworks import switch_dtype
from conformance.boundary.loading import LoadError, import_target
from conformance.config import toy_config
from conformance.weights import model_shapes, random_weights

pytest.importorskip("flax")
import jax  # noqa: E402

PACKAGES = ("jax", "flax", "optax")
TRAINING_CHECKS = ("rate_used_at_each_step_is_lrate", "reported_loss_is_label_smoothed_cross_entropy",
                   "adam_steps_match_reference", "evaluation_mode_has_no_dropout", "reversal_task_is_learned",
                   "smoothed_loss_approaches_its_floor_from_above", "greedy_decoding_reverses_cabed",
                   "last_layer_cross_attention_reads_mirrored_positions",
                   "top_probabilities_stay_near_the_smoothed_target")
ACCEPTED = {"passed", "advisory"}
HAZARD_CHECKS = ("masked_weights_stay_zero_at_trained_score_magnitudes",
                 "scaled_scores_survive_dot_products_beyond_the_dtype",
                 "positional_encoding_holds_up_to_5000_positions",
                 "layer_norm_of_rows_far_from_zero", "layer_norm_of_a_constant_row_is_beta",
                 "learning_rate_of_the_first_warmup_steps", "base_model_forward_is_finite_and_close_at_full_depth")


def statuses(report: dict) -> dict[str, str]:
    return {check["id"]: check["status"] for check in report["checks"]}


# --------------------------------------------------------------------------------------------------
# Without the extra: the built-in names it
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("package", PACKAGES)
def test_a_missing_package_names_the_jax_extra(package, monkeypatch):
    for module in [m for m in sys.modules if m == package or m.startswith((f"{package}.",
                                                                           "conformance.implementations.jax_impl"))]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, package, None)  # import <package> -> ModuleNotFoundError
    with pytest.raises(LoadError, match=re.escape("needs jax, flax and optax, which are not installed. Fix: pip"
                                                  " install 'transformer-conformance[jax]'")):
        import_target("jax")


# --------------------------------------------------------------------------------------------------
# The built-in itself
# --------------------------------------------------------------------------------------------------


def test_the_model_round_trips_canonical_weights_and_computes_in_float32():
    config = toy_config(src_vocab=17, tgt_vocab=13, share_embeddings=False, tie_output=False, attention_bias=False)
    weights = random_weights(model_shapes(config), np.random.default_rng(5))
    model = import_target("jax").build_model(config.as_dict(), 0)
    model.load_weights(weights)
    dumped = model.dump_weights()
    assert list(dumped) == list(model_shapes(config)) and model.unmapped_parameters() == {}
    for name, value in weights.items():
        np.testing.assert_array_equal(dumped[name], value, err_msg=name)
    logits = model.forward(np.array([[5, 3, 4, 0]]), np.array([[1, 6, 7, 4]]))  # int64 ids, no warning
    assert isinstance(logits, jax.Array) and logits.dtype == np.float32 and logits.shape == (1, 4, 13)


def test_it_declares_jax_arrays_and_the_boundary_gives_it_jax_arrays():
    adapter = import_target("jax")
    assert adapter.conventions.arrays == "jax"
    candidate = Candidate(adapter, name="jax")
    table = candidate.positional_encoding(5, 8)  # a jax.Array back, a NumPy array for the checks
    assert isinstance(table, np.ndarray) and table.dtype == np.float32 and table[0, 1] == 1.0


def test_the_built_in_is_conformant_without_training(tmp_path):
    report = certify_quietly(tmp_path, "jax", "--no-training", "--workers", "1")
    bad = {cid: status for cid, status in statuses(report).items() if status not in ACCEPTED}
    assert not bad, bad


@pytest.mark.slow  # trains the toy model until the verdict (several minutes on two cores)
def test_the_built_in_passes_every_training_check(tmp_path):
    report = certify_quietly(tmp_path, "jax", "-k", " or ".join(TRAINING_CHECKS), "--workers", "1")
    found = statuses(report)
    assert set(found) == set(TRAINING_CHECKS)
    assert set(found.values()) == {"passed"}, found


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_it_computes_natively_in_either_half_dtype_and_refuses_to_train_in_it(dtype):
    adapter = import_target("jax")
    assert adapter.conventions.dtypes == {"float16": "native", "bfloat16": "native"}
    half = switch_dtype(adapter, dtype)
    assert half.conventions.dtype == dtype and adapter.conventions.dtype == "float32"  # a switched copy
    config = toy_config()
    model = half.build_model(config.as_dict(), 0)
    src, tgt_in = np.array([[5, 3, 4, 0]]), np.array([[1, 6, 7, 4]])
    assert model.forward(src, tgt_in).dtype == jax.numpy.dtype(dtype)
    assert {str(value.dtype) for value in model.dump_weights().values()} == {dtype}
    with pytest.raises(NotImplementedError, match="this implementation trains in float32 only"):
        model.train_step(src, tgt_in, np.array([[6, 7, 4, 2]]))
    table = Candidate(half, name="jax").positional_encoding(3000, 8)  # rounded from float64: pos 2,049 is not 2,048
    assert table.dtype == (np.float16 if dtype == "float16" else np.float32)  # bfloat16 comes back widened, exactly
    np.testing.assert_allclose(table[2049, 0], np.sin(2049.0), atol=float(jax.numpy.finfo(dtype).eps))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_built_in_passes_the_hazard_checks_in_half_precision(tmp_path, dtype):
    report = certify_quietly(tmp_path, "jax", "--dtype", dtype, "-k", " or ".join(HAZARD_CHECKS), "--workers", "1")
    found = statuses(report)
    assert set(found) == set(HAZARD_CHECKS)
    assert set(found.values()) == {"passed"}, found


def test_every_method_takes_jax_arrays_as_it_takes_numpy_ones():
    """The boundary may hand JAX arrays in: each part answers them as it answers the same values in NumPy."""
    import jax.numpy as jnp

    adapter, config = import_target("jax"), toy_config()
    rng = np.random.default_rng(3)
    weights = random_weights(model_shapes(config), rng)
    src, tgt_in = np.array([[5, 3, 4, 0], [6, 7, 8, 9]]), np.array([[1, 6, 7, 4], [1, 3, 0, 0]])
    x = rng.normal(size=(2, 4, config.d_model))  # float64: cast to float32 on entry
    keep = np.array([[True, True, True, False], [True, True, True, True]])
    layer = {name[len("encoder.0."):]: value for name, value in weights.items() if name.startswith("encoder.0.")}

    def both(call, *args):
        as_jax = [({k: jnp.asarray(v) for k, v in a.items()} if isinstance(a, dict)
                   else jnp.asarray(a) if isinstance(a, np.ndarray) else a) for a in args]
        for got, want in zip(np.atleast_1d(call(*as_jax)), np.atleast_1d(call(*args)), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

    both(adapter.layer_norm, x, layer["norm1.gamma"], layer["norm1.beta"], 1e-5)
    both(lambda *a: adapter.multi_head_attention(*a)[0], x, x, x,
         {k[len("self_attn."):]: v for k, v in layer.items() if k.startswith("self_attn.")}, config.h,
         np.broadcast_to(keep[:, None, :], (2, 4, 4)))
    both(adapter.encoder_layer, x, layer, config.h, config.eps, keep)
    both(adapter.label_smoothed_loss, x[0], np.array([1, 2, 0, 3]), 0.1, 0)
    model = adapter.build_model(config.as_dict(), 0)
    model.load_weights({name: jnp.asarray(value) for name, value in weights.items()})
    both(model.forward, src, tgt_in)
    both(lambda *a: model.greedy_decode(*a, 5), src)
    both(lambda *a: model.attention_weights(*a)["decoder.1.cross_attn"], src, tgt_in)
