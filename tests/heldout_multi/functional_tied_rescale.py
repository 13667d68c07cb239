"""A Transformer written with torch.nn.functional only: the parameters are a flat dict of tensors (x @ W
orientation, as in JAX-style code), every layer a pure function of (params, prefix, inputs); no nn.Module.

The tied output follows the Mesh-TensorFlow convention of rescaling the decoder output before the tied
projection, and the embedding lookup is left unscaled. Masks are built once per batch as (query x key)
padding masks. Model only: the adapter gives the model, the two layers, the attention formula and the
parameter count.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions

# Options of this code base.
OPTIONS = {"scale_embeddings": False, "rescale_tied_output": True, "mask_query_rows": True}
NEG_INF = -1e9


# --------------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------------


def sinusoids(length, channels):
    """(length, channels): sin on even channels, cos on odd ones."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    inv = np.exp(-math.log(10000.0) * np.arange(0, channels, 2, dtype=np.float64) / channels)
    table = np.zeros((length, channels))
    table[:, 0::2] = np.sin(pos * inv)
    table[:, 1::2] = np.cos(pos * inv)
    return torch.from_numpy(table).float()


def dense(x, p, name):
    y = x @ p[name + ".W"]
    b = p.get(name + ".b")
    return y if b is None else y + b


def dot_product_attention(q, k, v, mask):
    """q (..., Lq, d), k, v (..., Lk, d), mask (..., Lq, Lk) bool, True = attend."""
    logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits.masked_fill(~mask, NEG_INF)
    weights = F.softmax(logits, dim=-1)
    return weights @ v, weights


def multihead(p, name, xq, xkv, heads, mask, sink=None):
    B, Lq, D = xq.shape
    Lk = xkv.shape[1]
    q = dense(xq, p, name + ".q").view(B, Lq, heads, D // heads).transpose(1, 2)
    k = dense(xkv, p, name + ".k").view(B, Lk, heads, D // heads).transpose(1, 2)
    v = dense(xkv, p, name + ".v").view(B, Lk, heads, D // heads).transpose(1, 2)
    out, weights = dot_product_attention(q, k, v, None if mask is None else mask[:, None])
    if sink is not None:
        sink[name] = weights
    return dense(out.transpose(1, 2).reshape(B, Lq, D), p, name + ".o")


def layer_norm(x, p, name, eps):
    return F.layer_norm(x, x.shape[-1:], p[name + ".scale"], p[name + ".bias"], eps)


def mlp(x, p, name):
    return dense(F.relu(dense(x, p, name + ".fc1")), p, name + ".fc2")


def pair_mask(q_valid, k_valid):
    """(B, Lq) and (B, Lk) validity -> (B, Lq, Lk)."""
    if OPTIONS["mask_query_rows"]:
        return q_valid[:, :, None] & k_valid[:, None, :]
    return torch.ones_like(q_valid)[:, :, None] & k_valid[:, None, :]


def causal(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def encoder_block(p, name, x, valid, heads, eps, rate=0.0, training=False, sink=None):
    mask = pair_mask(valid, valid)
    h = multihead(p, name + ".attn", x, x, heads, mask, sink)
    x = layer_norm(x + F.dropout(h, rate, training), p, name + ".ln1", eps)
    h = mlp(x, p, name + ".mlp")
    return layer_norm(x + F.dropout(h, rate, training), p, name + ".ln2", eps)


def decoder_block(p, name, y, memory, y_valid, x_valid, heads, eps, rate=0.0, training=False, sink=None):
    self_mask = pair_mask(y_valid, y_valid) & causal(y.shape[1])
    h = multihead(p, name + ".attn", y, y, heads, self_mask, sink)
    y = layer_norm(y + F.dropout(h, rate, training), p, name + ".ln1", eps)
    h = multihead(p, name + ".xattn", y, memory, heads, pair_mask(y_valid, x_valid), sink)
    y = layer_norm(y + F.dropout(h, rate, training), p, name + ".ln2", eps)
    h = mlp(y, p, name + ".mlp")
    return layer_norm(y + F.dropout(h, rate, training), p, name + ".ln3", eps)


def embed(p, table, ids, d_model):
    x = F.embedding(ids, p[table])
    if OPTIONS["scale_embeddings"]:
        x = x * math.sqrt(d_model)
    return x + sinusoids(ids.shape[1], d_model)


def encode(p, cfg, src, sink=None):
    valid = src != cfg["pad_id"]
    x = embed(p, "embed.src", src, cfg["d_model"])
    for i in range(cfg["N"]):
        x = encoder_block(p, f"enc.{i}", x, valid, cfg["h"], cfg["eps"], sink=sink)
    return x


def decode(p, cfg, tgt, memory, src, sink=None):
    y_valid, x_valid = tgt != cfg["pad_id"], src != cfg["pad_id"]
    y = embed(p, "embed.tgt", tgt, cfg["d_model"])
    for i in range(cfg["N"]):
        y = decoder_block(p, f"dec.{i}", y, memory, y_valid, x_valid, cfg["h"], cfg["eps"], sink=sink)
    if OPTIONS["rescale_tied_output"]:
        # Mesh TensorFlow: rescale the output before the (tied) softmax projection.
        y = y * cfg["d_model"] ** -0.5
    return y @ p["embed.tgt"].T


# --------------------------------------------------------------------------------------------------
# Parameters: canonical names <-> this code's names
# --------------------------------------------------------------------------------------------------

ATTN = {"W_Q": "q.W", "W_K": "k.W", "W_V": "v.W", "W_O": "o.W", "b_Q": "q.b", "b_K": "k.b", "b_V": "v.b", "b_O": "o.b"}
FFN = {"W1": "fc1.W", "b1": "fc1.b", "W2": "fc2.W", "b2": "fc2.b"}
NORM = {"gamma": "scale", "beta": "bias"}
ENC = {"self_attn": "attn", "norm1": "ln1", "ffn": "mlp", "norm2": "ln2"}
DEC = {"self_attn": "attn", "norm1": "ln1", "cross_attn": "xattn", "norm2": "ln2", "ffn": "mlp", "norm3": "ln3"}


def local_name(sub, leaf, table):
    kind = ATTN if sub.endswith("attn") else FFN if sub == "ffn" else NORM
    return f"{table[sub]}.{kind[leaf]}"


def to_params(weights, prefix_map=None):
    """Canonical numpy weights -> this code's dict of tensors."""
    p = {}
    for name, value in weights.items():
        t = torch.tensor(np.asarray(value), dtype=torch.float32)
        parts = name.split(".")
        if name in ("E", "E_src", "E_tgt"):
            if name in ("E", "E_src"):
                p["embed.src"] = t
            if name in ("E", "E_tgt"):
                p["embed.tgt"] = t
        elif parts[0] in ("encoder", "decoder"):
            stack, layer, sub, leaf = parts
            table = ENC if stack == "encoder" else DEC
            p[f"{stack[:3]}.{layer}.{local_name(sub, leaf, table)}"] = t
        else:  # a component's own weights: "self_attn.W_Q", "W_Q", "norm1.gamma"
            p[name] = t
    return p


class FunctionalTransformer:
    """The model side of the protocol around the pure functions above."""

    def __init__(self, config, seed):
        from conformance.weights import model_shapes
        from conformance.config import ModelConfig

        self.cfg = dict(config)
        self.config = ModelConfig.from_dict(config)
        rng = np.random.default_rng(seed)
        self.shapes = model_shapes(self.config)
        init = {}
        for name, shape in self.shapes.items():
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "gamma":
                init[name] = np.ones(shape)
            elif len(shape) == 1:
                init[name] = np.zeros(shape)
            else:
                init[name] = rng.normal(0.0, shape[-1] ** -0.5, shape)
        self.load_weights(init)

    def load_weights(self, weights):
        if not self.config.share_embeddings or not self.config.tie_output:
            raise NotImplementedError("one shared table for source, target and output")
        self.weights = {k: np.asarray(v, dtype=np.float32).copy() for k, v in weights.items()}
        self.p = to_params(self.weights)

    def dump_weights(self):
        return {k: v.copy() for k, v in self.weights.items()}

    def unmapped_parameters(self):
        return {}

    @torch.no_grad()
    def encode(self, src):
        return encode(self.p, self.cfg, torch.as_tensor(src)).numpy()

    @torch.no_grad()
    def decode(self, tgt_in, memory, src):
        memory = torch.as_tensor(np.asarray(memory, dtype=np.float32))
        return decode(self.p, self.cfg, torch.as_tensor(tgt_in), memory, torch.as_tensor(src)).numpy()

    @torch.no_grad()
    def forward(self, src, tgt_in):
        src, tgt_in = torch.as_tensor(src), torch.as_tensor(tgt_in)
        return decode(self.p, self.cfg, tgt_in, encode(self.p, self.cfg, src), src).numpy()

    @torch.no_grad()
    def attention_weights(self, src, tgt_in):
        sink = {}
        src, tgt_in = torch.as_tensor(src), torch.as_tensor(tgt_in)
        decode(self.p, self.cfg, tgt_in, encode(self.p, self.cfg, src, sink), src, sink)
        rename = {"enc": "encoder", "dec": "decoder", "attn": "self_attn", "xattn": "cross_attn"}
        out = {}
        for name, w in sink.items():
            stack, layer, sub = name.split(".")
            out[f"{rename[stack]}.{layer}.{rename[sub]}"] = w.numpy()
        return out

    @torch.no_grad()
    def greedy_decode(self, src, max_len):
        cfg = self.cfg
        src = torch.as_tensor(src)
        memory = encode(self.p, cfg, src)
        ys = torch.full((src.shape[0], 1), cfg["bos_id"], dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(int(max_len)):
            logits = decode(self.p, cfg, ys, memory, src)[:, -1]
            nxt = torch.where(done, torch.full_like(done, cfg["pad_id"], dtype=torch.long), logits.argmax(-1))
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == cfg["eos_id"]
            if bool(done.all()):
                break
        return ys[:, 1:].numpy().astype(np.int64)


class FunctionalAdapter:
    conventions = Conventions(
        mask="keep", batch_first=True, dtype="float32", framework="torch.nn.functional",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "one table for source, target and output",
                 "tie_output": "one table for source, target and output"})
    model_class = FunctionalTransformer

    def build_model(self, config, seed):
        return FunctionalTransformer(config, int(seed))

    def parameter_count(self, config):
        from conformance.config import ModelConfig
        from conformance.weights import model_shapes

        return int(sum(np.prod(s) for s in model_shapes(ModelConfig.from_dict(config)).values()))

    @torch.no_grad()
    def scaled_dot_product_attention(self, q, k, v, mask):
        t = lambda a: torch.tensor(np.asarray(a), dtype=torch.float32)
        out, w = dot_product_attention(t(q), t(k), t(v), None if mask is None else torch.as_tensor(mask))
        return out.numpy(), w.numpy()

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        p = {f"l.{local_name(*k.split('.'), ENC)}": torch.tensor(np.asarray(v), dtype=torch.float32)
             for k, v in weights.items()}
        valid = torch.as_tensor(src_mask)
        return encoder_block(p, "l", torch.tensor(x), valid, int(h), float(eps)).numpy()

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        p = {f"l.{local_name(*k.split('.'), DEC)}": torch.tensor(np.asarray(v), dtype=torch.float32)
             for k, v in weights.items()}
        out = decoder_block(p, "l", torch.tensor(y), torch.tensor(memory), torch.as_tensor(tgt_mask),
                            torch.as_tensor(src_mask), int(h), float(eps))
        return out.numpy()


adapter = FunctionalAdapter()
