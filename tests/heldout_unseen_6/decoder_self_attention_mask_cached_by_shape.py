"""§3.2.3 decoder layer that caches its *combined* self-attention mask by shape: the causal mask is meant to be
cached per length, but the cache stores the sum of the causal mask and the batch's target padding mask, keyed by
(B, T), so a later call with the same shape reuses the padding of the first call of that shape: the target keys
hidden in the masked self-attention are the padding of an earlier batch, not of this one (padding keys of this batch
read, real tokens hidden where the earlier batch was padded), where the paper hides, for each call, exactly the
future positions and this batch's padding. The first call of each shape is right, and so is the causal part of the
mask on every call. The cross-attention and its source mask, the projections, the FFN and the three Add & Norm steps
are right.

Style: torch ``nn.Module`` layer of ``_parts.py`` (sequence-first (T, B, d), heads flattened into the batch,
``torch.bmm``), float32, *additive* masks (0 / -inf) at the boundary; decoder_layer only.
"""

import numpy as np
import torch

from _parts import DecoderLayer, causal_mask, load_component
from conformance import Conventions


class CachedMaskDecoder:
    conventions = Conventions(mask="additive", batch_first=False, dtype="float32",
                              framework="torch (nn.Module, sequence-first)")

    def __init__(self):
        self._self_masks = {}

    def _self_mask(self, tgt_add):
        B, T = tgt_add.shape
        if (B, T) not in self._self_masks:  # built once per shape
            self._self_masks[(B, T)] = tgt_add[:, None, :] + causal_mask(T)
        return self._self_masks[(B, T)]

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        d, d_ff = np.shape(weights["self_attn.W_Q"])[0], np.shape(weights["ffn.W1"])[1]
        layer = load_component(DecoderLayer(d, h, d_ff, eps, "self_attn.b_Q" in weights), weights)
        y, memory = (torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (y, memory))
        tgt_add = torch.as_tensor(np.asarray(tgt_mask, dtype=np.float32))
        src_add = torch.as_tensor(np.asarray(src_mask, dtype=np.float32))[:, None, :]
        with torch.no_grad():
            return layer(y, memory, self._self_mask(tgt_add), src_add).numpy()


adapter = CachedMaskDecoder()
