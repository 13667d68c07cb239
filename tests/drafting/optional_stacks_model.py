"""(i) A composition constructor whose stacks default to None (``Seq2Seq(encoder=None, decoder=None, ...)``): built
without them, the model has no encoder at all, and its tables say nothing about the paper's tying."""

from seq2seq_model import Decoder, Encoder  # the classes the draft builds the stacks from
from seq2seq_model import Seq2Seq as _Seq2Seq


class OptionalSeq2Seq(_Seq2Seq):
    def __init__(self, encoder=None, decoder=None, src_pad_idx=0, trg_pad_idx=0, device="cpu"):
        super().__init__(encoder, decoder, src_pad_idx, trg_pad_idx, device)


class KeywordOnlySeq2Seq(_Seq2Seq):
    """The stacks keyword-only, after a size given by name: a draft passes them by name (a positional argument after
    a keyword one is a SyntaxError)."""

    def __init__(self, src_pad_idx, *, encoder: Encoder, decoder: Decoder, trg_pad_idx=0, device="cpu"):
        super().__init__(encoder, decoder, src_pad_idx, trg_pad_idx, device)
