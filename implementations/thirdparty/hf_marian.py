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
from conformance.adapters import sub_names
from conformance.adapters.torch import TorchModel, floats, load_component, mask, numpy, seeded
from conformance.implementations.thirdparty._hf import additive, freeze_as_buffers, require

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
ATTENTION = {"*.{l}.self_attn": "model.*.layers.{l}.self_attn",
             "decoder.{l}.cross_attn": "model.decoder.layers.{l}.encoder_attn"}
LAYER = {s: sub_names(NAMES, f"{s}.{{l}}.", f"model.{s}.layers.{{l}}.") for s in ("encoder", "decoder")}
MHA = sub_names(NAMES, "encoder.{l}.self_attn.", "model.encoder.layers.{l}.self_attn.")


def config_of(d_model, h, d_ff, N=1, vocab=8, dropout=0.0, pad_id=0, bos_id=1, eos_id=2):
    return marian.MarianConfig(
        vocab_size=vocab, d_model=d_model, encoder_attention_heads=h, decoder_attention_heads=h, encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff, encoder_layers=N, decoder_layers=N, dropout=dropout, attention_dropout=0.0,
        activation_dropout=0.0, activation_function="relu", scale_embedding=True, pad_token_id=pad_id,
        decoder_start_token_id=bos_id, eos_token_id=eos_id, forced_eos_token_id=eos_id, max_position_embeddings=1024,
        attn_implementation="eager")


def encode(m, src):
    return m.model.encoder(input_ids=src, attention_mask=src != m.config.pad_token_id).last_hidden_state


def decode(m, tgt_in, memory, src):
    pad = m.config.pad_token_id
    y = m.model.decoder(input_ids=tgt_in, attention_mask=tgt_in != pad, encoder_hidden_states=memory,
                        encoder_attention_mask=src != pad, use_cache=False).last_hidden_state
    return m.lm_head(y) + m.final_logits_bias


class MarianAdapter:
    conventions = Conventions(
        mask="keep", batch_first=True, framework="torch (transformers MarianMTModel)",
        supports={"eps": (1e-05,), "attention_bias": (True,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "MarianEncoderLayer/MarianDecoderLayer build nn.LayerNorm(d_model): eps fixed at 1e-5",
                 "attention_bias": "MarianAttention is always built with bias=True",
                 "share_embeddings": "share_encoder_decoder_embeddings: one vocabulary, one table",
                 "tie_output": "lm_head is tied to the shared table"},
    )
    model_class = TorchModel

    def build_model(self, config, seed):
        with seeded(seed):
            net = marian.MarianMTModel(config_of(config["d_model"], config["h"], config["d_ff"], config["N"],
                                                 config["src_vocab"], config["dropout"], config["pad_id"],
                                                 config["bos_id"], config["eos_id"]))
        return TorchModel(freeze_as_buffers(net), config, names=NAMES, attention=ATTENTION, encode=encode,
                          decode=decode, seed=seed)

    def positional_encoding(self, n, d_model):
        return numpy(marian.MarianSinusoidalPositionalEmbedding(n, d_model).create_weight())

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, keep):
        d = len(weights["W_O"])
        attn = load_component(marian.MarianAttention(d, int(h), config=config_of(d, int(h), 4 * d)), weights, MHA)
        out, w = attn(floats(query), key_value_states=floats(key), attention_mask=additive(mask(keep))[:, None]
                      if keep is not None else None)
        return numpy(out), numpy(w)

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        layer = load_component(marian.MarianEncoderLayer(config_of(d, int(h), d_ff)), weights, LAYER["encoder"])
        return numpy(layer(floats(x), additive(mask(src_mask)[:, None, None])))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        layer = load_component(marian.MarianDecoderLayer(config_of(d, int(h), d_ff), layer_idx=0), weights,
                               LAYER["decoder"])
        T = y.shape[1]
        causal = mask(tgt_mask)[:, None, None] & torch.ones(T, T, dtype=torch.bool).tril()  # (B, 1, T, T)
        return numpy(layer(floats(y), additive(causal), floats(memory),
                           encoder_attention_mask=additive(mask(src_mask)[:, None, None]), use_cache=False))

    def parameter_count(self, config):
        with torch.device("meta"):  # shapes only; the sinusoid tables are buffers, not parameters
            return sum(p.numel() for p in self.build_model(config, 0).module.parameters())


adapter = MarianAdapter()
