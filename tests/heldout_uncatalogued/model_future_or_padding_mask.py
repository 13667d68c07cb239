"""§3.2.3 decoder self-attention mask combining the future mask and the target padding mask with a logical OR
(a key is visible if it is in the past OR is not padding) where the paper needs both (AND): every non-padded future
token becomes visible. A model-only NumPy adapter."""

from _numpy_parts import Seq2Seq, causal, model_only


class Model(Seq2Seq):
    def decoder_self_keep(self, tgt):
        not_pad = tgt != self.cfg["pad_id"]
        return causal(tgt.shape[1])[None, :, :] | not_pad[:, None, :]  # the bug: | where & belongs


adapter = model_only(Model)
