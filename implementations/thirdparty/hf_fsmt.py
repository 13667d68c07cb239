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
from conformance.adapters import sub_names
from conformance.adapters.torch import TorchModel, floats, load_component, mask, numpy, seeded
from conformance.implementations.thirdparty._hf import additive, freeze_as_buffers, require

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
ATTENTION = {"*.{l}.self_attn": "model.*.layers.{l}.self_attn",
             "decoder.{l}.cross_attn": "model.decoder.layers.{l}.encoder_attn"}
LAYER = {s: sub_names(NAMES, f"{s}.{{l}}.", f"model.{s}.layers.{{l}}.") for s in ("encoder", "decoder")}
MHA = sub_names(NAMES, "encoder.{l}.self_attn.", "model.encoder.layers.{l}.self_attn.")


def config_of(d_model, h, d_ff, N=1, src_vocab=8, tgt_vocab=8, dropout=0.0, pad_id=0, bos_id=1, eos_id=2, tied=True):
    return fsmt.FSMTConfig(
        langs=["src", "tgt"], src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, d_model=d_model,
        encoder_attention_heads=h, decoder_attention_heads=h, encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff,
        encoder_layers=N, decoder_layers=N, dropout=dropout, pad_token_id=pad_id, bos_token_id=bos_id,
        eos_token_id=eos_id, decoder_start_token_id=bos_id, forced_eos_token_id=eos_id, tie_word_embeddings=tied)


def causal(T):  # FSMT's own decoder_causal_mask: the dtype's minimum strictly above the diagonal
    return additive(torch.ones(T, T, dtype=torch.bool).tril())


def encode(m, src):
    pad = m.config.pad_token_id
    return m.model.encoder(input_ids=src, attention_mask=src != pad, output_attentions=True).last_hidden_state


def decode(m, tgt_in, memory, src):
    pad = m.config.pad_token_id
    return m.model.decoder(tgt_in, memory, src != pad, tgt_in == pad, decoder_causal_mask=causal(tgt_in.shape[1]),
                           use_cache=False, output_attentions=True).last_hidden_state  # the logits


def seq_first(t):
    return floats(t).transpose(0, 1)


class FSMTAdapter:
    conventions = Conventions(
        mask="keep", batch_first=True, framework="torch (transformers FSMTForConditionalGeneration)",
        supports={"eps": (1e-05,), "attention_bias": (True,)},
        reasons={"eps": "EncoderLayer/DecoderLayer build LayerNorm(d_model): eps fixed at 1e-5",
                 "attention_bias": "Attention is always built with bias=True"},
    )
    model_class = TorchModel

    def build_model(self, config, seed):
        if config["share_embeddings"] != config["tie_output"]:
            raise NotImplementedError("tie_word_embeddings ties the source, target and output tables together,"
                                      " or none of them")
        with seeded(seed):
            net = fsmt.FSMTForConditionalGeneration(config_of(
                config["d_model"], config["h"], config["d_ff"], config["N"], config["src_vocab"], config["tgt_vocab"],
                config["dropout"], config["pad_id"], config["bos_id"], config["eos_id"], config["tie_output"]))
        for stack in (net.model.encoder, net.model.decoder):
            stack.embed_positions.weight.requires_grad_(False)  # made a buffer below: see the module docstring
        return TorchModel(freeze_as_buffers(net), config, names=NAMES, attention=ATTENTION, encode=encode,
                          decode=decode, seed=seed)

    def positional_encoding(self, n, d_model):
        """What the model adds at positions 0..n-1 of an unpadded sentence with the suite's pad_id 0: the table's
        rows 1..n (make_positions numbers tokens from padding_idx + 1)."""
        return numpy(fsmt.SinusoidalPositionalEmbedding.get_embedding(n + 1, d_model, 0)[1:])

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, keep):
        d = len(weights["W_O"])
        attn = load_component(fsmt.Attention(d, int(h), encoder_decoder_attention=True), weights, MHA)
        blocked = None if keep is None else additive(mask(keep))[:, None]  # (B, 1, Lq, Lk), added to the scores
        out, w = attn(seq_first(query), seq_first(key), attn_mask=blocked, output_attentions=True)
        return numpy(out.transpose(0, 1)), numpy(w)

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        layer = load_component(fsmt.EncoderLayer(config_of(d, int(h), d_ff)), weights, LAYER["encoder"])
        return numpy(layer(seq_first(x), ~mask(src_mask))[0].transpose(0, 1))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        layer = load_component(fsmt.DecoderLayer(config_of(d, int(h), d_ff)), weights, LAYER["decoder"])
        out = layer(seq_first(y), seq_first(memory), encoder_attn_mask=~mask(src_mask), causal_mask=causal(y.shape[1]),
                    decoder_padding_mask=~mask(tgt_mask))[0]
        return numpy(out.transpose(0, 1))

    def parameter_count(self, config):
        with torch.device("meta"):  # shapes only; the sinusoid tables are buffers here (the module docstring)
            return sum(p.numel() for p in self.build_model(config, 0).module.parameters())


adapter = FSMTAdapter()
