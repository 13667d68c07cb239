"""The walk-through's implementation with one bug, pre-norm blocks: x + Attention(LayerNorm(x)) instead of §3.1's
LayerNorm(x + Attention(x)), in its attention modules only (its FFN blocks stay right). It exposes only the
composite parts, as the walk-through's adapter does: the attention sublayer checks must fail and the FFN's
pass, and a failing layer must be localised to its attention sublayer through ``attention_sublayer``.
"""

import sys
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "walkthrough"))

import my_adapter  # noqa: E402
from my_transformer import MultiHeadBlock, attention  # noqa: E402


def pre_norm_forward(self, x, mask, memory=None):
    x_normed = self.norm(x)
    if self.cross:
        q, (k, v) = self.q(x_normed), self.kv(memory).chunk(2, dim=-1)
    else:
        q, k, v = self.qkv(x_normed).chunk(3, dim=-1)
    context, self.attn = attention(self.split(q), self.split(k), self.split(v), mask)
    return x + self.out(context.transpose(1, 2).reshape(x.shape))


class PreNormBlocks:
    """The walk-through's adapter (a TorchAdapter declaration), its attention blocks pre-norm while it runs a part."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def attention_sublayer(self, *args):
        with mock.patch.object(MultiHeadBlock, "forward", pre_norm_forward):
            return self._inner.attention_sublayer(*args)

    def encoder_layer(self, *args):
        with mock.patch.object(MultiHeadBlock, "forward", pre_norm_forward):
            return self._inner.encoder_layer(*args)


adapter = PreNormBlocks(my_adapter.adapter)
