"""§5.4 label smoothing whose smoothed target is built with ``fill_(eps / V)`` then ``scatter_(1, target, 1 - eps)``:
the scatter overwrites the true token's eps/V share instead of adding to it, so q(true) = 1 - eps and q(other) =
eps / V, a target that sums to 1 - eps/V, where the paper's (PyTorch's) q = (1 - eps) one_hot + eps / V gives the
true token 1 - eps + eps/V. The loss is -sum_k q_k log p_k, averaged over the non-padding targets (that part is
right).

Style: torch tensor code (fill_/scatter_ on a target distribution, log_softmax), float32; label_smoothed_loss only.
"""

import numpy as np
import torch

from conformance import Conventions


class ScatterTarget:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch")

    @torch.no_grad()
    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = torch.as_tensor(np.asarray(logits, dtype=np.float32))
        targets = torch.as_tensor(np.asarray(targets, dtype=np.int64))
        V = logits.shape[-1]
        true_dist = torch.empty_like(logits).fill_(epsilon / V)
        true_dist.scatter_(1, targets[:, None], 1.0 - epsilon)  # the bug: overwrites the eps/V share
        per_token = -(true_dist * torch.log_softmax(logits, dim=-1)).sum(-1)
        keep = targets != pad_id
        return float(per_token[keep].sum() / keep.sum().clamp(min=1))


adapter = ScatterTarget()
