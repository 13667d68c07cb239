"""Greedy decoding (the lesson's) that keeps going until every row has produced </s> but never replaces the
finished rows' later tokens by padding: after its </s>, a row goes on with whatever the model predicts, where a
finished row should be padded. A model-only NumPy adapter."""

import numpy as np
from _numpy_parts import Seq2Seq, model_only


class Model(Seq2Seq):
    def greedy_decode(self, src, max_len):
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        out = np.full((src.shape[0], 1), self.cfg["bos_id"], dtype=np.int64)
        finished = np.zeros(src.shape[0], dtype=bool)
        for _ in range(max_len):
            nxt = self.decode(out, memory, src)[:, -1].argmax(-1)  # the bug: no np.where(finished, pad, nxt)
            finished |= nxt == self.cfg["eos_id"]
            out = np.concatenate([out, nxt[:, None]], axis=1)
            if finished.all():
                break
        return out[:, 1:]


adapter = model_only(Model)
