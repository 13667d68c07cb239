"""§3 decoder input shifted right a second time: the model receives the decoder input already shifted (starting with
<s>) and shifts it again inside ``decode``, prepending <s> and dropping the last token, so position t reads the
tokens 0..t-1 of what it was given (position 0 and 1 both see <s>), where the paper's decoder reads the given
decoder input itself (positions 0..t). Greedy decoding goes through the same decode, so it is off too.

Style: the torch.nn.Module model of ``_parts.py`` with one overridden method; model only (build_model).
"""

import torch

from _parts import Transformer, model_only


class Net(Transformer):
    def decode(self, tgt, memory, src):
        start = torch.full_like(tgt[:, :1], self.c["bos_id"])
        shifted = torch.cat([start, tgt[:, :-1]], dim=1)  # the bug: the input is already shifted right
        return super().decode(shifted, memory, src)


adapter = model_only(Net)
