"""A second, independently written implementation in pure NumPy (float64): components, layers, model.

Written differently from the reference on purpose (einsum, the annotated-transformer form of the
frequencies exp(-2i ln(10000) / d_model), an additive mask), so that passing the suite shows the
checks accept any correct implementation, not one particular way of writing it.

The model (``build_model``) is forward-only: it has no ``train_step``, so the training checks report
it as not implemented. Its layers are this adapter's own ``encoder_layer`` and ``decoder_layer``.

In half precision (``--dtype float16``, ``with_dtype``): float16 natively, weights, activations and masks in
``numpy.float16`` (NumPy's matmul accumulates float16 products in float32). Kept wider, as the reference keeps them:
the positional table (computed in float64, then rounded: an angle pos x omega_i in float16 is off by radians),
LayerNorm's statistics and the loss (in float32: a squared deviation above 256 overflows float16's 65504, and the
mean of a row rounded to float16 cancels what it is subtracted from). bfloat16: NumPy has none, so not declared.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from conformance.adapter import Conventions
from conformance.config import ModelConfig
from conformance.weights import model_shapes


def _wide(x):
    """A float16 array as float32 (what a half computation keeps wider); anything else as it is."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _softmax(scores, axis):
    scores = scores - scores.max(axis, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis, keepdims=True)


def _log_softmax(logits, axis):
    shifted = logits - logits.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def _additive_padding(ids, pad_id, dtype=np.float64):
    """ids (B, L) -> (B, L) additive key-padding mask: 0 for a real token, -inf for padding."""
    return np.where(ids == pad_id, -np.inf, 0.0).astype(dtype, copy=False)


class NumpyModel:
    """The encoder-decoder of §3 on canonical weights, float64 (the adapter's dtype), evaluation only (no dropout)."""

    def __init__(self, adapter, config: ModelConfig, seed: int):
        self.adapter, self.config = adapter, config
        self.shapes = model_shapes(config)
        self.seed, self._params = seed, None  # drawn when first read: a model loaded at once never needs them

    @property
    def params(self) -> dict:
        """The weights: the initial ones (``_initial``, drawn from the seed on first read) or the loaded ones."""
        if self._params is None:
            initial = self._initial(np.random.default_rng(self.seed))  # float64 draws, then in the adapter's dtype
            self._params = {name: np.asarray(value, dtype=self.adapter.dtype) for name, value in initial.items()}
        return self._params

    def _initial(self, rng):
        """Embeddings N(0, d_model^-0.5), matrices Glorot-uniform, biases and beta 0, gamma 1."""
        params = {}
        for name, shape in self.shapes.items():
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("E", "E_src", "E_tgt"):
                params[name] = rng.normal(0.0, self.config.d_model**-0.5, shape)
            elif leaf == "gamma":
                params[name] = np.ones(shape)
            elif len(shape) == 2:
                limit = math.sqrt(6.0 / sum(shape))
                params[name] = rng.uniform(-limit, limit, shape)
            else:
                params[name] = np.zeros(shape)
        return params

    # -- weights ------------------------------------------------------------------------------
    def load_weights(self, weights):
        missing = sorted(set(self.shapes) - set(weights))
        unexpected = sorted(set(weights) - set(self.shapes))
        if missing or unexpected:
            raise KeyError(f"canonical weights do not match: missing {missing}, unexpected {unexpected}")
        loaded = {}
        for name, shape in self.shapes.items():
            value = np.array(weights[name], dtype=self.adapter.dtype)  # a copy: the caller's arrays stay theirs
            if value.shape != shape:
                self.params.update(loaded)  # the names before this one are loaded, the rest as they were
                raise ValueError(f"{name}: shape {value.shape}, expected {shape}")
            loaded[name] = value
        if self._params is None:
            self._params = loaded  # every name loaded: the initial draw is never needed
        else:
            self._params.update(loaded)

    def dump_weights(self):
        return {name: self.params[name].copy() for name in self.shapes}

    def _layer_weights(self, prefix):
        return {k[len(prefix):]: v for k, v in self.params.items() if k.startswith(prefix)}

    # -- §3.4 embeddings and the output projection -------------------------------------------
    def _table(self, side):
        return self.params["E"] if self.config.share_embeddings else self.params[f"E_{side}"]

    def _embed(self, ids, side):
        """ids (B, L) -> sqrt(d_model) * E[ids] + PE(0..L-1): (B, L, d_model)."""
        d_model = self.config.d_model
        pe = np.asarray(self.adapter.sinusoids(ids.shape[1], d_model), dtype=self.adapter.dtype)
        return self._table(side)[ids] * math.sqrt(d_model) + pe[None]

    def _logits(self, y):
        """y (B, T, d_model) -> (B, T, tgt_vocab): y E^T when tied, else y W_out; no bias."""
        if self.config.tie_output:
            return np.einsum("btd,vd->btv", y, self._table("tgt"))
        return np.einsum("btd,dv->btv", y, self.params["W_out"])

    # -- the stacks ---------------------------------------------------------------------------
    # ``attention``, if a dict, collects every sublayer's (B, h, Lq, Lk) weights by canonical prefix.
    def encode(self, src, *, attention=None):
        cfg = self.config
        src = np.asarray(src, dtype=np.int64)
        src_mask = _additive_padding(src, cfg.pad_id, self.adapter.dtype)
        x = self._embed(src, "src")
        for layer in range(cfg.N):
            record = {}
            x = self.adapter.encoder_layer(
                x, self._layer_weights(f"encoder.{layer}."), cfg.h, cfg.eps, src_mask, record=record
            )
            if attention is not None:
                attention.update({f"encoder.{layer}.{name}": w for name, w in record.items()})
        return x

    def decode(self, tgt_in, memory, src, *, attention=None):
        cfg = self.config
        tgt_in, src = np.asarray(tgt_in, dtype=np.int64), np.asarray(src, dtype=np.int64)
        dtype = self.adapter.dtype
        memory = np.asarray(memory, dtype=dtype)
        tgt_mask, src_mask = _additive_padding(tgt_in, cfg.pad_id, dtype), _additive_padding(src, cfg.pad_id, dtype)
        y = self._embed(tgt_in, "tgt")
        for layer in range(cfg.N):
            weights, record = self._layer_weights(f"decoder.{layer}."), {}
            y = self.adapter.decoder_layer(y, memory, weights, cfg.h, cfg.eps, tgt_mask, src_mask, record=record)
            if attention is not None:
                attention.update({f"decoder.{layer}.{name}": w for name, w in record.items()})
        return self._logits(y)

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def attention_weights(self, src, tgt_in):
        """The (B, h, Lq, Lk) weights of a forward pass, by sublayer: encoder.{l}.self_attn,
        decoder.{l}.self_attn, decoder.{l}.cross_attn."""
        attention = {}
        self.decode(tgt_in, self.encode(src, attention=attention), src, attention=attention)
        return attention

    def greedy_decode(self, src, max_len):
        """src (B, S) -> (B, L) ids after <s>; a row that produced </s> gets padding afterwards."""
        cfg = self.config
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        generated = np.full((src.shape[0], 1), cfg.bos_id, dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        while generated.shape[1] <= max_len and not done.all():
            choice = self.decode(generated, memory, src)[:, -1, :].argmax(-1)
            choice = np.where(done, cfg.pad_id, choice)
            done = done | (choice == cfg.eos_id)
            generated = np.concatenate([generated, choice[:, None]], axis=1)
        return generated[:, 1:]


class NumpyAdapter:
    """Every part, in float64. Each formula is one method, which the parts and the model both call, so
    that a known bug is a subclass overriding one method (``implementations/mutants/``):

    * §3.5: ``pe_positions`` (0 .. n-1), ``pe_frequencies`` (10000^(-2i/d_model)), ``pe_interleave`` (sin in
      column 2i, cos in 2i + 1), composed by ``sinusoids``: the table the model adds and the part returns;
    * §3.1: ``layer_norm_variance`` (divided by d), ``layer_norm_denominator`` (sqrt(sigma^2 + eps));
    * §3.2: ``scale_scores`` (1/sqrt(d_k) of one head), ``mask_scores`` (+ M, -inf where hidden), ``softmax``
      (over the keys), ``attention_weights`` (their composition, 0 for a row with no visible key),
      ``project`` (x W + b): the bare attention, multi-head attention and the layers all use them;
    * §3.3: ``activation`` (ReLU); §5.3: ``learning_rate``; §5.4: ``smoothed_target`` (eps / V on every
      token), ``token_losses`` (cross-entropy), ``reduce_loss`` (mean over the real targets);
    * Table 3: ``attention_parameters``, ``ffn_parameters``, ``encoder_layer_parameters``,
      ``decoder_layer_parameters``, ``embedding_parameters``, ``output_parameters``.
    """

    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy",
                              dtypes={"float16": "native"})
    model_class = NumpyModel  # forward-only: no train_step
    dtype = np.float64  # what it computes in; an instance attribute only on a with_dtype copy (mutants compose)

    def with_dtype(self, dtype):
        """This adapter (a mutant's too) computing in ``dtype``: float16 (declared), or float32, float64."""
        if dtype not in ("float16", "float32", "float64"):
            raise ValueError(f"the NumPy implementation computes in float16, float32 or float64, not {dtype!r}")
        switched = copy.copy(self)
        switched.dtype = np.dtype(dtype).type
        switched.conventions = dataclasses.replace(self.conventions, dtype=dtype, dtypes={})
        return switched

    # -- §3.5 positional encoding --------------------------------------------------------------
    def pe_positions(self, n):
        return np.arange(n, dtype=np.float64)

    def pe_frequencies(self, d_model):
        """omega_i = exp(-2i ln(10000) / d_model), the annotated transformer's form of 10000^(-2i/d_model)."""
        return np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))

    def pe_interleave(self, angles):
        """angles (n, d_model/2) -> (n, d_model): sin(angle_i) in column 2i, cos(angle_i) in column 2i + 1."""
        return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(angles.shape[0], -1)

    def sinusoids(self, n, d_model):
        """The table the model adds to its embeddings, one row per position: (n, d_model)."""
        return self.pe_interleave(np.einsum("p,f->pf", self.pe_positions(n), self.pe_frequencies(d_model)))

    def positional_encoding(self, n, d_model):
        return np.asarray(self.sinusoids(n, d_model), dtype=self.dtype)  # float64 as written, rounded to the dtype

    # -- §3.1 LayerNorm ------------------------------------------------------------------------
    def layer_norm_variance(self, centred):
        return (centred**2).mean(-1, keepdims=True)  # divided by d, not d - 1

    def layer_norm_denominator(self, variance, eps):
        return np.sqrt(variance + eps)

    def layer_norm(self, x, gamma, beta, eps):
        """float16 in float32: the statistics of a float16 row would overflow or cancel; the result in float16."""
        half, x = np.asarray(x).dtype == np.float16, _wide(x)
        centred = x - x.mean(-1, keepdims=True)
        normed = gamma * centred / self.layer_norm_denominator(self.layer_norm_variance(centred), eps) + beta
        return normed.astype(np.float16) if half else normed

    # -- §3.2.1 scaled dot-product attention, §3.2.3 masks ---------------------------------------
    def scale_scores(self, scores, d_k, h):
        """Q K^T of one head (d_k of its own, h heads in the layer) -> Q K^T / sqrt(d_k)."""
        return scores / math.sqrt(d_k)

    def mask_scores(self, scores, additive):
        """M adds 0 where a key is visible and -inf where it is hidden ("Vanilla Transformer")."""
        return scores if additive is None else scores + additive

    def softmax(self, masked):
        return _softmax(masked, axis=-1)  # over the keys: each query's weights sum to 1

    def attention_weights(self, scores, additive):
        """softmax(scores + M); a query whose keys are all hidden (0/0) gets weights 0: the suite's convention."""
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(self.softmax(self.mask_scores(scores, additive)), nan=0.0)

    def scaled_dot_product_attention(self, q, k, v, mask):
        # float16 scores in float32: a dot product beyond 65504 whose scaled score is not stays finite
        return self._attend(np.einsum("bqd,bkd->bqk", _wide(q), _wide(k)), v, mask, d_k=q.shape[-1], h=1)

    def _attend(self, qk, v, additive, d_k, h):
        """softmax(Q K^T / sqrt(d_k) + M) V and the weights, from the scores Q K^T: scale, mask, softmax, in the
        paper's order, in one expression (an operation moved across its neighbour is then one change)."""
        weights = self.attention_weights(self.scale_scores(qk, d_k=d_k, h=h), additive)
        weights = weights.astype(np.asarray(v).dtype, copy=False)
        return np.einsum("...qk,...kd->...qd", weights, v), weights

    # -- §3.2.2 multi-head attention -------------------------------------------------------------
    def project(self, x, W, b):
        return x @ W + b

    def multi_head_attention(self, query, key, value, weights, h, mask):
        def heads(x, name):
            y = self.project(x, weights[f"W_{name}"], weights.get(f"b_{name}", 0.0))
            return y.reshape(*x.shape[:2], h, -1).transpose(0, 2, 1, 3)  # (B, h, L, d_k)

        q, k, v = heads(query, "Q"), heads(key, "K"), heads(value, "V")
        qk = np.einsum("bhqd,bhkd->bhqk", _wide(q), _wide(k))
        out, attn = self._attend(qk, v, None if mask is None else mask[:, None], d_k=q.shape[-1], h=h)
        merged = out.transpose(0, 2, 1, 3).reshape(query.shape)
        return self.project(merged, weights["W_O"], weights.get("b_O", 0.0)), attn

    # -- §3.3 position-wise feed-forward network -------------------------------------------------
    def activation(self, z):
        return np.maximum(0.0, z)

    def feed_forward(self, x, weights):
        return self.activation(x @ weights["W1"] + weights["b1"]) @ weights["W2"] + weights["b2"]

    # -- §3.1 the layers ------------------------------------------------------------------------
    def _sublayer(self, x, out, weights, norm, eps):
        return self.layer_norm(x + out, weights[f"{norm}.gamma"], weights[f"{norm}.beta"], eps)

    @staticmethod
    def _part(weights, prefix):
        return {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}

    def encoder_layer(self, x, weights, h, eps, src_mask, *, record=None):
        """``record``, if a dict, receives the attention weights under "self_attn"."""
        keys = np.broadcast_to(src_mask[:, None, :], (x.shape[0], x.shape[1], x.shape[1]))
        attn, probs = self.multi_head_attention(x, x, x, self._part(weights, "self_attn."), h, keys)
        if record is not None:
            record["self_attn"] = probs
        x1 = self._sublayer(x, attn, weights, "norm1", eps)  # each state named once: x, x1 (the layer's input kept)
        return self._sublayer(x1, self.feed_forward(x1, self._part(weights, "ffn.")), weights, "norm2", eps)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask, *, record=None):
        """``record``, if a dict, receives the attention weights under "self_attn" and "cross_attn"."""
        record = {} if record is None else record
        T, S = y.shape[1], memory.shape[1]
        future = np.triu(np.full((T, T), -np.inf, dtype=self.dtype), k=1)
        self_mask = future[None] + tgt_mask[:, None, :]
        attn, record["self_attn"] = self.multi_head_attention(y, y, y, self._part(weights, "self_attn."), h, self_mask)
        y1 = self._sublayer(y, attn, weights, "norm1", eps)  # each state named once: y, y1, y2
        cross_mask = np.broadcast_to(src_mask[:, None, :], (y.shape[0], T, S))
        cross, record["cross_attn"] = self.multi_head_attention(
            y1, memory, memory, self._part(weights, "cross_attn."), h, cross_mask
        )
        y2 = self._sublayer(y1, cross, weights, "norm2", eps)
        return self._sublayer(y2, self.feed_forward(y2, self._part(weights, "ffn.")), weights, "norm3", eps)

    def attention_sublayer(self, x, memory, weights, h, eps, mask):
        """LayerNorm(x + MultiHead(x, kv, kv)), kv = memory or x: the coarse part, from the same formulas."""
        kv = x if memory is None else memory
        attn, _ = self.multi_head_attention(x, kv, kv, weights, h, mask)
        return self._sublayer(x, attn, weights, "norm", eps)

    def ffn_sublayer(self, x, weights, eps):
        """LayerNorm(x + FFN(x)): the coarse part, from the same formulas."""
        return self._sublayer(x, self.feed_forward(x, weights), weights, "norm", eps)

    def build_model(self, config, seed):
        return self.model_class(self, ModelConfig.from_dict(config), int(seed))

    # -- §5.3 the learning-rate schedule -----------------------------------------------------------
    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

    # -- §5.4 label smoothing --------------------------------------------------------------------
    def smoothed_target(self, targets, V, epsilon, pad_id):
        """q (N, V): eps / V on every token and 1 - eps more on the right one (PyTorch's spread)."""
        q = np.full((len(targets), V), epsilon / V)
        q[np.arange(len(targets)), targets] += 1.0 - epsilon
        return q

    def token_losses(self, q, log_p):
        return -(q * log_p).sum(-1)  # the cross-entropy of each token against its target q

    def reduce_loss(self, per_token, targets, pad_id):
        real = targets != pad_id
        return float(per_token[real].mean())

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = _wide(logits)  # float16 in float32: a float16 loss would be off by its own rounding, 2^-11
        log_p = _log_softmax(logits, axis=-1)  # over the vocabulary: each position's probabilities sum to 1
        q = self.smoothed_target(targets, logits.shape[-1], epsilon, pad_id)
        return self.reduce_loss(self.token_losses(q, log_p), targets, pad_id)

    # -- Table 3 the parameter count ---------------------------------------------------------------
    def attention_parameters(self, config):
        d = config["d_model"]
        return 4 * d * d + (4 * d if config["attention_bias"] else 0)

    def ffn_parameters(self, config):
        d, d_ff = config["d_model"], config["d_ff"]
        return 2 * d * d_ff + d_ff + d

    def encoder_layer_parameters(self, config):
        """Self-attention, FFN, two LayerNorms."""
        return self.attention_parameters(config) + self.ffn_parameters(config) + 4 * config["d_model"]

    def decoder_layer_parameters(self, config):
        """Self-attention, cross-attention, FFN, three LayerNorms."""
        return 2 * self.attention_parameters(config) + self.ffn_parameters(config) + 6 * config["d_model"]

    def embedding_parameters(self, config):
        d = config["d_model"]
        return config["src_vocab"] * d + (0 if config["share_embeddings"] else config["tgt_vocab"] * d)

    def output_parameters(self, config):
        return 0 if config["tie_output"] else config["d_model"] * config["tgt_vocab"]  # tied: E^T, no bias

    def parameter_count(self, config):
        N = config["N"]
        layers = N * self.encoder_layer_parameters(config) + N * self.decoder_layer_parameters(config)
        return layers + self.embedding_parameters(config) + self.output_parameters(config)


adapter = NumpyAdapter()
