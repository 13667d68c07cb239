"""§3.1 encoder stack that runs N - 1 layers: the loop is ``for block in self.encoder[:-1]`` (a slice meant for
another purpose), so encoder layer N-1's weights are loaded and never used, and with N = 1 the memory is the
embeddings themselves, where the paper's encoder is a stack of N identical layers, all applied. The decoder stack
is right.

Style: the torch.nn.Module model of ``_parts.py`` with one overridden method; model only (build_model).
"""

from _parts import Transformer, model_only


class Net(Transformer):
    def encode(self, src):
        x, keep = self.embed(src, "src"), self.source_keep(src, src.shape[1])
        for block in self.encoder[:-1]:  # the bug: the last encoder layer is skipped
            x = block(x, keep)
        return x


adapter = model_only(Net)
