"""§5.4 label-smoothed loss that shifts the targets against the logits a second time: the loss re-aligns its inputs
as a language-model loss does, ``logits[:-1]`` against ``targets[1:]`` (row t of the logits scored against target
t + 1), although the caller's targets are already the decoder's outputs aligned with the logits (row t predicts
targets[t]); the first target is never scored and the last row of logits is dropped. The cross-entropy is taken
against the right smoothed target q = (1 - eps) one_hot + eps / V and averaged over the non-padding targets of the
shifted slice, where the paper's (PyTorch's) loss scores each row of logits against its own target.

Style: torch functional code (F.log_softmax, F.one_hot, a masked mean), float32; label_smoothed_loss only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def label_smoothed_loss(logits, targets, epsilon, pad_id):
    logits = torch.as_tensor(np.asarray(logits, dtype=np.float32))
    targets = torch.as_tensor(np.asarray(targets, dtype=np.int64))
    logits, targets = logits[:-1], targets[1:]  # predict the next token
    V = logits.shape[-1]
    log_p = F.log_softmax(logits, dim=-1)
    q = (1.0 - epsilon) * F.one_hot(targets.clamp(0, V - 1), V).to(log_p.dtype) + epsilon / V
    per_token = -(q * log_p).sum(-1)
    real = targets != pad_id
    if not bool(real.any()):
        return 0.0
    return float(per_token[real].mean())


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")
    label_smoothed_loss = staticmethod(label_smoothed_loss)


adapter = Adapter()
