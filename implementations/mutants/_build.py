"""Building blocks for the catalogue's torch mutants: the reference with one bug, wherever that bug shows.

``with_formulas`` swaps formulas (``dataclasses.replace(REFERENCE, ...)``); ``attention`` is the attention
formula with the fill of hidden scores as a knob; ``LayerSwap`` swaps the encoder or decoder layer class,
in the layer parts and inside the models it builds; ``ModelSwap`` swaps the model class. The component
mutants (a formula of one part) are NumPy mutants instead: ``implementations/numpy_impl/adapter.py``
writes each formula as one method. The leading underscore keeps this module out of ``mutants.names()``.

What certifying each mutant gives is declared apart, in ``expected.toml`` (``mutants.expected()``).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor, nn

from conformance.config import ModelConfig
from conformance.implementations.reference.adapter import (
    ReferenceAdapter,
    ReferenceModel,
    _floats,
    _key_padding,
    _numpy,
)
from conformance.implementations.reference.model import REFERENCE, DecoderLayer, EncoderLayer, init_parameters


def greedy_loop(model, src, max_len, *, feed_back: bool = True, position: int = -1, stop=torch.all) -> Tensor:
    """The reference's greedy decoding with one of its choices made another way: the decoder reads what it
    emitted (``feed_back``), the next token is the argmax at ``position``, decoding stops when ``stop`` of
    the rows have emitted </s>. A greedy mutant names the one it changes."""
    cfg = model.config
    memory = model.encode(src)
    start = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long)
    ys, finished = start, torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        next_id = model.decode(ys if feed_back else start, memory, src)[:, position].argmax(-1)
        next_id = torch.where(finished, cfg.pad_id, next_id)
        ys = torch.cat([ys, next_id.unsqueeze(1)], dim=1)
        finished |= next_id == cfg.eos_id
        if bool(stop(finished)):
            break
    return ys[:, 1:]


def with_formulas(name: str, **changes) -> ReferenceAdapter:
    return ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, **changes), name=f"mutant:{name}")


# §3.2.1 with the fill of the hidden scores as a knob; the default is the reference's -inf.
def attention(q: Tensor, k: Tensor, v: Tensor, keep: Tensor | None, *, fill: float = float("-inf")):
    """softmax(Q K^T / sqrt(d_k)) V with the hidden scores set to ``fill`` before the softmax -> (out, weights).
    A row with no visible key gets weights 0 (with -inf), as in the reference."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Lq, Lk)
    if keep is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        weights = torch.nan_to_num(torch.softmax(scores.masked_fill(~keep, fill), dim=-1), nan=0.0)
    return weights @ v, weights


def low(x: Tensor) -> Tensor:
    """``x`` in the dtype a mixed-precision model computes in: autocast's while autocast is on (the half-precision
    mutants' step down from float32), ``x``'s own otherwise."""
    return x.to(torch.get_autocast_dtype("cpu")) if torch.is_autocast_enabled("cpu") else x


class LayerSwap(ReferenceAdapter):
    """The reference with ``encoder_cls`` / ``decoder_cls`` in place of its layers."""

    encoder_cls: type = EncoderLayer
    decoder_cls: type = DecoderLayer

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        layer = self._layer(self.encoder_cls, weights, h, eps)
        return _numpy(layer(_floats(x), _key_padding(src_mask)))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        layer = self._layer(self.decoder_cls, weights, h, eps)
        return _numpy(layer(_floats(y), _floats(memory), _key_padding(tgt_mask), _key_padding(src_mask)))

    def build_model(self, config: dict, seed: int) -> ReferenceModel:
        model = super().build_model(config, seed)
        cfg, module = model.config, model.module
        args = (cfg.d_model, cfg.h, cfg.d_ff, cfg.eps, cfg.dropout, cfg.attention_bias, self.formulas)
        module.encoder = nn.ModuleList(self.encoder_cls(*args) for _ in range(cfg.N))
        module.decoder = nn.ModuleList(self.decoder_cls(*args) for _ in range(cfg.N))
        init_parameters(module, seed)
        return model


class InsideModules(ReferenceAdapter):
    """The reference whose model has one formula of every ``module_class`` module replaced by ``swap(module, rate)``
    (``rate``: the configured dropout): a bug inside those modules that acts only while they train (it reads the
    module's ``training`` flag), such as a dropout §5.4 does not put there."""

    def __init__(self, name: str, module_class: type, formula: str, swap):
        super().__init__(name=f"mutant:{name}")
        self.module_class, self.formula, self.swap = module_class, formula, swap

    def build_model(self, config: dict, seed: int) -> ReferenceModel:
        model = super().build_model(config, seed)
        for module in model.module.modules():
            if isinstance(module, self.module_class):
                swapped = {self.formula: self.swap(module, model.config.dropout)}
                module.formulas = dataclasses.replace(module.formulas, **swapped)
        return model


class ModelSwap(ReferenceAdapter):
    """The reference whose ``build_model`` returns ``model_class`` (a ReferenceModel subclass)."""

    def build_model(self, config: dict, seed: int) -> ReferenceModel:
        return self.model_class(ModelConfig.from_dict(config), int(seed), self.formulas)


def causal_keep(T: int, tgt_keep):
    causal = REFERENCE.causal_mask(T)
    return causal & tgt_keep if tgt_keep is not None else causal.unsqueeze(0)
