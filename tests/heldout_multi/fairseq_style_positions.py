"""A Transformer in the style of fairseq's ``transformer`` architecture (post-norm, ``normalize_before=False``):
``TransformerEncoderLayer``/``TransformerDecoderLayer`` with ``self_attn_layer_norm``, ``encoder_attn`` and
``final_layer_norm``, a ``MultiheadAttention`` with ``q_proj``/``k_proj``/``v_proj``/``out_proj`` and
``scaling = head_dim ** -0.5`` applied to q, activations in T x B x C inside the stacks, ``embed_scale``,
``SinusoidalPositionalEmbedding`` with ``get_embedding`` and ``utils.make_positions``, and the output
projection shared with the token embedding (``share_all_embeddings``).

Model only: the adapter gives the model, the layers and the positional table.
"""

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

POSITIONS = "fairseq"  # "fairseq" (SinusoidalPositionalEmbedding) or "tensor2tensor-interleaved" (debug)


def make_positions(tensor, padding_idx: int):
    """Replace non-padding symbols with their position numbers. Position numbers begin at padding_idx+1.
    Padding symbols are ignored."""
    mask = tensor.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + padding_idx


class SinusoidalPositionalEmbedding(nn.Module):
    """This module produces sinusoidal positional embeddings of any length. Padding symbols are ignored."""

    def __init__(self, embedding_dim, padding_idx, init_size=1024):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.register_buffer("weights", SinusoidalPositionalEmbedding.get_embedding(
            init_size, embedding_dim, padding_idx), persistent=False)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx=None):
        """Build sinusoidal embeddings. This matches the implementation in tensor2tensor, but differs slightly
        from the description in Section 3.5 of "Attention Is All You Need"."""
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.float64) * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.float64).unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb.float()

    def forward(self, input):
        bsz, seq_len = input.shape
        max_pos = self.padding_idx + 1 + seq_len
        if max_pos > self.weights.size(0):
            self.weights = SinusoidalPositionalEmbedding.get_embedding(max_pos, self.embedding_dim,
                                                                      self.padding_idx).to(self.weights)
        positions = make_positions(input, self.padding_idx)
        return self.weights.index_select(0, positions.view(-1)).view(bsz, seq_len, -1).detach()


class InterleavedPositions(nn.Module):
    """The paper's table, positions from 0 (used to debug the port)."""

    def __init__(self, embedding_dim):
        super().__init__()
        self.embedding_dim = embedding_dim

    def forward(self, input):
        n, d = input.size(1), self.embedding_dim
        pos = torch.arange(n, dtype=torch.float64)[:, None]
        angle = pos / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
        pe = torch.stack([angle.sin(), angle.cos()], -1).flatten(1).float()
        return pe.unsqueeze(0).expand(input.size(0), n, d)


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, query, key, value, key_padding_mask=None, attn_mask=None, need_weights=True):
        """query (tgt_len, bsz, embed_dim); key_padding_mask (bsz, src_len), True = pad;
        attn_mask (tgt_len, src_len) additive."""
        tgt_len, bsz, embed_dim = query.size()
        src_len = key.size(0)
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(key)
        v = self.v_proj(value)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if attn_mask is not None:
            attn_weights += attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool),
                                                    float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights_float = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attn_probs = torch.nan_to_num(attn_weights_float.type_as(attn_weights))
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn = self.out_proj(attn)
        weights = attn_probs.view(bsz, self.num_heads, tgt_len, src_len) if need_weights else None
        return attn, weights


class TransformerEncoderLayer(nn.Module):
    def __init__(self, embed_dim, heads, ffn_embed_dim, dropout, eps, bias):
        super().__init__()
        self.self_attn = MultiheadAttention(embed_dim, heads, bias)
        self.self_attn_layer_norm = nn.LayerNorm(embed_dim, eps=eps)
        self.dropout = dropout
        self.fc1 = nn.Linear(embed_dim, ffn_embed_dim)
        self.fc2 = nn.Linear(ffn_embed_dim, embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim, eps=eps)

    def forward(self, x: Tensor, encoder_padding_mask):
        residual = x
        x, _ = self.self_attn(query=x, key=x, value=x, key_padding_mask=encoder_padding_mask)
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.self_attn_layer_norm(residual + x)
        residual = x
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.final_layer_norm(residual + x)


class TransformerDecoderLayer(nn.Module):
    def __init__(self, embed_dim, heads, ffn_embed_dim, dropout, eps, bias):
        super().__init__()
        self.self_attn = MultiheadAttention(embed_dim, heads, bias)
        self.self_attn_layer_norm = nn.LayerNorm(embed_dim, eps=eps)
        self.encoder_attn = MultiheadAttention(embed_dim, heads, bias)
        self.encoder_attn_layer_norm = nn.LayerNorm(embed_dim, eps=eps)
        self.dropout = dropout
        self.fc1 = nn.Linear(embed_dim, ffn_embed_dim)
        self.fc2 = nn.Linear(ffn_embed_dim, embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim, eps=eps)

    def forward(self, x, encoder_out, encoder_padding_mask, self_attn_mask, self_attn_padding_mask):
        residual = x
        x, _ = self.self_attn(query=x, key=x, value=x, key_padding_mask=self_attn_padding_mask,
                              attn_mask=self_attn_mask)
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.self_attn_layer_norm(residual + x)
        residual = x
        x, _ = self.encoder_attn(query=x, key=encoder_out, value=encoder_out,
                                 key_padding_mask=encoder_padding_mask)
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.encoder_attn_layer_norm(residual + x)
        residual = x
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.final_layer_norm(residual + x)


def fill_with_neg_inf(t):
    return t.float().fill_(float("-inf")).type_as(t)


def buffered_future_mask(dim):
    return torch.triu(fill_with_neg_inf(torch.zeros([dim, dim])), 1)


class FairseqStyleTransformer(nn.Module):
    def __init__(self, vocab, embed_dim, heads, ffn_embed_dim, layers, dropout, eps, bias, padding_idx):
        super().__init__()
        self.padding_idx = padding_idx
        self.dropout = dropout
        self.embed_tokens = nn.Embedding(vocab, embed_dim)
        self.embed_scale = math.sqrt(embed_dim)
        if POSITIONS == "fairseq":
            # fairseq builds it with the dictionary's padding index (here the position table's own, 0)
            self.embed_positions = SinusoidalPositionalEmbedding(embed_dim, padding_idx=0)
        else:
            self.embed_positions = InterleavedPositions(embed_dim)
        self.encoder_layers = nn.ModuleList(
            [TransformerEncoderLayer(embed_dim, heads, ffn_embed_dim, dropout, eps, bias) for _ in range(layers)])
        self.decoder_layers = nn.ModuleList(
            [TransformerDecoderLayer(embed_dim, heads, ffn_embed_dim, dropout, eps, bias) for _ in range(layers)])
        self.output_projection = nn.Linear(embed_dim, vocab, bias=False)
        self.output_projection.weight = self.embed_tokens.weight

    def positions_of(self, tokens):
        # position numbers count the real tokens; padding symbols take the table's padding row (0)
        return self.embed_positions(tokens.ne(self.padding_idx).long())

    def forward_embedding(self, tokens):
        x = self.embed_scale * self.embed_tokens(tokens)
        x = x + self.positions_of(tokens)
        return F.dropout(x, p=self.dropout, training=self.training)

    def encode(self, src_tokens):
        encoder_padding_mask = src_tokens.eq(self.padding_idx)
        x = self.forward_embedding(src_tokens).transpose(0, 1)  # B x T x C -> T x B x C
        for layer in self.encoder_layers:
            x = layer(x, encoder_padding_mask)
        return x.transpose(0, 1)

    def decode(self, prev_output_tokens, encoder_out, src_tokens):
        x = self.forward_embedding(prev_output_tokens).transpose(0, 1)
        encoder_out = encoder_out.transpose(0, 1)
        self_attn_mask = buffered_future_mask(x.size(0)).to(x)
        self_attn_padding_mask = prev_output_tokens.eq(self.padding_idx)
        encoder_padding_mask = src_tokens.eq(self.padding_idx)
        for layer in self.decoder_layers:
            x = layer(x, encoder_out, encoder_padding_mask, self_attn_mask, self_attn_padding_mask)
        return self.output_projection(x.transpose(0, 1))

    def forward(self, src_tokens, prev_output_tokens):
        return self.decode(prev_output_tokens, self.encode(src_tokens), src_tokens)


NAMES = {
    "E": "embed_tokens.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"*_layers.{{l}}.self_attn.{x.lower()}_proj.weight" for x in "QKV"},
    "*.{l}.self_attn.W_O": "*_layers.{l}.self_attn.out_proj.weight",
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder_layers.{{l}}.encoder_attn.{x.lower()}_proj.weight" for x in "QKV"},
    "decoder.{l}.cross_attn.W_O": "decoder_layers.{l}.encoder_attn.out_proj.weight",
    "*.{l}.ffn.W1": "*_layers.{l}.fc1.weight",
    "*.{l}.ffn.W2": "*_layers.{l}.fc2.weight",
    "*.{l}.norm1": "*_layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "encoder_layers.{l}.final_layer_norm",
    "decoder.{l}.norm2": "decoder_layers.{l}.encoder_attn_layer_norm",
    "decoder.{l}.norm3": "decoder_layers.{l}.final_layer_norm",
}


def positional_encoding(n, d_model):
    """The table fairseq's SinusoidalPositionalEmbedding holds, row p for position number p."""
    if d_model < 4:
        raise NotImplementedError("fairseq's get_embedding divides by half_dim - 1: embedding_dim >= 4")
    if POSITIONS == "fairseq":
        return SinusoidalPositionalEmbedding.get_embedding(n, d_model)
    return InterleavedPositions(d_model)(torch.zeros(1, n))[0]


def build(c):
    if c.d_model < 4:
        raise NotImplementedError("fairseq's get_embedding divides by half_dim - 1: embedding_dim >= 4")
    return FairseqStyleTransformer(c.src_vocab, c.d_model, c.h, c.d_ff, c.N, c.dropout, c.eps, c.attention_bias,
                                   c.pad_id)


def seq_first_mask(keep):
    return ~keep  # (B, L) keep -> fairseq's padding mask


adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (fairseq-style)",
        supports={"share_embeddings": (True,), "tie_output": (True,)},
        reasons={"share_embeddings": "share_all_embeddings", "tie_output": "share_all_embeddings"}),
    positional_encoding=positional_encoding,
    encoder_layer=Component(
        lambda s: TransformerEncoderLayer(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias),
        lambda layer, x, keep: layer(x.transpose(0, 1), seq_first_mask(keep)).transpose(0, 1)),
    decoder_layer=Component(
        lambda s: TransformerDecoderLayer(s.d_model, s.h, s.d_ff, 0.0, s.eps, s.bias),
        lambda layer, y, memory, tgt, src: layer(y.transpose(0, 1), memory.transpose(0, 1), seq_first_mask(src),
                                                 buffered_future_mask(y.size(1)).to(y), seq_first_mask(tgt)
                                                 ).transpose(0, 1)),
)
