"""Correct NumPy building blocks (float64, batch-first, keep-polarity masks) and a small class-based
encoder-decoder built from them, written for the uncatalogued held-out bugs: each bug file imports what it
does not change and rewrites the one piece it gets wrong. Nothing here is buggy."""

import math

import numpy as np

from conformance import Conventions

CONVENTIONS = Conventions(mask="keep", dtype="float64", framework="numpy")


def softmax_keys(scores):
    top = np.max(np.where(np.isneginf(scores), -1e300, scores), axis=-1, keepdims=True)
    e = np.exp(scores - top)
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def sdpa(q, k, v, keep):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    p = softmax_keys(s)
    return p @ v, p


def mha(query, key, value, w, h, keep, attend=sdpa):
    B, Lq, d = query.shape
    Lk = key.shape[1]

    def heads(x, m, b, L):
        return (x @ w[m] + w.get(b, 0.0)).reshape(B, L, h, d // h).transpose(0, 2, 1, 3)

    q, k, v = heads(query, "W_Q", "b_Q", Lq), heads(key, "W_K", "b_K", Lk), heads(value, "W_V", "b_V", Lk)
    out, p = attend(q, k, v, None if keep is None else keep[:, None, :, :])
    out = out.transpose(0, 2, 1, 3).reshape(B, Lq, d)
    return out @ w["W_O"] + w.get("b_O", 0.0), p


def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def ffn(x, w):
    return np.maximum(0.0, x @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]


def sub(w, prefix):
    n = len(prefix) + 1
    return {k[n:]: v for k, v in w.items() if k.startswith(prefix + ".")}


def causal(T):
    return np.tril(np.ones((T, T), dtype=bool))


def sinusoids(n, d):
    pos = np.arange(n)[:, None]
    freq = 10000.0 ** (-np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(pos * freq)
    pe[:, 1::2] = np.cos(pos * freq)
    return pe


class Seq2Seq:
    """A from-scratch encoder-decoder in NumPy, one method per stage so that a bug is one override."""

    def __init__(self, config, seed):
        self.cfg = config
        rng = np.random.default_rng(seed)
        d, f = config["d_model"], config["d_ff"]
        w = {}
        if config["share_embeddings"]:
            w["E"] = rng.normal(0, d**-0.5, (config["src_vocab"], d))
        else:
            w["E_src"] = rng.normal(0, d**-0.5, (config["src_vocab"], d))
            w["E_tgt"] = rng.normal(0, d**-0.5, (config["tgt_vocab"], d))
        if not config["tie_output"]:
            w["W_out"] = rng.normal(0, d**-0.5, (d, config["tgt_vocab"]))
        for stack, attns, norms in (("encoder", ("self_attn",), 2), ("decoder", ("self_attn", "cross_attn"), 3)):
            for layer in range(config["N"]):
                p = f"{stack}.{layer}"
                for a in attns:
                    for m in ("W_Q", "W_K", "W_V", "W_O"):
                        w[f"{p}.{a}.{m}"] = rng.normal(0, d**-0.5, (d, d))
                    if config["attention_bias"]:
                        for b in ("b_Q", "b_K", "b_V", "b_O"):
                            w[f"{p}.{a}.{b}"] = np.zeros(d)
                for i in range(1, norms + 1):
                    w[f"{p}.norm{i}.gamma"], w[f"{p}.norm{i}.beta"] = np.ones(d), np.zeros(d)
                w[f"{p}.ffn.W1"], w[f"{p}.ffn.b1"] = rng.normal(0, d**-0.5, (d, f)), np.zeros(f)
                w[f"{p}.ffn.W2"], w[f"{p}.ffn.b2"] = rng.normal(0, f**-0.5, (f, d)), np.zeros(d)
        self.w = w

    # weights
    def load_weights(self, weights):
        self.w = {k: np.asarray(v, dtype=np.float64).copy() for k, v in weights.items()}

    def dump_weights(self):
        return {k: v.copy() for k, v in self.w.items()}

    # stages
    def src_table(self):
        return self.w["E"] if "E" in self.w else self.w["E_src"]

    def tgt_table(self):
        return self.w["E"] if "E" in self.w else self.w["E_tgt"]

    def embed(self, ids, table):
        d = self.cfg["d_model"]
        return table[ids] * math.sqrt(d) + sinusoids(ids.shape[1], d)

    def encoder_layer(self, x, w, keep):
        h, eps = self.cfg["h"], self.cfg["eps"]
        x = layer_norm(x + mha(x, x, x, sub(w, "self_attn"), h, keep)[0], w["norm1.gamma"], w["norm1.beta"], eps)
        return layer_norm(x + ffn(x, sub(w, "ffn")), w["norm2.gamma"], w["norm2.beta"], eps)

    def decoder_self_keep(self, tgt):
        pad = tgt != self.cfg["pad_id"]
        return causal(tgt.shape[1])[None, :, :] & pad[:, None, :]

    def decoder_layer(self, y, memory, w, self_keep, cross_keep):
        h, eps = self.cfg["h"], self.cfg["eps"]
        y = layer_norm(y + mha(y, y, y, sub(w, "self_attn"), h, self_keep)[0], w["norm1.gamma"], w["norm1.beta"], eps)
        y = layer_norm(y + mha(y, memory, memory, sub(w, "cross_attn"), h, cross_keep)[0],
                       w["norm2.gamma"], w["norm2.beta"], eps)
        return layer_norm(y + ffn(y, sub(w, "ffn")), w["norm3.gamma"], w["norm3.beta"], eps)

    def output_matrix(self):
        return self.w["W_out"] if "W_out" in self.w else self.tgt_table().T

    def encode(self, src):
        src = np.asarray(src, dtype=np.int64)
        x = self.embed(src, self.src_table())
        keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :], (src.shape[0], src.shape[1], src.shape[1]))
        for layer in range(self.cfg["N"]):
            x = self.encoder_layer(x, sub(self.w, f"encoder.{layer}"), keep)
        return x

    def decode(self, tgt_in, memory, src):
        tgt_in, src = np.asarray(tgt_in, dtype=np.int64), np.asarray(src, dtype=np.int64)
        y = self.embed(tgt_in, self.tgt_table())
        self_keep = self.decoder_self_keep(tgt_in)
        cross_keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :],
                                     (src.shape[0], tgt_in.shape[1], src.shape[1]))
        for layer in range(self.cfg["N"]):
            y = self.decoder_layer(y, memory, sub(self.w, f"decoder.{layer}"), self_keep, cross_keep)
        return y @ self.output_matrix()

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), src)

    def greedy_decode(self, src, max_len):
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        out = np.full((src.shape[0], 1), self.cfg["bos_id"], dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        while out.shape[1] <= max_len and not done.all():
            nxt = self.decode(out, memory, src)[:, -1].argmax(-1)
            nxt = np.where(done, self.cfg["pad_id"], nxt)
            done |= nxt == self.cfg["eos_id"]
            out = np.concatenate([out, nxt[:, None]], axis=1)
        return out[:, 1:]


def model_only(model_class):
    """An adapter that provides only ``build_model``, as a new user's first adapter would."""

    class Adapter:
        conventions = CONVENTIONS

        def build_model(self, config, seed):
            return model_class(config, seed)

    Adapter.model_class = model_class
    return Adapter()


def encoder_layer(x, w, h, eps, src_keep):
    keep = np.broadcast_to(src_keep[:, None, :], (x.shape[0], x.shape[1], x.shape[1]))
    x = layer_norm(x + mha(x, x, x, sub(w, "self_attn"), h, keep)[0], w["norm1.gamma"], w["norm1.beta"], eps)
    return layer_norm(x + ffn(x, sub(w, "ffn")), w["norm2.gamma"], w["norm2.beta"], eps)


def decoder_layer(y, memory, w, h, eps, tgt_keep, src_keep):
    B, T, S = y.shape[0], y.shape[1], memory.shape[1]
    self_keep = causal(T)[None] & tgt_keep[:, None, :]
    cross_keep = np.broadcast_to(src_keep[:, None, :], (B, T, S))
    y = layer_norm(y + mha(y, y, y, sub(w, "self_attn"), h, self_keep)[0], w["norm1.gamma"], w["norm1.beta"], eps)
    y = layer_norm(y + mha(y, memory, memory, sub(w, "cross_attn"), h, cross_keep)[0],
                   w["norm2.gamma"], w["norm2.beta"], eps)
    return layer_norm(y + ffn(y, sub(w, "ffn")), w["norm3.gamma"], w["norm3.beta"], eps)
