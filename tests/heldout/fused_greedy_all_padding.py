"""A decoding loop that returns nothing but padding (it stops before the first step and pads every row), on a
correct sequence-first fused-QKV torch model: a degenerate answer, which names no known bug and describes none."""

import numpy as np
from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import Seq2SeqTransformer


def greedy(model, src, max_len):
    return np.zeros((np.shape(src)[0], max_len), dtype=np.int64)  # the bug: the loop never runs


adapter = model_only(Seq2SeqTransformer, "heldout:fused_greedy_all_padding", supplied=("train_step",),
                     model={"greedy_decode": greedy})
