"""§3.4 embeddings: the encoder multiplies its embeddings by sqrt(d_model) but the decoder looks its target tokens up
in the table without the factor (a term dropped on one side only): the paper scales both embedding layers by
sqrt(d_model). A model-only NumPy adapter."""

import numpy as np
from _numpy_parts import Seq2Seq, model_only, sinusoids, sub


class Model(Seq2Seq):
    def decode(self, tgt_in, memory, src):
        tgt_in, src = np.asarray(tgt_in, dtype=np.int64), np.asarray(src, dtype=np.int64)
        y = self.tgt_table()[tgt_in] + sinusoids(tgt_in.shape[1], self.cfg["d_model"])  # the bug: no * sqrt(d_model)
        self_keep = self.decoder_self_keep(tgt_in)
        cross_keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :],
                                     (src.shape[0], tgt_in.shape[1], src.shape[1]))
        for layer in range(self.cfg["N"]):
            y = self.decoder_layer(y, memory, sub(self.w, f"decoder.{layer}"), self_keep, cross_keep)
        return y @ self.output_matrix()


adapter = model_only(Model)
