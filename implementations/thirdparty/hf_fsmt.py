"""Built-in ``hf-fsmt``: Hugging Face ``transformers``' FSMTForConditionalGeneration (the port of fairseq's WMT19
Transformer) built from an FSMTConfig (no download).

FSMTConfig's defaults are kept where they are the paper's (ReLU, post-norm, ``scale_embedding=True``, dropout on
the sublayer outputs and the embedding sums only); ``tie_word_embeddings`` follows the suite's config: True ties
the source, target and output tables into one (the paper's), False keeps three. What the code fixes is declared in
``supports``: LayerNorm eps 1e-5, biases on every projection, and the two tying choices together.

The sinusoid tables (``embed_positions``) are ``nn.Parameter``s in this port, trainable and initialised to the
sinusoids. The protocol sets parameters without a canonical name to 0 in ``load_weights``, which would remove the
positions altogether, so they are made buffers here (docs/third-party.md lists that as a deviation the adapter hides).
Its deviations from the paper, with file:line, are in docs/third-party.md.
"""

from __future__ import annotations

import torch

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter
from conformance.implementations.thirdparty._hf import additive, freeze_as_buffers, generate, require

fsmt = require("transformers.models.fsmt.modeling_fsmt", "hf", "hf-fsmt")

PROJ = {"Q": "q", "K": "k", "V": "v", "O": "out"}  # an entry naming an nn.Linear gives its bias too
NAMES = {  # drafted by `template --from` (through a 5-line subclass taking the config's sizes), TODOs resolved
    "E": "model.decoder.embed_tokens.weight",  # tie_word_embeddings: the encoder's table and the output are this one
    "E_src": "model.encoder.embed_tokens.weight",
    "E_tgt": "model.decoder.embed_tokens.weight",
    "W_out": "model.decoder.output_projection",
    **{f"*.{{l}}.self_attn.W_{x}": f"model.*.layers.{{l}}.self_attn.{p}_proj" for x, p in PROJ.items()},
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"model.decoder.layers.{{l}}.encoder_attn.{p}_proj" for x, p in PROJ.items()},
    "*.{l}.norm1": "model.*.layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "model.encoder.layers.{l}.final_layer_norm",
    "decoder.{l}.norm2": "model.decoder.layers.{l}.encoder_attn_layer_norm",
    "decoder.{l}.norm3": "model.decoder.layers.{l}.final_layer_norm",
    "*.{l}.ffn.W1": "model.*.layers.{l}.fc1.weight",
    "*.{l}.ffn.W2": "model.*.layers.{l}.fc2.weight",
}


def config_of(d_model, h, d_ff, N=1, src_vocab=8, tgt_vocab=8, dropout=0.0, pad_id=0, bos_id=1, eos_id=2, tied=True):
    return fsmt.FSMTConfig(
        langs=["src", "tgt"], src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, d_model=d_model,
        encoder_attention_heads=h, decoder_attention_heads=h, encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff,
        encoder_layers=N, decoder_layers=N, dropout=dropout, pad_token_id=pad_id, bos_token_id=bos_id,
        eos_token_id=eos_id, decoder_start_token_id=bos_id, forced_eos_token_id=eos_id, tie_word_embeddings=tied)


def causal(T, dtype=torch.float32):  # FSMT's own decoder_causal_mask: the dtype's minimum strictly above the diagonal
    return additive(torch.ones(T, T, dtype=torch.bool).tril(), dtype)


def encode(m, src):
    pad = m.config.pad_token_id
    return m.model.encoder(input_ids=src, attention_mask=src != pad, output_attentions=True).last_hidden_state


def decode(m, tgt_in, memory, src):
    pad = m.config.pad_token_id
    return m.model.decoder(tgt_in, memory, src != pad, tgt_in == pad,
                           decoder_causal_mask=causal(tgt_in.shape[1], memory.dtype), use_cache=False,
                           output_attentions=True).last_hidden_state  # the logits


def build(c):
    if c.share_embeddings != c.tie_output:
        raise NotImplementedError("tie_word_embeddings ties the source, target and output tables together,"
                                  " or none of them")
    net = fsmt.FSMTForConditionalGeneration(config_of(c.d_model, c.h, c.d_ff, c.N, c.src_vocab, c.tgt_vocab, c.dropout,
                                                      c.pad_id, c.bos_id, c.eos_id, c.tie_output))
    for stack in (net.model.encoder, net.model.decoder):
        stack.embed_positions.weight.requires_grad_(False)  # made a buffer: see the module docstring
    return freeze_as_buffers(net)


def seq_first(t):  # (B, L, ...) <-> FSMT's (L, B, ...)
    return t.transpose(0, 1)


def attend(attn, query, key, value, keep):  # the mask (B, 1, Lq, Lk) is added to the scores
    blocked = None if keep is None else additive(keep, query.dtype)[:, None]
    out, weights = attn(seq_first(query), seq_first(key), attn_mask=blocked, output_attentions=True)
    return seq_first(out), weights


adapter = TorchAdapter(
    build, names=NAMES, model={"encode": encode, "decode": decode, "greedy_decode": generate},  # its own generate()
    supplied=("train_step",),  # HF trains with a Trainer outside the model: the suite's recipe
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (transformers FSMTForConditionalGeneration)",
        dtypes={"float16": "native", "bfloat16": "native"},  # the modules .to(dtype), its masks in the same dtype
        supports={"eps": (1e-05,), "attention_bias": (True,)},
        reasons={"eps": "EncoderLayer/DecoderLayer build LayerNorm(d_model): eps fixed at 1e-5",
                 "attention_bias": "Attention is always built with bias=True"}),
    # What the model adds at positions 0..n-1 of an unpadded sentence with the suite's pad_id 0: the table's rows
    # 1..n (make_positions numbers tokens from padding_idx + 1).
    positional_encoding=lambda n, d_model: fsmt.SinusoidalPositionalEmbedding.get_embedding(n + 1, d_model, 0)[1:],
    multi_head_attention=Component(lambda s: fsmt.Attention(s.d_model, s.h, encoder_decoder_attention=True), attend),
    encoder_layer=Component(lambda s: fsmt.EncoderLayer(config_of(s.d_model, s.h, s.d_ff)),
                            lambda layer, x, keep: seq_first(layer(seq_first(x), ~keep)[0])),
    decoder_layer=Component(lambda s: fsmt.DecoderLayer(config_of(s.d_model, s.h, s.d_ff)),
                            lambda layer, y, memory, tgt, src: seq_first(layer(
                                seq_first(y), seq_first(memory), encoder_attn_mask=~src,
                                causal_mask=causal(y.shape[1], y.dtype), decoder_padding_mask=~tgt)[0])),
)
