"""(c) Two vocabularies and an output matrix of its own, under a name that says neither "out" nor "generator"."""

from drafting_blocks import Stacks
from torch import nn


class UntiedTransformer(Stacks):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, nhead=8, dim_feedforward=2048, num_layers=6,
                 dropout=0.1, pad_idx=0):
        super().__init__(d_model, nhead, dim_feedforward, num_layers, dropout, pad_idx)
        self.src_tok = nn.Embedding(src_vocab_size, d_model)
        self.tgt_tok = nn.Embedding(tgt_vocab_size, d_model)
        self.to_logits = nn.Linear(d_model, tgt_vocab_size, bias=False)

    def encode(self, src):
        return self.run_encoder(self.embed(self.src_tok, src), src)

    def decode(self, tgt, memory, src):
        return self.to_logits(self.run_decoder(self.embed(self.tgt_tok, tgt), memory, tgt, src))


class ShiftingTransformer(UntiedTransformer):
    """decode shifts its targets right itself (the padding id first, the last token dropped), as some training code
    does inside the model."""

    def decode(self, tgt, memory, src):
        shifted = nn.functional.pad(tgt, (1, 0), value=0)[:, :-1]
        return super().decode(shifted, memory, src)
