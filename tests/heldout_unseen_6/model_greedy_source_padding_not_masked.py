"""§3 greedy decoding whose decoder steps run without the source padding mask: the decoder's ``src`` argument was
made optional ("only needed for its padding") and the decoding loop calls ``decode_tensor(ys, memory)`` without it,
so during greedy decoding the encoder-decoder attention reads the memory rows of the source's padding positions as
well as its tokens, where the paper's (and this model's own ``forward`` and ``decode``) encoder-decoder attention
hides the padded source keys. Right for sources without padding. The encoder (with its padding mask), the decoder's
masked self-attention, the argmax, the start token, the padding after </s> and ``forward``/``decode`` are right.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with its decoding loop rewritten; model only.
"""

import torch

from _parts import SeqFirstTransformer, causal_mask, model_adapter, padding_mask


class UnmaskedGreedy(SeqFirstTransformer):
    def decode_tensor(self, tgt_in, memory, src=None):
        self_mask = padding_mask(tgt_in, self.pad_id) + causal_mask(tgt_in.shape[0])
        cross_mask = None if src is None else padding_mask(src, self.pad_id)
        y = self.embed(tgt_in, self.tgt_embed)
        for layer in self.decoder:
            y = layer(y, memory, self_mask, cross_mask)
        return self.generator(y)

    def greedy_decode(self, src, max_len):
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            ys = torch.full((1, src.shape[1]), self.bos_id, dtype=torch.int64)
            finished = torch.zeros(src.shape[1], dtype=torch.bool)
            for _ in range(int(max_len)):
                nxt = self.decode_tensor(ys, memory)[-1].argmax(-1)
                nxt = torch.where(finished, torch.full_like(nxt, self.pad_id), nxt)
                ys = torch.cat([ys, nxt[None]], dim=0)
                finished |= nxt == self.eos_id
                if bool(finished.all()):
                    break
            return ys[1:].numpy()


adapter = model_adapter(UnmaskedGreedy)
