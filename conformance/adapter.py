"""The adapter protocol: how the suite talks to any implementation of the Transformer.

This module is the contract and holds no logic. An adapter is any object (a class instance or a
module) with a ``conventions`` attribute and some of the methods below. Each method is one
*part* of the paper's model; a method an adapter does not define is reported as **not implemented**
for every check that needs it, never as a failure. See ``docs/adapter-protocol.md`` for the
walk-through and ``implementations/template.py`` for a file to copy.

The boundary is framework-neutral: every value that crosses it, in both directions, is a
``numpy.ndarray`` or a Python scalar (``int``, ``float``, ``bool``, ``str``) or a ``dict`` of those.
Adapters convert to and from their framework, except JAX's: an adapter that declares
``Conventions(arrays="jax")`` receives and returns ``jax.Array``s, converted by the boundary.
Shapes below are written batch-first; an adapter that
declares ``batch_first=False`` receives and returns activations and token ids as ``(seq, batch, ...)``.
Masks are batch-first always, in the polarity the adapter declares (``Conventions.mask``).

Weights follow the canonical naming of ``conformance.weights`` (orientation ``x @ W``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

import numpy as np

MaskKind = Literal["keep", "blocked", "additive"]


@dataclass(frozen=True)
class Conventions:
    """What an adapter declares about its inputs, so that the suite converts instead of guessing.

    mask: what the masks it receives mean. ``"keep"``: boolean, True = may attend (the lesson's
    ``src != PAD``). ``"blocked"``: boolean, True = may not attend (``torch.nn`` key_padding_mask and
    boolean attn_mask). ``"additive"``: float, 0 where allowed and ``-inf`` where blocked (the
    ``M`` of the "Vanilla Transformer" formula).
    batch_first: False when activations and token ids are ``(seq, batch, ...)`` (``torch.nn`` default).
    dtype: the floating dtype the implementation computes in, ``"float32"`` or ``"float64"`` (``"float16"`` or
    ``"bfloat16"`` for an adapter built for half precision); the suite picks tolerances from it.
    dtypes: the half-precision dtypes it can also compute in, and how: ``{"float16": "native", "bfloat16":
    "autocast"}`` (``"native"``: weights and activations in that dtype; ``"autocast"``: float32 weights, the matmuls
    in that dtype). A run with ``--dtype float16`` asks the adapter for ``with_dtype("float16")`` (an adapter whose
    ``conventions.dtype`` is that dtype); an adapter that does not declare it is *not implemented* in that run.
    float16 values cross as ``numpy.float16``; bfloat16 values, which NumPy lacks, as float32 arrays holding
    bfloat16 values (cast them exactly); results may come back in any floating dtype.
    framework: a free-text name shown in reports (``"torch"``, ``"numpy"``, ``"jax"``).
    supports: the configurations the implementation can build, when it cannot build them all: feature ->
    the values it supports (``conformance.problems.supports.FEATURES``; ``max_len``: the most positions, one
    integer), e.g.
    ``{"attention_bias": (True,), "eps": (1e-6,), "d_ff_ratio": (4,), "max_len": 100}``. The suite draws its
    examples within them, and never asks for another value (that would be *not implemented*); each feature binds
    the parts that build with it (``supports.BINDS``: the layers' eps, not the layer_norm function's argument).
    Empty: every configuration.
    reasons: why, per feature, in the adapter's own words (shown in the report), e.g.
    ``{"attention_bias": "projections always carry biases"}``.
    ties_embeddings: False when the implementation keeps separate source, target and output tables and its
    ``load_weights`` copies the shared E into each: it may serve the paper's shared configuration, but the
    report then says "tying not verified" (the parameter count decides).
    arrays: the array type the parts receive and may return: ``"numpy"``, or ``"jax"`` (``jax.Array``s in, in the
    declared dtype, ``float64`` switching on ``jax_enable_x64``; ``jax.Array``s back; token ids int32 unless
    64-bit mode is on). ``conformance.boundary.isolation.frameworks`` converts, in process and in a worker.
    """

    mask: MaskKind = "keep"
    batch_first: bool = True
    dtype: Literal["float32", "float64", "float16", "bfloat16"] = "float32"
    dtypes: dict[str, str] = field(default_factory=dict)
    framework: str = "unknown"
    supports: dict[str, tuple | int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    ties_embeddings: bool = True
    arrays: Literal["numpy", "jax"] = "numpy"

    def as_dict(self) -> dict:
        return asdict(self)


class Model(Protocol):
    """A model built by ``Adapter.build_model``; it lives on the adapter's side of the boundary.

    Token-id arrays are ``int64``; padding is ``config["pad_id"]`` and the model derives its
    padding masks from it. ``forward``, ``encode``, ``decode`` and ``greedy_decode`` run in
    evaluation mode (dropout off); ``train_step`` in training mode.
    """

    def load_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Replace every parameter with the canonical ``weights`` (names of ``conformance.weights``)."""

    def dump_weights(self) -> dict[str, np.ndarray]:
        """Every parameter under its canonical name, orientation ``x @ W``."""

    def forward(self, src: np.ndarray, tgt_in: np.ndarray) -> np.ndarray:
        """src (B, S), tgt_in (B, T) token ids -> logits (B, T, tgt_vocab), before softmax."""

    def encode(self, src: np.ndarray) -> np.ndarray:
        """src (B, S) -> memory (B, S, d_model): embedding x sqrt(d_model) + PE, then N encoder layers."""

    def decode(self, tgt_in: np.ndarray, memory: np.ndarray, src: np.ndarray) -> np.ndarray:
        """tgt_in (B, T), memory (B, S, d_model), src (B, S) for its padding -> logits (B, T, tgt_vocab)."""

    def greedy_decode(self, src: np.ndarray, max_len: int) -> np.ndarray:
        """src (B, S) -> (B, L) generated ids after <s>, L <= max_len, each row ending with </s>
        (then padding) unless it ran out of length."""

    def attention_weights(self, src: np.ndarray, tgt_in: np.ndarray) -> dict[str, np.ndarray]:
        """The attention weights of an evaluation-mode forward pass on (src, tgt_in), by sublayer name:
        ``"encoder.{l}.self_attn"`` (B, h, S, S), ``"decoder.{l}.self_attn"`` (B, h, T, T),
        ``"decoder.{l}.cross_attn"`` (B, h, T, S). Used by the learned-behaviour checks."""

    def unmapped_parameters(self) -> dict[str, int]:
        """Parameters the model has that no canonical name covers (an output bias, a final LayerNorm, a
        LayerNorm on the embeddings, learned positions), by the model's own name -> number of values.
        ``load_weights`` leaves them at their identity values (bias 0, gamma 1, beta 0), never random, so
        that they change nothing the paper's weights decide; the report lists them. Empty for the paper's model."""

    def train_step(self, src: np.ndarray, tgt_in: np.ndarray, tgt_out: np.ndarray) -> dict:
        """One optimisation step with the paper's recipe (config["recipe"]): Adam, lrate schedule,
        dropout, label-smoothed loss ignoring padding. Returns ``{"loss": float, "lr": float}``:
        the loss of this batch before the update and the learning rate this update used."""


class Adapter(Protocol):
    """Every part an adapter may provide. Define the ones your implementation has."""

    conventions: Conventions
    # Optional: the class ``build_model`` returns, so the suite knows which Model parts exist without
    # building one (a class without ``train_step`` makes the training checks not implemented).
    model_class: type

    def with_dtype(self, dtype: str) -> Adapter:
        """Optional: this adapter computing in ``dtype``, one of ``conventions.dtypes`` (its ``conventions.dtype``
        then says so). Asked once, where the adapter lives, by a run with ``--dtype``."""

    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        """§3.5: PE for positions 0..n-1 -> (n, d_model); sine in even columns, cosine in odd."""

    def layer_norm(self, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
        """§3.1 (Ba et al.): normalise over the last axis of x (..., d); gamma, beta (d,) -> (..., d)."""

    def scaled_dot_product_attention(
        self, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """§3.2.1: q (B, Lq, d_k), k (B, Lk, d_k), v (B, Lk, d_v), mask (B, Lq, Lk) or None
        -> (output (B, Lq, d_v), weights (B, Lq, Lk))."""

    def multi_head_attention(
        self,
        query: np.ndarray,
        key: np.ndarray,
        value: np.ndarray,
        weights: dict[str, np.ndarray],
        h: int,
        mask: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """§3.2.2: query (B, Lq, d_model), key and value (B, Lk, d_model), weights W_Q.. (and b_Q.. if
        given), mask (B, Lq, Lk) or None -> (output (B, Lq, d_model), weights (B, h, Lq, Lk))."""

    def feed_forward(self, x: np.ndarray, weights: dict[str, np.ndarray]) -> np.ndarray:
        """§3.3: x (B, L, d_model), weights W1, b1, W2, b2 -> (B, L, d_model)."""

    def encoder_layer(
        self, x: np.ndarray, weights: dict[str, np.ndarray], h: int, eps: float, src_mask: np.ndarray
    ) -> np.ndarray:
        """§3.1: x (B, S, d_model), src_mask (B, S) key padding -> (B, S, d_model). Post-norm."""

    def decoder_layer(
        self,
        y: np.ndarray,
        memory: np.ndarray,
        weights: dict[str, np.ndarray],
        h: int,
        eps: float,
        tgt_mask: np.ndarray,
        src_mask: np.ndarray,
    ) -> np.ndarray:
        """§3.1: y (B, T, d_model), memory (B, S, d_model), tgt_mask (B, T) and src_mask (B, S) key
        padding -> (B, T, d_model). The layer applies the causal mask itself (§3.2.3)."""

    def attention_sublayer(
        self,
        x: np.ndarray,
        memory: np.ndarray | None,
        weights: dict[str, np.ndarray],
        h: int,
        eps: float,
        mask: np.ndarray | None,
    ) -> np.ndarray:
        """§3.1 around §3.2.2, for code whose attention module folds in the residual and the norm:
        x (B, Lq, d_model), memory (B, Lk, d_model) for cross-attention or None for self-attention,
        weights W_Q.. (b_Q.. if given), norm.gamma, norm.beta, mask (B, Lq, Lk) or None
        -> LayerNorm(x + MultiHead(x, kv, kv)) (B, Lq, d_model), kv = memory or x. Optional: only where
        ``multi_head_attention`` is missing do its checks run."""

    def ffn_sublayer(self, x: np.ndarray, weights: dict[str, np.ndarray], eps: float) -> np.ndarray:
        """§3.1 around §3.3: x (B, L, d_model), weights W1, b1, W2, b2, norm.gamma, norm.beta
        -> LayerNorm(x + FFN(x)) (B, L, d_model). Optional: only where ``feed_forward`` is missing do its
        checks run."""

    def build_model(self, config: dict, seed: int) -> Model:
        """A model for ``ModelConfig.as_dict()``, initialised from ``seed``; see ``Model``."""

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        """§5.3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps counted from 1."""

    def label_smoothed_loss(
        self, logits: np.ndarray, targets: np.ndarray, epsilon: float, pad_id: int
    ) -> float:
        """§5.4: logits (N, V), targets (N,) -> mean smoothed cross-entropy over non-padding targets."""

    def parameter_count(self, config: dict) -> int:
        """The number of trainable parameters of the model ``ModelConfig.as_dict()`` describes."""


# Part names, as checks name them in ``@pytest.mark.requires(...)``. Model methods are "model.<name>".
# ``attention_sublayer`` and ``ffn_sublayer`` are the coarser form of ``multi_head_attention`` and
# ``feed_forward`` (with the residual and the norm): their checks run only where the finer part is missing.
ADAPTER_PARTS = (
    "positional_encoding",
    "layer_norm",
    "scaled_dot_product_attention",
    "multi_head_attention",
    "feed_forward",
    "encoder_layer",
    "decoder_layer",
    "attention_sublayer",
    "ffn_sublayer",
    "build_model",
    "learning_rate",
    "label_smoothed_loss",
    "parameter_count",
)
MODEL_PARTS = (
    "load_weights",
    "dump_weights",
    "forward",
    "encode",
    "decode",
    "greedy_decode",
    "attention_weights",
    "unmapped_parameters",
    "train_step",
)
PARTS = ADAPTER_PARTS + tuple(f"model.{name}" for name in MODEL_PARTS)
