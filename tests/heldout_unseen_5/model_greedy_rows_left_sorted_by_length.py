"""§3 greedy decoding that sorts the batch by source length and never restores the order: the sources are reordered
longest first (``np.argsort(-lengths, kind="stable")``, as packed-sequence code needs) and decoded, and the decoded
rows are returned in that sorted order, so row r of the result is the translation of the r-th longest source, not of
source r, where the protocol's greedy decoding returns row b for source sentence b. Each row is a correct greedy
translation of some source of the batch; a batch already sorted by length (or of equal lengths) is right. Forward,
encode, decode and the decoding loop itself (padding after </s>, max_len) are right.

Style: the float64 NumPy module-class model of ``_parts.py`` with ``greedy_decode`` wrapped (sort, decode); model only.
"""

import numpy as np

from _parts import NumpyModules, model_adapter


class SortedBatchDecoding(NumpyModules):
    def greedy_decode(self, src, max_len):
        src = self.ids(src)
        lengths = (src != self.pad_id).sum(axis=1)
        order = np.argsort(-lengths, kind="stable")  # longest first
        return super().greedy_decode(src[order], max_len)


adapter = model_adapter(SortedBatchDecoding)
