"""Greedy decoding (the lesson's loop, §3 model at inference) seeded with the end token: the decoder's first input
is </s> (eos_id) instead of <s> (bos_id), so every generated token is conditioned on a wrong first position,
where greedy decoding starts from the start symbol <s> and appends the argmax of the last position. Stopping at
</s>, padding after it and the max_len limit are right, and forward/encode/decode are the paper's.

Style: the torch nn.ModuleDict model of ``_parts.py`` with its greedy loop overridden (an id-list loop calling
``decode``), float64; model only (``build_model``).
"""

import torch

from _parts import Model, Seq2Seq, model_adapter


class EndSeededSeq2Seq(Seq2Seq):
    def greedy(self, src, max_len):
        cfg = self.cfg
        memory = self.encode(src)
        rows = [[cfg["eos_id"]] for _ in range(src.shape[0])]
        finished = [False] * len(rows)
        for _ in range(max_len):
            logits = self.decode(torch.tensor(rows, dtype=torch.long), memory, src)
            for r, token in enumerate(logits[:, -1].argmax(-1).tolist()):
                rows[r].append(cfg["pad_id"] if finished[r] else token)
                finished[r] = finished[r] or token == cfg["eos_id"]
            if all(finished):
                break
        return torch.tensor(rows, dtype=torch.long)[:, 1:]


class EndSeededModel(Model):
    net_class = EndSeededSeq2Seq


adapter = model_adapter(EndSeededModel)
