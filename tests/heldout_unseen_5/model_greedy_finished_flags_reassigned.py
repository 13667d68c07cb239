"""§3 greedy decoding whose finished flags are reassigned instead of accumulated: ``finished = nxt == eos_id`` where
``finished |= nxt == eos_id`` was meant, so a row is marked finished only at the step that produced its </s>; the
next step writes padding for it (finished), which resets its flag (padding is not </s>), and from the step after
that the row takes the model's argmax again: after </s> comes one padding token, then new tokens (and the loop stops
early only if every row produces </s> at the same step), where the protocol's greedy decoding pads every position
after a row's </s>. The tokens up to and including the first </s>, max_len, and forward, encode and decode are
right.

Style: the float64 NumPy module-class model of ``_parts.py`` with its decoding loop rewritten; model only.
"""

import numpy as np

from _parts import NumpyModules, model_adapter


class ReassignedFlags(NumpyModules):
    def greedy_decode(self, src, max_len):
        src = self.ids(src)
        memory = self.encode_ids(src)
        ys = np.full((src.shape[0], 1), self.bos_id, dtype=np.int64)
        finished = np.zeros(src.shape[0], dtype=bool)
        for _ in range(int(max_len)):
            nxt = self.decode_ids(ys, memory, src)[:, -1].argmax(-1)
            nxt = np.where(finished, self.pad_id, nxt)
            ys = np.concatenate([ys, nxt[:, None]], axis=1)
            finished = nxt == self.eos_id
            if finished.all():
                break
        return ys[:, 1:]


adapter = model_adapter(ReassignedFlags)
