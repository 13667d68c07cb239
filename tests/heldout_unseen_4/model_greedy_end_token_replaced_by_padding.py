"""§3 greedy decoding that strips the end token: the loop stops a row at </s> and pads it afterwards, as it should,
but the </s> itself is written as padding (``ys[ys == eos_id] = pad_id``, a clean-up meant for printing left in the
decoder), so no row of the output contains </s>: a finished row ends with its last real token followed by padding
only, where the protocol's greedy decoding keeps the </s> it produced (then pads). Rows that never produce </s> are
right, as are forward, encode and decode.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with a post-processing step on its decoding loop;
model only.
"""

from _parts import DictTransformer, model_adapter


class StripsEnd(DictTransformer):
    def greedy_decode(self, src, max_len):
        ys = super().greedy_decode(src, max_len)
        ys[ys == self.c.eos_id] = self.c.pad_id
        return ys


adapter = model_adapter(StripsEnd)
