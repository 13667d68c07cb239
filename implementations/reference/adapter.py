"""The adapter of the reference implementation: every part of ``conformance.adapter.Adapter``.

Numpy in, numpy out, float32, batch first, boolean keep masks. Each part runs the reference modules of
``model.py`` with the formulas the adapter was built with, so a mutant is
``ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, layer_norm=wrong))``.
Load it as ``conformance.implementations.reference.adapter:adapter``.

``ReferenceAdapter(dtype="float64")`` runs the same modules in torch.float64 and declares it, so the
suite holds it to the float64 tolerances (built-in ``reference-float64``, ``adapter_float64`` here).
In half precision (``--dtype``, ``with_dtype``): float16 natively (weights and activations in float16; training
is not implemented: float16 training needs loss scaling), bfloat16 through ``torch.autocast`` (float32 weights,
the matmuls in bfloat16; training too). The formulas keep what half precision cannot: LayerNorm's statistics and
the loss in float32 at least, the positional table in float64, the scale on the queries before the matmul.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import torch
from torch import Tensor

from conformance.adapter import Conventions
from conformance.adapters.torch import TorchModel, autocast, floats, ids, mask, numpy
from conformance.config import ModelConfig
from conformance.implementations.reference.model import (
    REFERENCE,
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Formulas,
    MultiHeadAttention,
    Transformer,
    canonical_state,
    load_canonical,
)
from conformance.implementations.reference.training import Trainer

# --------------------------------------------------------------------------------------------------
# Crossing the boundary (conformance.adapters.torch; the private names stay for the mutants)
# --------------------------------------------------------------------------------------------------


# The torch dtype of the weights for each dtype the adapter computes in, and the autocast dtype where it has one.
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.float32}
AUTOCAST = {"bfloat16": torch.bfloat16}
HALF = {"float16": "native", "bfloat16": "autocast"}
_floats, _ids, _keep, _numpy = floats, ids, mask, numpy


def _key_padding(mask) -> Tensor | None:
    """(B, L) keep -> (B, 1, L): one row shared by every query."""
    keep = _keep(mask)
    return None if keep is None else keep.unsqueeze(1)


def _with_weights(module: torch.nn.Module, weights: dict, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """A freshly built component in ``dtype``, its canonical weights loaded, in evaluation mode."""
    module = module.to(dtype)
    load_canonical(module, weights)
    return module.eval()


def _attention_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------

# The modules' parameter paths are the canonical names, and their attention modules the reported sublayers.
NAMES = {"E": "E", "E_src": "E_src", "E_tgt": "E_tgt", "W_out": "W_out", "*.{l}.*.*": "*.{l}.*.*"}
ATTENTION = {"*.{l}.*_attn": "*.{l}.*_attn"}


def _no_float16_training(module, seed: int):
    raise NotImplementedError("the reference trains in float32, float64 or bfloat16 (autocast); float16 training"
                              " needs loss scaling, which the paper's recipe does not have")


def _in_precision(method):
    """A part run under the adapter's autocast, if it has one (bfloat16)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with autocast(self.autocast):
            return method(self, *args, **kwargs)
    return run


class ReferenceModel(TorchModel):
    """A ``conformance.adapter.Model``: the reference ``Transformer`` behind a numpy boundary, trained by its
    own ``Trainer``, decoding greedily with its formulas' loop (a mutant may swap either)."""

    def __init__(
        self, config: ModelConfig, seed: int, formulas: Formulas = REFERENCE, dtype: torch.dtype = torch.float32,
        autocast: torch.dtype | None = None,
    ):
        # Initialised in float32 whatever the dtype, so that a seed gives the same weights in both.
        trainer = Trainer if dtype != torch.float16 else _no_float16_training
        super().__init__(Transformer(config, formulas, seed=seed).to(dtype), config, names=NAMES,
                         forward=lambda module, src, tgt_in: module(src, tgt_in), attention=ATTENTION,
                         trainer=lambda module: trainer(module, seed=seed), dtype=dtype, seed=seed, autocast=autocast)

    def unmapped_parameters(self) -> dict[str, int]:
        """Every parameter of the reference has a canonical name (its module path is the name)."""
        names = set(canonical_state(self.module))
        return {name: p.numel() for name, p in self.module.named_parameters() if name not in names}

    @torch.no_grad()
    def greedy_decode(self, src: np.ndarray, max_len: int) -> np.ndarray:
        module = self.module.eval()
        ids = module.formulas.greedy_decode(module, _ids(src), int(max_len))
        return ids.cpu().numpy().astype(np.int64)


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


class ReferenceAdapter:
    """Every part of the protocol, computed by the reference formulas (or a mutant's)."""

    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch", dtypes=HALF)
    model_class = ReferenceModel  # what build_model returns: the suite reads the model parts off it
    autocast: torch.dtype | None = None

    def __init__(self, formulas: Formulas = REFERENCE, name: str = "reference", dtype: str = "float32"):
        self.formulas, self.name = formulas, name
        self._set_dtype(dtype)

    def _set_dtype(self, dtype: str) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
        self.dtype, self.torch_dtype, self.autocast = dtype, DTYPES[dtype], AUTOCAST.get(dtype)
        if dtype != "float32":  # the class attribute declares the default
            self.conventions = Conventions(mask="keep", batch_first=True, dtype=dtype, framework="torch")

    def with_dtype(self, dtype: str) -> ReferenceAdapter:
        """This adapter (a mutant's too) computing in ``dtype``."""
        switched = copy.copy(self)
        switched._set_dtype(dtype)
        return switched

    def __repr__(self) -> str:
        dtype = "" if self.dtype == "float32" else f", dtype={self.dtype!r}"
        return f"ReferenceAdapter(name={self.name!r}{dtype})"

    def _floats(self, x) -> Tensor:
        return _floats(x, self.torch_dtype)

    def _numpy(self, t: Tensor) -> np.ndarray:
        return _numpy(t, self.torch_dtype)

    # §3.5
    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return self._numpy(self.formulas.positional_encoding(int(n), int(d_model)))

    # §3.1
    @torch.no_grad()
    @_in_precision
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        f = self._floats
        return self._numpy(self.formulas.layer_norm(f(x), f(gamma), f(beta), float(eps)))

    # §3.2.1
    @torch.no_grad()
    @_in_precision
    def scaled_dot_product_attention(self, q, k, v, mask) -> tuple[np.ndarray, np.ndarray]:
        f = self._floats
        out, weights = self.formulas.attention(f(q), f(k), f(v), _keep(mask))
        return self._numpy(out), self._numpy(weights)

    # §3.2.2
    @torch.no_grad()
    @_in_precision
    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask) -> tuple[np.ndarray, np.ndarray]:
        d_model, f = np.shape(weights["W_Q"])[0], self._floats
        mha = MultiHeadAttention(d_model, int(h), _attention_bias(weights), self.formulas)
        out = _with_weights(mha, weights, self.torch_dtype)(f(query), f(key), f(value), _keep(mask))
        return self._numpy(out), self._numpy(mha.last_weights)

    # §3.3
    @torch.no_grad()
    @_in_precision
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        d_model, d_ff = np.shape(weights["W1"])
        ffn = _with_weights(FeedForward(d_model, d_ff, self.formulas), weights, self.torch_dtype)
        return self._numpy(ffn(self._floats(x)))

    def _layer(self, cls, weights: dict, h: int, eps: float):
        d_model, d_ff = np.shape(weights["ffn.W1"])
        bias = _attention_bias(weights, "self_attn.")
        layer = cls(d_model, int(h), d_ff, float(eps), 0.0, bias, self.formulas)
        return _with_weights(layer, weights, self.torch_dtype)

    # §3.1, encoder
    @torch.no_grad()
    @_in_precision
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        layer = self._layer(EncoderLayer, weights, h, eps)
        return self._numpy(layer(self._floats(x), _key_padding(src_mask)))

    # §3.1, decoder; the layer adds the causal mask itself
    @torch.no_grad()
    @_in_precision
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        layer = self._layer(DecoderLayer, weights, h, eps)
        f = self._floats
        return self._numpy(layer(f(y), f(memory), _key_padding(tgt_mask), _key_padding(src_mask)))

    def build_model(self, config: dict, seed: int) -> ReferenceModel:
        return ReferenceModel(ModelConfig.from_dict(config), int(seed), self.formulas, self.torch_dtype, self.autocast)

    # §5.3
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(self.formulas.learning_rate(int(step), int(d_model), int(warmup)))

    # §5.4
    @torch.no_grad()
    @_in_precision
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = self.formulas.smoothed_loss(self._floats(logits), _ids(targets), float(epsilon), int(pad_id))
        return float(loss.item())

    def parameter_count(self, config: dict) -> int:
        """Counted on a model built on the meta device: shapes only, no memory, no initialisation."""
        with torch.device("meta"):
            model = Transformer(ModelConfig.from_dict(config), self.formulas, seed=None)
        return sum(p.numel() for p in model.parameters())


adapter = ReferenceAdapter()
adapter_float64 = ReferenceAdapter(name="reference-float64", dtype="float64")
