"""§3 greedy decoding that fills a finished row with the end token: once a row has produced </s>, each later step
appends </s> again (eos_id, as generation code does when it has no padding id) instead of pad_id, so a finished
row reads "... </s> </s> </s>" up to the longest row, where the protocol's greedy decoding puts padding after each
row's </s>. The tokens up to and including each row's first </s>, the stopping rule (every row finished, or
max_len) and forward/encode/decode are right.

Style: the float32 NumPy functional model of ``_parts.py`` with ``greedy_decode`` rewritten; model only.
"""

import numpy as np

from _parts import NumpyTransformer, model_adapter


class EosPaddedGreedy(NumpyTransformer):
    def greedy_decode(self, src, max_len):
        c = self.c
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        ys = np.full((src.shape[0], 1), c.bos_id, dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        for _ in range(int(max_len)):
            nxt = np.where(done, c.eos_id, self.next_tokens(ys, memory, src)).astype(np.int64)
            ys = np.concatenate([ys, nxt[:, None]], axis=1)
            done |= nxt == c.eos_id
            if done.all():
                break
        return ys[:, 1:]


adapter = model_adapter(EosPaddedGreedy)
