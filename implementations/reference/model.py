"""The reference Transformer: the original model of Vaswani et al. (2017), written from the formulas.

Every line follows the lesson "The original transformer, step by step" (Steps 1-7, the toy run, greedy
decoding) and "Vanilla Transformer"; the paper section sits above the code that implements it. The
symbols are the paper's: d_model, h, d_k = d_model / h, d_ff, N.

Design for mutants. Every formula is a plain function on torch tensors, and the modules reach them only
through a frozen ``Formulas`` record. ``REFERENCE`` holds the correct ones; a mutant (one deliberate
bug) is ``dataclasses.replace(REFERENCE, layer_norm=wrong_layer_norm)`` passed to any module.

Conventions fixed here:

* Orientation ``x @ W`` and the canonical names of ``conformance.weights``: the parameter paths of the
  modules *are* the canonical names (``encoder.0.self_attn.W_Q``, ``E``, ``decoder.1.norm3.gamma``).
* Masks are boolean *keep* masks: True = this query may attend to this key.
* Padding masks hide KEYS only. A query whose keys are all hidden (a row of padding only) is defined
  to get attention weights 0 everywhere and an attention output of 0 (before W_O and b_O), never NaN.
* Dropout sits where §5.4 puts it: on each sublayer's output before the residual addition, and on the
  sum of the embeddings and the positional encodings. There is no dropout inside the attention or the
  FFN (``torch.nn.Transformer`` adds both; with dropout off the two agree).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from conformance.config import ModelConfig

# --------------------------------------------------------------------------------------------------
# The formulas, one function each
# --------------------------------------------------------------------------------------------------


def wide(dtype: torch.dtype) -> torch.dtype:
    """float32 for a half dtype, the dtype itself otherwise: where statistics and the loss are computed."""
    return torch.promote_types(dtype, torch.float32)


# §3.5, lesson Step 2: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(same).
def sinusoidal_positional_encoding(n: int, d_model: int) -> Tensor:
    """Positions 0..n-1 -> (n, d_model) float64: sine in the even columns, cosine in the odd ones (interleaved)."""
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)  # (n, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i = 0, 2, ..., d_model - 2
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (n, d_model/2): one angle per column pair
    pe = torch.zeros(n, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    # float64, so that far positions keep their precision; callers cast to the dtype they compute in
    # (the model's embedding table, or the adapter's boundary), so a float64 model gets exact values.
    return pe


# §3.1 (Ba et al. 2016), lesson Step 3: gamma * (x - mu) / sqrt(sigma^2 + eps) + beta.
def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> Tensor:
    """Normalise the last axis; the variance divides by d (biased), eps sits inside the square root.
    In float32 at least, as torch's own layer_norm: half precision would lose a small eps (1e-12 is 0 in float16)
    and the variance of rows far from zero; the result comes back in x's dtype."""
    xs = x.to(wide(x.dtype))
    mu = xs.mean(-1, keepdim=True)
    var = ((xs - mu) ** 2).mean(-1, keepdim=True)
    return (gamma * (xs - mu) / torch.sqrt(var + eps) + beta).to(x.dtype)


# §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V, M = -inf where a key is hidden.
def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, keep_mask: Tensor | None
) -> tuple[Tensor, Tensor]:
    """q (..., Lq, d_k), k (..., Lk, d_k), v (..., Lk, d_v), keep_mask broadcastable to (..., Lq, Lk)
    -> (output (..., Lq, d_v), weights (..., Lq, Lk)).

    A query row with no visible key gets weights 0 and output 0 (instead of softmax's NaN).
    """
    d_k = q.shape[-1]
    # scaled before the matmul (the same number: 1/sqrt(d_k) distributes), so that in float16 a dot product
    # larger than 65504 whose scaled score is not still gives that score
    scores = (q / math.sqrt(d_k)) @ k.transpose(-2, -1)  # (..., Lq, Lk)
    if keep_mask is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    has_key = keep_mask.any(-1, keepdim=True)  # (..., Lq, 1): False for a fully hidden row
    scores = scores.masked_fill(~keep_mask, float("-inf"))
    scores = scores.masked_fill(~has_key, 0.0)  # keeps softmax finite there; zeroed just below
    weights = torch.where(has_key, torch.softmax(scores, dim=-1), 0.0)
    return weights @ v, weights


# §3.2.2: head i reads columns [i*d_k:(i+1)*d_k] of X W_Q, X W_K, X W_V.
def split_heads(x: Tensor, h: int) -> Tensor:
    """(B, L, d_model) -> (B, h, L, d_k)."""
    B, L, d_model = x.shape
    return x.view(B, L, h, d_model // h).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """Concat(head_1, ..., head_h): (B, h, L, d_k) -> (B, L, h * d_k)."""
    B, h, L, d_k = x.shape
    return x.transpose(1, 2).reshape(B, L, h * d_k)


# §3.1 and §5.4, lesson Step 3: output = LayerNorm(x + Dropout(Sublayer(x))), post-norm.
def post_norm_sublayer(x: Tensor, fn: Callable[[Tensor], Tensor], norm: nn.Module, dropout: nn.Module) -> Tensor:
    return norm(x + dropout(fn(x)))


# §3.4: "In the embedding layers, we multiply those weights by sqrt(d_model)."
def sqrt_embed_scale(d_model: int) -> float:
    return math.sqrt(d_model)


# §3.4-3.5: the scaled embedding plus the encoding goes to the first layer as it is (later models, BERT and
# mBART among them, normalise it first: a mutant).
def no_embedding_norm(x: Tensor, eps: float) -> Tensor:
    return x


# §3.4: the logits are y E^T, unscaled (Mesh TensorFlow and T5 multiply them by d_model^-0.5: a mutant).
def unit_output_scale(d_model: int) -> float:
    return 1.0


# §3.2.3: position t may read positions 0..t; the diagonal stays visible.
def causal_keep_mask(T: int) -> Tensor:
    """(T, T) bool, True on and below the diagonal."""
    return torch.ones(T, T, dtype=torch.bool).tril()


def padding_keep_mask(ids: Tensor, pad_id: int) -> Tensor:
    """ids (B, L) -> (B, 1, L) bool: True for real tokens. It hides keys only (one row for every query)."""
    return (ids != pad_id).unsqueeze(1)


# §5.3, lesson Step 6: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), steps from 1.
def noam_learning_rate(step: int, d_model: int, warmup: int) -> float:
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


# §5.4, lesson Step 6: cross-entropy against q(k) = (1 - eps)[k = right] + eps / V (PyTorch's spread).
def label_smoothed_loss(logits: Tensor, targets: Tensor, epsilon: float, pad_id: int) -> Tensor:
    """logits (N, V), targets (N,) -> mean over the non-padding targets; equals
    ``nn.CrossEntropyLoss(ignore_index=pad_id, label_smoothing=epsilon)`` (NaN if every target is padding)."""
    V = logits.shape[-1]
    log_p = torch.log_softmax(logits.to(wide(logits.dtype)), dim=-1)  # (N, V), in float32 at least
    q = torch.full_like(log_p, epsilon / V)
    q.scatter_add_(-1, targets.unsqueeze(-1), torch.full_like(log_p[:, :1], 1.0 - epsilon))
    per_token = -(q * log_p).sum(-1)  # (N,)
    real = targets != pad_id
    return per_token[real].mean()


# Lesson "Greedy decoding": encode once, start from <s>, append the argmax, stop at </s>.
def greedy_decode(model: Transformer, src: Tensor, max_len: int) -> Tensor:
    """src (B, S) -> (B, L) ids after <s>, L <= max_len; padding after each row's </s>."""
    cfg = model.config
    memory = model.encode(src)  # (B, S, d_model): the encoder runs once
    ys = torch.full((src.shape[0], 1), cfg.bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src)[:, -1].argmax(-1)  # (B,): the last position's choice
        next_id = torch.where(finished, cfg.pad_id, next_id)  # rows already done get padding
        ys = torch.cat([ys, next_id.unsqueeze(1)], dim=1)
        finished |= next_id == cfg.eos_id
        if bool(finished.all()):
            break
    return ys[:, 1:]  # without <s>


@dataclass(frozen=True)
class Formulas:
    """Every formula the model uses; swap one field to build a mutant."""

    positional_encoding: Callable[[int, int], Tensor]
    layer_norm: Callable[[Tensor, Tensor, Tensor, float], Tensor]
    attention: Callable[[Tensor, Tensor, Tensor, Tensor | None], tuple[Tensor, Tensor]]
    split_heads: Callable[[Tensor, int], Tensor]
    merge_heads: Callable[[Tensor], Tensor]
    activation: Callable[[Tensor], Tensor]
    sublayer: Callable[[Tensor, Callable, nn.Module, nn.Module], Tensor]
    embed_scale: Callable[[int], float]
    embedding_norm: Callable[[Tensor, float], Tensor]
    output_scale: Callable[[int], float]
    causal_mask: Callable[[int], Tensor]
    padding_mask: Callable[[Tensor, int], Tensor]
    encoder_padding_mask: Callable[[Tensor, int], Tensor]
    learning_rate: Callable[[int, int, int], float]
    smoothed_loss: Callable[[Tensor, Tensor, float, int], Tensor]
    greedy_decode: Callable[[Transformer, Tensor, int], Tensor]


REFERENCE = Formulas(
    positional_encoding=sinusoidal_positional_encoding,
    layer_norm=layer_norm,
    attention=scaled_dot_product_attention,
    split_heads=split_heads,
    merge_heads=merge_heads,
    activation=torch.relu,  # §3.3: max(0, .)
    sublayer=post_norm_sublayer,
    embed_scale=sqrt_embed_scale,
    embedding_norm=no_embedding_norm,
    output_scale=unit_output_scale,
    causal_mask=causal_keep_mask,
    padding_mask=padding_keep_mask,
    encoder_padding_mask=padding_keep_mask,  # the encoder's own field: real code builds it apart (OpenNMT-py)
    learning_rate=noam_learning_rate,
    smoothed_loss=label_smoothed_loss,
    greedy_decode=greedy_decode,
)

# --------------------------------------------------------------------------------------------------
# The modules; their parameter paths are the canonical names
# --------------------------------------------------------------------------------------------------


def _param(*shape: int) -> nn.Parameter:
    """Uninitialised float32 storage (``init_parameters`` fills it); follows a ``torch.device`` context."""
    return nn.Parameter(torch.empty(*shape, dtype=torch.float32))


class LayerNorm(nn.Module):
    """§3.1: learned scale gamma and shift beta, (d_model,) each."""

    def __init__(self, d_model: int, eps: float = 1e-5, formulas: Formulas = REFERENCE):
        super().__init__()
        self.gamma, self.beta = _param(d_model), _param(d_model)
        self.eps, self.formulas = eps, formulas

    def forward(self, x: Tensor) -> Tensor:
        return self.formulas.layer_norm(x, self.gamma, self.beta, self.eps)


class MultiHeadAttention(nn.Module):
    """§3.2.2: MultiHead(Q, K, V) = Concat(head_1..head_h) W_O, head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i).

    W_Q, W_K, W_V, W_O are (d_model, d_model); b_Q..b_O exist when ``bias`` (the lesson's count has them,
    the paper's formulas do not). ``last_weights`` keeps the (B, h, Lq, Lk) weights of the last call.
    """

    def __init__(self, d_model: int, h: int, bias: bool = True, formulas: Formulas = REFERENCE):
        super().__init__()
        self.h, self.formulas = h, formulas
        self.W_Q, self.W_K, self.W_V, self.W_O = (_param(d_model, d_model) for _ in range(4))
        if bias:
            self.b_Q, self.b_K, self.b_V, self.b_O = (_param(d_model) for _ in range(4))
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = None
        self.last_weights: Tensor | None = None

    @staticmethod
    def _project(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:
        return x @ W if b is None else x @ W + b

    def forward(self, query: Tensor, key: Tensor, value: Tensor, keep_mask: Tensor | None = None) -> Tensor:
        """query (B, Lq, d_model), key and value (B, Lk, d_model), keep_mask (B, Lq or 1, Lk) -> (B, Lq, d_model)."""
        f = self.formulas
        Q = f.split_heads(self._project(query, self.W_Q, self.b_Q), self.h)  # (B, h, Lq, d_k)
        K = f.split_heads(self._project(key, self.W_K, self.b_K), self.h)  # (B, h, Lk, d_k)
        V = f.split_heads(self._project(value, self.W_V, self.b_V), self.h)  # (B, h, Lk, d_k)
        mask = None if keep_mask is None else keep_mask.unsqueeze(1)  # (B, 1, Lq or 1, Lk): all heads
        heads, weights = f.attention(Q, K, V, mask)  # (B, h, Lq, d_k), (B, h, Lq, Lk)
        self.last_weights = weights.detach()
        return self._project(f.merge_heads(heads), self.W_O, self.b_O)  # (B, Lq, d_model)


class FeedForward(nn.Module):
    """§3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position alone."""

    def __init__(self, d_model: int, d_ff: int, formulas: Formulas = REFERENCE):
        super().__init__()
        self.W1, self.b1 = _param(d_model, d_ff), _param(d_ff)
        self.W2, self.b2 = _param(d_ff, d_model), _param(d_model)
        self.formulas = formulas

    def forward(self, x: Tensor) -> Tensor:
        hidden = self.formulas.activation(x @ self.W1 + self.b1)  # (B, L, d_ff)
        return hidden @ self.W2 + self.b2  # (B, L, d_model)


class EncoderLayer(nn.Module):
    """§3.1: self-attention, then the FFN, each wrapped as LayerNorm(x + Dropout(Sublayer(x)))."""

    def __init__(
        self,
        d_model: int,
        h: int,
        d_ff: int,
        eps: float = 1e-5,
        dropout: float = 0.0,
        attention_bias: bool = True,
        formulas: Formulas = REFERENCE,
    ):
        super().__init__()
        self.formulas = formulas
        self.self_attn = MultiHeadAttention(d_model, h, attention_bias, formulas)
        self.norm1 = LayerNorm(d_model, eps, formulas)
        self.ffn = FeedForward(d_model, d_ff, formulas)
        self.norm2 = LayerNorm(d_model, eps, formulas)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, src_keep: Tensor | None) -> Tensor:
        """x (B, S, d_model), src_keep (B, 1, S) key padding -> (B, S, d_model)."""
        sublayer = self.formulas.sublayer
        x = sublayer(x, lambda x: self.self_attn(x, x, x, src_keep), self.norm1, self.dropout)
        return sublayer(x, self.ffn, self.norm2, self.dropout)


class DecoderLayer(nn.Module):
    """§3.1: masked self-attention, encoder-decoder (cross) attention, FFN; each post-norm."""

    def __init__(
        self,
        d_model: int,
        h: int,
        d_ff: int,
        eps: float = 1e-5,
        dropout: float = 0.0,
        attention_bias: bool = True,
        formulas: Formulas = REFERENCE,
    ):
        super().__init__()
        self.formulas = formulas
        self.self_attn = MultiHeadAttention(d_model, h, attention_bias, formulas)
        self.norm1 = LayerNorm(d_model, eps, formulas)
        self.cross_attn = MultiHeadAttention(d_model, h, attention_bias, formulas)
        self.norm2 = LayerNorm(d_model, eps, formulas)
        self.ffn = FeedForward(d_model, d_ff, formulas)
        self.norm3 = LayerNorm(d_model, eps, formulas)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y: Tensor, memory: Tensor, tgt_keep: Tensor | None, src_keep: Tensor | None) -> Tensor:
        """y (B, T, d_model), memory (B, S, d_model), tgt_keep (B, 1, T) and src_keep (B, 1, S) key
        padding -> (B, T, d_model). The causal mask is added here (§3.2.3)."""
        f = self.formulas
        T = y.shape[1]
        self_keep = f.causal_mask(T).to(y.device)  # (T, T)
        if tgt_keep is not None:
            self_keep = self_keep & tgt_keep  # (B, T, T): not in the future and not padding
        else:
            self_keep = self_keep.unsqueeze(0)  # (1, T, T)
        y = f.sublayer(y, lambda y: self.self_attn(y, y, y, self_keep), self.norm1, self.dropout)
        # Queries from the decoder, keys and values from the memory; the whole source is visible.
        y = f.sublayer(y, lambda y: self.cross_attn(y, memory, memory, src_keep), self.norm2, self.dropout)
        return f.sublayer(y, self.ffn, self.norm3, self.dropout)


class Transformer(nn.Module):
    """The encoder-decoder of §3 for a ``ModelConfig``.

    Embeddings (§3.4): one matrix E (vocab, d_model) for the source, the target and the output layer
    (logits = y @ E^T, no bias); with ``share_embeddings=False`` E_src and E_tgt, and the output tied to
    E_tgt; with ``tie_output=False`` an output matrix W_out (d_model, tgt_vocab), no bias.
    ``seed`` initialises the parameters (``init_parameters``); ``seed=None`` leaves them empty.
    """

    def __init__(self, config: ModelConfig, formulas: Formulas = REFERENCE, seed: int | None = 0):
        super().__init__()
        self.config, self.formulas = config, formulas
        d = config.d_model
        # Registration order = the order of conformance.weights.model_shapes.
        if config.share_embeddings:
            self.E = _param(config.src_vocab, d)
        else:
            self.E_src, self.E_tgt = _param(config.src_vocab, d), _param(config.tgt_vocab, d)
        if not config.tie_output:
            self.W_out = _param(d, config.tgt_vocab)
        layer_args = (d, config.h, config.d_ff, config.eps, config.dropout, config.attention_bias, formulas)
        self.encoder = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(config.N))
        self.decoder = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(config.N))
        self.dropout = nn.Dropout(config.dropout)  # §5.4: on the sums of embeddings and positions
        if seed is not None:
            init_parameters(self, seed)

    @property
    def src_embedding(self) -> Tensor:
        return self.E if self.config.share_embeddings else self.E_src

    @property
    def tgt_embedding(self) -> Tensor:
        return self.E if self.config.share_embeddings else self.E_tgt

    # §3.4 and §3.5, lesson Steps 1-2: x = Dropout(sqrt(d_model) E[token] + PE(pos)), positions from 0.
    def embed(self, ids: Tensor, table: Tensor) -> Tensor:
        """ids (B, L) -> (B, L, d_model)."""
        d_model = self.config.d_model
        pe = self.formulas.positional_encoding(ids.shape[1], d_model).to(table)  # (L, d_model)
        x = table[ids] * self.formulas.embed_scale(d_model) + pe
        return self.dropout(self.formulas.embedding_norm(x, self.config.eps))

    def encode(self, src: Tensor) -> Tensor:
        """src (B, S) -> memory (B, S, d_model)."""
        src_keep = self.formulas.encoder_padding_mask(src, self.config.pad_id)  # (B, 1, S)
        x = self.embed(src, self.src_embedding)
        for layer in self.encoder:
            x = layer(x, src_keep)
        return x

    def decode(self, tgt_in: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        """tgt_in (B, T), memory (B, S, d_model), src (B, S) for its padding -> logits (B, T, tgt_vocab)."""
        f, pad = self.formulas, self.config.pad_id
        tgt_keep, src_keep = f.padding_mask(tgt_in, pad), f.padding_mask(src, pad)  # (B, 1, T), (B, 1, S)
        y = self.embed(tgt_in, self.tgt_embedding)
        for layer in self.decoder:
            y = layer(y, memory, tgt_keep, src_keep)
        return self.project_output(y)

    def project_output(self, y: Tensor) -> Tensor:
        """y (B, T, d_model) -> logits (B, T, tgt_vocab): y E^T, no bias."""
        return y @ self.output_matrix * self.formulas.output_scale(self.config.d_model)

    # Lesson Step 5: P(next token) = softmax(y E^T), the output layer tied to the embedding.
    @property
    def output_matrix(self) -> Tensor:
        """(d_model, tgt_vocab)."""
        return self.tgt_embedding.T if self.config.tie_output else self.W_out

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """src (B, S), tgt_in (B, T) -> logits (B, T, tgt_vocab), before softmax."""
        return self.decode(tgt_in, self.encode(src), src)

    def attention_weights(self) -> dict[str, Tensor]:
        """The (B, h, Lq, Lk) weights of the last call, by module path (``decoder.1.cross_attn``)."""
        return {
            name: module.last_weights
            for name, module in self.named_modules()
            if isinstance(module, MultiHeadAttention) and module.last_weights is not None
        }


# --------------------------------------------------------------------------------------------------
# Initialisation and canonical weights
# --------------------------------------------------------------------------------------------------

EMBEDDING_NAMES = ("E", "E_src", "E_tgt")


@torch.no_grad()
def init_parameters(module: nn.Module, seed: int) -> None:
    """Seeded initialisation: embeddings N(0, d_model^-0.5) (the lesson's spread 1/sqrt(64) = 0.125),
    other matrices Xavier-uniform, biases and beta 0, gamma 1. Parameters on the meta device are skipped."""
    generator = torch.Generator().manual_seed(seed)
    for name, p in module.named_parameters():
        if p.is_meta:
            continue
        leaf = name.rsplit(".", 1)[-1]
        if leaf in EMBEDDING_NAMES:
            p.normal_(0.0, p.shape[1] ** -0.5, generator=generator)
        elif leaf == "gamma":
            p.fill_(1.0)
        elif p.dim() == 2:
            bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            p.uniform_(-bound, bound, generator=generator)
        else:  # beta, b_Q..b_O, b1, b2
            p.zero_()


def canonical_state(module: nn.Module) -> dict[str, Tensor]:
    """Every parameter under its canonical name (the module path), in ``model_shapes`` order."""
    return {name: p for name, p in module.named_parameters()}


@torch.no_grad()
def load_canonical(module: nn.Module, weights: dict) -> None:
    """Copy canonical weights (numpy arrays or tensors) into ``module``; names and shapes must match exactly."""
    params = canonical_state(module)
    missing = [name for name in params if name not in weights]
    unexpected = [name for name in weights if name not in params]
    if missing or unexpected:
        raise KeyError(f"canonical weights do not match: missing {missing}, unexpected {unexpected}")
    for name, p in params.items():
        value = torch.as_tensor(weights[name], dtype=p.dtype)
        if tuple(value.shape) != tuple(p.shape):
            raise ValueError(f"{name}: shape {tuple(value.shape)}, expected {tuple(p.shape)}")
        p.copy_(value)
