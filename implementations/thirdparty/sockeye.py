"""Built-in ``sockeye``: Sockeye 3's Transformer (``sockeye.model.SockeyeModel``) built from its own config objects,
as ``sockeye.train`` builds them (train.py:448-530, 618-725), with no data and no download.

Configured as a Sockeye user who wants the paper would: ``--encoder transformer --decoder transformer
--transformer-preprocess '' --transformer-postprocess drn`` (post-norm, LayerNorm(x + Dropout(Sublayer(x))); Sockeye's
defaults are pre-norm ``n`` / ``dr``), ``--transformer-positional-embedding-type fixed`` (sinusoids, the default),
ReLU, the suite's sizes, dropout on the sublayer outputs and the embedding sums only
(``--transformer-dropout-attention 0 --transformer-dropout-act 0 --embed-dropout 0``), ``--weight-tying-type`` as the
config asks, tables of 1,024 positions (``--max-seq-len 1023``, + 1 for BOS/EOS). What the code fixes is declared in
``supports``: LayerNorm eps 1e-6, no attention biases. Sockeye's model reads padding only through the lengths it is
given, so any ``pad_id`` works. Its deviations from the paper (sines then cosines, an output bias, no target padding
mask in the decoder), with file:line, are in docs/third-party.md.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter
from conformance.implementations.thirdparty._hf import freeze_as_buffers

try:
    from sockeye import constants as C
    from sockeye import data_io, encoder, layers, loss, lr_scheduler, model, transformer
except ModuleNotFoundError as exc:  # sockeye cannot be an extra: its metadata asks for torch<1.14 and numpy<2
    raise ModuleNotFoundError(
        "the built-in 'sockeye' adapts sockeye, which is not installed. Fix: pip install --no-deps -r"
        " requirements-sockeye.txt (that file pins sockeye and the one dependency it imports; --no-deps because"
        " sockeye declares torch<1.14 and numpy<2)", name="sockeye") from exc

MAX_LEN = 1024  # rows of the positional tables: --max-seq-len 1023 (+ 1, train.py:1011; its default is 95)
TYING = {(True, True): C.WEIGHT_TYING_SRC_TRG_SOFTMAX, (True, False): C.WEIGHT_TYING_SRC_TRG,
         (False, True): C.WEIGHT_TYING_TRG_SOFTMAX, (False, False): C.WEIGHT_TYING_NONE}
NAMES = {  # written by hand: `template --from sockeye.model:SockeyeModel` cannot build ModelConfig
    "E": "model.embedding_source.embedding.weight",  # src_trg(_softmax): the target table and output are this one
    "E_src": "model.embedding_source.embedding.weight",
    "E_tgt": "model.embedding_target.embedding.weight",
    "W_out": "model.output_layer.weight.T",  # OutputLayer keeps (V, d_model) and is no nn.Linear
    "encoder.{l}.self_attn.W_QKV": "model.encoder.layers.{l}.self_attention.ff_in",  # [W_Q; W_K; W_V] as trained
    "encoder.{l}.self_attn.W_O": "model.encoder.layers.{l}.self_attention.ff_out",
    "decoder.{l}.self_attn.W_QKV": "model.decoder.layers.{l}.autoregr_layer.ff_in",
    "decoder.{l}.self_attn.W_O": "model.decoder.layers.{l}.autoregr_layer.ff_out",
    "decoder.{l}.cross_attn.W_Q": "model.decoder.layers.{l}.enc_attention.ff_q",
    "decoder.{l}.cross_attn.W_KV": "model.decoder.layers.{l}.enc_attention.ff_kv",
    "decoder.{l}.cross_attn.W_O": "model.decoder.layers.{l}.enc_attention.ff_out",
    "encoder.{l}.norm1": "model.encoder.layers.{l}.post_self_attention.layer_norm",  # post-norm: after the residual
    "encoder.{l}.norm2": "model.encoder.layers.{l}.post_ff.layer_norm",
    "decoder.{l}.norm1": "model.decoder.layers.{l}.post_autoregr_layer.layer_norm",
    "decoder.{l}.norm2": "model.decoder.layers.{l}.post_enc_attention.layer_norm",
    "decoder.{l}.norm3": "model.decoder.layers.{l}.post_ff.layer_norm",
    "*.{l}.ffn.W1": "model.*.layers.{l}.ff.ff1",
    "*.{l}.ffn.W2": "model.*.layers.{l}.ff.ff2",
}
ATTENTION = {"encoder.{l}.self_attn": "model.encoder.layers.{l}.self_attention.dot_att",
             "decoder.{l}.self_attn": "model.decoder.layers.{l}.autoregr_layer.dot_att",
             "decoder.{l}.cross_attn": "model.decoder.layers.{l}.enc_attention.dot_att"}


def transformer_config(d_model, h, d_ff, N=1, dropout=0.0):
    return transformer.TransformerConfig(
        model_size=d_model, attention_heads=h, feed_forward_num_hidden=d_ff, act_type=C.RELU, num_layers=N,
        dropout_attention=0.0, dropout_act=0.0, dropout_prepost=dropout,
        positional_embedding_type=C.FIXED_POSITIONAL_EMBEDDING, preprocess_sequence="", postprocess_sequence="drn",
        max_seq_len_source=MAX_LEN, max_seq_len_target=MAX_LEN, depth_key_value=d_model)


def model_config(c) -> model.ModelConfig:
    def embedding(vocab):
        return encoder.EmbeddingConfig(vocab_size=vocab, num_embed=c.d_model, dropout=0.0)

    stack = transformer_config(c.d_model, c.h, c.d_ff, c.N, c.dropout)
    data = data_io.DataConfig(data_statistics=None, max_seq_len_source=MAX_LEN, max_seq_len_target=MAX_LEN,
                              num_source_factors=1, num_target_factors=1)
    return model.ModelConfig(config_data=data, vocab_source_size=c.src_vocab, vocab_target_size=c.tgt_vocab,
                             config_embed_source=embedding(c.src_vocab), config_embed_target=embedding(c.tgt_vocab),
                             config_encoder=stack, config_decoder=stack,
                             weight_tying_type=TYING[c.share_embeddings, c.tie_output])


class TrainingLayout(nn.Module):
    """SockeyeModel with the K and V rows of its projections kept in the training layout [W_K; W_V], which the name
    map reads. Sockeye's ``eval()`` rewrites them interleaved per head for its inference attention (layers.py:476-497,
    602-623); here modes switch without the rewrite, and an evaluation interleaves them only while it runs."""

    def __init__(self, net: model.SockeyeModel):
        super().__init__()
        self.model = net

    def train(self, mode: bool = True):
        for module in self.modules():
            module.training = mode
        return self


@contextlib.contextmanager
def inference_layout(m: TrainingLayout):
    if m.training:  # training reads the training layout (F.multi_head_attention_forward)
        yield m.model
        return
    m.model.apply(layers.interleave_kv)
    try:
        yield m.model
    finally:
        m.model.apply(layers.separate_kv)


def lengths(ids, pad_id):  # Sockeye's valid_length (B, 2): length, prepended tokens; padding is trailing
    n = (ids != pad_id).sum(1)
    return torch.stack([n, torch.zeros_like(n)], 1)


def encode(m, src):
    with inference_layout(m) as net:
        return net.encoder(net.embedding_source(src[..., None]), lengths(src, m.pad_id))[0]


def decode(m, tgt_in, memory, src):
    with inference_layout(m) as net:
        embedded = net.embedding_target(tgt_in[..., None])
        states = net.decoder.init_state_from_encoder(memory, lengths(src, m.pad_id), embedded)
        return net.output_layer(net.decoder.decode_seq(embedded, states), None)


def build(c):
    wrapped = TrainingLayout(freeze_as_buffers(model.SockeyeModel(model_config(c))))  # the sinusoid tables: buffers
    wrapped.pad_id = c.pad_id
    return wrapped


def attention_weights(cell, args, kwargs, output):
    """(B, h, Lq, Lk): DotAttentionCell's softmax (layers.py:307-313) from the same call's inputs; it returns only
    the context vectors."""
    logits = layers.interleaved_matmul_encdec_qk(kwargs["queries"], kwargs["key_values"], heads=cell.heads)
    if kwargs.get("mask") is not None:
        logits = logits.masked_fill(kwargs["mask"], -C.LARGE_VALUES[logits.dtype])
    probs = torch.softmax(logits, -1)
    return probs.view(-1, cell.heads, *probs.shape[1:])


def learning_rate(step, d_model, warmup):
    """--learning-rate-scheduler-type inv-sqrt-decay --initial-learning-rate d_model^-0.5 --learning-rate-warmup W:
    the rate of update ``step`` (Sockeye sets it before each update, training.py:421-423)."""
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.0)
    schedule = lr_scheduler.LearningRateSchedulerInvSqrtDecay(optimizer, base_lr=d_model ** -0.5, warmup=int(warmup))
    schedule.step(t=int(step))
    return schedule.get_last_lr()[0]


def label_smoothed_loss(logits, targets, epsilon, pad_id):  # --label-smoothing, its default 'mxnet' form
    return loss.CrossEntropyLoss(label_smoothing=float(epsilon), ignore_label=int(pad_id)).forward(logits, targets)[0]


def per_head(blocked, h):  # (B, Lq, Lk) -> Sockeye's (B * heads, Lq, Lk)
    return blocked.repeat_interleave(h, dim=0)


def attend(attention, query, key, value, keep):
    """Sockeye's attention reads keys and values from one memory (the suite passes key == value); its weights are
    read from the same call."""
    seen = {}
    hook = attention.dot_att.register_forward_hook(
        lambda cell, args, kwargs, out: seen.update(weights=attention_weights(cell, args, kwargs, out)),
        with_kwargs=True)
    blocked = None if keep is None else per_head(~keep, attention.heads)
    try:
        out = attention(query.transpose(0, 1), key.transpose(0, 1), mask=blocked)
    finally:
        hook.remove()
    return out.transpose(0, 1), seen["weights"]


def encoder_layer(layer, x, keep):
    blocked = per_head(~keep[:, None, :], layer.self_attention.heads)
    return layer(x.transpose(0, 1), att_mask=blocked).transpose(0, 1)


def decoder_layer(layer, y, memory, tgt, src):
    h = layer.enc_attention.heads
    causal = transformer.AutoRegressiveMask()(y)  # the decoder's own causal mask (decoder.py:265)
    target = per_head(causal[None] | ~tgt[:, None, :], h)
    out, _ = layer(y.transpose(0, 1), target, memory.transpose(0, 1), per_head(~src[:, None, :], h), None)
    return out.transpose(0, 1)


adapter = TorchAdapter(
    build, names=NAMES, count_on="cpu",
    model={"encode": encode, "decode": decode, "attention": ATTENTION, "read": attention_weights},
    supplied=("greedy_decode", "train_step"),  # Sockeye's translator and trainer need its data pipeline: the suite's
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (Sockeye)", dtypes={"float16": "native", "bfloat16": "native"},
        supports={"eps": (1e-06,), "attention_bias": (False,)},
        reasons={"eps": "TransformerProcessBlock builds pt.nn.LayerNorm(num_hidden, eps=1e-06)",
                 "attention_bias": "every attention projection is pt.nn.Linear(..., bias=False)"}),
    positional_encoding=lambda n, d_model: layers.get_positional_embeddings(n, d_model),
    learning_rate=learning_rate, label_smoothed_loss=label_smoothed_loss,
    multi_head_attention=Component(lambda s: layers.MultiHeadAttention(s.d_model, s.h, s.d_model, 0.0, s.d_model),
                                   attend, names={"W_Q": "ff_q", "W_KV": "ff_kv", "W_O": "ff_out"}),
    feed_forward=Component(lambda s: transformer.TransformerFeedForward(s.d_ff, s.d_model, C.RELU, 0.0)),
    encoder_layer=Component(lambda s: transformer.TransformerEncoderBlock(transformer_config(s.d_model, s.h, s.d_ff)),
                            encoder_layer),
    decoder_layer=Component(lambda s: transformer.TransformerDecoderBlock(transformer_config(s.d_model, s.h, s.d_ff),
                                                                          inference_only=False), decoder_layer),
)
