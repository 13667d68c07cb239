"""§3 and §3.5 greedy decoding with a key/value cache whose new token always gets the positional encoding of
position 0: each step embeds only the newest token (a (1, B) input) with the model's ``embed``, which adds the
positional table of the input's own length, PE(0), so the token at position t enters the decoder as
sqrt(d_model) E[token] + PE(0) instead of + PE(t); the cached states of the earlier tokens were built the same way,
so during greedy decoding no target position carries its position. The cache itself (each layer's self-attention
reads the layer inputs of all earlier positions and its own, with their padding hidden), the cross-attention and its
source mask, the argmax and the padding after </s> are right, and so are ``forward`` and ``decode`` (the whole
prefix, positions 0..T-1). The paper adds PE(pos) to the token at position pos.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with incremental decoding added; model only.
"""

import torch

from _parts import SeqFirstTransformer, model_adapter, padding_mask


class CachedGreedy(SeqFirstTransformer):
    def greedy_decode(self, src, max_len):
        with torch.no_grad():
            src = self.ids(src)
            memory = self.encode_tensor(src)
            cross_mask = padding_mask(src, self.pad_id)
            B = src.shape[1]
            tokens = torch.full((1, B), self.bos_id, dtype=torch.int64)
            past = [None] * len(self.decoder)  # per layer: its inputs at the positions so far (t, B, d)
            finished = torch.zeros(B, dtype=torch.bool)
            for _ in range(int(max_len)):
                y = self.embed(tokens[-1:], self.tgt_embed)  # the newest token only
                key_mask = padding_mask(tokens, self.pad_id)
                for l, layer in enumerate(self.decoder):
                    past[l] = y if past[l] is None else torch.cat([past[l], y], dim=0)
                    y = layer.norm1(y + layer.self_attn(y, past[l], past[l], key_mask))
                    y = layer.norm2(y + layer.cross_attn(y, memory, memory, cross_mask))
                    y = layer.norm3(y + layer.ffn(y))
                nxt = self.generator(y[-1]).argmax(-1)
                nxt = torch.where(finished, torch.full_like(nxt, self.pad_id), nxt)
                tokens = torch.cat([tokens, nxt[None]], dim=0)
                finished |= nxt == self.eos_id
                if bool(finished.all()):
                    break
            return tokens[1:].numpy()


adapter = model_adapter(CachedGreedy)
