"""Adapters built on ``torch.nn.Transformer``: PyTorch's defaults, and the configuration that is the paper's.

The lesson ("Our code equals PyTorch's nn.Transformer", "Common mistake"): with ``norm_first=False``,
ReLU, dropout off and the canonical weights copied in, ``nn.Transformer`` computes the paper's model,
once two of its defaults are undone:

1. an extra final ``LayerNorm`` after the encoder stack and another after the decoder stack
   (``encoder.norm``, ``decoder.norm``). The paper's post-norm model has none. With fresh weights
   (gamma 1, beta 0) a second norm of normalised numbers changes almost nothing, so the bug hides;
   after training it is "off by up to 2.14" in the toy's logits.
2. an evaluation-mode fast path: ``nn.TransformerEncoder`` turns a padded batch into a nested tensor
   (``enable_nested_tensor=True``) and pads the result back with 0, so the memory is exactly 0 at
   padded positions instead of what the formula gives there. Switched off with
   ``encoder.use_nested_tensor = False``.

Two module-level adapters:

* ``torch_nn_default`` (built-in ``torch-nn-transformer``): PyTorch's defaults, both traps in place.
  The final norms' parameters have no canonical name: as the protocol asks, ``load_weights`` sets
  them to their identity values (gamma 1, beta 0) and ``unmapped_parameters`` lists them. The trap
  still shows: the checks load gamma and beta far from 1 and 0 into the last layer, and a second norm
  renormalises what that layer's own norm scaled. The nested-tensor fast path is left on and does
  trigger (torch 2.13, CPU) for
  ``forward``/``encode``/``greedy_decode`` in evaluation mode under ``torch.no_grad()`` with a
  key padding mask, trailing padding, attention biases and an even number of heads
  (``nn.TransformerEncoder.forward`` and ``__init__`` list the conditions). ``parameter_count``
  counts the two final norms: 2 x 2 x d_model more than the paper (2,048 at the base size).
* ``torch_nn_fixed`` (built-in ``torch-nn-transformer-fixed``): ``encoder.norm = decoder.norm = None``
  and ``encoder.use_nested_tensor = False``; otherwise the same code. It computes the paper's model. In training it
  also drops only where §5.4 does: nn drops the attention weights and the FFN's hidden layer too (the default
  keeps them, which ``dropout_acts_nowhere_else`` shows), so the fixed one sets each attention's dropout to 0 and
  each layer's hidden-layer dropout to ``nn.Identity()``.

What is written around ``nn.Transformer`` (it has no embedding and no output layer): the tied embedding
E[ids] x sqrt(d_model) plus the interleaved sinusoidal encoding (sine in even columns, cosine in odd,
computed here), dropout on that sum, and the output projection y @ E^T (or an ``nn.Linear`` without
bias holding W_out^T when ``tie_output=False``). Masks passed to nn: ``src_key_padding_mask``,
``tgt_key_padding_mask``, ``memory_key_padding_mask`` (True = padding, blocked) and the causal
``tgt_mask`` (True strictly above the diagonal).

``attention_bias=False``: ``nn.Transformer(bias=False)`` would also drop the FFN biases and LayerNorm
betas, so the model is built with biases and each ``nn.MultiheadAttention`` is replaced by one built
with ``bias=False``; the encoder's nested-tensor fast path is then off, as ``nn.TransformerEncoder``
itself decides for bias-free attention.

Parts: ``multi_head_attention`` is ``nn.MultiheadAttention(need_weights=True,
average_attn_weights=False)`` with the canonical weights (``in_proj_weight`` stacks W_Q^T, W_K^T, W_V^T)
and a (B*h, Lq, Lk) boolean ``attn_mask``; ``encoder_layer``/``decoder_layer`` are
``nn.TransformerEncoderLayer``/``nn.TransformerDecoderLayer``; ``scaled_dot_product_attention`` takes
its output from ``torch.nn.functional.scaled_dot_product_attention`` and writes its weights out (that
function returns none) with ``torch._safe_softmax``, the softmax torch's own math SDPA kernel uses.

Fully masked query rows are left to torch, not patched: ``nn.MultiheadAttention`` with
``need_weights=True`` gives NaN weights and a NaN output for a query whose keys are all masked (torch
2.13, both its fast and its slow path); with ``need_weights=False`` (what the layers use) the same row
comes out as b_O. ``F.scaled_dot_product_attention`` and ``torch._safe_softmax`` give 0.

The model (``nn.Transformer`` and what is written around it) is ``model.py``; this file is its adapter, declared
with ``conformance.adapters.torch.TorchAdapter``.

Training (§5.3, §5.4): Adam(recipe betas, eps) at base rate 1 scaled by ``LambdaLR(lambda s:
lrate(s + 1, d_model, warmup))``, ``nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=eps)``;
dropout is nn.Transformer's own (sublayer outputs, the FFN hidden layer, and the attention weights; the fixed one
keeps the sublayer outputs' only) plus the embedding sums.
"""

from __future__ import annotations

from torch import nn

from conformance.adapter import Conventions
from conformance.adapters.torch import (
    Component,
    TorchAdapter,
    torch_layer_norm,
    torch_scaled_dot_product_attention,
    torch_smoothed_loss,
)
from conformance.implementations.torch_nn.model import TorchNNSeq2Seq, causal_blocked, lrate, nn_layer, sinusoids

MHA = {"W_QKV": "in_proj_weight", "W_O": "out_proj"}  # in_proj_weight stacks W_Q^T, W_K^T, W_V^T; out_proj's bias too
NAMES = {
    "E": "embedding.weight", "E_src": "src_embedding.weight", "E_tgt": "tgt_embedding.weight", "W_out": "generator",
    **{f"*.{{l}}.self_attn.{k}": f"transformer.*.layers.{{l}}.self_attn.{v}" for k, v in MHA.items()},
    **{f"decoder.{{l}}.cross_attn.{k}": f"transformer.decoder.layers.{{l}}.multihead_attn.{v}" for k, v in MHA.items()},
    "*.{l}.ffn.W1": "transformer.*.layers.{l}.linear1", "*.{l}.ffn.W2": "transformer.*.layers.{l}.linear2",
    "*.{l}.norm*": "transformer.*.layers.{l}.norm*",  # an entry for a norm gives gamma (weight) and beta (bias)
}


def torch_nn(*, final_norms: bool, nested_tensor: bool, name: str, paper_dropout: bool = False) -> TorchAdapter:
    """Every part, computed by torch.nn's modules; ``final_norms``/``nested_tensor``/``paper_dropout`` pick the
    configuration."""
    return TorchAdapter(
        lambda config: TorchNNSeq2Seq(config, final_norms=final_norms, nested_tensor=nested_tensor,
                                      paper_dropout=paper_dropout), names=NAMES,
        conventions=Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch",
                                dtypes={"float16": "native", "bfloat16": "native"}), name=name,
        init=lambda model, seed: model.module.initialise(seed), model={"forward": lambda m, src, tgt: m(src, tgt)},
        supplied=("greedy_decode", "train_step"),  # nn.Transformer has no decoding loop and no trainer: the suite's
        positional_encoding=sinusoids, layer_norm=torch_layer_norm,
        scaled_dot_product_attention=torch_scaled_dot_product_attention,
        learning_rate=lrate, label_smoothed_loss=torch_smoothed_loss,
        multi_head_attention=Component(lambda s: nn.MultiheadAttention(s.d_model, s.h, bias=s.bias, batch_first=True)),
        feed_forward=Component(lambda s: nn.Sequential(nn.Linear(s.d_model, s.d_ff), nn.ReLU(),
                                                       nn.Linear(s.d_ff, s.d_model)), names={"W1": "0", "W2": "2"}),
        encoder_layer=Component(lambda s: nn_layer(nn.TransformerEncoderLayer, s.d_model, s.h, s.d_ff, s.eps, s.bias),
                                lambda layer, x, blocked: layer(x, src_key_padding_mask=blocked)),
        decoder_layer=Component(lambda s: nn_layer(nn.TransformerDecoderLayer, s.d_model, s.h, s.d_ff, s.eps, s.bias),
                                lambda layer, y, memory, tgt, src: layer(
                                    y, memory, tgt_mask=causal_blocked(y.shape[1]), tgt_key_padding_mask=tgt,
                                    memory_key_padding_mask=src, tgt_is_causal=True)),
    )


torch_nn_default = torch_nn(final_norms=True, nested_tensor=True, name="torch-nn-transformer")
torch_nn_fixed = torch_nn(final_norms=False, nested_tensor=False, paper_dropout=True,
                          name="torch-nn-transformer-fixed")
adapter = torch_nn_fixed  # what ``conformance.implementations.torch_nn.adapter`` alone loads: the correct one
