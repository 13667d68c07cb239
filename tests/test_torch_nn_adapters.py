"""The adapters built on torch.nn.Transformer (built-ins ``torch-nn-transformer`` and ``-fixed``).

Lesson "Our code equals PyTorch's nn.Transformer" and its "Common mistake": with the final LayerNorms
removed and the nested-tensor fast path off, nn.Transformer computes the reference's model; with
PyTorch's defaults it does not. Weights come from ``random_weights`` (gamma far from 1, beta far from 0),
so the final norms show even at their identity values, where the protocol leaves parameters that have no
canonical name.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch
from model_inputs import BOS, PAD, layer_inputs, padded_batch

from conformance.boundary.loading import import_target
from conformance.config import base_config, toy_config
from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.torch_nn.adapter import torch_nn_default, torch_nn_fixed
from conformance.weights import attention_shapes, model_shapes, random_weights, sub_weights

REFERENCE = ReferenceAdapter()
CONFIGS = {
    "toy": toy_config(dropout=0.0),
    # separate tables, an output matrix of its own, attention without biases (nn.MultiheadAttention(bias=False))
    "untied": toy_config(src_vocab=17, tgt_vocab=13, share_embeddings=False, tie_output=False,
                         attention_bias=False, dropout=0.0),
}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Toy-sized tensors: one thread is faster, and immune to a busy machine's thread contention."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def problem(name: str, seed: int = 2017):
    cfg = CONFIGS[name]
    rng = np.random.default_rng(seed)
    weights = random_weights(model_shapes(cfg), rng)
    src = padded_batch(rng, [7, 4, 5], cfg.src_vocab)  # trailing padding: the fast path's condition
    tgt_in = padded_batch(rng, [6, 3, 8], cfg.tgt_vocab, first=BOS)
    return cfg, weights, src, tgt_in


def built(adapter, cfg, weights):
    model = adapter.build_model(cfg.as_dict(), seed=0)
    model.load_weights(weights)
    return model


def test_builtin_names_load_the_two_configurations():
    assert import_target("torch-nn-transformer") is torch_nn_default
    assert import_target("torch-nn-transformer-fixed") is torch_nn_fixed


@pytest.mark.parametrize("name", CONFIGS)
def test_fixed_equals_the_reference_on_a_padded_batch(name):
    cfg, weights, src, tgt_in = problem(name)
    ours, theirs = built(torch_nn_fixed, cfg, weights), built(REFERENCE, cfg, weights)
    assert np.abs(ours.forward(src, tgt_in) - theirs.forward(src, tgt_in)).max() <= 1e-4
    assert np.abs(ours.encode(src) - theirs.encode(src)).max() <= 1e-4  # every position, padded ones too
    memory = theirs.encode(src)
    assert np.abs(ours.decode(tgt_in, memory, src) - theirs.decode(tgt_in, memory, src)).max() <= 1e-4
    got, want = ours.attention_weights(src, tgt_in), theirs.attention_weights(src, tgt_in)
    assert sorted(got) == sorted(want)
    for key in want:
        assert np.abs(got[key] - want[key]).max() <= 1e-5, key


def test_default_final_norms_break_the_equality():
    """The lesson's "Common mistake": the extra final LayerNorms, once trained, change the logits."""
    cfg, weights, src, tgt_in = problem("toy")
    ours, theirs = built(torch_nn_default, cfg, weights), built(REFERENCE, cfg, weights)
    assert np.abs(ours.forward(src, tgt_in) - theirs.forward(src, tgt_in)).max() > 1e-2


def test_default_encoder_takes_the_nested_tensor_fast_path_on_a_padded_batch():
    """Eval mode, no grad, key padding mask, even h: the memory at padded positions is what the fast path
    pads with (0), passed through the final norm (LayerNorm(0) = beta); the fixed one computes them."""
    cfg, weights, src, _ = problem("toy")
    padded = src == PAD
    default = built(torch_nn_default, cfg, weights)
    beta = default.module.transformer.encoder.norm.bias.detach().numpy()
    memory = default.encode(src)
    assert (memory[padded] == beta).all()
    default.module.transformer.encoder.norm = None  # the stack alone: exactly 0 at padded positions
    assert (default.encode(src)[padded] == 0).all()

    fixed = built(torch_nn_fixed, cfg, weights).encode(src)
    assert np.abs(fixed[padded]).min() > 0
    assert np.abs(fixed - built(REFERENCE, cfg, weights).encode(src)).max() <= 1e-4


def test_default_lists_its_final_norms_as_unmapped_and_leaves_them_at_identity():
    cfg, weights, _, _ = problem("toy")
    default = built(torch_nn_default, cfg, weights)
    assert default.unmapped_parameters() == {f"transformer.{stack}.norm.{p}": cfg.d_model
                                             for stack in ("encoder", "decoder") for p in ("weight", "bias")}
    for norm in default.module.final_norms:
        assert (norm.weight == 1).all() and (norm.bias == 0).all()
    assert built(torch_nn_fixed, cfg, weights).unmapped_parameters() == {}


def test_parameter_count_of_default_has_the_two_final_norms():
    for cfg in (toy_config(), base_config()):
        fixed = torch_nn_fixed.parameter_count(cfg.as_dict())
        assert fixed == REFERENCE.parameter_count(cfg.as_dict())
        assert torch_nn_default.parameter_count(cfg.as_dict()) == fixed + 4 * cfg.d_model
    assert torch_nn_fixed.parameter_count(base_config(attention_bias=False).as_dict()) == 63_082_496 - 36_864


@pytest.mark.parametrize("adapter", [torch_nn_default, torch_nn_fixed], ids=["default", "fixed"])
def test_dump_weights_round_trips_and_leaves_out_the_final_norms(adapter):
    cfg, weights, src, tgt_in = problem("untied", seed=3)
    model = built(adapter, cfg, weights)
    dumped = model.dump_weights()
    assert list(dumped) == list(model_shapes(cfg))
    for name, value in weights.items():
        np.testing.assert_array_equal(dumped[name], value, err_msg=name)
    twin = built(adapter, cfg, dumped)  # same build seed: the default's final norms are the same too
    np.testing.assert_array_equal(twin.forward(src, tgt_in), model.forward(src, tgt_in))


HALF = {"float16": (torch.float16, np.float16, 0.05), "bfloat16": (torch.bfloat16, np.float32, 0.3)}


def in_dtype(x: np.ndarray, dtype: torch.dtype) -> bool:
    """Whether every value of ``x`` is one of ``dtype``'s (bfloat16 comes back as float32 holding its values)."""
    return np.array_equal(torch.from_numpy(np.asarray(x, np.float32)).to(dtype).float().numpy(), x)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("adapter", [torch_nn_default, torch_nn_fixed], ids=["default", "fixed"])
def test_with_dtype_builds_and_runs_everything_in_the_half_dtype(adapter, dtype):
    """--dtype (declared "native"): the model's module, its passes, the components and the function parts in the half
    dtype, close to float32; the adapter asked is left as it was (float32, its own build_model)."""
    want, crosses, tolerance = HALF[dtype]
    half = adapter.with_dtype(dtype)
    assert adapter.conventions.dtypes == {"float16": "native", "bfloat16": "native"}
    assert (half.conventions.dtype, half.conventions.dtypes, adapter.conventions.dtype) == (dtype, {}, "float32")
    cfg, weights, src, tgt_in = problem("toy")
    model, single = built(half, cfg, weights), built(adapter, cfg, weights)
    assert {p.dtype for p in model.module.parameters()} == {want}
    assert {p.dtype for p in single.module.parameters()} == {torch.float32}
    logits = model.forward(src, tgt_in)
    assert logits.dtype == crosses and in_dtype(logits, want)
    assert np.abs(logits - single.forward(src, tgt_in)).max() <= tolerance * np.abs(logits).max()
    for value in model.attention_weights(src, tgt_in).values():
        assert value.dtype == crosses and in_dtype(value, want)

    _, x, _, src_keep, _, enc, _ = layer_inputs(cfg, seed=3)
    cast = (lambda a: np.asarray(a, crosses)) if dtype == "float16" else (  # noqa: E731
        lambda a: torch.from_numpy(np.asarray(a, np.float32)).to(want).float().numpy())
    enc = {k: cast(v) for k, v in enc.items()}
    out, probs = half.multi_head_attention(cast(x), cast(x), cast(x), sub_weights(enc, "self_attn."), cfg.h, None)
    layer = half.encoder_layer(cast(x), enc, cfg.h, cfg.eps, ~src_keep)
    assert all(a.dtype == crosses and in_dtype(a, want) for a in (out, probs, layer))
    gamma, beta = np.full(cfg.d_model, 1.5), np.full(cfg.d_model, 0.25)
    normed = half.layer_norm(cast(x), cast(gamma), cast(beta), 1e-6)
    assert normed.dtype == crosses and in_dtype(normed, want)
    assert half.positional_encoding(8, cfg.d_model).dtype == crosses


def test_with_dtype_declared_autocast_keeps_float32_weights_and_runs_under_autocast():
    """TorchAdapter.with_dtype of a dtype declared "autocast": the weights and what crosses in float32, the passes and
    the parts under torch.autocast (their matmuls' results bfloat16 values)."""
    declared = copy.copy(torch_nn_fixed)
    declared.conventions = dataclasses.replace(torch_nn_fixed.conventions, dtypes={"bfloat16": "autocast"})
    mixed = declared.with_dtype("bfloat16")
    assert mixed.conventions.dtype == "bfloat16" and mixed.dtype == torch.float32
    cfg, weights, src, tgt_in = problem("toy")
    model = built(mixed, cfg, weights)
    assert {p.dtype for p in model.module.parameters()} == {torch.float32} and model.autocast == torch.bfloat16
    logits = model.forward(src, tgt_in)
    assert logits.dtype == np.float32 and in_dtype(logits, torch.bfloat16)
    assert not in_dtype(built(torch_nn_fixed, cfg, weights).forward(src, tgt_in), torch.bfloat16)
    _, x, _, _, _, enc, _ = layer_inputs(cfg, seed=3)
    out, _ = mixed.multi_head_attention(x, x, x, sub_weights(enc, "self_attn."), cfg.h, None)
    assert out.dtype == np.float32 and in_dtype(out, torch.bfloat16)


def test_layer_parts_equal_the_reference_with_blocked_masks():
    cfg = CONFIGS["toy"]
    _, x, y, src_keep, tgt_keep, enc, dec = layer_inputs(cfg, seed=5)
    for adapter in (torch_nn_default, torch_nn_fixed):  # the layers are the same in both configurations
        got = adapter.encoder_layer(x, enc, cfg.h, cfg.eps, ~src_keep)
        assert np.abs(got - REFERENCE.encoder_layer(x, enc, cfg.h, cfg.eps, src_keep)).max() <= 1e-5
        got = adapter.decoder_layer(y, x, dec, cfg.h, cfg.eps, ~tgt_keep, ~src_keep)
        want = REFERENCE.decoder_layer(y, x, dec, cfg.h, cfg.eps, tgt_keep, src_keep)
        assert np.abs(got - want).max() <= 1e-5
        attn = sub_weights(enc, "self_attn.")
        keep = np.broadcast_to(src_keep[:, None, :], (2, 4, 5))
        out, w = adapter.multi_head_attention(y, x, x, attn, cfg.h, ~keep)
        want_out, want_w = REFERENCE.multi_head_attention(y, x, x, attn, cfg.h, keep)
        assert w.shape == (2, cfg.h, 4, 5)
        assert np.abs(out - want_out).max() <= 1e-5 and np.abs(w - want_w).max() <= 1e-6


def test_fully_masked_rows_follow_the_suites_rule():
    """torch 2.13: its SDPA softmax gives a query without visible keys weights 0 and output 0;
    nn.MultiheadAttention gives b_O without weights (what its layers use) but NaN weights when asked for
    them, so the adapter reports that row's weights as the 0 they stand for."""
    rng = np.random.default_rng(11)
    q, k, v = (rng.normal(size=(1, 3, 4)).astype(np.float32) for _ in range(3))
    blocked = ~np.array([[[1, 1, 0], [0, 0, 0], [1, 0, 0]]], dtype=bool)
    out, weights = torch_nn_fixed.scaled_dot_product_attention(q, k, v, blocked)
    np.testing.assert_array_equal(weights[0, 1], 0.0)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    want_out, want_weights = REFERENCE.scaled_dot_product_attention(q, k, v, ~blocked)
    assert np.abs(out - want_out).max() <= 1e-6 and np.abs(weights - want_weights).max() <= 1e-6

    attn = random_weights(attention_shapes(4, bias=True), rng)
    out, weights = torch_nn_fixed.multi_head_attention(q, k, k, attn, 2, blocked)
    np.testing.assert_array_equal(weights[0, :, 1], 0.0)
    np.testing.assert_allclose(out[0, 1], attn["b_O"], atol=1e-6)
    assert np.isfinite(weights).all() and np.isfinite(out).all()


def named(check: dict) -> set[str]:
    """What a failure's diagnosis names: confirmed known bugs and structural patterns (one line per bug)."""
    return {match["mutant"] for match in check["diagnosis"]} | set(check["patterns"])


def test_default_fails_the_model_checks_and_the_diagnosis_names_both_traps(certify):
    """The encode and forward failures name both traps; decode (given the oracle's memory) the final norm."""
    run = certify("torch-nn-transformer", "--no-training", "-k", "encode_matches or decode_matches or logits_match")
    checks = {check["id"]: check for check in run.report["checks"]}
    assert run.with_status("failed") == set(checks), run.out
    for check_id in ("encode_matches_reference", "logits_match_reference", "logits_match_reference_at_base_size"):
        assert {"extra_final_layer_norm", "padded_positions_constant"} <= named(checks[check_id]), \
            checks[check_id]["message"]
        assert checks[check_id]["message"].lower().count("extra layernorm after the") == 1  # named once
    assert "extra_final_layer_norm" in named(checks["decode_matches_reference"]), checks["decode_matches_reference"]


@pytest.mark.parametrize("selection", [
    pytest.param(("-k", "encode_matches or decode_matches or logits_match or parameter_count or padding"),
                 id="selection"),  # the checks the defaults fail (above), counts, padding invariances
    pytest.param((), id="catalogue", marks=pytest.mark.slow)])
def test_fixed_passes_every_check(certify, selection):
    run = certify("torch-nn-transformer-fixed", "--no-training", *selection)
    assert run.code == 0, run.out
    # one convention of the suite, advisory: nn.Transformer gives NaN for a source sentence of padding only
    advised = {"fully_masked_source_sentence_is_invisible_to_the_decoder"} if not selection else set()
    assert run.with_status("advisory") == advised, run.out
    assert set(run.statuses().values()) <= {"passed", "advisory", "supplied"}
    # supplied: the checks of torch's own loss, LayerNorm and attention functions and of the suite's greedy loop
    supplied = [c for c in run.report["checks"] if c["status"] == "supplied"]
    assert all(c["provenance"]["supplied"] for c in supplied), supplied
