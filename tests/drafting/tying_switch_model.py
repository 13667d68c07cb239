"""(m) Switches that tie or untie the tables, in the constructor: separate source and target tables by default, the
output projection tied to the target table by default (the weight-sharing flags of many tutorial models)."""

from drafting_blocks import Stacks
from torch import nn


class SwitchedTransformer(Stacks):
    def __init__(self, n_src_vocab, n_trg_vocab, d_model=512, n_head=8, d_inner=2048, n_layers=6, dropout=0.1,
                 pad_idx=0, emb_src_trg_weight_sharing=False, trg_emb_prj_weight_sharing=True):
        super().__init__(d_model, n_head, d_inner, n_layers, dropout, pad_idx)
        self.src_tok = nn.Embedding(n_src_vocab, d_model)
        self.tgt_tok = nn.Embedding(n_trg_vocab, d_model)
        self.proj = nn.Linear(d_model, n_trg_vocab, bias=False)
        if emb_src_trg_weight_sharing:
            self.src_tok.weight = self.tgt_tok.weight
        if trg_emb_prj_weight_sharing:
            self.proj.weight = self.tgt_tok.weight

    def encode(self, src):
        return self.run_encoder(self.embed(self.src_tok, src), src)

    def decode(self, tgt, memory, src):
        return self.proj(self.run_decoder(self.embed(self.tgt_tok, tgt), memory, tgt, src))
