"""(e) One joint vocabulary (BPE over both languages), one table for source and target, the output tied to it by
assignment; the constructor still takes both vocabulary sizes, as translation code does."""

from drafting_blocks import Stacks
from torch import nn


class JointVocabTransformer(Stacks):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, d_ff=2048, n_layers=6, dropout=0.1,
                 pad_id=0):
        super().__init__(d_model, n_heads, d_ff, n_layers, dropout, pad_id)
        self.shared = nn.Embedding(src_vocab_size, d_model)  # the joint vocabulary: tgt_vocab_size is the same
        self.lm_head = nn.Linear(d_model, tgt_vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight

    def encode(self, src):
        return self.run_encoder(self.embed(self.shared, src), src)

    def decode(self, tgt, memory, src):
        return self.lm_head(self.run_decoder(self.embed(self.shared, tgt), memory, tgt, src))


class StrictJointTransformer(JointVocabTransformer):
    """The same, refusing two vocabulary sizes (as fairseq's share_all_embeddings does)."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, n_heads=8, d_ff=2048, n_layers=6, dropout=0.1,
                 pad_id=0):
        assert src_vocab_size == tgt_vocab_size, "sharing all embeddings needs one joint vocabulary"
        super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_layers, dropout, pad_id)
