"""Built-in ``opennmt-py``: OpenNMT-py's Transformer (``onmt.model_builder.build_base_model``) built from its own
command-line options and a vocabulary made here (no download, no data).

Options: ``-encoder_type transformer -decoder_type transformer -position_encoding`` (SinusoidalInterleaved, its
default), the suite's sizes and dropout, ``-attention_dropout 0`` (the paper drops no attention weights),
``-share_embeddings``/``-share_decoder_embeddings`` as the config asks, ``-add_qkvbias`` for attention biases. The
vocabulary puts OpenNMT's padding token at the suite's ``pad_id``. What the code fixes is declared in ``supports``:
LayerNorm eps 1e-6. Its deviations from the
paper (pre-norm layers, a final LayerNorm per stack, an output bias), with file:line, are in docs/third-party.md.
"""

from __future__ import annotations

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter
from conformance.implementations.thirdparty._hf import require

builder = require("onmt.model_builder", "onmt", "opennmt-py")
from onmt import opts  # noqa: E402 - after the guard, which names the extra when onmt is absent
from onmt.constants import DefaultTokens  # noqa: E402
from onmt.decoders.transformer import TransformerDecoderLayer  # noqa: E402
from onmt.encoders.transformer import TransformerEncoderLayer  # noqa: E402
from onmt.modules.embeddings import PositionalEncoding  # noqa: E402
from onmt.utils.parse import ArgumentParser  # noqa: E402

PROJ = {"Q": "linear_query", "K": "linear_keys", "V": "linear_values", "O": "final_linear"}
NAMES = {
    "E": "encoder.embeddings.make_embedding.emb_luts.0.weight",
    "E_src": "encoder.embeddings.make_embedding.emb_luts.0.weight",
    "E_tgt": "decoder.embeddings.make_embedding.emb_luts.0.weight",
    "W_out": "generator",
    **{f"encoder.{{l}}.self_attn.W_{x}": f"encoder.transformer.{{l}}.self_attn.{p}" for x, p in PROJ.items()},
    **{f"decoder.{{l}}.self_attn.W_{x}": f"decoder.transformer_layers.{{l}}.self_attn.{p}" for x, p in PROJ.items()},
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder.transformer_layers.{{l}}.context_attn.{p}"
       for x, p in PROJ.items()},
    "encoder.{l}.norm1": "encoder.transformer.{l}.layer_norm",  # pre-norm: before self-attention
    "encoder.{l}.norm2": "encoder.transformer.{l}.feed_forward.layer_norm",  # before the FFN
    "decoder.{l}.norm1": "decoder.transformer_layers.{l}.layer_norm_1",
    "decoder.{l}.norm2": "decoder.transformer_layers.{l}.layer_norm_2",
    "decoder.{l}.norm3": "decoder.transformer_layers.{l}.feed_forward.layer_norm",
    "encoder.{l}.ffn.W1": "encoder.transformer.{l}.feed_forward.w_1",
    "encoder.{l}.ffn.W2": "encoder.transformer.{l}.feed_forward.w_2",
    "decoder.{l}.ffn.W1": "decoder.transformer_layers.{l}.feed_forward.w_1",
    "decoder.{l}.ffn.W2": "decoder.transformer_layers.{l}.feed_forward.w_2",
}


def options(config) -> list[str]:
    sizes = {"enc_layers": config["N"], "dec_layers": config["N"], "hidden_size": config["d_model"],
             "word_vec_size": config["d_model"], "transformer_ff": config["d_ff"], "heads": config["h"],
             "dropout": config["dropout"], "attention_dropout": 0.0}
    flags = ["-encoder_type", "transformer", "-decoder_type", "transformer", "-position_encoding"]
    flags += [f"-{k}={v}" for k, v in sizes.items()]
    flags += ["-share_embeddings"] * config["share_embeddings"] + ["-share_decoder_embeddings"] * config["tie_output"]
    return flags + ["-add_qkvbias"] * config["attention_bias"]


def vocabulary(size: int, pad_id: int):
    """pyonmttok's Vocab of ``size`` tokens, OpenNMT's padding token at ``pad_id`` (the model's padding_idx)."""
    import pyonmttok

    tokens = [f"t{i}" for i in range(size)]
    tokens[pad_id] = DefaultTokens.PAD
    return pyonmttok.build_vocab_from_tokens(tokens, special_tokens=[])


def build(config):
    parser = ArgumentParser()
    opts.model_opts(parser)
    opts._add_train_general_opts(parser)
    opt = parser.parse_args(options(config))
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    src = vocabulary(config["src_vocab"], config["pad_id"])  # one object when shared (-share_vocab's assertion)
    tgt = src if config["share_embeddings"] else vocabulary(config["tgt_vocab"], config["pad_id"])
    vocabs = {"src": src, "tgt": tgt, "data_task": "seq2seq"}
    return builder.build_base_model(opt, vocabs, gpu=False)


def encode(m, src):  # OpenNMT's source mask comes from the lengths: trailing padding
    return m.encoder(src[..., None], (src != m.decoder.embeddings.word_padding_idx).sum(1))[0]


def decode(m, tgt_in, memory, src):
    m.decoder.init_state(src[..., None], memory, None)
    lengths = (src != m.decoder.embeddings.word_padding_idx).sum(1)
    return m.generator(m.decoder(tgt_in[..., None], memory, src_len=lengths)[0])


adapter = TorchAdapter(
    lambda c: build(c.as_dict()), names=NAMES, model={"encode": encode, "decode": decode},
    count_on="cpu",  # build_base_model moves the model, which the meta device cannot
    supplied=("greedy_decode", "train_step"),  # OpenNMT-py's translator and trainer need its data pipeline: the suite's
    conventions=Conventions(mask="keep", batch_first=True, framework="torch (OpenNMT-py)", supports={"eps": (1e-06,)},
                            reasons={"eps": "every LayerNorm is nn.LayerNorm(d_model, eps=1e-6)"},
                            dtypes={"float16": "native", "bfloat16": "native"}),  # the modules .to(dtype)
    positional_encoding=lambda n, d_model: PositionalEncoding(d_model, "SinusoidalInterleaved", max_len=n).pe[:, 0],
    encoder_layer=Component(lambda s: TransformerEncoderLayer(s.d_model, s.h, s.d_ff, 0.0, 0.0, add_qkvbias=s.bias),
                            lambda layer, x, keep: layer(x, ~keep[:, None, None])),
    decoder_layer=Component(lambda s: TransformerDecoderLayer(s.d_model, s.h, s.d_ff, 0.0, 0.0, add_qkvbias=s.bias),
                            lambda layer, y, memory, tgt, src: layer(y, memory, ~src[:, None], ~tgt[:, None])[0]),
)
