"""§3.2.1 scaled dot-product attention whose weights are the *log* of the softmax: ``F.log_softmax`` was picked for
``F.softmax`` (the completion one letter on), so the weights are log softmax(QK^T / sqrt(d_k) + M) (every weight
negative, the log-probabilities of the keys, summing to no particular value) and the output is those weights times V,
where the paper's is softmax(QK^T / sqrt(d_k)) V. The hidden keys are filled with -1e9 before it (the tutorials'
finite -inf), so their log-weights are about -1e9 and the rows with hidden keys are dominated by them. The scores,
the scale 1/sqrt(d_k), the mask's placement and the product with V are right; the ranking of the keys within a row
is the softmax's.

Style: torch functional code in float32 (``torch.matmul``, ``masked_fill``), boolean keep masks;
scaled_dot_product_attention only.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class FunctionalAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    def scaled_dot_product_attention(self, q, k, v, mask=None):
        q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~torch.as_tensor(np.asarray(mask, dtype=bool)), -1e9)
        weights = F.log_softmax(scores, dim=-1)
        return torch.matmul(weights, v).numpy(), weights.numpy()


adapter = FunctionalAttention()
