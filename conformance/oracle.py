"""The float64 oracle for composites: the reference modules, run in ``torch.float64``, numpy in and out.

The formulas of ``conformance.formulas`` cover one operation each; a layer or a whole model is better
checked against the reference implementation (``implementations/reference/model.py``), which is
itself checked against ``torch.nn.Transformer`` (``tests/test_reference_vs_torch_nn.py``). Here its
modules are built in float64, the canonical weights loaded (``load_canonical``), evaluation mode,
no gradients, so the only error left in a comparison is the candidate's own.

Each function can also run a *variant*: the same computation with one known bug (``VARIANTS``), used
to name the likely cause of a failure ("no 1/sqrt(d_k) scaling", "pre-norm", ...). Inputs are
batch-first and masks are boolean *keep* masks, the suite's conventions. torch is imported lazily, so
``import conformance`` works without it; only the checks that need the oracle need torch.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from conformance import formulas as np_formulas
from conformance.config import ModelConfig


class OracleUnavailable(RuntimeError):
    """Raised when torch is missing; the fix is ``pip install 'transformer-conformance[torch]'``."""


@functools.cache
def _modules():
    """(torch, the reference model module), imported on first use."""
    try:
        import torch

        from conformance.implementations.reference import model as ref
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise OracleUnavailable(
            f"the float64 oracle needs torch ({exc}). Fix: pip install 'transformer-conformance[torch]'"
        ) from exc
    return torch, ref


# --------------------------------------------------------------------------------------------------
# Variants: one known bug each, to name the likely cause of a failure
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One bug: replaced formulas, and optionally a different decoder/encoder layer or padding mask."""

    formulas: dict[str, Callable] = field(default_factory=dict)
    decoder_layer: str | None = None  # name of a DecoderLayer subclass in _layer_classes()
    encoder_layer: str | None = None  # name of an EncoderLayer subclass in _layer_classes()
    final_norm: bool = False  # a LayerNorm (gamma 1, beta 0) after each stack, as torch.nn.Transformer adds
    zero_padded_memory: bool = False  # the memory is 0 at padded source positions (a padded fast path)


def _variant_formulas() -> dict[str, Variant]:
    torch, ref = _modules()

    def attention_unscaled(q, k, v, keep):  # scores q.k instead of q.k / sqrt(d_k)
        return ref.scaled_dot_product_attention(q * math.sqrt(q.shape[-1]), k, v, keep)

    def split_no_transpose(x, h):
        B, L, d = x.shape
        return x.reshape(B, h, L, d // h)

    def merge_no_transpose(x):
        B, h, L, d_k = x.shape
        return x.reshape(B, L, h * d_k)

    return {
        "no 1/sqrt(d_k) scaling of the scores": Variant({"attention": attention_unscaled}),
        "scores divided by sqrt(d_model) instead of sqrt(d_k)": Variant(),  # needs h: built in _mha_variant
        "heads split by reshaping (B, L, d_model) -> (B, h, L, d_k) without the transpose": Variant(
            {"split_heads": split_no_transpose, "merge_heads": merge_no_transpose}
        ),
        "padding applied to the queries instead of the keys": Variant(
            encoder_layer="queries_padded", decoder_layer="queries_padded"
        ),
        "causal mask blocks the diagonal (a position cannot read itself)": Variant(
            {"causal_mask": lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1)}
        ),
        "no causal mask: the future leaks into the decoder self-attention": Variant(
            {"causal_mask": lambda T: torch.ones(T, T, dtype=torch.bool)}
        ),
        "causal mask applied to the cross-attention": Variant(decoder_layer="causal_cross"),
        "cross-attention reads the decoder states (K, V) instead of the memory": Variant(
            decoder_layer="cross_reads_decoder"
        ),
        "causal mask applied in the encoder": Variant(encoder_layer="causal_encoder"),
        "pre-norm x + Sublayer(LayerNorm(x)) instead of post-norm LayerNorm(x + Sublayer(x))": Variant(
            {"sublayer": lambda x, fn, norm, dropout: x + dropout(fn(norm(x)))}
        ),
        "no residual connection: LayerNorm(Sublayer(x))": Variant(
            {"sublayer": lambda x, fn, norm, dropout: norm(dropout(fn(x)))}
        ),
        "GELU instead of ReLU in the feed-forward network": Variant({"activation": torch.nn.functional.gelu}),
        "no ReLU in the feed-forward network": Variant({"activation": lambda x: x}),
        "embeddings not multiplied by sqrt(d_model)": Variant({"embed_scale": lambda d_model: 1.0}),
        "an extra LayerNorm after the encoder and decoder stacks (torch.nn.Transformer's default final norm)":
            Variant(final_norm=True),
        "the memory zeroed at padded source positions (torch.nn.Transformer's nested-tensor fast path)":
            Variant(zero_padded_memory=True),
        "no padding mask built from pad_id: padding tokens are read as content": Variant(
            {"padding_mask": lambda ids, pad_id: torch.ones_like(ids, dtype=torch.bool).unsqueeze(1)}
        ),
    }


VARIANTS_BY_PART = {
    "multi_head_attention": (
        "no 1/sqrt(d_k) scaling of the scores",
        "scores divided by sqrt(d_model) instead of sqrt(d_k)",
        "heads split by reshaping (B, L, d_model) -> (B, h, L, d_k) without the transpose",
        "no output projection W_O",
    ),
    "feed_forward": ("GELU instead of ReLU in the feed-forward network", "no ReLU in the feed-forward network"),
    "encoder_layer": (
        "pre-norm x + Sublayer(LayerNorm(x)) instead of post-norm LayerNorm(x + Sublayer(x))",
        "no residual connection: LayerNorm(Sublayer(x))",
        "padding applied to the queries instead of the keys",
        "causal mask applied in the encoder",
        "no 1/sqrt(d_k) scaling of the scores",
        "heads split by reshaping (B, L, d_model) -> (B, h, L, d_k) without the transpose",
        "GELU instead of ReLU in the feed-forward network",
    ),
    "decoder_layer": (
        "causal mask blocks the diagonal (a position cannot read itself)",
        "no causal mask: the future leaks into the decoder self-attention",
        "causal mask applied to the cross-attention",
        "cross-attention reads the decoder states (K, V) instead of the memory",
        "padding applied to the queries instead of the keys",
        "pre-norm x + Sublayer(LayerNorm(x)) instead of post-norm LayerNorm(x + Sublayer(x))",
        "no residual connection: LayerNorm(Sublayer(x))",
        "no 1/sqrt(d_k) scaling of the scores",
        "heads split by reshaping (B, L, d_model) -> (B, h, L, d_k) without the transpose",
        "GELU instead of ReLU in the feed-forward network",
    ),
    "model": (
        "embeddings not multiplied by sqrt(d_model)",
        "an extra LayerNorm after the encoder and decoder stacks (torch.nn.Transformer's default final norm)",
        "the memory zeroed at padded source positions (torch.nn.Transformer's nested-tensor fast path)",
        "no padding mask built from pad_id: padding tokens are read as content",
        "no causal mask: the future leaks into the decoder self-attention",
        "causal mask blocks the diagonal (a position cannot read itself)",
        "pre-norm x + Sublayer(LayerNorm(x)) instead of post-norm LayerNorm(x + Sublayer(x))",
        "no residual connection: LayerNorm(Sublayer(x))",
        "no 1/sqrt(d_k) scaling of the scores",
    ),
}
"""Which variants are worth trying when a part fails (the ones that can change that part's output)."""


@functools.cache
def _variants() -> dict[str, Variant]:
    return _variant_formulas()


def _formulas(variant: str | None = None, *, h: int | None = None):
    """The reference formulas with a float64 positional encoding, and the variant's replacements."""
    torch, ref = _modules()

    def positional_encoding(n: int, d_model: int):
        return torch.from_numpy(np_formulas.positional_encoding(n, d_model))  # float64, exact

    changes: dict[str, Callable] = {"positional_encoding": positional_encoding}
    if variant == "scores divided by sqrt(d_model) instead of sqrt(d_k)":
        changes["attention"] = lambda q, k, v, keep: ref.scaled_dot_product_attention(q / math.sqrt(h), k, v, keep)
    elif variant is not None:
        changes.update(_variants()[variant].formulas)
    return dataclasses.replace(ref.REFERENCE, **changes)


@functools.cache
def _layer_classes() -> dict[str, type]:
    """The reference's layers with one wiring bug each (cross-attention on the decoder states, ...)."""
    torch, ref = _modules()

    class CausalCross(ref.DecoderLayer):
        def forward(self, y, memory, tgt_keep, src_keep):
            f, (T, S) = self.formulas, (y.shape[1], memory.shape[1])
            self_keep = f.causal_mask(T) & tgt_keep if tgt_keep is not None else f.causal_mask(T).unsqueeze(0)
            cross_keep = torch.ones(T, S, dtype=torch.bool).tril()
            cross_keep = cross_keep & src_keep if src_keep is not None else cross_keep.unsqueeze(0)
            y = f.sublayer(y, lambda y: self.self_attn(y, y, y, self_keep), self.norm1, self.dropout)
            y = f.sublayer(y, lambda y: self.cross_attn(y, memory, memory, cross_keep), self.norm2, self.dropout)
            return f.sublayer(y, self.ffn, self.norm3, self.dropout)

    class CrossReadsDecoder(ref.DecoderLayer):
        def forward(self, y, memory, tgt_keep, src_keep):
            f, T = self.formulas, y.shape[1]
            self_keep = f.causal_mask(T) & tgt_keep if tgt_keep is not None else f.causal_mask(T).unsqueeze(0)
            y = f.sublayer(y, lambda y: self.self_attn(y, y, y, self_keep), self.norm1, self.dropout)
            y = f.sublayer(y, lambda y: self.cross_attn(y, y, y, self_keep), self.norm2, self.dropout)
            return f.sublayer(y, self.ffn, self.norm3, self.dropout)

    class CausalEncoder(ref.EncoderLayer):
        def forward(self, x, src_keep):
            causal = self.formulas.causal_mask(x.shape[1])
            return super().forward(x, causal & src_keep if src_keep is not None else causal.unsqueeze(0))

    def rows(keep):  # (B, 1, L) key padding -> (B, L, 1): hides query rows instead
        return None if keep is None else keep.transpose(-1, -2)

    class QueriesPaddedEncoder(ref.EncoderLayer):
        def forward(self, x, src_keep):
            return super().forward(x, rows(src_keep))

    class QueriesPaddedDecoder(ref.DecoderLayer):  # in the self-attention; the cross-attention is unchanged
        def forward(self, y, memory, tgt_keep, src_keep):
            return super().forward(y, memory, rows(tgt_keep), src_keep)

    return {
        "causal_cross": CausalCross, "cross_reads_decoder": CrossReadsDecoder, "causal_encoder": CausalEncoder,
        "queries_padded": {"encoder": QueriesPaddedEncoder, "decoder": QueriesPaddedDecoder},
    }


# --------------------------------------------------------------------------------------------------
# Crossing into and out of float64 torch
# --------------------------------------------------------------------------------------------------


def _t(x):
    torch, _ = _modules()
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def _ids(x):
    torch, _ = _modules()
    return torch.as_tensor(np.asarray(x, dtype=np.int64))


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64, copy=True)


def _key_padding(keep):
    """(B, L) keep -> (B, 1, L): one row shared by every query (padding hides keys only)."""
    torch, _ = _modules()
    return None if keep is None else torch.as_tensor(np.asarray(keep, dtype=bool)).unsqueeze(1)


def _loaded(module, weights: dict):
    """``module`` in float64 with the canonical ``weights`` loaded, in evaluation mode."""
    _, ref = _modules()
    module = module.double()
    ref.load_canonical(module, weights)
    return module.eval()


def _layer_class(stack: str, variant: str | None):
    _, ref = _modules()
    spec = _variants().get(variant) if variant else None
    name = spec and (spec.decoder_layer if stack == "decoder" else spec.encoder_layer)
    if name:
        found = _layer_classes()[name]
        return found[stack] if isinstance(found, dict) else found
    return ref.DecoderLayer if stack == "decoder" else ref.EncoderLayer


def _quiet(fn):
    """Run ``fn`` without gradients and on one torch thread (restored afterwards): the oracle's tensors
    are small, and on a busy machine a second intra-op thread makes each tiny op wait milliseconds."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        torch, _ = _modules()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)

    return wrapper


# --------------------------------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------------------------------


@_quiet
def multi_head_attention(query, key, value, weights: dict, h: int, keep=None, *, variant: str | None = None):
    """§3.2.2: query (B, Lq, d), key and value (B, Lk, d), keep (B, Lq, Lk) -> (out, weights (B, h, Lq, Lk))."""
    torch, ref = _modules()
    if variant == "no output projection W_O":
        d = np.shape(weights["W_Q"])[0]
        weights = {**weights, "W_O": np.eye(d)} | ({"b_O": np.zeros(d)} if "b_O" in weights else {})
        variant = None
    d_model = np.shape(weights["W_Q"])[0]
    mha = _loaded(ref.MultiHeadAttention(d_model, h, "b_Q" in weights, _formulas(variant, h=h)), weights)
    keep_t = None if keep is None else torch.as_tensor(np.asarray(keep, dtype=bool))
    with torch.no_grad():
        out = mha(_t(query), _t(key), _t(value), keep_t)
    return _np(out), _np(mha.last_weights)


@_quiet
def feed_forward(x, weights: dict, *, variant: str | None = None) -> np.ndarray:
    """§3.3: x (B, L, d_model) -> (B, L, d_model)."""
    torch, ref = _modules()
    d_model, d_ff = np.shape(weights["W1"])
    ffn = _loaded(ref.FeedForward(d_model, d_ff, _formulas(variant)), weights)
    with torch.no_grad():
        return _np(ffn(_t(x)))


def _layer(stack: str, weights: dict, h: int, eps: float, variant: str | None):
    d_model, d_ff = np.shape(weights["ffn.W1"])
    cls = _layer_class(stack, variant)
    return _loaded(cls(d_model, h, d_ff, eps, 0.0, "self_attn.b_Q" in weights, _formulas(variant, h=h)), weights)


@_quiet
def encoder_layer(x, weights: dict, h: int, eps: float, src_keep, *, variant: str | None = None) -> np.ndarray:
    """§3.1: x (B, S, d_model), src_keep (B, S) -> (B, S, d_model)."""
    torch, _ = _modules()
    layer = _layer("encoder", weights, h, eps, variant)
    with torch.no_grad():
        return _np(layer(_t(x), _key_padding(src_keep)))


@_quiet
def decoder_layer(y, memory, weights: dict, h: int, eps: float, tgt_keep, src_keep, *,
                  variant: str | None = None) -> np.ndarray:
    """§3.1: y (B, T, d_model), memory (B, S, d_model), tgt_keep (B, T), src_keep (B, S) -> (B, T, d_model)."""
    torch, _ = _modules()
    layer = _layer("decoder", weights, h, eps, variant)
    with torch.no_grad():
        out = layer(_t(y), _t(memory), _key_padding(tgt_keep), _key_padding(src_keep))
    return _np(out)


@_quiet
def encoder_sublayers(x, weights: dict, h: int, eps: float, src_keep) -> dict[str, np.ndarray]:
    """Each sublayer's output on the way through one encoder layer, plus the inputs it received:
    ``self_attn`` (MHA output), ``norm1`` (after Add & Norm), ``ffn``, ``out`` (after the second norm)."""
    torch, _ = _modules()
    layer, keep = _layer("encoder", weights, h, eps, None), _key_padding(src_keep)
    with torch.no_grad():
        x = _t(x)
        attn = layer.self_attn(x, x, x, keep)
        h1 = layer.norm1(x + attn)
        ffn = layer.ffn(h1)
        out = layer.norm2(h1 + ffn)
    return {"self_attn": _np(attn), "norm1": _np(h1), "ffn": _np(ffn), "out": _np(out)}


@_quiet
def decoder_sublayers(y, memory, weights: dict, h: int, eps: float, tgt_keep, src_keep) -> dict[str, np.ndarray]:
    """As ``encoder_sublayers`` for a decoder layer: ``self_attn``, ``norm1``, ``cross_attn``, ``norm2``,
    ``ffn``, ``out``; ``self_keep`` is the (B, T, T) mask the self-attention used (causal and padding)."""
    torch, _ = _modules()
    layer = _layer("decoder", weights, h, eps, None)
    with torch.no_grad():
        y, memory = _t(y), _t(memory)
        self_keep = causal_keep(y.shape[1], tgt_keep)
        attn = layer.self_attn(y, y, y, torch.as_tensor(self_keep))
        h1 = layer.norm1(y + attn)
        cross = layer.cross_attn(h1, memory, memory, _key_padding(src_keep))
        h2 = layer.norm2(h1 + cross)
        ffn = layer.ffn(h2)
        out = layer.norm3(h2 + ffn)
    named = {"self_attn": attn, "norm1": h1, "cross_attn": cross, "norm2": h2, "ffn": ffn, "out": out}
    return {**{k: _np(v) for k, v in named.items()}, "self_keep": self_keep}


def causal_keep(T: int, tgt_keep=None) -> np.ndarray:
    """§3.2.3: (B or 1, T, T) keep mask of the decoder self-attention: not in the future, not padding."""
    causal = np.tril(np.ones((T, T), dtype=bool))[None]
    return causal if tgt_keep is None else causal & np.asarray(tgt_keep, dtype=bool)[:, None, :]


# --------------------------------------------------------------------------------------------------
# The whole model
# --------------------------------------------------------------------------------------------------


class OracleModel:
    """The reference ``Transformer`` for ``config`` in float64 with ``weights`` loaded (evaluation mode).

    Besides ``encode``, ``decode`` and ``forward`` it exposes the input of every layer
    (``encoder_states``, ``decoder_states``), which is what ``conformance.localize`` feeds to the
    candidate's own layers to find the first one that diverges.
    """

    @_quiet
    def __init__(self, config: ModelConfig, weights: dict, *, variant: str | None = None):
        torch, ref = _modules()
        self.config, self.variant = config, variant
        module = ref.Transformer(config, _formulas(variant, h=config.h), seed=None)
        for stack in ("encoder", "decoder"):
            cls = _layer_class(stack, variant)
            if cls is not (ref.DecoderLayer if stack == "decoder" else ref.EncoderLayer):
                args = (config.d_model, config.h, config.d_ff, config.eps, config.dropout, config.attention_bias)
                setattr(module, stack, torch.nn.ModuleList(cls(*args, module.formulas) for _ in range(config.N)))
        self.module = _loaded(module, weights)

    def keep(self, ids) -> np.ndarray:
        """(B, L) ids -> (B, L) bool: True for real tokens."""
        return np.asarray(ids) != self.config.pad_id

    @_quiet
    def encoder_states(self, src) -> list[np.ndarray]:
        """[embedded source, after encoder.0, ..., after encoder.{N-1} = memory]."""
        torch, _ = _modules()
        m = self.module
        keep = m.formulas.padding_mask(_ids(src), self.config.pad_id)
        with torch.no_grad():
            states = [m.embed(_ids(src), m.src_embedding)]
            for layer in m.encoder:
                states.append(layer(states[-1], keep))
        return [_np(s) for s in states]

    @_quiet
    def decoder_states(self, tgt_in, memory, src) -> list[np.ndarray]:
        """[embedded target, after decoder.0, ..., after decoder.{N-1}]; logits = last @ output matrix."""
        torch, _ = _modules()
        m, pad = self.module, self.config.pad_id
        tgt_keep, src_keep = m.formulas.padding_mask(_ids(tgt_in), pad), m.formulas.padding_mask(_ids(src), pad)
        with torch.no_grad():
            states = [m.embed(_ids(tgt_in), m.tgt_embedding)]
            for layer in m.decoder:
                states.append(layer(states[-1], _t(memory), tgt_keep, src_keep))
        return [_np(s) for s in states]

    def logits_from_states(self, y) -> np.ndarray:
        """§3.4: y (B, T, d_model) -> y @ E^T (tied) or y @ W_out."""
        return np.asarray(y, np.float64) @ _np(self.module.output_matrix)

    def _after_stack(self, x: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
        """What a variant does after the last layer of a stack (nothing, in the paper's model)."""
        spec = _variants().get(self.variant) if self.variant else None
        if spec and spec.final_norm:
            x = np_formulas.layer_norm(x, 1.0, 0.0, self.config.eps)
        if spec and spec.zero_padded_memory and keep is not None:
            x = x * keep[..., None]
        return x

    def encode(self, src) -> np.ndarray:
        return self._after_stack(self.encoder_states(src)[-1], self.keep(src))

    def decode(self, tgt_in, memory, src) -> np.ndarray:
        return self.logits_from_states(self._after_stack(self.decoder_states(tgt_in, memory, src)[-1]))

    def forward(self, src, tgt_in) -> np.ndarray:
        return self.decode(tgt_in, self.encode(src), src)

    @_quiet
    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        """The lesson's loop (the reference's ``greedy_decode``): ids after <s>, padding after </s>."""
        _, ref = _modules()
        return ref.greedy_decode(self.module, _ids(src), int(max_len)).numpy()


def variants_for(part: str) -> tuple[str, ...]:
    return VARIANTS_BY_PART[part]
