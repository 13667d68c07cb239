"""A translation model that subclasses ``torch.nn.Transformer``, in the manner of PyTorch's "Language
Translation with nn.Transformer and torchtext" tutorial: ``TokenEmbedding`` (scaled by sqrt(emb_size)), a
``PositionalEncoding`` buffer of shape (maxlen, 1, emb_size), a ``generator`` Linear, masks from
``generate_square_subsequent_mask`` and ``create_mask``, sequence-first tensors (nn.Transformer's default),
and the tutorial's training choices: ``Adam(lr=0.0001, betas=(0.9, 0.98), eps=1e-9)`` and
``CrossEntropyLoss(ignore_index=PAD_IDX)``.

Model only (no training step); the learning rate and the loss are given as the functions the training
script uses. The generator shares its weight with the token embedding.
"""

import math

import torch
from torch import Tensor, nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

LEARNING_RATE = 0.0001
LABEL_SMOOTHING = 0.0


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2, dtype=torch.float64) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen, dtype=torch.float64).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size), dtype=torch.float64)
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.float().unsqueeze(-2)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


def generate_square_subsequent_mask(sz):
    return torch.triu(torch.ones((sz, sz), dtype=torch.bool), diagonal=1)  # True = not allowed to attend


class Seq2SeqTransformer(nn.Transformer):
    def __init__(self, num_encoder_layers: int, num_decoder_layers: int, emb_size: int, nhead: int,
                 vocab_size: int, dim_feedforward: int = 512, dropout: float = 0.1, layer_norm_eps: float = 1e-5,
                 pad_idx: int = 0):
        super().__init__(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                         num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward, dropout=dropout,
                         layer_norm_eps=layer_norm_eps)
        self.pad_idx = pad_idx
        self.tok_emb = TokenEmbedding(vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)
        self.generator = nn.Linear(emb_size, vocab_size)
        self.generator.weight = self.tok_emb.embedding.weight

    def create_mask(self, src, tgt):
        src_padding_mask = (src == self.pad_idx).transpose(0, 1)
        tgt_padding_mask = (tgt == self.pad_idx).transpose(0, 1)
        return generate_square_subsequent_mask(tgt.shape[0]), src_padding_mask, tgt_padding_mask

    def encode(self, src: Tensor):
        src_padding_mask = (src == self.pad_idx).transpose(0, 1)
        return self.encoder(self.positional_encoding(self.tok_emb(src)), src_key_padding_mask=src_padding_mask)

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor):
        tgt_mask, src_padding_mask, tgt_padding_mask = self.create_mask(src, tgt)
        outs = self.decoder(self.positional_encoding(self.tok_emb(tgt)), memory, tgt_mask=tgt_mask,
                            tgt_key_padding_mask=tgt_padding_mask, memory_key_padding_mask=src_padding_mask)
        return self.generator(outs)

    def forward(self, src: Tensor, trg: Tensor):
        return self.decode(trg, self.encode(src), src)


def learning_rate(step, d_model, warmup):
    """The rate the tutorial's optimiser uses at every step: Adam(lr=0.0001, ...), no scheduler."""
    return LEARNING_RATE



def label_smoothed_loss(logits, targets, epsilon, pad_id):
    """The tutorial's criterion, torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)."""
    return nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=LABEL_SMOOTHING)(logits, targets)


NAMES = {
    "E": "tok_emb.embedding.weight",
    "*.{l}.self_attn.W_QKV": "*.layers.{l}.self_attn.in_proj_weight",
    "*.{l}.self_attn.b_QKV": "*.layers.{l}.self_attn.in_proj_bias",
    "*.{l}.self_attn.W_O": "*.layers.{l}.self_attn.out_proj.weight",
    "decoder.{l}.cross_attn.W_QKV": "decoder.layers.{l}.multihead_attn.in_proj_weight",
    "decoder.{l}.cross_attn.b_QKV": "decoder.layers.{l}.multihead_attn.in_proj_bias",
    "decoder.{l}.cross_attn.W_O": "decoder.layers.{l}.multihead_attn.out_proj.weight",
    "*.{l}.ffn.W1": "*.layers.{l}.linear1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.linear2.weight",
    "*.{l}.norm1": "*.layers.{l}.norm1",
    "*.{l}.norm2": "*.layers.{l}.norm2",
    "decoder.{l}.norm3": "decoder.layers.{l}.norm3",
}

adapter = TorchAdapter(
    lambda c: Seq2SeqTransformer(c.N, c.N, c.d_model, c.h, c.src_vocab, c.d_ff, c.dropout, c.eps, c.pad_id),
    names=NAMES,
    conventions=Conventions(
        mask="blocked", batch_first=False, framework="torch.nn.Transformer",
        supports={"share_embeddings": (True,), "tie_output": (True,), "attention_bias": (True,)},
        reasons={"share_embeddings": "one TokenEmbedding", "tie_output": "the generator shares the embedding weight",
                 "attention_bias": "nn.MultiheadAttention's projections carry biases"}),
    learning_rate=learning_rate,
    label_smoothed_loss=label_smoothed_loss,
    encoder_layer=Component(
        lambda s: nn.TransformerEncoderLayer(s.d_model, s.h, s.d_ff, dropout=0.0, layer_norm_eps=s.eps),
        lambda layer, x, blocked: layer(x, src_key_padding_mask=blocked)),
    decoder_layer=Component(
        lambda s: nn.TransformerDecoderLayer(s.d_model, s.h, s.d_ff, dropout=0.0, layer_norm_eps=s.eps),
        lambda layer, y, memory, tgt, src: layer(y, memory, tgt_mask=generate_square_subsequent_mask(y.shape[0]),
                                                 tgt_key_padding_mask=tgt, memory_key_padding_mask=src)),
)
