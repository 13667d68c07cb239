"""``nn.Transformer`` with what it lacks around it: the model of the built-ins ``torch-nn-transformer`` and
``torch-nn-transformer-fixed`` (their adapter, and the two traps the default one keeps, are ``adapter.py``).

The tied embedding E[ids] x sqrt(d_model) plus the interleaved sinusoidal encoding, dropout on that sum, the output
projection y @ E^T (or an ``nn.Linear`` without bias holding W_out^T), masks in torch.nn's polarity (True =
blocked), and nn's layers with bias-free attention when ``attention_bias=False``.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from conformance.config import ModelConfig


@contextlib.contextmanager
def _quiet():
    """Silence torch's notices about the nested-tensor fast path (prototype API; switched off because ...)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
        warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
        yield


# --------------------------------------------------------------------------------------------------
# What nn.Transformer lacks: positions, the learning rate
# --------------------------------------------------------------------------------------------------


def sinusoids(n: int, d_model: int) -> Tensor:
    """§3.5 for positions 0..n-1 -> (n, d_model) float64: PE(pos, 2i) = sin(pos / 10000^(2i/d)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    angle = pos / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(n, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def lrate(step: int, d_model: int, warmup: int) -> float:
    """§5.3: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), the step counted from 1."""
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def causal_blocked(T: int) -> Tensor:
    """torch.nn's causal ``tgt_mask``: True (blocked) strictly above the diagonal."""
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def _attention(d_model: int, h: int, dropout: float, bias: bool) -> nn.MultiheadAttention:
    return nn.MultiheadAttention(d_model, h, dropout=dropout, bias=bias, batch_first=True)


def _without_attention_biases(layer: nn.Module, d_model: int, h: int, dropout: float) -> None:
    layer.self_attn = _attention(d_model, h, dropout, bias=False)
    if isinstance(layer, nn.TransformerDecoderLayer):
        layer.multihead_attn = _attention(d_model, h, dropout, bias=False)



# --------------------------------------------------------------------------------------------------
# The model: nn.Transformer with embeddings, positions and the output layer around it
# --------------------------------------------------------------------------------------------------


class TorchNNSeq2Seq(nn.Module):
    """``nn.Transformer(batch_first=True, norm_first=False, activation="relu")`` plus what it lacks."""

    def __init__(self, cfg: ModelConfig, *, final_norms: bool, nested_tensor: bool, paper_dropout: bool = False):
        super().__init__()
        self.cfg, d = cfg, cfg.d_model
        with _quiet():  # h odd: "enable_nested_tensor is True, but self.use_nested_tensor is False because ..."
            self.transformer = nn.Transformer(
                d, cfg.h, cfg.N, cfg.N, cfg.d_ff, dropout=cfg.dropout, activation="relu",
                layer_norm_eps=cfg.eps, batch_first=True, norm_first=False,
            )
        encoder, decoder = self.transformer.encoder, self.transformer.decoder
        if not cfg.attention_bias:
            for layer in [*encoder.layers, *decoder.layers]:
                _without_attention_biases(layer, d, cfg.h, cfg.dropout)
            encoder.use_nested_tensor = False  # TransformerEncoder.__init__'s verdict for bias-free attention
        if not final_norms:
            encoder.norm = decoder.norm = None  # the paper's post-norm model has no final norm
        if not nested_tensor:
            encoder.use_nested_tensor = False  # no eval-mode nested-tensor fast path (0 at padded positions)
        if paper_dropout:  # §5.4's places only: nn also drops the attention weights and the FFN's hidden layer
            for layer in [*encoder.layers, *decoder.layers]:
                layer.dropout = nn.Identity()  # the FFN's hidden layer; dropout1..3 are the sublayer outputs'
                for attention in (layer.self_attn, getattr(layer, "multihead_attn", None)):
                    if attention is not None:
                        attention.dropout = 0.0
        if cfg.share_embeddings:
            self.embedding = nn.Embedding(cfg.src_vocab, d)
        else:
            self.src_embedding, self.tgt_embedding = nn.Embedding(cfg.src_vocab, d), nn.Embedding(cfg.tgt_vocab, d)
        self.generator = None if cfg.tie_output else nn.Linear(d, cfg.tgt_vocab, bias=False)
        self.drop = nn.Dropout(cfg.dropout)

    @property
    def final_norms(self) -> list[nn.LayerNorm]:
        return [n for n in (self.transformer.encoder.norm, self.transformer.decoder.norm) if n is not None]

    def table(self, side: str) -> nn.Embedding:
        return self.embedding if self.cfg.share_embeddings else getattr(self, f"{side}_embedding")

    def embed(self, ids: Tensor, side: str) -> Tensor:
        """ids (B, L) -> Dropout(E[ids] sqrt(d_model) + PE(0..L-1)): (B, L, d)."""
        table = self.table(side)
        pe = sinusoids(ids.shape[1], self.cfg.d_model).to(table.weight)
        return self.drop(table(ids) * math.sqrt(self.cfg.d_model) + pe)

    def project(self, y: Tensor) -> Tensor:
        """y E^T (tied, §3.4) or y W_out."""
        return F.linear(y, self.table("tgt").weight) if self.generator is None else self.generator(y)

    def masks(self, src: Tensor, tgt_in: Tensor | None = None) -> dict[str, Tensor]:
        pad = self.cfg.pad_id
        masks = {"src_key_padding_mask": src == pad, "memory_key_padding_mask": src == pad}
        if tgt_in is not None:
            masks.update(tgt_key_padding_mask=tgt_in == pad, tgt_mask=causal_blocked(tgt_in.shape[1]))
        return masks

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        with _quiet():
            y = self.transformer(self.embed(src, "src"), self.embed(tgt_in, "tgt"), **self.masks(src, tgt_in))
        return self.project(y)

    def encode(self, src: Tensor) -> Tensor:
        with _quiet():
            return self.transformer.encoder(self.embed(src, "src"), src_key_padding_mask=src == self.cfg.pad_id)

    def decode(self, tgt_in: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        masks = self.masks(src, tgt_in)
        del masks["src_key_padding_mask"]
        return self.project(self.transformer.decoder(self.embed(tgt_in, "tgt"), memory, **masks))

    @torch.no_grad()
    def initialise(self, seed: int) -> None:
        """Embeddings N(0, d_model^-0.5) from a generator of its own (nn's other parameters keep nn's init)."""
        g = torch.Generator().manual_seed(seed)
        for embedding in (m for m in self.modules() if isinstance(m, nn.Embedding)):
            embedding.weight.normal_(0.0, self.cfg.d_model**-0.5, generator=g)


def nn_layer(cls, d_model: int, h: int, d_ff: int, eps: float, bias: bool) -> nn.Module:
    """``nn.TransformerEncoderLayer`` or ``nn.TransformerDecoderLayer``, post-norm, ReLU, batch-first, dropout off;
    bias-free attention when ``bias`` is False (nn's own ``bias=False`` would drop every bias)."""
    with _quiet():
        layer = cls(d_model, h, d_ff, dropout=0.0, activation="relu", layer_norm_eps=eps, batch_first=True,
                    norm_first=False)
    if not bias:
        _without_attention_biases(layer, d_model, h, 0.0)
    return layer

