"""(h) The embedding size under a name of its own beside d_model (``d_word_vec``, as in a well-known PyTorch
implementation), the two asserted equal; separate tables and an output matrix of its own."""

from drafting_blocks import Stacks
from torch import nn


class WordVecTransformer(Stacks):
    def __init__(self, n_src_vocab, n_trg_vocab, src_pad_idx, trg_pad_idx, d_word_vec=512, d_model=512, d_inner=2048,
                 n_layers=6, n_head=8, dropout=0.1):
        assert d_model == d_word_vec, "the residual connections need d_model == d_word_vec"
        super().__init__(d_model, n_head, d_inner, n_layers, dropout, src_pad_idx)
        self.src_word_emb = nn.Embedding(n_src_vocab, d_word_vec)
        self.trg_word_emb = nn.Embedding(n_trg_vocab, d_word_vec)
        self.trg_word_prj = nn.Linear(d_model, n_trg_vocab, bias=False)

    def encode(self, src):
        return self.run_encoder(self.embed(self.src_word_emb, src), src)

    def decode(self, tgt, memory, src):
        return self.trg_word_prj(self.run_decoder(self.embed(self.trg_word_emb, tgt), memory, tgt, src))
