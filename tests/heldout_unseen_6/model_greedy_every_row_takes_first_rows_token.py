"""§3 greedy decoding that gives every row the first row's token: the loop was adapted from a tutorial's
batch-of-one greedy decoder (``_, next_word = torch.max(prob, dim=1); next_word = next_word[0]``), so at every step
the argmax of row 0 is taken and written into every row of the batch (rows already finished get padding): every
sentence of the batch receives sentence 0's translation (cut where it has finished), where the protocol's greedy
decoding takes each row's own argmax. Right for a batch of one sentence. The encoder, the decoder, the start token,
the padding after </s>, max_len and ``forward``/``decode`` are right.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with its decoding loop rewritten; model only.
"""

import torch

from _parts import SeqFirstTransformer, model_adapter


class FirstRowGreedy(SeqFirstTransformer):
    def greedy_decode(self, src, max_len):
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            B = src.shape[1]
            ys = torch.full((1, B), self.bos_id, dtype=torch.int64)
            finished = torch.zeros(B, dtype=torch.bool)
            for _ in range(int(max_len)):
                prob = self.decode_tensor(ys, memory, src)[-1]
                _, next_word = torch.max(prob, dim=1)
                next_word = next_word[0]
                nxt = torch.where(finished, torch.full((B,), self.pad_id), torch.full((B,), int(next_word)))
                ys = torch.cat([ys, nxt[None]], dim=0)
                finished |= nxt == self.eos_id
                if bool(finished.all()):
                    break
            return ys[1:].numpy()


adapter = model_adapter(FirstRowGreedy)
