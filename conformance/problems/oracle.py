"""The float64 oracle for composites: the reference modules, run in ``torch.float64``, numpy in and out.

The formulas of ``conformance.paper.formulas`` cover one operation each; a layer or a whole model is better
checked against the reference implementation (``implementations/reference/model.py``), which is
itself checked against ``torch.nn.Transformer`` (``tests/test_reference_vs_torch_nn.py``). Here its
modules are built in float64, the canonical weights loaded (``load_canonical``), evaluation mode,
no gradients, so the only error left in a comparison is the candidate's own.

Inputs are batch-first and masks are boolean *keep* masks, the suite's conventions. torch is imported
lazily, so ``import conformance`` works without it; only the checks that need the oracle need torch.
The known wrong versions of the model are the catalogue's mutants (``implementations/mutants/``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from conformance.config import ModelConfig
from conformance.paper import formulas as np_formulas


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


@functools.cache
def _formulas():
    """The reference formulas with an exact float64 positional encoding."""
    torch, ref = _modules()

    def positional_encoding(n: int, d_model: int):
        return torch.from_numpy(np_formulas.positional_encoding(n, d_model))  # float64, exact

    return dataclasses.replace(ref.REFERENCE, positional_encoding=positional_encoding)


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
def multi_head_attention(query, key, value, weights: dict, h: int, keep=None):
    """§3.2.2: query (B, Lq, d), key and value (B, Lk, d), keep (B, Lq, Lk) -> (out, weights (B, h, Lq, Lk))."""
    torch, ref = _modules()
    d_model = np.shape(weights["W_Q"])[0]
    mha = _loaded(ref.MultiHeadAttention(d_model, h, "b_Q" in weights, _formulas()), weights)
    keep_t = None if keep is None else torch.as_tensor(np.asarray(keep, dtype=bool))
    with torch.no_grad():
        out = mha(_t(query), _t(key), _t(value), keep_t)
    return _np(out), _np(mha.last_weights)


@_quiet
def feed_forward(x, weights: dict) -> np.ndarray:
    """§3.3: x (B, L, d_model) -> (B, L, d_model)."""
    torch, ref = _modules()
    d_model, d_ff = np.shape(weights["W1"])
    ffn = _loaded(ref.FeedForward(d_model, d_ff, _formulas()), weights)
    with torch.no_grad():
        return _np(ffn(_t(x)))


def _post_norm(x, fn, weights: dict, eps: float):
    """§3.1 as the reference writes it: LayerNorm(x + Sublayer(x)) with the norm's gamma and beta."""
    torch, ref = _modules()
    norm = _loaded(ref.LayerNorm(np.shape(weights["norm.gamma"])[0], eps, _formulas()),
                   {"gamma": weights["norm.gamma"], "beta": weights["norm.beta"]})
    return _formulas().sublayer(_t(x), fn, norm, torch.nn.Identity())


@_quiet
def attention_sublayer(x, memory, weights: dict, h: int, eps: float, keep=None) -> np.ndarray:
    """LayerNorm(x + MultiHead(x, kv, kv)), kv = memory or x: x (B, Lq, d), keep (B, Lq, Lk) -> (B, Lq, d);
    weights W_Q.. (b_Q..), norm.gamma, norm.beta."""
    torch, ref = _modules()
    attention = {name: value for name, value in weights.items() if not name.startswith("norm.")}
    mha = _loaded(ref.MultiHeadAttention(np.shape(weights["W_Q"])[0], h, "b_Q" in weights, _formulas()), attention)
    kv = None if memory is None else _t(memory)
    keep_t = None if keep is None else torch.as_tensor(np.asarray(keep, dtype=bool))
    return _np(_post_norm(x, lambda q: mha(q, q if kv is None else kv, q if kv is None else kv, keep_t), weights, eps))


@_quiet
def ffn_sublayer(x, weights: dict, eps: float) -> np.ndarray:
    """LayerNorm(x + FFN(x)): x (B, L, d) -> (B, L, d)."""
    _, ref = _modules()
    d_model, d_ff = np.shape(weights["W1"])
    ffn = _loaded(ref.FeedForward(d_model, d_ff, _formulas()), {k: weights[k] for k in ("W1", "b1", "W2", "b2")})
    return _np(_post_norm(x, ffn, weights, eps))


def _layer(stack: str, weights: dict, h: int, eps: float):
    _, ref = _modules()
    d_model, d_ff = np.shape(weights["ffn.W1"])
    cls = ref.DecoderLayer if stack == "decoder" else ref.EncoderLayer
    return _loaded(cls(d_model, h, d_ff, eps, 0.0, "self_attn.b_Q" in weights, _formulas()), weights)


@_quiet
def encoder_layer(x, weights: dict, h: int, eps: float, src_keep) -> np.ndarray:
    """§3.1: x (B, S, d_model), src_keep (B, S) -> (B, S, d_model)."""
    torch, _ = _modules()
    layer = _layer("encoder", weights, h, eps)
    with torch.no_grad():
        return _np(layer(_t(x), _key_padding(src_keep)))


@_quiet
def decoder_layer(y, memory, weights: dict, h: int, eps: float, tgt_keep, src_keep) -> np.ndarray:
    """§3.1: y (B, T, d_model), memory (B, S, d_model), tgt_keep (B, T), src_keep (B, S) -> (B, T, d_model)."""
    torch, _ = _modules()
    layer = _layer("decoder", weights, h, eps)
    with torch.no_grad():
        out = layer(_t(y), _t(memory), _key_padding(tgt_keep), _key_padding(src_keep))
    return _np(out)


@_quiet
def encoder_sublayers(x, weights: dict, h: int, eps: float, src_keep) -> dict[str, np.ndarray]:
    """Each sublayer's output on the way through one encoder layer, plus the inputs it received:
    ``self_attn`` (MHA output), ``norm1`` (after Add & Norm), ``ffn``, ``out`` (after the second norm)."""
    torch, _ = _modules()
    layer, keep = _layer("encoder", weights, h, eps), _key_padding(src_keep)
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
    layer = _layer("decoder", weights, h, eps)
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


@_quiet
def initial_weights(config: ModelConfig, seed: int) -> dict[str, np.ndarray]:
    """The reference's initialisation for ``(config, seed)`` under the canonical names, float32: the weights the
    training run starts a candidate from (the paper specifies no initialisation; ``init_parameters``)."""
    _, ref = _modules()
    module = ref.Transformer(config, seed=seed)
    return {name: p.detach().numpy().copy() for name, p in ref.canonical_state(module).items()}


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
    def __init__(self, config: ModelConfig, weights: dict):
        _, ref = _modules()
        self.config = config
        self.module = _loaded(ref.Transformer(config, _formulas(), seed=None), weights)

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

    def encode(self, src) -> np.ndarray:
        return self.encoder_states(src)[-1]

    def decode(self, tgt_in, memory, src) -> np.ndarray:
        return self.logits_from_states(self.decoder_states(tgt_in, memory, src)[-1])

    def forward(self, src, tgt_in) -> np.ndarray:
        return self.decode(tgt_in, self.encode(src), src)

    @_quiet
    def greedy_decode(self, src, max_len: int) -> np.ndarray:
        """The lesson's loop (the reference's ``greedy_decode``): ids after <s>, padding after </s>."""
        _, ref = _modules()
        return ref.greedy_decode(self.module, _ids(src), int(max_len)).numpy()
