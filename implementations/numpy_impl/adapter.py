"""A second, independently written implementation in pure NumPy (float64): components, layers, model.

Written differently from the reference on purpose (einsum, the annotated-transformer form of the
frequencies exp(-2i ln(10000) / d_model), an additive mask), so that passing the suite shows the
checks accept any correct implementation, not one particular way of writing it.

The model (``build_model``) is forward-only: it has no ``train_step``, so the training checks report
it as not implemented. Its layers are this adapter's own ``encoder_layer`` and ``decoder_layer``.
"""

from __future__ import annotations

import math

import numpy as np

from conformance.adapter import Conventions
from conformance.config import ModelConfig
from conformance.weights import model_shapes


def _softmax(scores):
    scores = scores - scores.max(-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(-1, keepdims=True)


def _additive_padding(ids, pad_id):
    """ids (B, L) -> (B, L) additive key-padding mask: 0 for a real token, -inf for padding."""
    return np.where(ids == pad_id, -np.inf, 0.0)


class NumpyModel:
    """The encoder-decoder of §3 on canonical weights, float64, evaluation only (no dropout)."""

    def __init__(self, adapter, config: ModelConfig, seed: int):
        self.adapter, self.config = adapter, config
        self.shapes = model_shapes(config)
        self.params = self._initial(np.random.default_rng(seed))

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
        for name, shape in self.shapes.items():
            value = np.array(weights[name], dtype=np.float64)  # a copy: the caller's arrays stay theirs
            if value.shape != shape:
                raise ValueError(f"{name}: shape {value.shape}, expected {shape}")
            self.params[name] = value

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
        pe = self.adapter.positional_encoding(ids.shape[1], d_model)
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
        src_mask = _additive_padding(src, cfg.pad_id)
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
        memory = np.asarray(memory, dtype=np.float64)
        tgt_mask, src_mask = _additive_padding(tgt_in, cfg.pad_id), _additive_padding(src, cfg.pad_id)
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
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")
    model_class = NumpyModel  # forward-only: no train_step

    def positional_encoding(self, n, d_model):
        div = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        angles = np.einsum("p,f->pf", np.arange(n, dtype=np.float64), div)
        return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n, d_model)

    def layer_norm(self, x, gamma, beta, eps):
        centred = x - x.mean(-1, keepdims=True)
        return gamma * centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) + beta

    def scaled_dot_product_attention(self, q, k, v, mask):
        scores = np.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        return self._attend(scores, v, mask)

    def _attend(self, scores, v, additive):
        if additive is None:
            weights = _softmax(scores)
        else:
            blocked_row = np.isneginf(additive).all(-1, keepdims=True)
            weights = np.where(blocked_row, 0.0, _softmax(scores + np.where(blocked_row, 0.0, additive)))
        return np.einsum("...qk,...kd->...qd", weights, v), weights

    def multi_head_attention(self, query, key, value, weights, h, mask):
        def project(x, name):
            y = x @ weights[f"W_{name}"] + weights.get(f"b_{name}", 0.0)
            return y.reshape(*x.shape[:2], h, -1).transpose(0, 2, 1, 3)  # (B, h, L, d_k)

        q, k, v = project(query, "Q"), project(key, "K"), project(value, "V")
        scores = np.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        heads, attn = self._attend(scores, v, None if mask is None else mask[:, None])
        merged = heads.transpose(0, 2, 1, 3).reshape(query.shape)
        return merged @ weights["W_O"] + weights.get("b_O", 0.0), attn

    def feed_forward(self, x, weights):
        return np.maximum(0.0, x @ weights["W1"] + weights["b1"]) @ weights["W2"] + weights["b2"]

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
        x = self._sublayer(x, attn, weights, "norm1", eps)
        return self._sublayer(x, self.feed_forward(x, self._part(weights, "ffn.")), weights, "norm2", eps)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask, *, record=None):
        """``record``, if a dict, receives the attention weights under "self_attn" and "cross_attn"."""
        record = {} if record is None else record
        T, S = y.shape[1], memory.shape[1]
        future = np.triu(np.full((T, T), -np.inf), k=1)
        self_mask = future[None] + tgt_mask[:, None, :]
        attn, record["self_attn"] = self.multi_head_attention(y, y, y, self._part(weights, "self_attn."), h, self_mask)
        y = self._sublayer(y, attn, weights, "norm1", eps)
        cross_mask = np.broadcast_to(src_mask[:, None, :], (y.shape[0], T, S))
        cross, record["cross_attn"] = self.multi_head_attention(
            y, memory, memory, self._part(weights, "cross_attn."), h, cross_mask
        )
        y = self._sublayer(y, cross, weights, "norm2", eps)
        return self._sublayer(y, self.feed_forward(y, self._part(weights, "ffn.")), weights, "norm3", eps)

    def build_model(self, config, seed):
        return NumpyModel(self, ModelConfig.from_dict(config), int(seed))

    def learning_rate(self, step, d_model, warmup):
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        shifted = logits - logits.max(-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        V = logits.shape[-1]
        q = np.full(logits.shape, epsilon / V)
        q[np.arange(len(targets)), targets] += 1.0 - epsilon
        per_token = -(q * log_p).sum(-1)
        real = targets != pad_id
        return float(per_token[real].mean())

    def parameter_count(self, config):
        d, d_ff, N = config["d_model"], config["d_ff"], config["N"]
        attention = 4 * d * d + (4 * d if config["attention_bias"] else 0)
        ffn = 2 * d * d_ff + d_ff + d
        layers = N * (attention + ffn + 4 * d) + N * (2 * attention + ffn + 6 * d)
        embeddings = config["src_vocab"] * d + (0 if config["share_embeddings"] else config["tgt_vocab"] * d)
        return layers + embeddings + (0 if config["tie_output"] else d * config["tgt_vocab"])


adapter = NumpyAdapter()
