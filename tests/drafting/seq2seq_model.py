"""(b) A composition constructor, as in the popular seq2seq tutorials: ``Seq2Seq(encoder, decoder, src_pad_idx,
trg_pad_idx, device)``, its encoder and decoder built first from their own sizes; no encode/decode methods (the
forward pass returns the logits and the last attention), a ``device`` everywhere."""

import math

import torch
from drafting_blocks import sinusoids
from torch import nn


class MultiHeadAttentionLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout, device):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, hid_dim // n_heads
        self.fc_q, self.fc_k = nn.Linear(hid_dim, hid_dim), nn.Linear(hid_dim, hid_dim)
        self.fc_v, self.fc_o = nn.Linear(hid_dim, hid_dim), nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(self.head_dim)

    def forward(self, query, key, value, mask=None):
        batch = query.shape[0]
        Q, K, V = (fc(x).view(batch, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
                   for fc, x in ((self.fc_q, query), (self.fc_k, key), (self.fc_v, value)))
        energy = Q @ K.permute(0, 1, 3, 2) / self.scale
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = (self.dropout(attention) @ V).permute(0, 2, 1, 3).contiguous().view(batch, -1, self.n_heads * self.head_dim)
        return self.fc_o(x), attention


class PositionwiseFeedforwardLayer(nn.Module):
    def __init__(self, hid_dim, pf_dim, dropout):
        super().__init__()
        self.fc_1, self.fc_2, self.dropout = nn.Linear(hid_dim, pf_dim), nn.Linear(pf_dim, hid_dim), nn.Dropout(dropout)

    def forward(self, x):
        return self.fc_2(self.dropout(torch.relu(self.fc_1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm, self.ff_layer_norm = nn.LayerNorm(hid_dim), nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        _src, _ = self.self_attention(src, src, src, src_mask)
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        return self.ff_layer_norm(src + self.dropout(self.positionwise_feedforward(src)))


class DecoderLayer(nn.Module):
    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm, self.enc_attn_layer_norm = nn.LayerNorm(hid_dim), nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.encoder_attention = MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = PositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        return self.ff_layer_norm(trg + self.dropout(self.positionwise_feedforward(trg))), attention


class TokenStack(nn.Module):
    """What the encoder and the decoder share: token embeddings scaled by sqrt(hid_dim) plus sinusoids, and layers."""

    def __init__(self, vocab, hid_dim, layers, dropout, device, max_length):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(vocab, hid_dim)
        self.register_buffer("pos_table", sinusoids(max_length, hid_dim), persistent=False)
        self.layers = nn.ModuleList(layers)
        self.dropout = nn.Dropout(dropout)
        self.scale = math.sqrt(hid_dim)

    def embed(self, tokens):
        return self.dropout(self.tok_embedding(tokens) * self.scale + self.pos_table[: tokens.shape[1]])


class Encoder(TokenStack):
    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        layers = [EncoderLayer(hid_dim, n_heads, pf_dim, dropout, device) for _ in range(n_layers)]
        super().__init__(input_dim, hid_dim, layers, dropout, device, max_length)

    def forward(self, src, src_mask):
        src = self.embed(src)
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class Decoder(TokenStack):
    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        layers = [DecoderLayer(hid_dim, n_heads, pf_dim, dropout, device) for _ in range(n_layers)]
        super().__init__(output_dim, hid_dim, layers, dropout, device, max_length)
        self.fc_out = nn.Linear(hid_dim, output_dim, bias=False)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        trg = self.embed(trg)
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        return self.fc_out(trg), attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder: Encoder, decoder: Decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.src_pad_idx, self.trg_pad_idx, self.device = src_pad_idx, trg_pad_idx, device

    def make_src_mask(self, src):
        return (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)

    def make_trg_mask(self, trg):
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_sub_mask = torch.tril(torch.ones((trg.shape[1], trg.shape[1]), device=self.device)).bool()
        return trg_pad_mask & trg_sub_mask

    def forward(self, src, trg):
        src_mask, trg_mask = self.make_src_mask(src), self.make_trg_mask(trg)
        return self.decoder(trg, self.encoder(src, src_mask), trg_mask, src_mask)


class UnannotatedSeq2Seq(Seq2Seq):
    """The same, written without annotations (as the tutorials write it)."""

    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__(encoder, decoder, src_pad_idx, trg_pad_idx, device)
