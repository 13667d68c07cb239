"""The reference implementation against torch.nn.Transformer and the lesson's numbers.

Lesson "The original transformer, step by step", section "Our code equals PyTorch's nn.Transformer" and
"Common mistake": with norm_first=False, ReLU, dropout off, the final norms removed and the nested-tensor
fast path off, nn.Transformer computes the paper's model; with its default final LayerNorms it does not,
and fresh weights (gamma 1, beta 0) hide the difference. So every comparison here uses
``conformance.weights.random_weights``: gamma far from 1, beta far from 0, non-zero biases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from model_inputs import BOS, EOS, PAD, padded_batch
from torch import nn

from conformance.config import ModelConfig, base_config, german_config, toy_config

# The lesson's positions.py, verbatim (as the fixtures re-run it): an independent witness for the reference's PE.
from conformance.fixtures.verify_listings import _sinusoidal_positions as lesson_positions
from conformance.implementations.reference.adapter import ReferenceAdapter, adapter
from conformance.implementations.reference.model import (
    REFERENCE,
    Transformer,
    canonical_state,
    load_canonical,
)
from conformance.weights import model_shapes, random_weights, sub_weights

# A toy-sized model with separate vocabularies so that E_src and E_tgt cannot be confused.
COMPARE_CONFIG = toy_config(src_vocab=17, tgt_vocab=13, share_embeddings=False, dropout=0.0)


# --------------------------------------------------------------------------------------------------
# Building the same model twice: the reference and nn.Transformer with copied weights
# --------------------------------------------------------------------------------------------------


def torch_nn_transformer(cfg: ModelConfig, weights: dict, *, final_norms: bool = False) -> nn.Transformer:
    """nn.Transformer in the paper's configuration, canonical weights copied in (nn.Linear = W^T)."""
    model = nn.Transformer(
        cfg.d_model, cfg.h, cfg.N, cfg.N, cfg.d_ff, dropout=0.0, activation="relu",
        layer_norm_eps=cfg.eps, batch_first=True, norm_first=False,
    )
    model.encoder.use_nested_tensor = False  # its eval fast path returns 0 at padded positions
    if not final_norms:
        model.encoder.norm = model.decoder.norm = None  # the paper's post-norm model has none

    def t(name: str) -> torch.Tensor:
        return torch.as_tensor(weights[name])

    def copy_attention(mha: nn.MultiheadAttention, prefix: str) -> None:
        mha.in_proj_weight.copy_(torch.cat([t(prefix + m).T for m in ("W_Q", "W_K", "W_V")]))
        mha.in_proj_bias.copy_(torch.cat([t(prefix + b) for b in ("b_Q", "b_K", "b_V")]))
        mha.out_proj.weight.copy_(t(prefix + "W_O").T)
        mha.out_proj.bias.copy_(t(prefix + "b_O"))

    def copy_ffn_and_norms(layer: nn.Module, prefix: str, norms: list[str]) -> None:
        layer.linear1.weight.copy_(t(prefix + "ffn.W1").T)
        layer.linear1.bias.copy_(t(prefix + "ffn.b1"))
        layer.linear2.weight.copy_(t(prefix + "ffn.W2").T)
        layer.linear2.bias.copy_(t(prefix + "ffn.b2"))
        for norm in norms:
            getattr(layer, norm).weight.copy_(t(f"{prefix}{norm}.gamma"))
            getattr(layer, norm).bias.copy_(t(f"{prefix}{norm}.beta"))

    with torch.no_grad():
        for i, layer in enumerate(model.encoder.layers):
            copy_attention(layer.self_attn, f"encoder.{i}.self_attn.")
            copy_ffn_and_norms(layer, f"encoder.{i}.", ["norm1", "norm2"])
        for i, layer in enumerate(model.decoder.layers):
            copy_attention(layer.self_attn, f"decoder.{i}.self_attn.")
            copy_attention(layer.multihead_attn, f"decoder.{i}.cross_attn.")  # nn's name for cross-attention
            copy_ffn_and_norms(layer, f"decoder.{i}.", ["norm1", "norm2", "norm3"])
        if final_norms:  # trained final norms, as in the lesson's failure case
            rng = np.random.default_rng(7)
            for norm in (model.encoder.norm, model.decoder.norm):
                norm.weight.copy_(torch.as_tensor(1.0 + rng.uniform(-0.8, 0.8, cfg.d_model), dtype=torch.float32))
                norm.bias.copy_(torch.as_tensor(rng.uniform(-0.5, 0.5, cfg.d_model), dtype=torch.float32))
    return model.eval()


@torch.no_grad()
def torch_nn_logits(model: nn.Transformer, cfg: ModelConfig, weights: dict, src, tgt_in) -> torch.Tensor:
    """Embedding x sqrt(d_model) + PE around nn.Transformer, output y @ E_tgt^T: as in the reference."""
    src, tgt_in = torch.as_tensor(src), torch.as_tensor(tgt_in)
    E_src, E_tgt = torch.as_tensor(weights["E_src"]), torch.as_tensor(weights["E_tgt"])
    scale = math.sqrt(cfg.d_model)
    x = E_src[src] * scale + lesson_positions(src.shape[1], cfg.d_model)
    y = E_tgt[tgt_in] * scale + lesson_positions(tgt_in.shape[1], cfg.d_model)
    T = tgt_in.shape[1]
    out = model(
        x, y,
        tgt_mask=torch.ones(T, T, dtype=torch.bool).triu(1),  # nn: True = blocked, strictly above the diagonal
        src_key_padding_mask=src == PAD,
        tgt_key_padding_mask=tgt_in == PAD,
        memory_key_padding_mask=src == PAD,
    )
    return out @ E_tgt.T


@pytest.fixture(scope="module")
def comparison():
    rng = np.random.default_rng(2017)
    weights = random_weights(model_shapes(COMPARE_CONFIG), rng)
    src = padded_batch(rng, [7, 4, 5], COMPARE_CONFIG.src_vocab)  # S = 7, two rows padded
    tgt_in = padded_batch(rng, [6, 3, 8], COMPARE_CONFIG.tgt_vocab, first=BOS)  # T = 8, two rows padded
    model = adapter.build_model(COMPARE_CONFIG.as_dict(), seed=0)
    model.load_weights(weights)
    return weights, src, tgt_in, model.forward(src, tgt_in)


# --------------------------------------------------------------------------------------------------
# Equality with nn.Transformer, and the trap
# --------------------------------------------------------------------------------------------------


def test_reference_equals_torch_nn_transformer_on_a_padded_batch(comparison):
    weights, src, tgt_in, ours = comparison
    theirs = torch_nn_logits(torch_nn_transformer(COMPARE_CONFIG, weights), COMPARE_CONFIG, weights, src, tgt_in)
    assert ours.shape == (3, 8, COMPARE_CONFIG.tgt_vocab)
    difference = np.abs(ours - theirs.numpy()).max()  # every position, padded ones included
    assert difference <= 1e-5, f"max abs difference {difference:.2e}"


@torch.no_grad()
def torch_nn_memory(model: nn.Transformer, weights: dict, src) -> np.ndarray:
    src = torch.as_tensor(src)
    x = torch.as_tensor(weights["E_src"])[src] * math.sqrt(COMPARE_CONFIG.d_model)
    x = x + lesson_positions(src.shape[1], COMPARE_CONFIG.d_model)
    return model.encoder(x, src_key_padding_mask=src == PAD).numpy()


def test_reference_memory_equals_torch_nn_encoder_at_every_position(comparison):
    """The logits cannot see padded memory rows (they are masked keys); the memory itself is compared here."""
    weights, src, _, _ = comparison
    model = adapter.build_model(COMPARE_CONFIG.as_dict(), seed=0)
    model.load_weights(weights)
    theirs = torch_nn_memory(torch_nn_transformer(COMPARE_CONFIG, weights), weights, src)
    difference = np.abs(model.encode(src) - theirs).max()
    assert difference <= 1e-5, f"max abs difference {difference:.2e}"


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_torch_nn_nested_tensor_fast_path_zeroes_padded_memory(comparison):
    """The lesson's second trap: in eval mode a padded batch may take the nested-tensor fast path."""
    weights, src, _, _ = comparison
    nn_model = torch_nn_transformer(COMPARE_CONFIG, weights)
    nn_model.encoder.use_nested_tensor = True
    theirs = torch_nn_memory(nn_model, weights, src)
    if not (theirs[src == PAD] == 0).all():
        pytest.skip("this torch version did not take the nested-tensor fast path")
    model = adapter.build_model(COMPARE_CONFIG.as_dict(), seed=0)
    model.load_weights(weights)
    ours = model.encode(src)
    assert np.abs(ours - theirs)[src != PAD].max() <= 1e-5  # real positions still agree
    assert np.abs(ours - theirs)[src == PAD].max() > 1e-2


def test_torch_nn_default_final_norms_break_the_equality(comparison):
    """The lesson's "Common mistake": nn.Transformer's extra final LayerNorms, once trained."""
    weights, src, tgt_in, ours = comparison
    model = torch_nn_transformer(COMPARE_CONFIG, weights, final_norms=True)
    theirs = torch_nn_logits(model, COMPARE_CONFIG, weights, src, tgt_in)
    assert np.abs(ours - theirs.numpy()).max() > 1e-2


def test_encoder_and_decoder_layer_parts_equal_torch_nn_layers():
    """The adapter's component parts, with the protocol's (B, L) keep masks, against nn's layers."""
    cfg = COMPARE_CONFIG
    rng = np.random.default_rng(3)
    weights = random_weights(model_shapes(cfg), rng)
    nn_model = torch_nn_transformer(cfg, weights)
    x = rng.normal(size=(2, 5, cfg.d_model)).astype(np.float32)
    y = rng.normal(size=(2, 4, cfg.d_model)).astype(np.float32)
    src_keep = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=bool)
    tgt_keep = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool)

    ours_enc = adapter.encoder_layer(x, sub_weights(weights, "encoder.0."), cfg.h, cfg.eps, src_keep)
    ours_dec = adapter.decoder_layer(y, x, sub_weights(weights, "decoder.0."), cfg.h, cfg.eps, tgt_keep, src_keep)
    with torch.no_grad():
        theirs_enc = nn_model.encoder.layers[0](torch.as_tensor(x), src_key_padding_mask=torch.as_tensor(~src_keep))
        theirs_dec = nn_model.decoder.layers[0](
            torch.as_tensor(y), torch.as_tensor(x),
            tgt_mask=torch.ones(4, 4, dtype=torch.bool).triu(1),
            tgt_key_padding_mask=torch.as_tensor(~tgt_keep),
            memory_key_padding_mask=torch.as_tensor(~src_keep),
        )
    assert np.abs(ours_enc - theirs_enc.numpy()).max() <= 1e-5
    assert np.abs(ours_dec - theirs_dec.numpy()).max() <= 1e-5


# --------------------------------------------------------------------------------------------------
# Canonical names and parameter counts (lesson Step 7 and "Your turn")
# --------------------------------------------------------------------------------------------------

CONFIGS = {
    "toy": toy_config(),
    "base": base_config(),
    "base untied": base_config(tie_output=False),
    "German": german_config(),
    "base without attention biases": base_config(attention_bias=False),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_canonical_state_names_and_shapes_are_the_canonical_ones(name):
    cfg = CONFIGS[name]
    with torch.device("meta"):  # shapes only: the base model would take 250 MB
        model = Transformer(cfg, seed=None)
    state = {key: tuple(p.shape) for key, p in canonical_state(model).items()}
    assert list(state.items()) == list(model_shapes(cfg).items())  # same names, shapes and order


@pytest.mark.parametrize(
    "name, expected",
    [
        ("toy", 234_304),
        ("base", 63_082_496),
        ("base untied", 82_026_496),
        ("German", 76_906_496),
        ("base without attention biases", 63_082_496 - 36_864),
    ],
)
def test_parameter_count_is_the_lessons(name, expected):
    assert adapter.parameter_count(CONFIGS[name].as_dict()) == expected


# --------------------------------------------------------------------------------------------------
# The lesson's small numbers
# --------------------------------------------------------------------------------------------------


def test_positional_encoding_is_the_lessons():
    pe = adapter.positional_encoding(50, 64)
    assert pe.shape == (50, 64) and pe.dtype == np.float32
    np.testing.assert_allclose(pe[1, :4], [0.841, 0.540, 0.682, 0.732], atol=5e-4)
    np.testing.assert_array_equal(pe[0, 0::2], 0.0)  # positions count from 0: sin 0, cos 0
    np.testing.assert_array_equal(pe[0, 1::2], 1.0)
    np.testing.assert_allclose(pe, lesson_positions(50, 64).numpy(), atol=1e-5)


def test_layer_norm_is_the_lessons_hand_check():
    out = adapter.layer_norm(np.array([1.0, 2.0, 3.0, 6.0]), np.ones(4), np.zeros(4), 1e-5)
    np.testing.assert_allclose(out, [-1.069, -0.535, 0.0, 1.604], atol=5e-4)


@pytest.mark.parametrize("step, expected", [(1, 1.747e-07), (100, 1.747e-05), (4000, 6.988e-04), (100_000, 1.398e-04)])
def test_learning_rate_is_the_lessons(step, expected):
    assert f"{adapter.learning_rate(step, 512, 4000):.3e}" == f"{expected:.3e}"


def lesson_smoothing_example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Lesson Step 6: 13 tokens, eps 0.1, right token 5; the best prediction and a 100% sure one."""
    n_vocab, eps, right = 13, 0.1, 5
    target = torch.full((n_vocab,), eps / n_vocab)
    target[right] += 1 - eps
    best = target.log().unsqueeze(0)
    sure = torch.tensor([[0.0] * right + [20.0] + [0.0] * (n_vocab - right - 1)])
    return best, sure, torch.tensor([right])


def test_smoothed_loss_is_the_lessons_and_pytorchs():
    best, sure, right = lesson_smoothing_example()
    torch_loss = nn.CrossEntropyLoss(label_smoothing=0.1)
    for logits, expected in ((best, "0.537"), (sure, "1.846")):
        ours = adapter.label_smoothed_loss(logits.numpy(), right.numpy(), 0.1, PAD)
        assert f"{ours:.3f}" == expected
        assert ours == pytest.approx(torch_loss(logits, right).item(), abs=1e-6)


def test_smoothed_loss_ignores_padding_targets_like_pytorch():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(12, 13)).astype(np.float32) * 3
    targets = np.array([5, 0, 7, 2, 0, 0, 3, 12, 4, 0, 9, 1])
    expected = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)(
        torch.as_tensor(logits), torch.as_tensor(targets)
    )
    assert adapter.label_smoothed_loss(logits, targets, 0.1, PAD) == pytest.approx(expected.item(), abs=1e-6)


def test_fully_masked_query_row_gives_zero_weights_and_zero_output():
    rng = np.random.default_rng(11)
    q, k, v = (rng.normal(size=(1, 3, 4)).astype(np.float32) for _ in range(3))
    mask = np.array([[[1, 1, 0], [0, 0, 0], [1, 0, 0]]], dtype=bool)
    out, weights = adapter.scaled_dot_product_attention(q, k, v, mask)
    assert np.isfinite(out).all() and np.isfinite(weights).all()
    np.testing.assert_array_equal(weights[0, 1], 0.0)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_allclose(weights.sum(-1)[0, [0, 2]], 1.0, atol=1e-6)
    assert weights[0, 0, 2] == 0.0 and (weights[0, 2, 1:] == 0.0).all()


# --------------------------------------------------------------------------------------------------
# The Model wrapper: decoding, weights round trip, a training step
# --------------------------------------------------------------------------------------------------


def test_greedy_decode_returns_ids_consistent_with_the_forward_pass():
    cfg = toy_config()
    model = adapter.build_model(cfg.as_dict(), seed=1)
    model.load_weights(random_weights(model_shapes(cfg), np.random.default_rng(1)))
    src = padded_batch(np.random.default_rng(2), [5, 3, 6], cfg.src_vocab)
    ids = model.greedy_decode(src, max_len=9)
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int64
    assert ids.ndim == 2 and ids.shape[0] == 3 and 1 <= ids.shape[1] <= 9
    for row in ids:  # everything after the first </s> is padding
        eos = np.flatnonzero(row == EOS)
        if eos.size:
            assert (row[eos[0] + 1:] == PAD).all()
    # Teacher forcing on <s> + the decoded ids predicts the same ids (up to each row's </s>).
    tgt_in = np.concatenate([np.full((3, 1), BOS), ids[:, :-1]], axis=1)
    predicted = model.forward(src, tgt_in).argmax(-1)
    for row, (got, want) in enumerate(zip(ids, predicted, strict=True)):
        eos = np.flatnonzero(got == EOS)
        stop = eos[0] + 1 if eos.size else len(got)
        np.testing.assert_array_equal(got[:stop], want[:stop], err_msg=f"row {row}")


def test_dump_weights_after_load_weights_round_trips_exactly():
    cfg = toy_config(attention_bias=False, tie_output=False)
    weights = random_weights(model_shapes(cfg), np.random.default_rng(9))
    model = adapter.build_model(cfg.as_dict(), seed=0)
    model.load_weights(weights)
    dumped = model.dump_weights()
    assert list(dumped) == list(weights)
    for name, value in weights.items():
        assert dumped[name].dtype == np.float32
        np.testing.assert_array_equal(dumped[name], value, err_msg=name)
    other = adapter.build_model(cfg.as_dict(), seed=5)
    other.load_weights(dumped)
    src, tgt_in = np.array([[5, 3, 4, 0]]), np.array([[1, 6, 7, 4]])
    np.testing.assert_array_equal(other.forward(src, tgt_in), model.forward(src, tgt_in))


def test_build_model_is_seeded():
    cfg = toy_config()
    a, b = (adapter.build_model(cfg.as_dict(), seed=4).dump_weights() for _ in range(2))
    c = adapter.build_model(cfg.as_dict(), seed=5).dump_weights()
    assert all(np.array_equal(a[name], b[name]) for name in a)
    assert not np.array_equal(a["encoder.0.self_attn.W_Q"], c["encoder.0.self_attn.W_Q"])
    assert np.std(a["E"]) == pytest.approx(cfg.d_model**-0.5, rel=0.1)  # the lesson's spread 0.125


def test_train_step_reports_the_loss_and_the_rate_it_used():
    cfg = toy_config(dropout=0.0)  # without dropout the training loss is the evaluation loss
    model = adapter.build_model(cfg.as_dict(), seed=0)
    src = np.array([[5, 3, 4, 7, 6], [5, 3, 0, 0, 0]])
    tgt_in = np.array([[1, 6, 7, 4, 3, 5], [1, 3, 5, 0, 0, 0]])
    tgt_out = np.array([[6, 7, 4, 3, 5, 2], [3, 5, 2, 0, 0, 0]])
    logits = model.forward(src, tgt_in).reshape(-1, cfg.tgt_vocab)
    loss_before = adapter.label_smoothed_loss(logits, tgt_out.reshape(-1), 0.1, PAD)
    first, second = model.train_step(src, tgt_in, tgt_out), model.train_step(src, tgt_in, tgt_out)
    assert first["loss"] == pytest.approx(loss_before, abs=1e-5)  # the loss before the update
    assert first["lr"] == pytest.approx(64**-0.5 * 400**-1.5)  # step 1 of the toy schedule
    assert second["lr"] == pytest.approx(64**-0.5 * 2 * 400**-1.5)
    assert second["loss"] < first["loss"]
    fresh = adapter.build_model(cfg.as_dict(), seed=0).dump_weights()
    assert not np.array_equal(model.dump_weights()["E"], fresh["E"])


def test_a_mutant_adapter_is_one_replaced_formula():
    from dataclasses import replace

    def unbiased_layer_norm(x, gamma, beta, eps):
        return gamma * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta

    mutant = ReferenceAdapter(formulas=replace(REFERENCE, layer_norm=unbiased_layer_norm), name="unbiased")
    x, g, b = np.array([1.0, 2.0, 3.0, 6.0]), np.ones(4), np.zeros(4)
    assert not np.allclose(mutant.layer_norm(x, g, b, 1e-5), adapter.layer_norm(x, g, b, 1e-5), atol=1e-3)
    cfg = toy_config()
    model = mutant.build_model(cfg.as_dict(), seed=0)
    assert all(m.formulas is mutant.formulas for m in model.module.modules() if hasattr(m, "formulas"))


def test_load_canonical_rejects_wrong_names():
    model = Transformer(toy_config(), seed=0)
    weights = {name: p.detach().numpy() for name, p in canonical_state(model).items()}
    weights["encoder.0.self_attn.W_q"] = weights.pop("encoder.0.self_attn.W_Q")
    with pytest.raises(KeyError):
        load_canonical(model, weights)
