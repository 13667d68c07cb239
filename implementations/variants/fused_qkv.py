"""A third correct implementation: PyTorch with a fused QKV projection, sequence-first, "blocked" masks.

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

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from conformance.adapter import Conventions
from conformance.adapters import sub_names
from conformance.adapters.torch import PaperRecipe, TorchModel, floats, ids, load_component, mask, numpy
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



# --------------------------------------------------------------------------------------------------
# The adapter: canonical names on these modules (conformance.adapters), sequence-first, "blocked" masks
# --------------------------------------------------------------------------------------------------

NAMES = {
    "E": "embedding.weight", "E_src": "src_embedding.weight", "E_tgt": "tgt_embedding.weight", "W_out": "generator",
    "*.{l}.*_attn.W_QKV": "*.{l}.*_attn.W_qkv", "*.{l}.*_attn.b_QKV": "*.{l}.*_attn.b_qkv",  # x @ W already
    "*.{l}.*_attn.W_O": "*.{l}.*_attn.out",  # nn.Linear: transposed, its bias beside it
    "*.{l}.ffn.W1": "*.{l}.ffn.inner", "*.{l}.ffn.W2": "*.{l}.ffn.outer", "*.{l}.norm*": "*.{l}.norm*",
}
LAYER = {stack: sub_names(NAMES, f"{stack}.{{l}}.", f"{stack}.{{l}}.") for stack in ("encoder", "decoder")}
ATTENTION = sub_names(NAMES, "encoder.{l}.self_attn.", "encoder.{l}.self_attn.")
FFN = sub_names(NAMES, "encoder.{l}.ffn.", "encoder.{l}.ffn.")


@torch.no_grad()
def initialise(views: dict[str, Tensor], d_model: int, seed: int) -> None:
    """Embeddings N(0, d_model^-0.5), matrices Glorot-uniform (each third of W_qkv on its own),
    biases 0, LayerNorm gamma 1 and beta 0; drawn in canonical order from a generator of its own."""
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


def build(config: ModelConfig, seed: int) -> TorchModel:
    """Token ids (L, B), logits (L, B, V); the paper's recipe for training (with this file's lrate)."""
    with torch.random.fork_rng(devices=[]):  # torch's own layer init draws globally; keep that untouched
        net = Seq2SeqTransformer(config)
    model = TorchModel(net, config, names=NAMES, forward=lambda m, src, tgt_in: m(src, tgt_in),
                       attention={"*.{l}.*_attn": "*.{l}.*_attn"}, batch_first=False, seed=seed,
                       trainer=lambda m: PaperRecipe(m, config, forward=lambda m, s, t: m(s, t), seed=seed, rate=lrate))
    initialise(model.views(), config.d_model, seed)
    return model


def _same_or_new(arrays) -> list[Tensor]:
    """Tensors for numpy arrays; equal arrays become one tensor, so attention takes its fused path."""
    tensors: list[Tensor] = []
    for i, a in enumerate(arrays):
        same = next((tensors[j] for j in range(i) if np.array_equal(arrays[j], a)), None)
        tensors.append(same if same is not None else floats(a))
    return tensors


def _has_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


class FusedQKVAdapter:
    conventions = Conventions(mask="blocked", batch_first=False, dtype="float32", framework="torch")
    model_class = TorchModel

    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return numpy(sinusoid_table(int(n), int(d_model)))

    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        x = floats(x)
        return numpy(F.layer_norm(x, x.shape[-1:], floats(gamma), floats(beta), float(eps)))

    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, blocked):
        out, weights = attend(floats(q), floats(k), floats(v), mask(blocked))
        return numpy(out), numpy(weights)

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights: dict, h: int, blocked):
        """query (Lq, B, d), key and value (Lk, B, d), mask (B, Lq, Lk) True = blocked
        -> (output (Lq, B, d), weights (B, h, Lq, Lk))."""
        mha = FusedAttention(np.shape(weights["W_Q"])[0], int(h), _has_bias(weights))
        mha = load_component(mha, weights, ATTENTION)
        blocked = mask(blocked)
        out = mha(*_same_or_new([query, key, value]), None if blocked is None else blocked[:, None])
        return numpy(out), numpy(mha.last_weights)

    @torch.no_grad()
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        return numpy(load_component(PositionwiseFFN(*np.shape(weights["W1"])), weights, FFN)(floats(x)))

    @staticmethod
    def _block(cls, stack: str, weights: dict, h: int, eps: float) -> nn.Module:
        d_model, d_ff = np.shape(weights["ffn.W1"])
        return load_component(cls(d_model, int(h), d_ff, float(eps), 0.0, _has_bias(weights, "self_attn.")),
                              weights, LAYER[stack])

    @torch.no_grad()
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        """x (S, B, d), src_mask (B, S) True at padding -> (S, B, d)."""
        return numpy(self._block(EncoderBlock, "encoder", weights, h, eps)(floats(x), mask(src_mask)))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        """y (T, B, d), memory (S, B, d), tgt_mask (B, T) and src_mask (B, S) True at padding -> (T, B, d)."""
        block = self._block(DecoderBlock, "decoder", weights, h, eps)
        return numpy(block(floats(y), floats(memory), mask(tgt_mask), mask(src_mask)))

    def build_model(self, config: dict, seed: int) -> TorchModel:
        return build(ModelConfig.from_dict(config), int(seed))

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(lrate(int(step), int(d_model), int(warmup)))

    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=float(epsilon))
        return float(loss(floats(logits), ids(targets)).item())

    def parameter_count(self, config: dict) -> int:
        with torch.device("meta"):  # shapes only
            net = Seq2SeqTransformer(ModelConfig.from_dict(config))
        return sum(p.numel() for p in net.parameters())


adapter = FusedQKVAdapter()
