"""Encoder outputs at padded positions set to 0 (a padded fast path): the memory is 0 there.

Violates §3.2.3 as the lessons mask: padding hides *keys* only ("the mask then excludes the first input's
two placeholder keys"); a padded position is still a query computed by the same formula as any other.
torch.nn.Transformer's evaluation fast path for padded batches (nested tensors) drops the padded
positions and "returns 0 at padded positions" (the lesson's second trap, ``use_nested_tensor = False``
switches it off). Real positions are the paper's: only what an implementation returns at padding differs.
"""

from conformance.implementations.mutants._build import LayerSwap
from conformance.implementations.reference.model import EncoderLayer


class ZeroedAtPaddingEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        out = super().forward(x, src_keep)
        return out if src_keep is None else out * src_keep.transpose(-1, -2)  # the bug: 0 at padded rows


class PaddedPositionsZeroed(LayerSwap):
    encoder_cls = ZeroedAtPaddingEncoderLayer


adapter = PaddedPositionsZeroed(name="mutant:padded_positions_zeroed")
