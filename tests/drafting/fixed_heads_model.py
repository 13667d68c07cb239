"""(j) The number of heads fixed in the code (8), as in a small library whose constructor takes no head count: the
draft cannot read it off the parameters (every shape is the same for any h) and says so."""

import torch.nn.functional as F
from drafting_blocks import Stacks
from torch import nn


class FixedHeadsTransformer(Stacks):
    def __init__(self, vocab_size, d_model, d_ff, n_layers, dropout=0.1, pad_id=0):
        super().__init__(d_model, 8 if d_model % 8 == 0 else 1, d_ff, n_layers, dropout, pad_id)
        self.embedding = nn.Embedding(vocab_size, d_model)

    def encode(self, src):
        return self.run_encoder(self.embed(self.embedding, src), src)

    def decode(self, tgt, memory, src):
        return F.linear(self.run_decoder(self.embed(self.embedding, tgt), memory, tgt, src), self.embedding.weight)
