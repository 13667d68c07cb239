"""Adapters built on ``torch.nn.Transformer``: PyTorch's defaults, and the configuration that is the paper's.

The lesson ("Our code equals PyTorch's nn.Transformer", "Common mistake"): with ``norm_first=False``,
ReLU, dropout off and the canonical weights copied in, ``nn.Transformer`` computes the paper's model,
once two of its defaults are undone:

1. an extra final ``LayerNorm`` after the encoder stack and another after the decoder stack
   (``encoder.norm``, ``decoder.norm``). The paper's post-norm model has none. With fresh weights
   (gamma 1, beta 0) a second norm of normalised numbers changes almost nothing, so the bug hides;
   after training it is "off by up to 2.14" in the toy's logits.
2. an evaluation-mode fast path: ``nn.TransformerEncoder`` turns a padded batch into a nested tensor
   (``enable_nested_tensor=True``) and pads the result back with 0, so the memory is exactly 0 at
   padded positions instead of what the formula gives there. Switched off with
   ``encoder.use_nested_tensor = False``.

Two module-level adapters:

* ``torch_nn_default`` (built-in ``torch-nn-transformer``): PyTorch's defaults, both traps in place.
  The final norms' parameters have no canonical name: as the protocol asks, ``load_weights`` sets
  them to their identity values (gamma 1, beta 0) and ``unmapped_parameters`` lists them. The trap
  still shows: the checks load gamma and beta far from 1 and 0 into the last layer, and a second norm
  renormalises what that layer's own norm scaled. The nested-tensor fast path is left on and does
  trigger (torch 2.13, CPU) for
  ``forward``/``encode``/``greedy_decode`` in evaluation mode under ``torch.no_grad()`` with a
  key padding mask, trailing padding, attention biases and an even number of heads
  (``nn.TransformerEncoder.forward`` and ``__init__`` list the conditions). ``parameter_count``
  counts the two final norms: 2 x 2 x d_model more than the paper (2,048 at the base size).
* ``torch_nn_fixed`` (built-in ``torch-nn-transformer-fixed``): ``encoder.norm = decoder.norm = None``
  and ``encoder.use_nested_tensor = False``; otherwise the same code. It computes the paper's model.

What is written around ``nn.Transformer`` (it has no embedding and no output layer): the tied embedding
E[ids] x sqrt(d_model) plus the interleaved sinusoidal encoding (sine in even columns, cosine in odd,
computed here), dropout on that sum, and the output projection y @ E^T (or an ``nn.Linear`` without
bias holding W_out^T when ``tie_output=False``). Masks passed to nn: ``src_key_padding_mask``,
``tgt_key_padding_mask``, ``memory_key_padding_mask`` (True = padding, blocked) and the causal
``tgt_mask`` (True strictly above the diagonal).

``attention_bias=False``: ``nn.Transformer(bias=False)`` would also drop the FFN biases and LayerNorm
betas, so the model is built with biases and each ``nn.MultiheadAttention`` is replaced by one built
with ``bias=False``; the encoder's nested-tensor fast path is then off, as ``nn.TransformerEncoder``
itself decides for bias-free attention.

Parts: ``multi_head_attention`` is ``nn.MultiheadAttention(need_weights=True,
average_attn_weights=False)`` with the canonical weights (``in_proj_weight`` stacks W_Q^T, W_K^T, W_V^T)
and a (B*h, Lq, Lk) boolean ``attn_mask``; ``encoder_layer``/``decoder_layer`` are
``nn.TransformerEncoderLayer``/``nn.TransformerDecoderLayer``; ``scaled_dot_product_attention`` takes
its output from ``torch.nn.functional.scaled_dot_product_attention`` and writes its weights out (that
function returns none) with ``torch._safe_softmax``, the softmax torch's own math SDPA kernel uses.

Fully masked query rows are left to torch, not patched: ``nn.MultiheadAttention`` with
``need_weights=True`` gives NaN weights and a NaN output for a query whose keys are all masked (torch
2.13, both its fast and its slow path); with ``need_weights=False`` (what the layers use) the same row
comes out as b_O. ``F.scaled_dot_product_attention`` and ``torch._safe_softmax`` give 0.

Training (§5.3, §5.4): Adam(recipe betas, eps) at base rate 1 scaled by ``LambdaLR(lambda s:
lrate(s + 1, d_model, warmup))``, ``nn.CrossEntropyLoss(ignore_index=pad, label_smoothing=eps)``;
dropout is nn.Transformer's own (sublayer outputs, the FFN hidden layer, and the attention weights)
plus the embedding sums.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from conformance.adapter import Conventions
from conformance.config import ModelConfig
from conformance.weights import model_shapes

DTYPE = torch.float32


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


# --------------------------------------------------------------------------------------------------
# Canonical names on nn's modules (orientation x @ W; nn.Linear.weight is W^T)
# --------------------------------------------------------------------------------------------------

# One canonical tensor: (parameter, rows of it or None, stored transposed)
Entry = tuple[nn.Parameter, slice | None, bool]


def _attention(d_model: int, h: int, dropout: float, bias: bool) -> nn.MultiheadAttention:
    return nn.MultiheadAttention(d_model, h, dropout=dropout, bias=bias, batch_first=True)


def attention_entries(mha: nn.MultiheadAttention) -> dict[str, Entry]:
    """W_Q, W_K, W_V are the transposed thirds of ``in_proj_weight`` (3d, d); W_O = out_proj.weight^T."""
    d = mha.embed_dim
    entries: dict[str, Entry] = {}
    for i, m in enumerate("QKV"):
        entries[f"W_{m}"] = (mha.in_proj_weight, slice(i * d, (i + 1) * d), True)
    entries["W_O"] = (mha.out_proj.weight, None, True)
    if mha.in_proj_bias is not None:
        for i, m in enumerate("QKV"):
            entries[f"b_{m}"] = (mha.in_proj_bias, slice(i * d, (i + 1) * d), False)
        entries["b_O"] = (mha.out_proj.bias, None, False)
    return entries


def layer_entries(layer: nn.Module) -> dict[str, Entry]:
    """An nn.TransformerEncoderLayer or nn.TransformerDecoderLayer under the canonical layer names."""
    decoder = isinstance(layer, nn.TransformerDecoderLayer)
    attentions = [("self_attn", layer.self_attn)] + ([("cross_attn", layer.multihead_attn)] if decoder else [])
    entries = {f"{name}.{k}": v for name, mha in attentions for k, v in attention_entries(mha).items()}
    entries.update({
        "ffn.W1": (layer.linear1.weight, None, True), "ffn.b1": (layer.linear1.bias, None, False),
        "ffn.W2": (layer.linear2.weight, None, True), "ffn.b2": (layer.linear2.bias, None, False),
    })
    for norm in ("norm1", "norm2", "norm3") if decoder else ("norm1", "norm2"):
        entries[f"{norm}.gamma"] = (getattr(layer, norm).weight, None, False)
        entries[f"{norm}.beta"] = (getattr(layer, norm).bias, None, False)
    return entries


def _read(entry: Entry) -> Tensor:
    p, rows, transposed = entry
    t = p if rows is None else p[rows]
    return t.T if transposed else t


@torch.no_grad()
def _write(entries: dict[str, Entry], weights: dict) -> None:
    for name, (p, rows, transposed) in entries.items():
        value = torch.tensor(np.asarray(weights[name]), dtype=p.dtype)  # a copy: read-only arrays are fine
        target = p if rows is None else p[rows]
        if tuple(target.shape) != tuple(value.T.shape if transposed else value.shape):
            raise ValueError(f"{name}: shape {tuple(value.shape)} does not fit {tuple(target.shape)}")
        target.copy_(value.T if transposed else value)


def _without_attention_biases(layer: nn.Module, d_model: int, h: int, dropout: float) -> None:
    layer.self_attn = _attention(d_model, h, dropout, bias=False)
    if isinstance(layer, nn.TransformerDecoderLayer):
        layer.multihead_attn = _attention(d_model, h, dropout, bias=False)


# --------------------------------------------------------------------------------------------------
# The model: nn.Transformer with embeddings, positions and the output layer around it
# --------------------------------------------------------------------------------------------------


class TorchNNSeq2Seq(nn.Module):
    """``nn.Transformer(batch_first=True, norm_first=False, activation="relu")`` plus what it lacks."""

    def __init__(self, cfg: ModelConfig, *, final_norms: bool, nested_tensor: bool):
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

    def canonical(self) -> dict[str, Entry]:
        entries: dict[str, Entry] = {}
        if self.cfg.share_embeddings:
            entries["E"] = (self.embedding.weight, None, False)
        else:
            entries["E_src"] = (self.src_embedding.weight, None, False)
            entries["E_tgt"] = (self.tgt_embedding.weight, None, False)
        if self.generator is not None:
            entries["W_out"] = (self.generator.weight, None, True)
        for stack in ("encoder", "decoder"):
            for i, layer in enumerate(getattr(self.transformer, stack).layers):
                entries.update({f"{stack}.{i}.{k}": v for k, v in layer_entries(layer).items()})
        return entries

    @torch.no_grad()
    def initialise(self, seed: int) -> None:
        """Embeddings N(0, d_model^-0.5) from a generator of its own (nn's other parameters keep nn's init)."""
        g = torch.Generator().manual_seed(seed)
        for embedding in (m for m in self.modules() if isinstance(m, nn.Embedding)):
            embedding.weight.normal_(0.0, self.cfg.d_model**-0.5, generator=g)


# --------------------------------------------------------------------------------------------------
# The model behind the numpy boundary
# --------------------------------------------------------------------------------------------------


def _t(value) -> Tensor:
    return torch.tensor(np.asarray(value), dtype=DTYPE)  # a copy: read-only arrays are fine


def _ids(x) -> Tensor:
    return torch.tensor(np.asarray(x, dtype=np.int64))


def _blocked(mask) -> Tensor | None:
    return None if mask is None else torch.tensor(np.asarray(mask, dtype=bool))


def _np(t: Tensor) -> np.ndarray:
    return t.detach().cpu().to(DTYPE).numpy().copy()


class TorchNNModel:
    """A ``conformance.adapter.Model`` around ``TorchNNSeq2Seq``; batch-first, float32."""

    def __init__(self, config: ModelConfig, seed: int, *, final_norms: bool, nested_tensor: bool):
        self.config, self.seed = config, seed
        with torch.random.fork_rng(devices=[]):  # nn's own init draws from the global RNG: seed it, leave it as it was
            torch.manual_seed(seed)
            self.net = TorchNNSeq2Seq(config, final_norms=final_norms, nested_tensor=nested_tensor)
        self.net.initialise(seed)
        recipe = config.recipe
        self.steps_done = 0
        self.optimizer = torch.optim.Adam(
            self.net.parameters(), lr=1.0, betas=tuple(recipe.adam_betas), eps=recipe.adam_eps
        )
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lrate(s + 1, config.d_model, recipe.warmup)  # LambdaLR counts from 0
        )
        self.criterion = nn.CrossEntropyLoss(ignore_index=config.pad_id, label_smoothing=recipe.label_smoothing)

    def load_weights(self, weights: dict) -> None:
        """Every canonical parameter. The default configuration's final norms have no canonical name: they
        are set to their identity values (gamma 1, beta 0), as the protocol asks, and listed by
        ``unmapped_parameters``."""
        expected = model_shapes(self.config)
        if set(weights) != set(expected):
            raise KeyError(f"canonical weights do not match: missing {sorted(set(expected) - set(weights))},"
                           f" unexpected {sorted(set(weights) - set(expected))}")
        _write(self.net.canonical(), weights)
        with torch.no_grad():
            for norm in self.net.final_norms:
                norm.weight.fill_(1.0)
                norm.bias.zero_()

    def unmapped_parameters(self) -> dict[str, int]:
        """The final norms of PyTorch's default configuration: 2 x 2 x d_model values the paper has not."""
        mapped = {id(entry[0]) for entry in self.net.canonical().values()}
        return {name: p.numel() for name, p in self.net.named_parameters() if id(p) not in mapped}

    def dump_weights(self) -> dict[str, np.ndarray]:
        """Every canonical parameter; the default configuration's final norms cannot be expressed."""
        entries = self.net.canonical()
        return {name: _np(_read(entries[name])) for name in model_shapes(self.config)}

    @torch.no_grad()
    def forward(self, src, tgt_in) -> np.ndarray:
        return _np(self.net.eval()(_ids(src), _ids(tgt_in)))

    @torch.no_grad()
    def encode(self, src) -> np.ndarray:
        return _np(self.net.eval().encode(_ids(src)))

    @torch.no_grad()
    def decode(self, tgt_in, memory, src) -> np.ndarray:
        return _np(self.net.eval().decode(_ids(tgt_in), _t(memory), _ids(src)))

    @torch.no_grad()
    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        """src (B, S) -> (B, L) ids after <s>; rows that emitted </s> continue with padding."""
        cfg, net = self.config, self.net.eval()
        src = _ids(src)
        memory = net.encode(src)
        out = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long)
        alive = torch.ones(src.shape[0], dtype=torch.bool)
        for _ in range(int(max_len)):
            if not alive.any():
                break
            best = net.decode(out, memory, src)[:, -1].argmax(-1)  # (B,) from the last position
            best = best.masked_fill(~alive, cfg.pad_id)
            alive &= best != cfg.eos_id
            out = torch.cat([out, best[:, None]], dim=1)
        return out[:, 1:].numpy().astype(np.int64)

    def train_step(self, src, tgt_in, tgt_out) -> dict:
        self.net.train()
        lr = self.optimizer.param_groups[0]["lr"]  # the rate this update uses
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(hash((self.seed, self.steps_done)) % 2**62)  # dropout masks of this update
            logits = self.net(_ids(src), _ids(tgt_in))
            loss = self.criterion(logits.reshape(-1, logits.shape[-1]), _ids(tgt_out).reshape(-1))
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        self.optimizer.step()
        self.schedule.step()
        self.steps_done += 1
        return {"loss": float(loss.item()), "lr": float(lr)}

    @torch.no_grad()
    def attention_weights(self, src, tgt_in) -> dict[str, np.ndarray]:
        """(B, h, Lq, Lk) weights of an evaluation pass, asked of each attention module with
        ``need_weights=True, average_attn_weights=False`` while the layers are run one by one (nn's
        layers call their attention with ``need_weights=False``). The decoder reads the memory
        ``encode`` gives (with the final norm and the fast path, where the configuration has them)."""
        net = self.net.eval()
        src, tgt_in = _ids(src), _ids(tgt_in)
        masks = net.masks(src, tgt_in)
        src_pad, tgt_pad, causal = masks["src_key_padding_mask"], masks["tgt_key_padding_mask"], masks["tgt_mask"]
        weights = {}
        x = net.embed(src, "src")
        for i, layer in enumerate(net.transformer.encoder.layers):
            _, weights[f"encoder.{i}.self_attn"] = layer.self_attn(
                x, x, x, key_padding_mask=src_pad, need_weights=True, average_attn_weights=False)
            x = layer(x, src_key_padding_mask=src_pad)
        memory = net.encode(src)
        y = net.embed(tgt_in, "tgt")
        for i, layer in enumerate(net.transformer.decoder.layers):
            attended, weights[f"decoder.{i}.self_attn"] = layer.self_attn(
                y, y, y, attn_mask=causal, key_padding_mask=tgt_pad, need_weights=True, average_attn_weights=False)
            queries = layer.norm1(y + attended)  # post-norm: what the cross-attention reads (no dropout in eval)
            _, weights[f"decoder.{i}.cross_attn"] = layer.multihead_attn(
                queries, memory, memory, key_padding_mask=src_pad, need_weights=True, average_attn_weights=False)
            y = layer(y, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return {name: _np(w) for name, w in weights.items()}


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


def _same_or_new(arrays) -> list[Tensor]:
    """Tensors for numpy arrays; equal arrays become one tensor, so nn.MultiheadAttention sees
    self-attention (query is key is value) and may take its own fast path, as in nn's layers."""
    tensors: list[Tensor] = []
    for i, a in enumerate(arrays):
        same = next((tensors[j] for j in range(i) if np.array_equal(arrays[j], a)), None)
        tensors.append(same if same is not None else _t(a))
    return tensors


def _has_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


def _fresh(build):
    """A module built without touching the global RNG (its init is overwritten by canonical weights)."""
    with torch.random.fork_rng(devices=[]), _quiet():
        return build()


def _safe_softmax(scores: Tensor) -> Tensor:
    """torch's softmax for attention (its math SDPA kernel's): a row of -inf gets 0, not NaN."""
    if hasattr(torch, "_safe_softmax"):
        return torch._safe_softmax(scores, -1)
    dead = torch.isneginf(scores).all(-1, keepdim=True)
    return torch.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


class TorchNNAdapter:
    """Every part, computed by torch.nn's modules; ``final_norms``/``nested_tensor`` pick the configuration."""

    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch")
    model_class = TorchNNModel

    def __init__(self, *, final_norms: bool, nested_tensor: bool, name: str):
        self.final_norms, self.nested_tensor, self.name = final_norms, nested_tensor, name

    def __repr__(self) -> str:
        return f"TorchNNAdapter(name={self.name!r}, final_norms={self.final_norms}, nested_tensor={self.nested_tensor})"

    # §3.5
    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return _np(sinusoids(int(n), int(d_model)))

    # §3.1
    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        x = _t(x)
        return _np(F.layer_norm(x, x.shape[-1:], _t(gamma), _t(beta), float(eps)))

    # §3.2.1: the output from torch's kernel, the weights written out (the kernel returns none)
    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, mask) -> tuple[np.ndarray, np.ndarray]:
        q, k, v, blocked = _t(q), _t(k), _t(v), _blocked(mask)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if blocked is None else ~blocked)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        return _np(out), _np(_safe_softmax(scores))

    # §3.2.2
    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask) -> tuple[np.ndarray, np.ndarray]:
        """nn.MultiheadAttention; mask (B, Lq, Lk) True = blocked, repeated per head: nn's (B*h, Lq, Lk)."""
        h = int(h)
        mha = _fresh(lambda: _attention(np.shape(weights["W_Q"])[0], h, 0.0, _has_bias(weights)))
        _write(attention_entries(mha), weights)
        blocked = _blocked(mask)
        inputs = _same_or_new([query, key, value])
        attn_mask = None if blocked is None else blocked.repeat_interleave(h, dim=0)
        # nn.MultiheadAttention gives NaN for a query with every key blocked when asked for its weights,
        # but b_O (weights 0) without them, which is what its layers use: take the output from that
        # call, and the weights of that row as the 0 they stand for (the suite's specified behaviour).
        out, _ = mha.eval()(*inputs, attn_mask=attn_mask, need_weights=False)
        _, attn = mha(*inputs, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
        return _np(out), _np(torch.nan_to_num(attn, nan=0.0))

    # §3.3
    @torch.no_grad()
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        d_model, d_ff = np.shape(weights["W1"])
        ffn = _fresh(lambda: nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)))
        _write({"W1": (ffn[0].weight, None, True), "b1": (ffn[0].bias, None, False),
                "W2": (ffn[2].weight, None, True), "b2": (ffn[2].bias, None, False)}, weights)
        return _np(ffn(_t(x)))

    @staticmethod
    def _layer(cls, weights: dict, h: int, eps: float) -> nn.Module:
        d_model, d_ff = np.shape(weights["ffn.W1"])
        h = int(h)

        def build():
            layer = cls(d_model, h, d_ff, dropout=0.0, activation="relu", layer_norm_eps=float(eps),
                        batch_first=True, norm_first=False)
            if not _has_bias(weights, "self_attn."):
                _without_attention_biases(layer, d_model, h, 0.0)
            return layer

        layer = _fresh(build)
        _write(layer_entries(layer), weights)
        return layer.eval()

    # §3.1, encoder: nn.TransformerEncoderLayer
    @torch.no_grad()
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        layer = self._layer(nn.TransformerEncoderLayer, weights, h, eps)
        return _np(layer(_t(x), src_key_padding_mask=_blocked(src_mask)))

    # §3.1, decoder: nn.TransformerDecoderLayer with the causal tgt_mask
    @torch.no_grad()
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        layer = self._layer(nn.TransformerDecoderLayer, weights, h, eps)
        y = _t(y)
        out = layer(y, _t(memory), tgt_mask=causal_blocked(y.shape[1]), tgt_key_padding_mask=_blocked(tgt_mask),
                    memory_key_padding_mask=_blocked(src_mask), tgt_is_causal=True)
        return _np(out)

    def build_model(self, config: dict, seed: int) -> TorchNNModel:
        return TorchNNModel(ModelConfig.from_dict(config), int(seed),
                            final_norms=self.final_norms, nested_tensor=self.nested_tensor)

    # §5.3
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(lrate(int(step), int(d_model), int(warmup)))

    # §5.4
    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=float(epsilon))
        return float(loss(_t(logits), _ids(targets)).item())

    def parameter_count(self, config: dict) -> int:
        """nn.Transformer's parameters plus the embedding(s) (and W_out): the model ``build_model`` makes,
        built on the meta device (shapes only). The default configuration's two final norms add 4 d_model."""
        with torch.device("meta"), _quiet():
            net = TorchNNSeq2Seq(ModelConfig.from_dict(config), final_norms=self.final_norms,
                                 nested_tensor=self.nested_tensor)
        return sum(p.numel() for p in net.parameters())


torch_nn_default = TorchNNAdapter(final_norms=True, nested_tensor=True, name="torch-nn-transformer")
torch_nn_fixed = TorchNNAdapter(final_norms=False, nested_tensor=False, name="torch-nn-transformer-fixed")
adapter = torch_nn_fixed  # what ``conformance.implementations.torch_nn.adapter`` alone loads: the correct one
