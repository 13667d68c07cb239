"""§3 greedy decoding that feeds the decoder only the token it produced last: each step calls
``decode(ys[:, -1:], memory, src)`` (an incremental-decoding loop written for a key/value cache that this model
does not have), so every step sees a one-token target prefix, at position 0, with no history, where greedy
decoding (the lesson's loop) feeds the whole prefix <s> y_1 ... y_t and takes the argmax of its last position.
The first token is right (the prefix is <s> alone); from the second on, each choice is conditioned on the previous
token only. Stopping at </s>, the padding after it, the max_len limit and forward/encode/decode are right.

Style: the float32 NumPy functional model of ``_parts.py`` with ``greedy_decode`` rewritten; model only.
"""

import numpy as np

from _parts import NumpyTransformer, model_adapter


class LastTokenGreedy(NumpyTransformer):
    def greedy_decode(self, src, max_len):
        c = self.c
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        ys = np.full((src.shape[0], 1), c.bos_id, dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        for _ in range(int(max_len)):
            step = self.next_tokens(ys[:, -1:], memory, src)
            nxt = np.where(done, c.pad_id, step).astype(np.int64)
            ys = np.concatenate([ys, nxt[:, None]], axis=1)
            done |= nxt == c.eos_id
            if done.all():
                break
        return ys[:, 1:]


adapter = model_adapter(LastTokenGreedy)
