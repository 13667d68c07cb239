"""An encoder-decoder written after Hugging Face's BART modelling code: a ``BartLikeConfig`` dataclass
(``d_model``, ``encoder_layers``, ``encoder_attention_heads``, ``encoder_ffn_dim``, ``activation_function``,
``scale_embedding``, ``layernorm_embedding``...), ``BartLikeAttention`` with ``q_proj``/``k_proj``/``v_proj``/
``out_proj`` and ``scaling`` applied to the queries, post-norm layers with ``self_attn_layer_norm``,
``encoder_attn_layer_norm`` and ``final_layer_norm``, additive masks from ``_expand_mask`` and
``_make_causal_mask``, a ``shared`` embedding and a tied ``lm_head``. Positions are sinusoids
(``embed_positions``), as in HF's Marian and FSMT variants.

Model only: the adapter gives the model, its feed-forward block and its layers.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

ACT2FN = {"gelu": F.gelu, "relu": F.relu}


@dataclass
class BartLikeConfig:
    vocab_size: int = 50265
    d_model: int = 1024
    encoder_layers: int = 12
    decoder_layers: int = 12
    encoder_attention_heads: int = 16
    decoder_attention_heads: int = 16
    encoder_ffn_dim: int = 4096
    decoder_ffn_dim: int = 4096
    activation_function: str = "gelu"
    dropout: float = 0.1
    layer_norm_eps: float = 1e-5
    scale_embedding: bool = False
    layernorm_embedding: bool = True
    pad_token_id: int = 1
    max_position_embeddings: int = 1024


def _expand_mask(mask, dtype, tgt_len=None):
    """(bsz, src_len) -> (bsz, 1, tgt_len, src_len) additive."""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


def _make_causal_mask(bsz, tgt_len, dtype):
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    return mask.to(dtype)[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


def _combine(causal, padding):
    return torch.minimum(causal, padding)


class SinusoidalPositions(nn.Module):
    def __init__(self, num_positions, embedding_dim):
        super().__init__()
        pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
        inv = torch.pow(10000.0, -torch.arange(0, embedding_dim, 2, dtype=torch.float64) / embedding_dim)
        table = torch.zeros(num_positions, embedding_dim, dtype=torch.float64)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * inv), torch.cos(pos * inv)
        self.register_buffer("weight", table.float(), persistent=False)

    def forward(self, seq_len):
        return self.weight[:seq_len]


class BartLikeAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, attention_mask=None):
        bsz, tgt_len, _ = hidden_states.size()
        kv = hidden_states if key_value_states is None else key_value_states
        query_states = self._shape(self.q_proj(hidden_states) * self.scaling, tgt_len, bsz)
        key_states = self._shape(self.k_proj(kv), kv.size(1), bsz)
        value_states = self._shape(self.v_proj(kv), kv.size(1), bsz)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output), attn_weights


class BartLikeFeedForward(nn.Module):
    def __init__(self, config, ffn_dim):
        super().__init__()
        self.activation_fn = ACT2FN[config.activation_function]
        self.fc1 = nn.Linear(config.d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, config.d_model)

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class BartLikeEncoderLayer(nn.Module):
    def __init__(self, config, bias=True):
        super().__init__()
        self.self_attn = BartLikeAttention(config.d_model, config.encoder_attention_heads, bias)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = BartLikeFeedForward(config, config.encoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.ffn(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        return self.final_layer_norm(residual + hidden_states)


class BartLikeDecoderLayer(nn.Module):
    def __init__(self, config, bias=True):
        super().__init__()
        self.self_attn = BartLikeAttention(config.d_model, config.decoder_attention_heads, bias)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.encoder_attn = BartLikeAttention(config.d_model, config.decoder_attention_heads, bias)
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.ffn = BartLikeFeedForward(config, config.decoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = config.dropout

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states, _ = self.encoder_attn(hidden_states, encoder_hidden_states, encoder_attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = self.encoder_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.ffn(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        return self.final_layer_norm(residual + hidden_states)


class BartLikeStack(nn.Module):
    def __init__(self, config, embed_tokens, layer_cls, n_layers, bias):
        super().__init__()
        self.config = config
        self.embed_tokens = embed_tokens
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_positions = SinusoidalPositions(config.max_position_embeddings, config.d_model)
        self.layernorm_embedding = (nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
                                    if config.layernorm_embedding else nn.Identity())
        self.layers = nn.ModuleList([layer_cls(config, bias) for _ in range(n_layers)])

    def embed(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        hidden_states = inputs_embeds + self.embed_positions(input_ids.size(1)).to(inputs_embeds)
        hidden_states = self.layernorm_embedding(hidden_states)
        return nn.functional.dropout(hidden_states, p=self.config.dropout, training=self.training)


class BartLikeForConditionalGeneration(nn.Module):
    def __init__(self, config, bias=True):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = BartLikeStack(config, self.shared, BartLikeEncoderLayer, config.encoder_layers, bias)
        self.decoder = BartLikeStack(config, self.shared, BartLikeDecoderLayer, config.decoder_layers, bias)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight

    def encode(self, input_ids):
        attention_mask = input_ids.ne(self.config.pad_token_id)
        hidden_states = self.encoder.embed(input_ids)
        mask = _expand_mask(attention_mask, hidden_states.dtype)
        for layer in self.encoder.layers:
            hidden_states = layer(hidden_states, mask)
        return hidden_states

    def decode(self, decoder_input_ids, encoder_hidden_states, input_ids):
        bsz, tgt_len = decoder_input_ids.size()
        hidden_states = self.decoder.embed(decoder_input_ids)
        dtype = hidden_states.dtype
        causal = _make_causal_mask(bsz, tgt_len, dtype)
        self_mask = _combine(causal, _expand_mask(decoder_input_ids.ne(self.config.pad_token_id), dtype))
        cross_mask = _expand_mask(input_ids.ne(self.config.pad_token_id), dtype, tgt_len)
        for layer in self.decoder.layers:
            hidden_states = layer(hidden_states, self_mask, encoder_hidden_states, cross_mask)
        return self.lm_head(hidden_states)

    def forward(self, input_ids, decoder_input_ids):
        return self.decode(decoder_input_ids, self.encode(input_ids), input_ids)


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------

CHECKPOINT_CONFIG = {"activation_function": "gelu", "scale_embedding": False, "layernorm_embedding": True}


def config_of(c):
    return BartLikeConfig(vocab_size=c.src_vocab, d_model=c.d_model, encoder_layers=c.N, decoder_layers=c.N,
                          encoder_attention_heads=c.h, decoder_attention_heads=c.h, encoder_ffn_dim=c.d_ff,
                          decoder_ffn_dim=c.d_ff, dropout=c.dropout, layer_norm_eps=c.eps, pad_token_id=c.pad_id,
                          max_position_embeddings=2048, **CHECKPOINT_CONFIG)


def sizes_config(s):
    return BartLikeConfig(d_model=s.d_model, encoder_attention_heads=s.h or 1, decoder_attention_heads=s.h or 1,
                          encoder_ffn_dim=s.d_ff or 4, decoder_ffn_dim=s.d_ff or 4, dropout=0.0,
                          layer_norm_eps=s.eps or 1e-5, **CHECKPOINT_CONFIG)


NAMES = {
    "E": "shared.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"*.layers.{{l}}.self_attn.{x.lower()}_proj.weight" for x in "QKV"},
    "*.{l}.self_attn.W_O": "*.layers.{l}.self_attn.out_proj.weight",
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder.layers.{{l}}.encoder_attn.{x.lower()}_proj.weight" for x in "QKV"},
    "decoder.{l}.cross_attn.W_O": "decoder.layers.{l}.encoder_attn.out_proj.weight",
    "*.{l}.ffn.W1": "*.layers.{l}.ffn.fc1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.ffn.fc2.weight",
    "*.{l}.norm1": "*.layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "encoder.layers.{l}.final_layer_norm",
    "decoder.{l}.norm2": "decoder.layers.{l}.encoder_attn_layer_norm",
    "decoder.{l}.norm3": "decoder.layers.{l}.final_layer_norm",
}

adapter = TorchAdapter(
    lambda c: BartLikeForConditionalGeneration(config_of(c), c.attention_bias),
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (HF BART-style)",
        supports={"share_embeddings": (True,), "tie_output": (True,), "max_len": 2048},
        reasons={"share_embeddings": "one shared embedding", "tie_output": "lm_head is tied to shared",
                 "max_len": "max_position_embeddings = 2048"}),
    feed_forward=Component(lambda s: BartLikeFeedForward(sizes_config(s), s.d_ff),
                           names={"W1": "fc1.weight", "W2": "fc2.weight"}),
    encoder_layer=Component(lambda s: BartLikeEncoderLayer(sizes_config(s), s.bias),
                            lambda layer, x, keep: layer(x, _expand_mask(keep, x.dtype))),
    decoder_layer=Component(
        lambda s: BartLikeDecoderLayer(sizes_config(s), s.bias),
        lambda layer, y, memory, tgt, src: layer(
            y, _combine(_make_causal_mask(y.size(0), y.size(1), y.dtype), _expand_mask(tgt, y.dtype)),
            memory, _expand_mask(src, y.dtype, y.size(1)))),
)
