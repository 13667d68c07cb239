"""Built-in ``hf-marian``: Hugging Face ``transformers``' MarianMTModel built from a MarianConfig (no download).

Configured as close to the paper as MarianConfig allows: ReLU, ``scale_embedding=True`` (x sqrt(d_model); the
config's default is False), one shared table for source, target and output, dropout only on the sublayer outputs
and the embedding sums (``attention_dropout = activation_dropout = 0``), eager attention (it returns the weights).
What the code fixes is declared in ``supports``: LayerNorm eps 1e-5 (``nn.LayerNorm`` default), biases on every
projection, one vocabulary. Its deviations from the paper, with file:line, are in docs/third-party.md.
"""

from __future__ import annotations

import torch

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter
from conformance.implementations.thirdparty._hf import additive, freeze_as_buffers, generate, require

marian = require("transformers.models.marian.modeling_marian", "hf", "hf-marian")

PROJ = {"Q": "q", "K": "k", "V": "v", "O": "out"}  # an entry naming an nn.Linear gives its bias too
NAMES = {  # drafted by `template --from` (through a 5-line subclass taking the config's sizes), TODOs resolved
    "E": "model.shared.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"model.*.layers.{{l}}.self_attn.{p}_proj" for x, p in PROJ.items()},
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"model.decoder.layers.{{l}}.encoder_attn.{p}_proj" for x, p in PROJ.items()},
    "*.{l}.norm1": "model.*.layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "model.encoder.layers.{l}.final_layer_norm",
    "decoder.{l}.norm2": "model.decoder.layers.{l}.encoder_attn_layer_norm",
    "decoder.{l}.norm3": "model.decoder.layers.{l}.final_layer_norm",
    "*.{l}.ffn.W1": "model.*.layers.{l}.fc1.weight",
    "*.{l}.ffn.W2": "model.*.layers.{l}.fc2.weight",
}


def config_of(d_model, h, d_ff, N=1, vocab=8, dropout=0.0, pad_id=0, bos_id=1, eos_id=2):
    return marian.MarianConfig(
        vocab_size=vocab, d_model=d_model, encoder_attention_heads=h, decoder_attention_heads=h, encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff, encoder_layers=N, decoder_layers=N, dropout=dropout, attention_dropout=0.0,
        activation_dropout=0.0, activation_function="relu", scale_embedding=True, pad_token_id=pad_id,
        decoder_start_token_id=bos_id, eos_token_id=eos_id, forced_eos_token_id=eos_id, max_position_embeddings=1024,
        attn_implementation="eager")


def key_padding(keep, dtype=torch.float32):  # (B, L) keep -> HF's additive (B, 1, 1, L), in the scores' dtype
    return additive(keep[:, None, None], dtype)


def encode(m, src):
    return m.model.encoder(input_ids=src, attention_mask=src != m.config.pad_token_id).last_hidden_state


def decode(m, tgt_in, memory, src):
    pad = m.config.pad_token_id
    y = m.model.decoder(input_ids=tgt_in, attention_mask=tgt_in != pad, encoder_hidden_states=memory,
                        encoder_attention_mask=src != pad, use_cache=False).last_hidden_state
    return m.lm_head(y) + m.final_logits_bias


adapter = TorchAdapter(
    lambda c: freeze_as_buffers(marian.MarianMTModel(config_of(c.d_model, c.h, c.d_ff, c.N, c.src_vocab, c.dropout,
                                                               c.pad_id, c.bos_id, c.eos_id))),
    names=NAMES, model={"encode": encode, "decode": decode, "greedy_decode": generate},  # its own generate()
    supplied=("train_step",),  # HF trains with a Trainer outside the model: the suite's recipe
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (transformers MarianMTModel)",
        dtypes={"float16": "native", "bfloat16": "native"},  # the modules .to(dtype); HF's masks follow its dtype
        supports={"eps": (1e-05,), "attention_bias": (True,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "MarianEncoderLayer/MarianDecoderLayer build nn.LayerNorm(d_model): eps fixed at 1e-5",
                 "attention_bias": "MarianAttention is always built with bias=True",
                 "share_embeddings": "share_encoder_decoder_embeddings: one vocabulary, one table",
                 "tie_output": "lm_head is tied to the shared table"}),
    positional_encoding=lambda n, d_model: marian.MarianSinusoidalPositionalEmbedding(n, d_model).create_weight(),
    multi_head_attention=Component(
        lambda s: marian.MarianAttention(s.d_model, s.h, config=config_of(s.d_model, s.h, 4 * s.d_model)),
        lambda attn, q, k, v, keep: attn(q, key_value_states=k, attention_mask=None if keep is None
                                         else additive(keep, q.dtype)[:, None])),
    encoder_layer=Component(lambda s: marian.MarianEncoderLayer(config_of(s.d_model, s.h, s.d_ff)),
                            lambda layer, x, keep: layer(x, key_padding(keep, x.dtype))),
    decoder_layer=Component(  # the causal mask: (B, 1, T, T)
        lambda s: marian.MarianDecoderLayer(config_of(s.d_model, s.h, s.d_ff), layer_idx=0),
        lambda layer, y, memory, tgt, src: layer(
            y, additive(tgt[:, None, None] & torch.ones(y.shape[1], y.shape[1], dtype=torch.bool).tril(), y.dtype),
            memory, encoder_attention_mask=key_padding(src, y.dtype), use_cache=False)),
)
