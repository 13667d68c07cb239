"""§5.4 label-smoothed loss whose likelihood term reads the *predicted* token instead of the target: the code computes
``pred = logits.argmax(-1)`` for its accuracy log and then gathers ``log_p`` at ``pred`` where ``targets`` was meant,
so each row's loss is (1 - eps) * (-log p(argmax)) + eps * mean_v(-log p_v), i.e. the cross-entropy against
q = (1 - eps) one_hot(argmax z) + eps / V, where the paper's (PyTorch's) q puts 1 - eps on the row's target y. It is
right on the rows whose argmax is the target, and always at most the right loss's likelihood term. The smoothing
term (eps / V over the vocabulary), the log-softmax, the padding mask (from the targets) and the mean over the
non-padding targets are right.

Style: torch functional code (F.log_softmax, gather), float32; label_smoothed_loss only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = torch.as_tensor(np.asarray(logits, dtype=np.float32))
        targets = torch.as_tensor(np.asarray(targets, dtype=np.int64))
        with torch.no_grad():
            log_p = F.log_softmax(logits, dim=-1)
            pred = logits.argmax(-1)  # for the accuracy log
            nll = -log_p.gather(-1, pred[:, None]).squeeze(-1)
            smooth = -log_p.mean(-1)
            per_token = (1.0 - epsilon) * nll + epsilon * smooth
            keep = targets != pad_id
            return float(per_token[keep].mean())


adapter = Adapter()
