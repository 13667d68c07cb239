"""The Transformer of the popular "pytorch-seq2seq" tutorials (notebook 6, "Attention is All You Need"):
``Encoder``/``Decoder`` classes taking ``(input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device,
max_length)``, ``MultiHeadAttentionLayer`` with ``fc_q``/``fc_k``/``fc_v``/``fc_o`` and an ``energy`` tensor
masked with -1e10, ``PositionwiseFeedforwardLayer``, learned ``pos_embedding`` tables, a ``fc_out`` Linear,
and a ``Seq2Seq`` wrapper that makes the masks from ``src_pad_idx`` and ``trg_pad_idx``.

The adapter gives the model and its layers; training uses the suite's recipe (``supplied``).
"""

import torch
import torch.nn as nn

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter

POSITIONS = "learned"          # "learned" (pos_embedding tables) or "sinusoid"
ATTENTION_DROPOUT = True       # dropout on the attention matrix before it multiplies V
FF_DROPOUT = True              # dropout on the feed-forward hidden layer
OUTPUT_BIAS = True


class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout, device):
        super().__init__()
        assert hid_dim % n_heads == 0
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout if ATTENTION_DROPOUT else 0.0)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)

    def forward(self, query, key, value, mask=None):
        batch_size = query.shape[0]
        Q = self.fc_q(query)
        K = self.fc_k(key)
        V = self.fc_v(value)
        Q = Q.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = K.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = V.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(self.dropout(attention), V)
        x = x.permute(0, 2, 1, 3).contiguous()
        x = x.view(batch_size, -1, self.hid_dim)
        x = self.fc_o(x)
        return x, attention


class PositionwiseFeedforwardLayer(nn.Module):
    def __init__(self, hid_dim, pf_dim, dropout):
        super().__init__()
        self.fc_1 = nn.Linear(hid_dim, pf_dim)
        self.fc_2 = nn.Linear(pf_dim, hid_dim)
        self.dropout = nn.Dropout(dropout if FF_DROPOUT else 0.0)

    def forward(self, x):
        x = self.dropout(torch.relu(self.fc_1(x)))
        x = self.fc_2(x)
        return x


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device, eps=1e-5):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.ff_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        _src, _ = self.self_attention(src, src, src, src_mask)
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        _src = self.positionwise_feedforward(src)
        src = self.ff_layer_norm(src + self.dropout(_src))
        return src


def sinusoid_table(max_length, hid_dim):
    pos = torch.arange(max_length, dtype=torch.float64)[:, None]
    div = torch.pow(10000.0, torch.arange(0, hid_dim, 2, dtype=torch.float64) / hid_dim)
    table = torch.zeros(max_length, hid_dim, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos / div), torch.cos(pos / div)
    return table.float()


class SinusoidPositions(nn.Module):
    def __init__(self, max_length, hid_dim):
        super().__init__()
        self.register_buffer("table", sinusoid_table(max_length, hid_dim))

    def forward(self, pos):
        return self.table[pos]


class Encoder(nn.Module):
    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100, eps=1e-5):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(input_dim, hid_dim)
        if POSITIONS == "learned":
            self.pos_embedding = nn.Embedding(max_length, hid_dim)
        else:
            self.pos_embedding = SinusoidPositions(max_length, hid_dim)
        self.layers = nn.ModuleList([EncoderLayer(hid_dim, n_heads, pf_dim, dropout, device, eps)
                                     for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, src, src_mask):
        batch_size = src.shape[0]
        src_len = src.shape[1]
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        src = self.dropout((self.tok_embedding(src) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class DecoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device, eps=1e-5):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.enc_attn_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.ff_layer_norm = nn.LayerNorm(hid_dim, eps=eps)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.encoder_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        _trg = self.positionwise_feedforward(trg)
        trg = self.ff_layer_norm(trg + self.dropout(_trg))
        return trg, attention


class Decoder(nn.Module):
    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100, eps=1e-5):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(output_dim, hid_dim)
        if POSITIONS == "learned":
            self.pos_embedding = nn.Embedding(max_length, hid_dim)
        else:
            self.pos_embedding = SinusoidPositions(max_length, hid_dim)
        self.layers = nn.ModuleList([DecoderLayer(hid_dim, n_heads, pf_dim, dropout, device, eps)
                                     for _ in range(n_layers)])
        self.fc_out = nn.Linear(hid_dim, output_dim, bias=OUTPUT_BIAS)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)
        trg = self.dropout((self.tok_embedding(trg) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        output = self.fc_out(trg)
        return output, attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        return (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)

    def make_trg_mask(self, trg):
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_len = trg.shape[1]
        trg_sub_mask = torch.tril(torch.ones((trg_len, trg_len), device=self.device)).bool()
        return trg_pad_mask & trg_sub_mask

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        output, attention = self.decoder(trg, enc_src, trg_mask, src_mask)
        return output, attention


# --------------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------------

MAX_LENGTH = 100


def build(c):
    device = torch.device("cpu")
    enc = Encoder(c.src_vocab, c.d_model, c.N, c.h, c.d_ff, c.dropout, device, MAX_LENGTH, c.eps)
    dec = Decoder(c.tgt_vocab, c.d_model, c.N, c.h, c.d_ff, c.dropout, device, MAX_LENGTH, c.eps)
    return Seq2Seq(enc, dec, c.pad_id, c.pad_id, device)


def decode(model, trg, enc_src, src):
    return model.decoder(trg, enc_src, model.make_trg_mask(trg), model.make_src_mask(src))[0]


NAMES = {
    "E_src": "encoder.tok_embedding.weight",
    "E_tgt": "decoder.tok_embedding.weight",
    "W_out": "decoder.fc_out.weight",
    **{f"*.{{l}}.self_attn.W_{x}": f"*.layers.{{l}}.self_attention.fc_{x.lower()}.weight" for x in "QKVO"},
    **{f"decoder.{{l}}.cross_attn.W_{x}": f"decoder.layers.{{l}}.encoder_attention.fc_{x.lower()}.weight"
       for x in "QKVO"},
    "*.{l}.ffn.W1": "*.layers.{l}.positionwise_feedforward.fc_1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.positionwise_feedforward.fc_2.weight",
    "*.{l}.norm1": "*.layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "encoder.layers.{l}.ff_layer_norm",
    "decoder.{l}.norm2": "decoder.layers.{l}.enc_attn_layer_norm",
    "decoder.{l}.norm3": "decoder.layers.{l}.ff_layer_norm",
}

adapter = TorchAdapter(
    build,
    names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch (pytorch-seq2seq)",
        supports={"share_embeddings": (False,), "tie_output": (False,), "attention_bias": (True,),
                  "max_len": MAX_LENGTH},
        reasons={"share_embeddings": "the Encoder and the Decoder each own a tok_embedding",
                 "tie_output": "fc_out is a Linear of its own",
                 "attention_bias": "fc_q, fc_k, fc_v and fc_o are nn.Linear with biases",
                 "max_len": "pos_embedding has max_length = 100 rows"}),
    model={"encode": lambda m, src: m.encoder(src, m.make_src_mask(src)), "decode": decode},
    supplied=("train_step",),
    encoder_layer=Component(lambda s: EncoderLayer(s.d_model, s.h, s.d_ff, 0.0, torch.device("cpu"), s.eps),
                            lambda layer, x, keep: layer(x, keep[:, None, None, :])),
    decoder_layer=Component(
        lambda s: DecoderLayer(s.d_model, s.h, s.d_ff, 0.0, torch.device("cpu"), s.eps),
        lambda layer, y, memory, tgt, src: layer(
            y, memory, tgt[:, None, None, :] & torch.tril(torch.ones(y.shape[1], y.shape[1])).bool(),
            src[:, None, None, :])[0]),
)
