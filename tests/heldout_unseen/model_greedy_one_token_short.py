"""§3 greedy decoding that stops one token short: its loop runs ``range(max_len - 1)`` (counting the <s> it starts
with against max_len), so a row that does not reach </s> gets max_len - 1 tokens where the protocol's greedy
decoding generates up to max_len tokens after <s>. Rows that end with </s> earlier are right, as is every logit.

Style: the torch.nn.Module model of ``_parts.py`` with its decoding loop rewritten; model only (build_model).
"""

import torch

from _parts import Transformer, model_only


class Net(Transformer):
    def greedy(self, src, max_len):
        c = self.c
        memory = self.encode(src)
        out = torch.full((src.shape[0], 1), c["bos_id"], dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(max_len - 1):  # the bug: <s> counted against max_len
            nxt = self.decode(out, memory, src)[:, -1].argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, c["pad_id"]), nxt)
            done = done | (nxt == c["eos_id"])
            out = torch.cat([out, nxt[:, None]], dim=1)
            if bool(done.all()):
                break
        return out[:, 1:]


adapter = model_only(Net)
