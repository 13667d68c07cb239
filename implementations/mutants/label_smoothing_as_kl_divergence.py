"""The smoothed loss is the KL divergence to q instead of the cross-entropy: it lacks q's entropy, 0.537 for V = 13.

Violates §5.4 as the lesson computes it: the loss is the cross-entropy -sum_k q(k) log p(k) against the
smoothed target q (nn.CrossEntropyLoss(label_smoothing=0.1)); "a perfect toy model still has a smoothed
loss of 0.537", the entropy of q. ``nn.KLDivLoss`` (the annotated transformer's) gives
sum_k q(k) (log q(k) - log p(k)): the same gradient, but the loss ends near 0.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class KLDivergence(NumpyAdapter):
    def token_losses(self, q, log_p):
        q_log_q = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)  # 0 log 0 = 0
        return (q_log_q - q * log_p).sum(-1)  # the bug: minus the entropy of q


adapter = KLDivergence()
