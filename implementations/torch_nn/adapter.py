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
from conformance.adapters import sub_names
from conformance.adapters.torch import PaperRecipe, TorchModel, floats, ids, load_component, mask, numpy
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
# Canonical names on nn's modules (conformance.adapters): in_proj_weight stacks W_Q^T, W_K^T, W_V^T
# --------------------------------------------------------------------------------------------------

MHA = {"W_QKV": "in_proj_weight", "W_O": "out_proj"}  # an entry for a matrix gives its bias too
NAMES = {
    "E": "embedding.weight", "E_src": "src_embedding.weight", "E_tgt": "tgt_embedding.weight", "W_out": "generator",
    **{f"*.{{l}}.self_attn.{k}": f"transformer.*.layers.{{l}}.self_attn.{v}" for k, v in MHA.items()},
    **{f"decoder.{{l}}.cross_attn.{k}": f"transformer.decoder.layers.{{l}}.multihead_attn.{v}" for k, v in MHA.items()},
    "*.{l}.ffn.W1": "transformer.*.layers.{l}.linear1", "*.{l}.ffn.W2": "transformer.*.layers.{l}.linear2",
    "*.{l}.norm*": "transformer.*.layers.{l}.norm*",  # an entry for a norm gives gamma (weight) and beta (bias)
}
LAYER = {stack: sub_names(NAMES, f"{stack}.{{l}}.", f"transformer.{stack}.layers.{{l}}.")
         for stack in ("encoder", "decoder")}
FFN = {"W1": "0", "W2": "2"}  # nn.Sequential(Linear, ReLU, Linear)
ATTENTION = {"*.{l}.self_attn": "transformer.*.layers.{l}.self_attn",
             "decoder.{l}.cross_attn": "transformer.decoder.layers.{l}.multihead_attn"}


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

    @torch.no_grad()
    def initialise(self, seed: int) -> None:
        """Embeddings N(0, d_model^-0.5) from a generator of its own (nn's other parameters keep nn's init)."""
        g = torch.Generator().manual_seed(seed)
        for embedding in (m for m in self.modules() if isinstance(m, nn.Embedding)):
            embedding.weight.normal_(0.0, self.cfg.d_model**-0.5, generator=g)


# --------------------------------------------------------------------------------------------------
# The model behind the numpy boundary
# --------------------------------------------------------------------------------------------------


def build(config: ModelConfig, seed: int, *, final_norms: bool, nested_tensor: bool) -> TorchModel:
    """nn's own initialisation drawn from ``seed`` (the global generator left as it was), embeddings from a
    generator of their own; batch-first; the paper's recipe with this file's lrate. Attention weights are
    asked of each nn.MultiheadAttention again with ``need_weights=True`` (nn's layers call it without)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = TorchNNSeq2Seq(config, final_norms=final_norms, nested_tensor=nested_tensor)
    net.initialise(seed)

    def forward(m, src, tgt_in):
        return m(src, tgt_in)

    return TorchModel(net, config, names=NAMES, forward=forward, attention=ATTENTION, seed=seed,
                      trainer=lambda m: PaperRecipe(m, config, forward=forward, seed=seed, rate=lrate))


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


def _same_or_new(arrays) -> list[Tensor]:
    """Tensors for numpy arrays; equal arrays become one tensor, so nn.MultiheadAttention sees
    self-attention (query is key is value) and may take its own fast path, as in nn's layers."""
    tensors: list[Tensor] = []
    for i, a in enumerate(arrays):
        same = next((tensors[j] for j in range(i) if np.array_equal(arrays[j], a)), None)
        tensors.append(same if same is not None else floats(a))
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
    model_class = TorchModel

    def __init__(self, *, final_norms: bool, nested_tensor: bool, name: str):
        self.final_norms, self.nested_tensor, self.name = final_norms, nested_tensor, name

    def __repr__(self) -> str:
        return f"TorchNNAdapter(name={self.name!r}, final_norms={self.final_norms}, nested_tensor={self.nested_tensor})"

    # §3.5
    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return numpy(sinusoids(int(n), int(d_model)))

    # §3.1
    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        x = floats(x)
        return numpy(F.layer_norm(x, x.shape[-1:], floats(gamma), floats(beta), float(eps)))

    # §3.2.1: the output from torch's kernel, the weights written out (the kernel returns none)
    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, blocked) -> tuple[np.ndarray, np.ndarray]:
        q, k, v, blocked = floats(q), floats(k), floats(v), mask(blocked)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if blocked is None else ~blocked)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        return numpy(out), numpy(_safe_softmax(scores))

    # §3.2.2
    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights: dict, h: int, blocked) -> tuple[np.ndarray, np.ndarray]:
        """nn.MultiheadAttention; mask (B, Lq, Lk) True = blocked, repeated per head: nn's (B*h, Lq, Lk)."""
        h = int(h)
        mha = load_component(_fresh(lambda: _attention(np.shape(weights["W_Q"])[0], h, 0.0, _has_bias(weights))),
                             weights, MHA)
        blocked = mask(blocked)
        inputs = _same_or_new([query, key, value])
        attn_mask = None if blocked is None else blocked.repeat_interleave(h, dim=0)
        # nn.MultiheadAttention gives NaN for a query with every key blocked when asked for its weights,
        # but b_O (weights 0) without them, which is what its layers use: take the output from that
        # call, and the weights of that row as the 0 they stand for (the suite's specified behaviour).
        out, _ = mha(*inputs, attn_mask=attn_mask, need_weights=False)
        _, attn = mha(*inputs, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
        return numpy(out), numpy(torch.nan_to_num(attn, nan=0.0))

    # §3.3
    @torch.no_grad()
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        d_model, d_ff = np.shape(weights["W1"])
        ffn = _fresh(lambda: nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)))
        return numpy(load_component(ffn, weights, FFN)(floats(x)))

    @staticmethod
    def _layer(cls, stack: str, weights: dict, h: int, eps: float) -> nn.Module:
        d_model, d_ff = np.shape(weights["ffn.W1"])
        h = int(h)

        def build():
            layer = cls(d_model, h, d_ff, dropout=0.0, activation="relu", layer_norm_eps=float(eps),
                        batch_first=True, norm_first=False)
            if not _has_bias(weights, "self_attn."):
                _without_attention_biases(layer, d_model, h, 0.0)
            return layer

        return load_component(_fresh(build), weights, LAYER[stack])

    # §3.1, encoder: nn.TransformerEncoderLayer
    @torch.no_grad()
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        layer = self._layer(nn.TransformerEncoderLayer, "encoder", weights, h, eps)
        return numpy(layer(floats(x), src_key_padding_mask=mask(src_mask)))

    # §3.1, decoder: nn.TransformerDecoderLayer with the causal tgt_mask
    @torch.no_grad()
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        layer = self._layer(nn.TransformerDecoderLayer, "decoder", weights, h, eps)
        y = floats(y)
        out = layer(y, floats(memory), tgt_mask=causal_blocked(y.shape[1]), tgt_key_padding_mask=mask(tgt_mask),
                    memory_key_padding_mask=mask(src_mask), tgt_is_causal=True)
        return numpy(out)

    def build_model(self, config: dict, seed: int) -> TorchModel:
        return build(ModelConfig.from_dict(config), int(seed), final_norms=self.final_norms,
                     nested_tensor=self.nested_tensor)

    # §5.3
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(lrate(int(step), int(d_model), int(warmup)))

    # §5.4
    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = nn.CrossEntropyLoss(ignore_index=int(pad_id), label_smoothing=float(epsilon))
        return float(loss(floats(logits), ids(targets)).item())

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
