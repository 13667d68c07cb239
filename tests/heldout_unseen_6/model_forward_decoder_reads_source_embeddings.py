"""§3 forward pass whose decoder reads the *embedded source* instead of the encoder's output: ``forward`` runs the
encoder into a new variable (``h = layer(h, mask)``) and then passes ``x``, the source embeddings plus positions, to
the decoder as its memory, so the encoder-decoder attention of every decoder layer attends over
sqrt(d_model) E[src] + PE (with the right source padding mask), not over the output of the encoder stack: the
encoder is computed and discarded. ``encode``, ``decode`` (given a memory) and greedy decoding (which calls them)
are right; the paper's decoder reads the encoder stack's output in every encoder-decoder attention.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with its forward rewritten; model only.
"""

import torch

from _parts import SeqFirstTransformer, model_adapter, padding_mask


class SourceAsMemory(SeqFirstTransformer):
    def forward(self, src, tgt_in):
        with torch.no_grad():
            src = self.ids(src)
            x = self.embed(src, self.src_embed)
            mask = padding_mask(src, self.pad_id)
            h = x
            for layer in self.encoder:
                h = layer(h, mask)
            return self.decode_tensor(self.ids(tgt_in), x, src).numpy()


adapter = model_adapter(SourceAsMemory)
