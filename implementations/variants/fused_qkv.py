"""Built-in ``torch-fused-qkv``: the adapter of ``fused_qkv_model`` (one fused QKV projection, sequence-first
tensors, "blocked" masks; that module's docstring says how it differs from the reference).

Everything but the name map is a declaration (``conformance.adapters.torch.TorchAdapter``): the model's parts come
from ``TorchModel`` (the paper's recipe following this implementation's ``lrate``), the layers' and sublayers' name
maps and the attention modules read by hooks are derived from ``NAMES``.
"""

from __future__ import annotations

from conformance.adapter import Conventions
from conformance.adapters.torch import Component, TorchAdapter, torch_layer_norm, torch_smoothed_loss
from conformance.implementations.variants.fused_qkv_model import (
    DecoderBlock,
    EncoderBlock,
    FusedAttention,
    PositionwiseFFN,
    Seq2SeqTransformer,
    attend,
    initialise,
    lrate,
    sinusoid_table,
)

NAMES = {
    "E": "embedding.weight", "E_src": "src_embedding.weight", "E_tgt": "tgt_embedding.weight", "W_out": "generator",
    "*.{l}.*_attn.W_QKV": "*.{l}.*_attn.W_qkv", "*.{l}.*_attn.b_QKV": "*.{l}.*_attn.b_qkv",  # x @ W already
    "*.{l}.*_attn.W_O": "*.{l}.*_attn.out",  # nn.Linear: transposed, its bias beside it
    "*.{l}.ffn.W1": "*.{l}.ffn.inner", "*.{l}.ffn.W2": "*.{l}.ffn.outer", "*.{l}.norm*": "*.{l}.norm*",
}

adapter = TorchAdapter(
    Seq2SeqTransformer, names=NAMES, name="torch-fused-qkv",
    conventions=Conventions(mask="blocked", batch_first=False, dtype="float32", framework="torch"),
    init=lambda model, seed: initialise(model.views(), model.config.d_model, seed),
    supplied=("greedy_decode", "train_step"),  # the model has no decoding loop and no trainer: the suite's
    positional_encoding=sinusoid_table, layer_norm=torch_layer_norm, scaled_dot_product_attention=attend,
    learning_rate=lrate, label_smoothed_loss=torch_smoothed_loss,
    # mask (B, Lq, Lk) True = blocked -> (B, 1, Lq, Lk), every head; the weights are the module's last_weights
    multi_head_attention=Component(lambda s: FusedAttention(s.d_model, s.h, s.bias),
                                   lambda m, q, k, v, mask: m(q, k, v, None if mask is None else mask[:, None])),
    feed_forward=Component(lambda s: PositionwiseFFN(s.d_model, s.d_ff)),
    encoder_layer=Component(lambda s: EncoderBlock(s.d_model, s.h, s.d_ff, s.eps, 0.0, s.bias)),
    decoder_layer=Component(lambda s: DecoderBlock(s.d_model, s.h, s.d_ff, s.eps, 0.0, s.bias)),
)
