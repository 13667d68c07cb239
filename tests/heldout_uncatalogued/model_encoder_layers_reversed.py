"""§3.1 encoder stack run in reverse order: the model iterates reversed(range(N)), so the source goes through
encoder layer N-1 first and layer 0 last, where the paper's stack applies layer 0 first (the weights named
encoder.0 belong to the bottom layer). With N = 1 nothing shows. A model-only NumPy adapter."""

import numpy as np
from _numpy_parts import Seq2Seq, model_only, sub


class Model(Seq2Seq):
    def encode(self, src):
        src = np.asarray(src, dtype=np.int64)
        x = self.embed(src, self.src_table())
        keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :], (src.shape[0], src.shape[1], src.shape[1]))
        for layer in reversed(range(self.cfg["N"])):  # the bug: top layer first
            x = self.encoder_layer(x, sub(self.w, f"encoder.{layer}"), keep)
        return x


adapter = model_only(Model)
