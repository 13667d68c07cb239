"""(g) The feed-forward network's inner size hard-wired to 4 d_model (the paper's ratio; the constructor takes no
d_ff), one vocabulary, one table, the output computed from it."""

import torch.nn.functional as F
from drafting_blocks import Stacks
from torch import nn


class FixedFFNTransformer(Stacks):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, dropout=0.1, pad_id=0):
        super().__init__(d_model, n_heads, 4 * d_model, n_layers, dropout, pad_id)
        self.embedding = nn.Embedding(vocab_size, d_model)

    def encode(self, src):
        return self.run_encoder(self.embed(self.embedding, src), src)

    def decode(self, tgt, memory, src):
        return F.linear(self.run_decoder(self.embed(self.embedding, tgt), memory, tgt, src), self.embedding.weight)
