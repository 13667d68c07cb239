"""§3.3 position-wise feed-forward network whose rows come back in the wrong order: the input is flattened
position-major (``x.transpose(0, 1).reshape(-1, d)``, code carried over from a sequence-first model) and the
result is unflattened batch-major (``out.reshape(B, L, d)``) without the matching transpose, so the output at
(sentence b, position l) is FFN of the input at flat index b L + l of the position-major order, i.e. of
(sentence (b L + l) mod B, position (b L + l) div B): the rows are permuted across sentences and positions, where
the paper applies FFN(x) = max(0, x W1 + b1) W2 + b2 to each position separately and in place. Each output row is
a correct FFN of *some* input row; with one sentence (B = 1) or one position (L = 1) it is right. Both linear maps,
both biases and the ReLU are right.

Style: torch functional code (F.linear on a flat (rows, d) matrix, F.relu), float32; feed_forward only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class FlatFFN:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    def feed_forward(self, x, weights):
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))
        x = t(x)
        B, L, d = x.shape
        rows = x.transpose(0, 1).reshape(-1, d)  # (L * B, d)
        with torch.no_grad():
            hidden = F.relu(F.linear(rows, t(weights["W1"]).T, t(weights["b1"])))
            out = F.linear(hidden, t(weights["W2"]).T, t(weights["b2"]))
        return out.reshape(B, L, d).numpy()


adapter = FlatFFN()
