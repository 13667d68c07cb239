"""The adapter of the reference implementation: every part of ``conformance.adapter.Adapter``.

Numpy in, numpy out, float32, batch first, boolean keep masks. Each part runs the reference modules of
``model.py`` with the formulas the adapter was built with, so a mutant is
``ReferenceAdapter(formulas=dataclasses.replace(REFERENCE, layer_norm=wrong))``.
Load it as ``conformance.implementations.reference.adapter:adapter``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from conformance.adapter import Conventions
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
# Crossing the boundary
# --------------------------------------------------------------------------------------------------


def _floats(x) -> Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float32))


def _ids(x) -> Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.int64))


def _keep(mask) -> Tensor | None:
    return None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))


def _key_padding(mask) -> Tensor | None:
    """(B, L) keep -> (B, 1, L): one row shared by every query."""
    keep = _keep(mask)
    return None if keep is None else keep.unsqueeze(1)


def _numpy(t: Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float32, copy=True)


def _with_weights(module: torch.nn.Module, weights: dict) -> torch.nn.Module:
    """A freshly built component, its canonical weights loaded, in evaluation mode."""
    load_canonical(module, weights)
    return module.eval()


def _attention_bias(weights: dict, prefix: str = "") -> bool:
    return f"{prefix}b_Q" in weights


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


class ReferenceModel:
    """A ``conformance.adapter.Model``: the reference ``Transformer`` behind a numpy boundary."""

    def __init__(self, config: ModelConfig, seed: int, formulas: Formulas = REFERENCE):
        self.config, self.seed = config, seed
        self.module = Transformer(config, formulas, seed=seed)
        self._trainer: Trainer | None = None  # built at the first train_step

    def load_weights(self, weights: dict[str, np.ndarray]) -> None:
        load_canonical(self.module, weights)

    def dump_weights(self) -> dict[str, np.ndarray]:
        return {name: _numpy(p) for name, p in canonical_state(self.module).items()}

    @torch.no_grad()
    def forward(self, src: np.ndarray, tgt_in: np.ndarray) -> np.ndarray:
        return _numpy(self.module.eval()(_ids(src), _ids(tgt_in)))

    @torch.no_grad()
    def encode(self, src: np.ndarray) -> np.ndarray:
        return _numpy(self.module.eval().encode(_ids(src)))

    @torch.no_grad()
    def decode(self, tgt_in: np.ndarray, memory: np.ndarray, src: np.ndarray) -> np.ndarray:
        return _numpy(self.module.eval().decode(_ids(tgt_in), _floats(memory), _ids(src)))

    @torch.no_grad()
    def greedy_decode(self, src: np.ndarray, max_len: int) -> np.ndarray:
        module = self.module.eval()
        ids = module.formulas.greedy_decode(module, _ids(src), int(max_len))
        return ids.cpu().numpy().astype(np.int64)

    def train_step(self, src: np.ndarray, tgt_in: np.ndarray, tgt_out: np.ndarray) -> dict:
        if self._trainer is None:
            self._trainer = Trainer(self.module, seed=self.seed)
        return self._trainer.train_step(_ids(src), _ids(tgt_in), _ids(tgt_out))

    # Beyond the protocol: what the explorer and learned-behaviour checks read.
    def attention_weights(self) -> dict[str, np.ndarray]:
        """The (B, h, Lq, Lk) weights of the last forward/decode call, by module path
        (``decoder.{N-1}.cross_attn`` is the last decoder layer's cross-attention)."""
        return {name: _numpy(w) for name, w in self.module.attention_weights().items()}


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------


class ReferenceAdapter:
    """Every part of the protocol, computed by the reference formulas (or a mutant's)."""

    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")
    model_class = ReferenceModel  # what build_model returns: the suite reads the model parts off it

    def __init__(self, formulas: Formulas = REFERENCE, name: str = "reference"):
        self.formulas, self.name = formulas, name

    def __repr__(self) -> str:
        return f"ReferenceAdapter(name={self.name!r})"

    # §3.5
    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        return _numpy(self.formulas.positional_encoding(int(n), int(d_model)))

    # §3.1
    @torch.no_grad()
    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        return _numpy(self.formulas.layer_norm(_floats(x), _floats(gamma), _floats(beta), float(eps)))

    # §3.2.1
    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, mask) -> tuple[np.ndarray, np.ndarray]:
        out, weights = self.formulas.attention(_floats(q), _floats(k), _floats(v), _keep(mask))
        return _numpy(out), _numpy(weights)

    # §3.2.2
    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask) -> tuple[np.ndarray, np.ndarray]:
        d_model = np.shape(weights["W_Q"])[0]
        mha = MultiHeadAttention(d_model, int(h), _attention_bias(weights), self.formulas)
        out = _with_weights(mha, weights)(_floats(query), _floats(key), _floats(value), _keep(mask))
        return _numpy(out), _numpy(mha.last_weights)

    # §3.3
    @torch.no_grad()
    def feed_forward(self, x, weights: dict) -> np.ndarray:
        d_model, d_ff = np.shape(weights["W1"])
        ffn = _with_weights(FeedForward(d_model, d_ff, self.formulas), weights)
        return _numpy(ffn(_floats(x)))

    def _layer(self, cls, weights: dict, h: int, eps: float):
        d_model, d_ff = np.shape(weights["ffn.W1"])
        bias = _attention_bias(weights, "self_attn.")
        return _with_weights(cls(d_model, int(h), d_ff, float(eps), 0.0, bias, self.formulas), weights)

    # §3.1, encoder
    @torch.no_grad()
    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        layer = self._layer(EncoderLayer, weights, h, eps)
        return _numpy(layer(_floats(x), _key_padding(src_mask)))

    # §3.1, decoder; the layer adds the causal mask itself
    @torch.no_grad()
    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        layer = self._layer(DecoderLayer, weights, h, eps)
        return _numpy(layer(_floats(y), _floats(memory), _key_padding(tgt_mask), _key_padding(src_mask)))

    def build_model(self, config: dict, seed: int) -> ReferenceModel:
        return ReferenceModel(ModelConfig.from_dict(config), int(seed), self.formulas)

    # §5.3
    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        return float(self.formulas.learning_rate(int(step), int(d_model), int(warmup)))

    # §5.4
    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        loss = self.formulas.smoothed_loss(_floats(logits), _ids(targets), float(epsilon), int(pad_id))
        return float(loss.item())

    def parameter_count(self, config: dict) -> int:
        """Counted on a model built on the meta device: shapes only, no memory, no initialisation."""
        with torch.device("meta"):
            model = Transformer(ModelConfig.from_dict(config), self.formulas, seed=None)
        return sum(p.numel() for p in model.parameters())


adapter = ReferenceAdapter()
