"""(l) Sequence-first ids and activations, as torch.nn's default layout: encode takes src (S, B) and returns (S, B,
d_model); decode takes tgt (T, B), memory (S, B, d_model) and src (S, B) and returns (T, B, V). One table."""

import torch.nn.functional as F
from drafting_blocks import Stacks
from torch import nn


class SequenceFirstTransformer(Stacks):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, dropout=0.1, pad_id=0):
        super().__init__(d_model, n_heads, d_ff, n_layers, dropout, pad_id)
        self.embedding = nn.Embedding(vocab_size, d_model)

    def encode(self, src):
        src = src.transpose(0, 1)
        return self.run_encoder(self.embed(self.embedding, src), src).transpose(0, 1)

    def decode(self, tgt, memory, src):
        tgt, memory, src = tgt.transpose(0, 1), memory.transpose(0, 1), src.transpose(0, 1)
        logits = F.linear(self.run_decoder(self.embed(self.embedding, tgt), memory, tgt, src), self.embedding.weight)
        return logits.transpose(0, 1)
