"""``conformance.adapters.jax``: canonical weights through parameter pytrees (orientation, per-head kernels, fused
projections, identity values), ``FlaxModel`` and ``JaxAdapter``. Needs the ``[jax]`` extra (the default run skips)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flax")

from flax import nnx  # noqa: E402

from conformance.adapters.jax import PytreeNames, as_canonical, flatten, replace_leaves  # noqa: E402
from conformance.adapters.names import NameMapError  # noqa: E402
from conformance.config import ModelConfig  # noqa: E402
from conformance.weights import model_shapes  # noqa: E402

CONFIG = ModelConfig(src_vocab=11, tgt_vocab=11, d_model=8, h=2, d_ff=12, N=1, dropout=0.0)


def test_flatten_names_leaves_by_dotted_path_without_flax_value():
    attention = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=False, rngs=nnx.Rngs(0))
    flat = flatten(nnx.state(attention, nnx.Param))
    assert flat["query.kernel"].shape == (8, 2, 4) and flat["out.kernel"].shape == (2, 4, 8)
    assert flat["query.bias"].shape == (2, 4)


def test_a_per_head_kernel_is_the_canonical_matrix_with_its_heads_merged():
    """Flax's own attention computes x @ merged(W_Q) split into heads in order: the canonical head split."""
    attention = nnx.MultiHeadAttention(num_heads=2, in_features=8, decode=False, use_bias=False, rngs=nnx.Rngs(0))
    attention.eval()
    flat = {k: np.asarray(v) for k, v in flatten(nnx.state(attention, nnx.Param)).items()}
    kernels = {"Q": "query", "K": "key", "V": "value", "O": "out"}
    W = {x: as_canonical(flat[f"{module}.kernel"], f"W_{x}", None) for x, module in kernels.items()}
    x = np.random.default_rng(0).normal(size=(1, 3, 8)).astype(np.float32)
    heads = [(x @ W[n]).reshape(1, 3, 2, 4).transpose(0, 2, 1, 3) for n in "QKV"]
    scores = heads[0] @ heads[1].transpose(0, 1, 3, 2) / np.sqrt(4)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = (weights @ heads[2]).transpose(0, 2, 1, 3).reshape(1, 3, 8) @ W["O"]
    np.testing.assert_allclose(np.asarray(attention(x)), expected, rtol=1e-5, atol=1e-5)


def canonical(wanted: list[str]) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
    """Random canonical weights for ``wanted`` and their shapes."""
    shapes = {name: shape for name, shape in model_shapes(CONFIG).items() if name in wanted}
    rng = np.random.default_rng(1)
    return {name: rng.normal(size=shape).astype(np.float32) for name, shape in shapes.items()}, shapes


ATTENTION = ["encoder.0.self_attn.W_Q", "encoder.0.self_attn.W_K", "encoder.0.self_attn.W_V", "encoder.0.self_attn.W_O",
             "encoder.0.self_attn.b_Q", "encoder.0.self_attn.b_K", "encoder.0.self_attn.b_V", "encoder.0.self_attn.b_O"]


def test_write_then_read_gives_the_weights_back_through_every_layout():
    flat = {"qkv.kernel": np.zeros((8, 3, 2, 4)), "qkv.bias": np.zeros((3, 2, 4)), "o.kernel": np.zeros((2, 4, 8)),
            "o.bias": np.zeros(8), "ported": np.zeros((12, 8)), "ported_bias": np.zeros(12)}
    names = PytreeNames({"encoder.0.self_attn.W_QKV": "qkv.kernel", "encoder.0.self_attn.W_O": "o.kernel",
                         "encoder.0.ffn.W1": "ported.T", "encoder.0.ffn.b1": "ported_bias"})
    weights, shapes = canonical([*ATTENTION, "encoder.0.ffn.W1", "encoder.0.ffn.b1"])
    new = names.write(flat, weights, shapes)
    assert new["qkv.kernel"].shape == (8, 3, 2, 4) and new["ported"].shape == (12, 8)
    np.testing.assert_array_equal(new["ported"], weights["encoder.0.ffn.W1"].T)  # stored (out, in): '.T' in the map
    np.testing.assert_array_equal(new["qkv.kernel"][:, 1].reshape(8, 8), weights["encoder.0.self_attn.W_K"])
    np.testing.assert_array_equal(new["qkv.bias"][2].reshape(8), weights["encoder.0.self_attn.b_V"])
    np.testing.assert_array_equal(new["o.kernel"].reshape(8, 8), weights["encoder.0.self_attn.W_O"])
    read = names.read({**flat, **new}, shapes)
    assert set(read) == set(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(read[name], value)


def test_a_map_that_does_not_fit_the_stored_shape_says_so():
    names = PytreeNames({"encoder.0.ffn.W1": "w.kernel"})
    weights, shapes = canonical(["encoder.0.ffn.W1"])
    with pytest.raises(ValueError, match=r"encoder.0.ffn.W1: shape \(8, 12\) does not fit w.kernel \(12, 8\)"):
        names.write({"w.kernel": np.zeros((12, 8))}, weights, shapes)


def test_an_unmapped_bias_or_norm_is_set_to_identity_and_an_unmapped_matrix_is_refused():
    flat = {"w.kernel": np.ones((8, 12)), "extra.bias": np.ones(8), "final.scale": np.zeros(8),
            "extra.kernel": np.ones((8, 8))}
    names = PytreeNames({"encoder.0.ffn.W1": "w.kernel"})
    weights, shapes = canonical(["encoder.0.ffn.W1"])
    with pytest.raises(NameMapError, match=r"extra.kernel \(8, 8\) has no canonical name"):
        names.write(flat, weights, shapes)
    del flat["extra.kernel"]
    new = names.write(flat, weights, shapes)
    assert (new["extra.bias"] == 0).all() and (new["final.scale"] == 1).all()
    assert names.unmapped(flat, shapes) == ["extra.bias", "final.scale"]


def test_replace_leaves_updates_a_flax_state_by_path():
    linear = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    state = nnx.state(linear, nnx.Param)
    nnx.update(linear, replace_leaves(state, {"kernel": np.full((3, 2), 2.0, np.float32)}))
    assert (np.asarray(linear.kernel[...]) == 2.0).all()
