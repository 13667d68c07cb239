"""A third correct implementation: PyTorch with a fused QKV projection, sequence-first, "blocked" masks
(built-in ``torch-fused-qkv``; its adapter is ``fused_qkv.py``).

Written independently of ``implementations/reference`` and deliberately unlike it, the way much
production code is written, so that passing the suite shows the checks accept any correct
implementation and convert conventions rather than assume them:

* One fused in-projection per attention sublayer: W_QKV = [W_Q | W_K | W_V], shape (d_model, 3 d_model),
  in the orientation x @ W (``torch.nn.MultiheadAttention`` stores its transpose). Self-attention runs one
  matmul and splits the result in three; encoder-decoder attention projects Q from the decoder with the
  first third and K, V from the memory with the other two thirds in one matmul.
* Sequence-first tensors, as ``torch.nn`` defaults: activations (L, B, d_model), token ids (L, B).
  Attention weights are still (B, h, Lq, Lk).
* Masks in torch.nn's polarity: True = this key may NOT be attended to.
* ``torch.nn`` building blocks where they compute the paper's formula: ``nn.LayerNorm`` (§3.1, biased
  variance, eps inside the root), ``nn.Linear`` for W_O and the FFN, ``nn.Embedding`` for E.
* The softmax is written out with a row shift, so that a query whose keys are all blocked gets weights
  0 and output 0 (the suite's specified behaviour) without a NaN ever being formed.
* The positional encoding uses one sine per column: PE(pos, j) = sin(pos * w_{j//2} + (j mod 2) pi/2),
  since cos(a) = sin(a + pi/2) (§3.5).

Training (§5.3, §5.4): Adam(betas, eps of the recipe) at base rate 1 scaled by ``LambdaLR(lambda s:
lrate(s + 1))``, ``nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=eps)``, dropout on every
sublayer output before the residual sum and on the embedding + PE sums.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from conformance.config import ModelConfig

# --------------------------------------------------------------------------------------------------
# Formulas on plain tensors
# --------------------------------------------------------------------------------------------------


def sinusoid_table(n: int, d_model: int) -> Tensor:
    """§3.5, positions 0..n-1 -> (n, d_model) float64; column j is sin(pos w_{j//2} + (j mod 2) pi/2)."""
    column = torch.arange(d_model, dtype=torch.float64)
    pair = torch.div(column, 2, rounding_mode="floor")  # i of the pair (2i, 2i+1)
    omega = torch.pow(10000.0, -2.0 * pair / d_model)  # 1 / 10000^(2i / d_model)
    phase = (column % 2) * (math.pi / 2)  # the odd columns are shifted a quarter turn: sine -> cosine
    return torch.sin(torch.arange(n, dtype=torch.float64)[:, None] * omega + phase)


def lrate(step: int, d_model: int, warmup: int) -> float:
    """§5.3: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), the step counted from 1."""
    return min(1.0 / math.sqrt(step), step / warmup**1.5) / math.sqrt(d_model)


def attend(q: Tensor, k: Tensor, v: Tensor, blocked: Tensor | None) -> tuple[Tensor, Tensor]:
    """§3.2.1 softmax(q k^T / sqrt(d_k)) v over the last two axes; ``blocked`` (True = hidden key)
    broadcasts to (..., Lq, Lk). A row with every key hidden gets weights 0, hence output 0."""
    scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if blocked is not None:
        scores = scores.masked_fill(blocked, float("-inf"))
    # Softmax by hand: shift by the row maximum (0 for a fully hidden row, whose maximum is -inf).
    shift = scores.detach().amax(-1, keepdim=True)
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    e = torch.exp(scores - shift)  # exactly 0 where blocked
    total = e.sum(-1, keepdim=True)  # >= 1 when a key is visible, 0 when none is
    weights = e / torch.where(total > 0, total, torch.ones_like(total))
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def _affine(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:
    """x @ W (+ b): the orientation of the canonical weights."""
    return torch.matmul(x, W) if b is None else torch.matmul(x, W) + b


def _cut(b: Tensor | None, lo: int, hi: int) -> Tensor | None:
    return None if b is None else b[lo:hi]


# --------------------------------------------------------------------------------------------------
# Modules, each knowing its canonical names (orientation x @ W)
# --------------------------------------------------------------------------------------------------


class FusedAttention(nn.Module):
    """§3.2.2 multi-head attention with the three input projections fused into W_qkv (d, 3d)."""

    def __init__(self, d_model: int, h: int, bias: bool):
        super().__init__()
        self.h, self.d_model = h, d_model
        self.W_qkv = nn.Parameter(torch.empty(d_model, 3 * d_model))  # [W_Q | W_K | W_V]
        self.b_qkv = nn.Parameter(torch.empty(3 * d_model)) if bias else None
        self.out = nn.Linear(d_model, d_model, bias=bias)  # weight = W_O^T
        self.last_weights: Tensor | None = None

    def in_project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        d, W, b = self.d_model, self.W_qkv, self.b_qkv
        if query is key and key is value:  # self-attention: one matmul
            return _affine(query, W, b).chunk(3, dim=-1)
        q = _affine(query, W[:, :d], _cut(b, 0, d))
        if key is value:  # encoder-decoder attention: K and V from the memory in one matmul
            k, v = _affine(key, W[:, d:], _cut(b, d, 3 * d)).chunk(2, dim=-1)
        else:
            k = _affine(key, W[:, d : 2 * d], _cut(b, d, 2 * d))
            v = _affine(value, W[:, 2 * d :], _cut(b, 2 * d, 3 * d))
        return q, k, v

    def heads(self, x: Tensor) -> Tensor:
        """(L, B, d) -> (B, h, L, d_k): head i is columns [i d_k, (i+1) d_k)."""
        L, B, d = x.shape
        return x.reshape(L, B, self.h, d // self.h).permute(1, 2, 0, 3)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, blocked: Tensor | None) -> Tensor:
        """query (Lq, B, d), key and value (Lk, B, d), blocked broadcastable to (B, h, Lq, Lk) -> (Lq, B, d)."""
        q, k, v = (self.heads(x) for x in self.in_project(query, key, value))
        context, weights = attend(q, k, v, blocked)  # (B, h, Lq, d_k), (B, h, Lq, Lk)
        self.last_weights = weights.detach()
        Lq, B = query.shape[:2]
        return self.out(context.permute(2, 0, 1, 3).reshape(Lq, B, self.d_model))  # Concat(heads) W_O

class PositionwiseFFN(nn.Module):
    """§3.3: max(0, x W1 + b1) W2 + b2."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.inner, self.outer = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(F.relu(self.inner(x)))

def _key_blocked(pad_blocked: Tensor | None) -> Tensor | None:
    """(B, Lk) True at padding -> (B, 1, 1, Lk): the same hidden keys for every head and query."""
    return None if pad_blocked is None else pad_blocked[:, None, None, :]


class EncoderBlock(nn.Module):
    """§3.1 encoder layer, post-norm: x = LayerNorm(x + Dropout(Sublayer(x))); ``nn.LayerNorm`` (biased
    variance, eps inside the root) is §3.1's."""

    def __init__(self, d_model, h, d_ff, eps, dropout, bias):
        super().__init__()
        self.self_attn, self.norm1 = FusedAttention(d_model, h, bias), nn.LayerNorm(d_model, eps)
        self.ffn, self.norm2 = PositionwiseFFN(d_model, d_ff), nn.LayerNorm(d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, src_pad: Tensor | None) -> Tensor:
        """x (S, B, d), src_pad (B, S) True at padding -> (S, B, d)."""
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, _key_blocked(src_pad))))
        return self.norm2(x + self.drop(self.ffn(x)))


class DecoderBlock(nn.Module):
    """§3.1 decoder layer: masked self-attention, encoder-decoder attention, FFN; post-norm."""

    def __init__(self, d_model, h, d_ff, eps, dropout, bias):
        super().__init__()
        self.self_attn, self.norm1 = FusedAttention(d_model, h, bias), nn.LayerNorm(d_model, eps)
        self.cross_attn, self.norm2 = FusedAttention(d_model, h, bias), nn.LayerNorm(d_model, eps)
        self.ffn, self.norm3 = PositionwiseFFN(d_model, d_ff), nn.LayerNorm(d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, y: Tensor, memory: Tensor, tgt_pad: Tensor | None, src_pad: Tensor | None) -> Tensor:
        """y (T, B, d), memory (S, B, d), tgt_pad (B, T) and src_pad (B, S) True at padding -> (T, B, d)."""
        T = y.shape[0]
        future = torch.ones(T, T, dtype=torch.bool, device=y.device).triu(1)  # §3.2.3: True above the diagonal
        self_blocked = future if tgt_pad is None else future | _key_blocked(tgt_pad)  # (B, 1, T, T)
        y = self.norm1(y + self.drop(self.self_attn(y, y, y, self_blocked)))
        y = self.norm2(y + self.drop(self.cross_attn(y, memory, memory, _key_blocked(src_pad))))
        return self.norm3(y + self.drop(self.ffn(y)))


class Seq2SeqTransformer(nn.Module):
    """The §3 encoder-decoder, sequence-first. Embeddings are ``nn.Embedding`` tables (the rows are E);
    the output projection is y E^T (tied), or an ``nn.Linear`` without bias holding W_out^T."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg, d = cfg, cfg.d_model
        if cfg.share_embeddings:
            self.embedding = nn.Embedding(cfg.src_vocab, d)
        else:
            self.src_embedding, self.tgt_embedding = nn.Embedding(cfg.src_vocab, d), nn.Embedding(cfg.tgt_vocab, d)
        self.generator = None if cfg.tie_output else nn.Linear(d, cfg.tgt_vocab, bias=False)
        args = (d, cfg.h, cfg.d_ff, cfg.eps, cfg.dropout, cfg.attention_bias)
        self.encoder = nn.ModuleList(EncoderBlock(*args) for _ in range(cfg.N))
        self.decoder = nn.ModuleList(DecoderBlock(*args) for _ in range(cfg.N))
        self.drop = nn.Dropout(cfg.dropout)

    def table(self, side: str) -> nn.Embedding:
        return self.embedding if self.cfg.share_embeddings else getattr(self, f"{side}_embedding")

    def embed(self, ids: Tensor, side: str) -> Tensor:
        """ids (L, B) -> Dropout(E[ids] sqrt(d_model) + PE(0..L-1)): (L, B, d)."""
        d = self.cfg.d_model
        pe = sinusoid_table(ids.shape[0], d).to(self.table(side).weight)
        return self.drop(self.table(side)(ids) * math.sqrt(d) + pe[:, None, :])

    def encode(self, src: Tensor) -> Tensor:
        src_pad = (src == self.cfg.pad_id).T  # (B, S)
        x = self.embed(src, "src")
        for block in self.encoder:
            x = block(x, src_pad)
        return x

    def decode(self, tgt_in: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        pad = self.cfg.pad_id
        tgt_pad, src_pad = (tgt_in == pad).T, (src == pad).T
        y = self.embed(tgt_in, "tgt")
        for block in self.decoder:
            y = block(y, memory, tgt_pad, src_pad)
        if self.generator is None:
            return F.linear(y, self.table("tgt").weight)  # y E^T
        return self.generator(y)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.decode(tgt_in, self.encode(src), src)


@torch.no_grad()
def initialise(views: dict[str, Tensor], d_model: int, seed: int) -> None:
    """This implementation's initialisation of its weights, given by canonical name in canonical order
    (``TorchModel.views()``): embeddings N(0, d_model^-0.5), matrices Glorot-uniform (each third of W_qkv on its
    own), biases 0, LayerNorm gamma 1 and beta 0; drawn from a generator of its own."""
    g = torch.Generator().manual_seed(seed)
    for name, t in views.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("E", "E_src", "E_tgt"):
            t.normal_(0.0, d_model**-0.5, generator=g)
        elif leaf == "gamma":
            t.fill_(1.0)
        elif t.dim() == 2:
            t.uniform_(-math.sqrt(6.0 / sum(t.shape)), math.sqrt(6.0 / sum(t.shape)), generator=g)
        else:
            t.zero_()
