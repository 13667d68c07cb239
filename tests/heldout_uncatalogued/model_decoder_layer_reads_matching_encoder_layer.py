"""§3.1/§3.2.3 encoder-decoder attention where decoder layer l attends to the output of encoder layer l (a ladder
of memories) instead of every decoder layer attending to the final encoder output: with N = 1 it is right, with
N > 1 the lower decoder layers read intermediate encoder states. A model-only NumPy adapter."""

import numpy as np
from _numpy_parts import Seq2Seq, model_only, sub


class Model(Seq2Seq):
    encode = None  # this model has no single memory to hand out: forward and greedy_decode only
    decode = None

    def encode_all(self, src):
        x = self.embed(src, self.src_table())
        keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :], (src.shape[0], src.shape[1], src.shape[1]))
        states = []
        for layer in range(self.cfg["N"]):
            x = self.encoder_layer(x, sub(self.w, f"encoder.{layer}"), keep)
            states.append(x)
        return states

    def forward(self, src, tgt_in):
        src, tgt_in = np.asarray(src, dtype=np.int64), np.asarray(tgt_in, dtype=np.int64)
        states = self.encode_all(src)
        y = self.embed(tgt_in, self.tgt_table())
        self_keep = self.decoder_self_keep(tgt_in)
        cross_keep = np.broadcast_to((src != self.cfg["pad_id"])[:, None, :],
                                     (src.shape[0], tgt_in.shape[1], src.shape[1]))
        for layer in range(self.cfg["N"]):
            y = self.decoder_layer(y, states[layer], sub(self.w, f"decoder.{layer}"), self_keep, cross_keep)  # bug
        return y @ self.output_matrix()

    def greedy_decode(self, src, max_len):
        src = np.asarray(src, dtype=np.int64)
        out = np.full((src.shape[0], 1), self.cfg["bos_id"], dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        while out.shape[1] <= max_len and not done.all():
            nxt = self.forward(src, out)[:, -1].argmax(-1)
            nxt = np.where(done, self.cfg["pad_id"], nxt)
            done |= nxt == self.cfg["eos_id"]
            out = np.concatenate([out, nxt[:, None]], axis=1)
        return out[:, 1:]


adapter = model_only(Model)
