"""The built-in implementations other than the reference compute what the reference computes.

``numpy`` (pure NumPy, float64, additive masks, forward-only), ``torch-fused-qkv`` (PyTorch, fused QKV,
sequence-first, "blocked" masks) and ``reference-float64`` (the reference in torch.float64) are loaded
by their built-in names and driven directly, each in its own declared conventions: this file converts
layouts and mask polarities itself rather than through ``conformance.boundary.candidate``, so that it is an
independent witness of those conventions. Weights come from ``random_weights`` (trained-looking: gamma
far from 1, non-zero biases), so a wrong LayerNorm or a missing bias cannot hide.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_inputs import BOS, EOS, PAD, layer_inputs, padded_batch

from conformance.adapter import Conventions
from conformance.boundary.loading import import_target
from conformance.config import toy_config
from conformance.weights import model_shapes, random_weights, sub_weights

BUILTINS = ["numpy", "torch-fused-qkv", "reference-float64"]
CONFIGS = {
    "toy": toy_config(),
    # separate tables (E_src must not be confused with E_tgt), an output matrix of its own, no biases
    "untied": toy_config(src_vocab=17, tgt_vocab=13, share_embeddings=False, tie_output=False, attention_bias=False),
}
TOLERANCE = 1e-4  # float32 against float32 (or float64) over the whole toy model


@pytest.fixture(scope="module")
def reference():
    return import_target("reference")


def load(name: str):
    adapter = import_target(name)
    assert isinstance(adapter.conventions, Conventions)
    return adapter


# -- converting to an adapter's conventions ---------------------------------------------------------


def to_layout(adapter, x: np.ndarray) -> np.ndarray:
    """Batch-first (B, L, ...) -> the adapter's layout."""
    return x if adapter.conventions.batch_first else np.ascontiguousarray(np.swapaxes(x, 0, 1))


def from_layout(adapter, x: np.ndarray) -> np.ndarray:
    return x if adapter.conventions.batch_first else np.swapaxes(x, 0, 1)


def to_mask(adapter, keep: np.ndarray) -> np.ndarray:
    """A boolean keep-mask (True = may attend) in the adapter's polarity; masks are batch-first always."""
    kind = adapter.conventions.mask
    if kind == "blocked":
        return ~keep
    if kind == "additive":
        return np.where(keep, 0.0, -np.inf).astype(adapter.conventions.dtype)
    return keep


def built(adapter, cfg, weights, seed: int = 0):
    model = adapter.build_model(cfg.as_dict(), seed)
    model.load_weights(weights)
    return model


# -- the whole model ---------------------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", BUILTINS)
def test_forward_equals_the_reference_on_a_padded_batch(name, config, reference):
    cfg = CONFIGS[config]
    rng = np.random.default_rng(2017)
    weights = random_weights(model_shapes(cfg), rng)
    src = padded_batch(rng, [7, 4, 5], cfg.src_vocab)  # S = 7, two rows padded
    tgt_in = padded_batch(rng, [6, 3, 8], cfg.tgt_vocab, first=BOS)  # T = 8, two rows padded
    want = built(reference, cfg, weights).forward(src, tgt_in)

    adapter = load(name)
    model = built(adapter, cfg, weights)
    got = from_layout(adapter, model.forward(to_layout(adapter, src), to_layout(adapter, tgt_in)))
    assert got.shape == want.shape == (3, 8, cfg.tgt_vocab)
    assert got.dtype == np.dtype(adapter.conventions.dtype)
    difference = np.abs(got.astype(np.float64) - want).max()  # every position, padded ones included
    assert difference <= TOLERANCE, f"{name}: max abs difference {difference:.2e}"

    # encode and decode separately compute the same thing, and the memory agrees at every position
    memory = model.encode(to_layout(adapter, src))
    want_memory = built(reference, cfg, weights).encode(src)
    assert np.abs(from_layout(adapter, memory) - want_memory).max() <= TOLERANCE
    again = from_layout(adapter, model.decode(to_layout(adapter, tgt_in), memory, to_layout(adapter, src)))
    assert np.abs(again - got).max() <= 1e-6


@pytest.mark.parametrize("name", BUILTINS)
def test_attention_weights_equal_the_reference(name, reference):
    """model.attention_weights: every sublayer's (B, h, Lq, Lk) weights, batch-first in every layout."""
    cfg = CONFIGS["toy"]
    rng = np.random.default_rng(11)
    weights = random_weights(model_shapes(cfg), rng)
    src = padded_batch(rng, [5, 2], cfg.src_vocab)
    tgt_in = padded_batch(rng, [3, 4], cfg.tgt_vocab, first=BOS)
    want = built(reference, cfg, weights).attention_weights(src, tgt_in)
    adapter = load(name)
    got = built(adapter, cfg, weights).attention_weights(to_layout(adapter, src), to_layout(adapter, tgt_in))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].shape == want[key].shape, key
        assert np.abs(got[key] - want[key]).max() <= 1e-5, key


# Picked so that the reference's greedy output (max_len 9) has rows that stop at </s> (then padding,
# one of them after three tokens) and a row that runs to max_len; without that row (ALL_END) every row
# stops and decoding ends early, at length 4. Both branches of the stopping rule are compared.
GREEDY_WEIGHTS_SEED, GREEDY_EOS_BOOST = 1, 2.0
ALL_END = [0, 1, 2]


def greedy_setup(cfg):
    rng = np.random.default_rng(GREEDY_WEIGHTS_SEED)
    weights = random_weights(model_shapes(cfg), rng)
    weights["E"][EOS] *= GREEDY_EOS_BOOST  # a louder </s>, so that some rows end
    src = padded_batch(rng, [6, 3, 5, 6, 2, 4], cfg.src_vocab)
    return weights, src


def test_greedy_setup_exercises_both_stopping_branches(reference):
    cfg = CONFIGS["toy"]
    weights, src = greedy_setup(cfg)
    ids = built(reference, cfg, weights).greedy_decode(src, max_len=9)
    ended = [bool((row == EOS).any()) for row in ids]
    assert ids.shape == (6, 9) and any(ended) and not all(ended), ids
    assert any(row[-1] == PAD for row in ids), ids  # a row padded after its </s>
    assert any(row[0] != EOS and EOS in row for row in ids), ids  # a row with tokens before its </s>
    short = built(reference, cfg, weights).greedy_decode(src[ALL_END], max_len=9)
    assert short.shape[1] < 9 and all(EOS in row for row in short), short


@pytest.mark.parametrize("name", BUILTINS)
def test_greedy_decode_equals_the_reference(name, reference):
    cfg = CONFIGS["toy"]
    weights, src = greedy_setup(cfg)
    adapter = load(name)
    model = built(adapter, cfg, weights)
    for rows in (slice(None), ALL_END):
        want = built(reference, cfg, weights).greedy_decode(src[rows], max_len=9)
        got = from_layout(adapter, model.greedy_decode(to_layout(adapter, src[rows]), 9))
        assert isinstance(got, np.ndarray) and got.dtype.kind in "iu"
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", BUILTINS)
def test_dump_weights_after_load_weights_round_trips(name, config):
    cfg = CONFIGS[config]
    weights = random_weights(model_shapes(cfg), np.random.default_rng(9))
    adapter = load(name)
    model = built(adapter, cfg, weights, seed=1)
    dumped = model.dump_weights()
    assert list(dumped) == list(model_shapes(cfg))  # canonical names, canonical order
    for key, value in weights.items():
        assert isinstance(dumped[key], np.ndarray) and dumped[key].dtype == np.dtype(adapter.conventions.dtype)
        np.testing.assert_array_equal(dumped[key], value, err_msg=f"{name}: {key}")
    dumped[next(iter(dumped))][...] = 0.0  # a copy: writing into it leaves the model alone
    np.testing.assert_array_equal(model.dump_weights()[next(iter(dumped))], weights[next(iter(dumped))])
    # a fresh model with other initial weights computes the same once the dump is loaded into it
    other = built(adapter, cfg, model.dump_weights(), seed=5)
    src, tgt_in = np.array([[5, 3, 4, 0]]), np.array([[1, 6, 7, 4]])
    src, tgt_in = to_layout(adapter, src), to_layout(adapter, tgt_in)
    np.testing.assert_array_equal(other.forward(src, tgt_in), model.forward(src, tgt_in))


@pytest.mark.parametrize("name", BUILTINS)
def test_build_model_is_seeded_and_fresh_weights_are_not_the_loaded_ones(name):
    cfg = CONFIGS["toy"]
    adapter = load(name)
    a, b, c = (adapter.build_model(cfg.as_dict(), seed).dump_weights() for seed in (4, 4, 5))
    assert all(np.array_equal(a[key], b[key]) for key in a)
    assert not np.array_equal(a["encoder.0.self_attn.W_Q"], c["encoder.0.self_attn.W_Q"])


# -- the layer parts, in each adapter's conventions ------------------------------------------------


@pytest.mark.parametrize("name", BUILTINS)
def test_layer_parts_equal_the_reference(name, reference):
    cfg = CONFIGS["toy"]
    rng, x, y, src_keep, tgt_keep, enc, dec = layer_inputs(cfg, seed=3)
    cross = sub_weights(dec, "cross_attn.")
    cross_keep = np.broadcast_to(src_keep[:, None, :], (2, 4, 5))

    adapter = load(name)
    dtype = adapter.conventions.dtype

    def cast(a):
        return np.asarray(a, dtype=dtype)

    def mine(a):
        return to_layout(adapter, cast(a))

    got_enc = adapter.encoder_layer(mine(x), enc, cfg.h, cfg.eps, to_mask(adapter, src_keep))
    got_dec = adapter.decoder_layer(
        mine(y), mine(x), dec, cfg.h, cfg.eps, to_mask(adapter, tgt_keep), to_mask(adapter, src_keep)
    )
    got_out, got_attn = adapter.multi_head_attention(
        mine(y), mine(x), mine(x), cross, cfg.h, to_mask(adapter, cross_keep)
    )
    want_out, want_attn = reference.multi_head_attention(y, x, x, cross, cfg.h, cross_keep)
    # query = key = value (a fused implementation may take a one-matmul path) and three distinct inputs
    attn = sub_weights(enc, "self_attn.")
    self_keep = np.broadcast_to(src_keep[:, None, :], (2, 5, 5))
    got_self, _ = adapter.multi_head_attention(mine(x), mine(x), mine(x), attn, cfg.h, to_mask(adapter, self_keep))
    v = rng.normal(size=x.shape).astype(np.float32)
    got_three, _ = adapter.multi_head_attention(mine(y), mine(x), mine(v), attn, cfg.h, to_mask(adapter, cross_keep))
    pairs = {
        "encoder_layer": (from_layout(adapter, got_enc), reference.encoder_layer(x, enc, cfg.h, cfg.eps, src_keep)),
        "decoder_layer": (
            from_layout(adapter, got_dec),
            reference.decoder_layer(y, x, dec, cfg.h, cfg.eps, tgt_keep, src_keep),
        ),
        "cross-attention output": (from_layout(adapter, got_out), want_out),
        "cross-attention weights (B, h, Lq, Lk)": (got_attn, want_attn),
        "self-attention output": (
            from_layout(adapter, got_self), reference.multi_head_attention(x, x, x, attn, cfg.h, self_keep)[0]
        ),
        "attention with distinct query, key, value": (
            from_layout(adapter, got_three), reference.multi_head_attention(y, x, v, attn, cfg.h, cross_keep)[0]
        ),
    }
    for what, (got, want) in pairs.items():
        assert got.shape == want.shape, f"{name} {what}: shape {got.shape}, expected {want.shape}"
        difference = np.abs(got - want).max()
        assert difference <= 1e-5, f"{name} {what}: max abs difference {difference:.2e}"


def test_reference_float64_is_the_reference_in_float64(reference):
    float64 = import_target("reference-float64")
    assert reference.conventions.dtype == "float32"  # the default is untouched
    assert float64.conventions == Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch")
    pe = float64.positional_encoding(50, 64)
    assert pe.dtype == np.float64
    # computed in float64 throughout: agrees with the float64 formula far beyond float32 rounding
    pos, two_i = np.arange(50)[:, None], np.arange(0, 64, 2)[None, :]
    assert np.abs(pe[:, 0::2] - np.sin(pos / 10000.0 ** (two_i / 64))).max() < 1e-12
    assert reference.positional_encoding(50, 64).dtype == np.float32


def test_numpy_in_float16_computes_in_float16_close_to_float64():
    """--dtype float16 (declared "native"): the model's weights, outputs and attention weights in float16, close to
    float64 (a mask in float16 too, or the scores would widen); LayerNorm's statistics wider, so that a row's squared
    deviations above 256 do not overflow float16. The adapter asked is left as it was, stateless (mutants compose)."""
    numpy = load("numpy")
    half = numpy.with_dtype("float16")
    assert numpy.conventions.dtypes == {"float16": "native"} and vars(numpy) == {}
    assert (half.conventions.dtype, half.conventions.dtypes, numpy.conventions.dtype) == ("float16", {}, "float64")
    cfg = CONFIGS["toy"]
    rng = np.random.default_rng(2017)
    weights = random_weights(model_shapes(cfg), rng)
    src = padded_batch(rng, [7, 4, 5], cfg.src_vocab)
    tgt_in = padded_batch(rng, [6, 3, 8], cfg.tgt_vocab, first=BOS)
    model, exact = built(half, cfg, weights), built(numpy, cfg, weights)
    assert {value.dtype for value in model.dump_weights().values()} == {np.dtype(np.float16)}
    logits, want = model.forward(src, tgt_in), exact.forward(src, tgt_in)
    assert logits.dtype == np.float16
    assert np.abs(logits - want).max() <= 0.02 * np.abs(want).max()
    assert {value.dtype for value in model.attention_weights(src, tgt_in).values()} == {np.dtype(np.float16)}

    x = np.array([[400.0, -400.0, 3.0, -1.0]], dtype=np.float16)  # squared deviations overflow float16's 65504
    gamma, beta = np.ones(4, np.float16), np.zeros(4, np.float16)
    normed = half.layer_norm(x, gamma, beta, 1e-6)
    assert normed.dtype == np.float16
    np.testing.assert_allclose(normed, numpy.layer_norm(x.astype(np.float64), 1.0, 0.0, 1e-6), atol=2e-3)
