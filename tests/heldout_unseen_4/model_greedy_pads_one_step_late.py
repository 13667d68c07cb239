"""§3 greedy decoding that notices a finished row one step late: each step first picks the next tokens (padding for
the rows already marked finished), and only then marks as finished the rows whose *previous* token was </s>
(``done |= ys[:, -1] == eos_id`` before the new token is appended), so the step right after a row's </s> still
appends the model's argmax and the padding starts one position late (the loop also runs one step longer before it
stops), where the protocol's greedy decoding pads every position after a row's </s>. The tokens up to and including
</s>, max_len and forward, encode and decode are right.

Style: the float64 torch dict-of-tensors model of ``_parts.py`` with its decoding loop rewritten (the finished flags
updated from the last token of the buffer); model only.
"""

import torch

from _parts import DictTransformer, model_adapter


class LatePadding(DictTransformer):
    def greedy_decode(self, src, max_len):
        c = self.c
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            ys = torch.full((src.shape[0], 1), c.bos_id, dtype=torch.int64)
            done = torch.zeros(src.shape[0], dtype=torch.bool)
            for _ in range(int(max_len)):
                best = self.decode_tensor(ys, memory, src)[:, -1].argmax(-1)
                best = torch.where(done, torch.full_like(best, c.pad_id), best)
                done |= ys[:, -1] == c.eos_id
                ys = torch.cat([ys, best[:, None]], dim=1)
                if bool(done.all()):
                    break
        return ys[:, 1:].numpy()


adapter = model_adapter(LatePadding)
