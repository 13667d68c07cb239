"""A second, independently written implementation in pure NumPy (float64): the components and layers.

Written differently from the reference on purpose (einsum, the annotated-transformer form of the
frequencies exp(-2i ln(10000) / d_model), an additive mask), so that passing the suite shows the
checks accept any correct implementation, not one particular way of writing it.
"""

from __future__ import annotations

import math

import numpy as np

from conformance.adapter import Conventions


def _softmax(scores):
    scores = scores - scores.max(-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(-1, keepdims=True)


class NumpyAdapter:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

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

    def encoder_layer(self, x, weights, h, eps, src_mask):
        keys = np.broadcast_to(src_mask[:, None, :], (x.shape[0], x.shape[1], x.shape[1]))
        attn, _ = self.multi_head_attention(x, x, x, self._part(weights, "self_attn."), h, keys)
        x = self._sublayer(x, attn, weights, "norm1", eps)
        return self._sublayer(x, self.feed_forward(x, self._part(weights, "ffn.")), weights, "norm2", eps)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        T, S = y.shape[1], memory.shape[1]
        future = np.triu(np.full((T, T), -np.inf), k=1)
        self_mask = future[None] + tgt_mask[:, None, :]
        attn, _ = self.multi_head_attention(y, y, y, self._part(weights, "self_attn."), h, self_mask)
        y = self._sublayer(y, attn, weights, "norm1", eps)
        cross_mask = np.broadcast_to(src_mask[:, None, :], (y.shape[0], T, S))
        cross, _ = self.multi_head_attention(y, memory, memory, self._part(weights, "cross_attn."), h, cross_mask)
        y = self._sublayer(y, cross, weights, "norm2", eps)
        return self._sublayer(y, self.feed_forward(y, self._part(weights, "ffn.")), weights, "norm3", eps)

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
