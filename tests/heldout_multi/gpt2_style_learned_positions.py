"""An encoder-decoder written with Hugging Face GPT-2's building blocks and names: ``Conv1D`` layers that store
their weight as (in, out) and compute ``x @ W + b``, a fused ``c_attn``, ``wte``/``wpe`` tables, a config
object, ``attention_mask`` turned into an additive bias, and HF's cross-attention (``q_attn`` + a ``c_attn``
for keys and values). Each block keeps the Transformer's post-norm order.

The model and its layers are given; training uses the suite's recipe (``supplied``).
"""

import math
from dataclasses import dataclass

import torch
from torch import nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter


@dataclass
class Seq2SeqGPTConfig:
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_head: int = 12
    n_inner: int = 3072
    n_layer: int = 6
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-6
    pad_token_id: int = 0
    position_embedding_type: str = "learned"   # "learned" (wpe) or "sinusoidal"
    use_embd_dropout: bool = False


class Conv1D(nn.Module):
    """Basically a linear layer with its weight transposed (GPT-2's)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class Attention(nn.Module):
    def __init__(self, config, is_cross_attention=False):
        super().__init__()
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.is_cross_attention = is_cross_attention
        if is_cross_attention:
            self.c_attn = Conv1D(2 * self.embed_dim, self.embed_dim)
            self.q_attn = Conv1D(self.embed_dim, self.embed_dim)
        else:
            self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        self.last_attn_weights = None

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None):
        if encoder_hidden_states is not None:
            query = self.q_attn(hidden_states)
            key, value = self.c_attn(encoder_hidden_states).split(self.split_size, dim=2)
        else:
            query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = map(self._split_heads, (query, key, value))
        attn_output, attn_weights = self._attn(query, key, value, attention_mask)
        self.last_attn_weights = attn_weights
        attn_output = self.c_proj(self._merge_heads(attn_output))
        return self.resid_dropout(attn_output), attn_weights


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = Conv1D(config.n_inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_inner)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class EncoderBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, hidden_states, attention_mask=None):
        hidden_states = self.ln_1(hidden_states + self.attn(hidden_states, attention_mask)[0])
        return self.ln_2(hidden_states + self.mlp(hidden_states))


class DecoderBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.crossattention = Attention(config, is_cross_attention=True)
        self.ln_cross_attn = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask):
        hidden_states = self.ln_1(hidden_states + self.attn(hidden_states, attention_mask)[0])
        cross = self.crossattention(hidden_states, encoder_attention_mask, encoder_hidden_states)[0]
        hidden_states = self.ln_cross_attn(hidden_states + cross)
        return self.ln_2(hidden_states + self.mlp(hidden_states))


def extended_attention_mask(keep, dtype=torch.float32):
    """(B, [Lq,] Lk) keep -> additive (B, 1, [Lq or 1,] Lk) bias, as HF's get_extended_attention_mask."""
    if keep.dim() == 2:
        keep = keep[:, None, :]
    keep = keep[:, None, :, :].to(dtype)
    return (1.0 - keep) * -10000.0


def sinusoid_position_table(n_pos, dim):
    pos = torch.arange(n_pos, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    table = torch.zeros(n_pos, dim, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)
    return table.float()


class Stack(nn.Module):
    def __init__(self, config, block):
        super().__init__()
        self.config = config
        if config.position_embedding_type == "learned":
            self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        else:
            self.register_buffer("wpe_table", sinusoid_position_table(config.n_positions, config.n_embd))
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([block(config) for _ in range(config.n_layer)])

    def embed(self, inputs_embeds):
        n = inputs_embeds.shape[1]
        position_ids = torch.arange(n, device=inputs_embeds.device)[None, :]
        if self.config.position_embedding_type == "learned":
            position_embeds = self.wpe(position_ids)
        else:
            position_embeds = self.wpe_table[position_ids]
        hidden_states = inputs_embeds * math.sqrt(self.config.n_embd) + position_embeds
        if self.config.use_embd_dropout:
            hidden_states = self.drop(hidden_states)
        return hidden_states


class GPTSeq2Seq(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.encoder = Stack(config, EncoderBlock)
        self.decoder = Stack(config, DecoderBlock)

    def encode(self, input_ids):
        mask = extended_attention_mask(input_ids != self.config.pad_token_id)
        hidden_states = self.encoder.embed(self.wte(input_ids))
        for block in self.encoder.h:
            hidden_states = block(hidden_states, mask)
        return hidden_states

    def decode(self, decoder_input_ids, encoder_hidden_states, input_ids):
        n = decoder_input_ids.shape[1]
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
        self_mask = extended_attention_mask((decoder_input_ids != self.config.pad_token_id)[:, None, :] & causal)
        cross_mask = extended_attention_mask(input_ids != self.config.pad_token_id)
        hidden_states = self.decoder.embed(self.wte(decoder_input_ids))
        for block in self.decoder.h:
            hidden_states = block(hidden_states, self_mask, encoder_hidden_states, cross_mask)
        return hidden_states @ self.wte.weight.T  # lm head tied to wte

    def forward(self, input_ids, decoder_input_ids):
        return self.decode(decoder_input_ids, self.encode(input_ids), input_ids)


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------

POSITIONS, EMBD_DROPOUT = "learned", False


def config_of(c):
    return Seq2SeqGPTConfig(vocab_size=c.src_vocab, n_embd=c.d_model, n_head=c.h, n_inner=c.d_ff, n_layer=c.N,
                            resid_pdrop=c.dropout, embd_pdrop=c.dropout, pad_token_id=c.pad_id,
                            position_embedding_type=POSITIONS, use_embd_dropout=EMBD_DROPOUT)


def block_config(s):
    return Seq2SeqGPTConfig(n_embd=s.d_model, n_head=s.h, n_inner=s.d_ff, n_layer=1, resid_pdrop=0.0)


NAMES = {
    "E": "wte.weight",
    "*.{l}.self_attn.W_QKV": "*.h.{l}.attn.c_attn.weight",
    "*.{l}.self_attn.b_QKV": "*.h.{l}.attn.c_attn.bias",
    "*.{l}.self_attn.W_O": "*.h.{l}.attn.c_proj.weight",
    "*.{l}.self_attn.b_O": "*.h.{l}.attn.c_proj.bias",
    "decoder.{l}.cross_attn.W_Q": "decoder.h.{l}.crossattention.q_attn.weight",
    "decoder.{l}.cross_attn.b_Q": "decoder.h.{l}.crossattention.q_attn.bias",
    "decoder.{l}.cross_attn.W_KV": "decoder.h.{l}.crossattention.c_attn.weight",
    "decoder.{l}.cross_attn.b_KV": "decoder.h.{l}.crossattention.c_attn.bias",
    "decoder.{l}.cross_attn.W_O": "decoder.h.{l}.crossattention.c_proj.weight",
    "decoder.{l}.cross_attn.b_O": "decoder.h.{l}.crossattention.c_proj.bias",
    "*.{l}.ffn.W1": "*.h.{l}.mlp.c_fc.weight",
    "*.{l}.ffn.b1": "*.h.{l}.mlp.c_fc.bias",
    "*.{l}.ffn.W2": "*.h.{l}.mlp.c_proj.weight",
    "*.{l}.ffn.b2": "*.h.{l}.mlp.c_proj.bias",
    "*.{l}.norm1": "*.h.{l}.ln_1",
    "encoder.{l}.norm2": "encoder.h.{l}.ln_2",
    "decoder.{l}.norm2": "decoder.h.{l}.ln_cross_attn",
    "decoder.{l}.norm3": "decoder.h.{l}.ln_2",
}

adapter = TorchAdapter(
    lambda c: GPTSeq2Seq(config_of(c)),
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (HF GPT-2 blocks)",
        supports={"share_embeddings": (True,), "tie_output": (True,), "attention_bias": (True,), "max_len": 1024},
        reasons={"share_embeddings": "one wte table", "tie_output": "the lm head reads wte",
                 "attention_bias": "Conv1D always carries a bias", "max_len": "n_positions = 1024"}),
    model={"encode": lambda m, src: m.encode(src), "decode": lambda m, tgt, memory, src: m.decode(tgt, memory, src)},
    supplied=("train_step",),
    encoder_layer=Component(lambda s: EncoderBlock(block_config(s)),
                            lambda block, x, keep: block(x, extended_attention_mask(keep))),
    decoder_layer=Component(
        lambda s: DecoderBlock(block_config(s)),
        lambda block, y, memory, tgt, src: block(
            y, extended_attention_mask(tgt[:, None, :] & torch.tril(torch.ones(y.shape[1], y.shape[1], dtype=torch.bool))),
            memory, extended_attention_mask(src))),
)
