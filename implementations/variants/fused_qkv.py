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
from conformance.config import ModelConfig
from conformance.weights import model_shapes

DTYPE = torch.float32


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


def _t(value) -> Tensor:
    return torch.tensor(np.asarray(value), dtype=DTYPE)  # a copy: read-only arrays are fine


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

    def canonical(self) -> dict[str, Tensor]:
        W_Q, W_K, W_V = self.W_qkv.chunk(3, dim=1)
        names = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": self.out.weight.T}
        if self.b_qkv is not None:
            b_Q, b_K, b_V = self.b_qkv.chunk(3)
            names.update(b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=self.out.bias)
        return names

    @torch.no_grad()
    def load_canonical(self, w: dict) -> None:
        self.W_qkv.copy_(torch.cat([_t(w["W_Q"]), _t(w["W_K"]), _t(w["W_V"])], dim=1))
        self.out.weight.copy_(_t(w["W_O"]).T)
        if self.b_qkv is not None:
            self.b_qkv.copy_(torch.cat([_t(w["b_Q"]), _t(w["b_K"]), _t(w["b_V"])]))
            self.out.bias.copy_(_t(w["b_O"]))


class PositionwiseFFN(nn.Module):
    """§3.3: max(0, x W1 + b1) W2 + b2."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.inner, self.outer = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(F.relu(self.inner(x)))

    def canonical(self) -> dict[str, Tensor]:
        return {"W1": self.inner.weight.T, "b1": self.inner.bias, "W2": self.outer.weight.T, "b2": self.outer.bias}

    @torch.no_grad()
    def load_canonical(self, w: dict) -> None:
        self.inner.weight.copy_(_t(w["W1"]).T)
        self.inner.bias.copy_(_t(w["b1"]))
        self.outer.weight.copy_(_t(w["W2"]).T)
        self.outer.bias.copy_(_t(w["b2"]))


class Norm(nn.LayerNorm):
    """§3.1 LayerNorm; gamma is torch's weight, beta its bias."""

    def canonical(self) -> dict[str, Tensor]:
        return {"gamma": self.weight, "beta": self.bias}

    @torch.no_grad()
    def load_canonical(self, w: dict) -> None:
        self.weight.copy_(_t(w["gamma"]))
        self.bias.copy_(_t(w["beta"]))


class Block(nn.Module):
    """A layer made of canonical sublayers; its canonical names are '<child>.<name>'."""

    SUBLAYERS: tuple[str, ...] = ()

    def canonical(self) -> dict[str, Tensor]:
        return {f"{sub}.{name}": t for sub in self.SUBLAYERS for name, t in getattr(self, sub).canonical().items()}

    def load_canonical(self, w: dict) -> None:
        for sub in self.SUBLAYERS:
            getattr(self, sub).load_canonical({k[len(sub) + 1 :]: v for k, v in w.items() if k.startswith(sub + ".")})


def _key_blocked(pad_blocked: Tensor | None) -> Tensor | None:
    """(B, Lk) True at padding -> (B, 1, 1, Lk): the same hidden keys for every head and query."""
    return None if pad_blocked is None else pad_blocked[:, None, None, :]


class EncoderBlock(Block):
    """§3.1 encoder layer, post-norm: x = LayerNorm(x + Dropout(Sublayer(x)))."""

    SUBLAYERS = ("self_attn", "norm1", "ffn", "norm2")

    def __init__(self, d_model, h, d_ff, eps, dropout, bias):
        super().__init__()
        self.self_attn, self.norm1 = FusedAttention(d_model, h, bias), Norm(d_model, eps)
        self.ffn, self.norm2 = PositionwiseFFN(d_model, d_ff), Norm(d_model, eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, src_pad: Tensor | None) -> Tensor:
        """x (S, B, d), src_pad (B, S) True at padding -> (S, B, d)."""
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, _key_blocked(src_pad))))
        return self.norm2(x + self.drop(self.ffn(x)))


class DecoderBlock(Block):
    """§3.1 decoder layer: masked self-attention, encoder-decoder attention, FFN; post-norm."""

    SUBLAYERS = ("self_attn", "norm1", "cross_attn", "norm2", "ffn", "norm3")

    def __init__(self, d_model, h, d_ff, eps, dropout, bias):
        super().__init__()
        self.self_attn, self.norm1 = FusedAttention(d_model, h, bias), Norm(d_model, eps)
        self.cross_attn, self.norm2 = FusedAttention(d_model, h, bias), Norm(d_model, eps)
        self.ffn, self.norm3 = PositionwiseFFN(d_model, d_ff), Norm(d_model, eps)
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

    def canonical(self) -> dict[str, Tensor]:
        names = {}
        if self.cfg.share_embeddings:
            names["E"] = self.embedding.weight
        else:
            names["E_src"], names["E_tgt"] = self.src_embedding.weight, self.tgt_embedding.weight
        if self.generator is not None:
            names["W_out"] = self.generator.weight.T
        for stack in ("encoder", "decoder"):
            for i, block in enumerate(getattr(self, stack)):
                names.update({f"{stack}.{i}.{k}": v for k, v in block.canonical().items()})
        return names

    @torch.no_grad()
    def load_canonical(self, weights: dict) -> None:
        if self.cfg.share_embeddings:
            self.embedding.weight.copy_(_t(weights["E"]))
        else:
            self.src_embedding.weight.copy_(_t(weights["E_src"]))
            self.tgt_embedding.weight.copy_(_t(weights["E_tgt"]))
        if self.generator is not None:
            self.generator.weight.copy_(_t(weights["W_out"]).T)
        for stack in ("encoder", "decoder"):
            for i, block in enumerate(getattr(self, stack)):
                prefix = f"{stack}.{i}."
                block.load_canonical({k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)})

    @torch.no_grad()
    def initialise(self, seed: int) -> None:
        """Embeddings N(0, d_model^-0.5), matrices Glorot-uniform (each third of W_qkv on its own),
        biases 0, LayerNorm gamma 1 and beta 0; drawn from a generator of its own."""
        g = torch.Generator().manual_seed(seed)

        def glorot(W: Tensor) -> None:
            bound = math.sqrt(6.0 / (W.shape[0] + W.shape[1]))
            W.uniform_(-bound, bound, generator=g)

        for name, t in self.canonical().items():
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("E", "E_src", "E_tgt"):
                t.normal_(0.0, self.cfg.d_model**-0.5, generator=g)
            elif leaf == "gamma":
                t.fill_(1.0)
            elif t.dim() == 2:
                glorot(t)  # views: W_Q, W_K, W_V are column blocks of W_qkv, W_O the transpose of out.weight
            else:
                t.zero_()


# --------------------------------------------------------------------------------------------------
# The model behind the numpy boundary, sequence-first
# --------------------------------------------------------------------------------------------------


def _ids(x) -> Tensor:
    return torch.tensor(np.asarray(x, dtype=np.int64))


def _np(t: Tensor) -> np.ndarray:
    return t.detach().cpu().to(DTYPE).numpy().copy()


class FusedQKVModel:
    """A ``conformance.adapter.Model``; token ids (L, B), activations and logits (L, B, ...)."""

    def __init__(self, config: ModelConfig, seed: int):
        self.config, self.seed = config, seed
        with torch.random.fork_rng(devices=[]):  # torch's own layer init draws globally; keep that untouched
            self.net = Seq2SeqTransformer(config)
        self.net.initialise(seed)
        self.steps_done = 0
        recipe = config.recipe
        self.optimizer = torch.optim.Adam(
            self.net.parameters(), lr=1.0, betas=tuple(recipe.adam_betas), eps=recipe.adam_eps
        )
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lrate(s + 1, config.d_model, recipe.warmup)  # LambdaLR counts from 0
        )
        self.criterion = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=recipe.label_smoothing)

    def load_weights(self, weights: dict) -> None:
        expected = model_shapes(self.config)
        if set(weights) != set(expected):
            raise KeyError(f"canonical weights do not match: missing {sorted(set(expected) - set(weights))},"
                           f" unexpected {sorted(set(weights) - set(expected))}")
        for name, shape in expected.items():
            if tuple(np.shape(weights[name])) != shape:
                raise ValueError(f"{name}: shape {np.shape(weights[name])}, expected {shape}")
        self.net.load_canonical(weights)

    def dump_weights(self) -> dict[str, np.ndarray]:
        tensors = self.net.canonical()
        return {name: _np(tensors[name]) for name in model_shapes(self.config)}

    @torch.no_grad()
    def forward(self, src, tgt_in) -> np.ndarray:
        return _np(self.net.eval()(_ids(src), _ids(tgt_in)))

    @torch.no_grad()
    def encode(self, src) -> np.ndarray:
        return _np(self.net.eval().encode(_ids(src)))

    @torch.no_grad()
    def decode(self, tgt_in, memory, src) -> np.ndarray:
        memory = _t(memory)
        return _np(self.net.eval().decode(_ids(tgt_in), memory, _ids(src)))

    @torch.no_grad()
    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        """src (S, B) -> (L, B) ids after <s>; rows that emitted </s> continue with padding."""
        cfg, net = self.config, self.net.eval()
        src = _ids(src)
        memory = net.encode(src)
        out = torch.full((1, src.shape[1]), cfg.bos_id, dtype=torch.long)  # (1, B): <s>
        alive = torch.ones(src.shape[1], dtype=torch.bool)
        for _ in range(int(max_len)):
            if not alive.any():
                break
            best = net.decode(out, memory, src)[-1].argmax(-1)  # (B,) from the last position
            best = best.masked_fill(~alive, cfg.pad_id)
            alive &= best != cfg.eos_id
            out = torch.cat([out, best[None]], dim=0)
        return out[1:].numpy().astype(np.int64)

    def train_step(self, src, tgt_in, tgt_out) -> dict:
        self.net.train()
        lr = self.optimizer.param_groups[0]["lr"]  # the rate this update uses
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(hash((self.seed, self.steps_done)) % 2**62)  # dropout masks of this update
            logits = self.net(_ids(src), _ids(tgt_in))  # (T, B, V)
            loss = self.criterion(logits.reshape(-1, logits.shape[-1]), _ids(tgt_out).reshape(-1))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        self.optimizer.step()
        self.schedule.step()
        self.steps_done += 1
        return {"loss": float(loss.item()), "lr": float(lr)}

    @torch.no_grad()
    def attention_weights(self, src, tgt_in) -> dict[str, np.ndarray]:
        """The (B, h, Lq, Lk) weights of an evaluation forward pass on src (S, B), tgt_in (T, B), by module
        path (``encoder.0.self_attn``, ``decoder.1.cross_attn``, ...); batch-first like every weight."""
        self.net.eval()(_ids(src), _ids(tgt_in))
        return {
            name: _np(m.last_weights)
            for name, m in self.net.named_modules()
            if isinstance(m, FusedAttention) and m.last_weights is not None
        }


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


def _blocked(mask) -> Tensor | None:
    return None if mask is None else torch.tensor(np.asarray(mask, dtype=bool))


def _same_or_new(arrays) -> list[Tensor]:
    """Tensors for numpy arrays; equal arrays become one tensor, so attention takes its fused path."""
    tensors: list[Tensor] = []
    for i, a in enumerate(arrays):
        same = next((tensors[j] for j in range(i) if np.array_equal(arrays[j], a)), None)
        tensors.append(same if same is not None else _t(a))
    return tensors


def _has_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


class FusedQKVAdapter:
    conventions = Conventions(mask="blocked", batch_first=False, dtype="float32", framework="torch")
    model_class = FusedQKVModel

    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return _np(sinusoid_table(int(n), int(d_model)))

    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        x = _t(x)
        return _np(F.layer_norm(x, x.shape[-1:], _t(gamma), _t(beta), float(eps)))

    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, mask):
        out, weights = attend(_t(q), _t(k), _t(v), _blocked(mask))
        return _np(out), _np(weights)

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask):
        """query (Lq, B, d), key and value (Lk, B, d), mask (B, Lq, Lk) True = blocked
        -> (output (Lq, B, d), weights (B, h, Lq, Lk))."""
        mha = FusedAttention(np.shape(weights["W_Q"])[0], int(h), _has_bias(weights))
        mha.load_canonical(weights)
        blocked = _blocked(mask)
        out = mha(*_same_or_new([query, key, value]), None if blocked is None else blocked[:, None])
        return _np(out), _np(mha.last_weights)

    @torch.no_grad()
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        ffn = PositionwiseFFN(*np.shape(weights["W1"]))
        ffn.load_canonical(weights)
        return _np(ffn(_t(x)))

    @staticmethod
    def _block(cls, weights: dict, h: int, eps: float) -> Block:
        d_model, d_ff = np.shape(weights["ffn.W1"])
        block = cls(d_model, int(h), d_ff, float(eps), 0.0, _has_bias(weights, "self_attn."))
        block.load_canonical(weights)
        return block.eval()

    @torch.no_grad()
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        """x (S, B, d), src_mask (B, S) True at padding -> (S, B, d)."""
        return _np(self._block(EncoderBlock, weights, h, eps)(_t(x), _blocked(src_mask)))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        """y (T, B, d), memory (S, B, d), tgt_mask (B, T) and src_mask (B, S) True at padding -> (T, B, d)."""
        block = self._block(DecoderBlock, weights, h, eps)
        return _np(block(_t(y), _t(memory), _blocked(tgt_mask), _blocked(src_mask)))

    def build_model(self, config: dict, seed: int) -> FusedQKVModel:
        return FusedQKVModel(ModelConfig.from_dict(config), int(seed))

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(lrate(int(step), int(d_model), int(warmup)))

    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=float(epsilon))
        return float(loss(_t(logits), _ids(targets)).item())

    def parameter_count(self, config: dict) -> int:
        with torch.device("meta"):  # shapes only
            net = Seq2SeqTransformer(ModelConfig.from_dict(config))
        return sum(p.numel() for p in net.parameters())


adapter = FusedQKVAdapter()
