"""§5.4 label-smoothed loss whose hand-written log-softmax stops after the stabilising shift: ``log_softmax(z)``
returns ``z - z.max(-1)`` and never subtracts log(sum(exp(z - max))), so the "log-probabilities" are the logits minus
their row maximum (0 for the top token) and the loss is -sum_v q_v (z_v - max z) averaged over the non-padding
targets, smaller than the paper's cross-entropy -sum_v q_v log softmax(z)_v by exactly the row's
log sum_v exp(z_v - max z) (0 <= gap <= log V). The smoothed target q = (1 - eps) one_hot + eps / V, the padding mask
and the mean over the non-padding targets are right.

Style: NumPy in float64 (a ``log_softmax`` helper, ``np.eye`` one-hots, boolean row selection);
label_smoothed_loss only.
"""

import numpy as np

from conformance import Conventions


def log_softmax(z):
    return z - z.max(axis=-1, keepdims=True)


class NumpySmoothing:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = np.asarray(logits, dtype=np.float64)
        targets = np.asarray(targets, dtype=np.int64)
        keep = targets != pad_id
        z, t = logits[keep], targets[keep]
        V = logits.shape[-1]
        q = (1.0 - epsilon) * np.eye(V)[t] + epsilon / V
        return float(-(q * log_softmax(z)).sum(axis=-1).mean())


adapter = NumpySmoothing()
