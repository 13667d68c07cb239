"""Label smoothing as the annotated transformer writes it: eps / (V - 2) on each wrong token, 0 on the padding column.

Violates §5.4 as the lesson applies it: q(k) = (1 - eps)[k = right] + eps / V, "PyTorch spreads eps = 0.1
over all n_vocab tokens and puts the rest on the right one" (nn.CrossEntropyLoss(label_smoothing=0.1)).
The annotated transformer's ``LabelSmoothing`` fills eps / (V - 2), sets the padding column to 0 and
the right token to 1 - eps: the right token gets 0.9 instead of 0.9077 for V = 13.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class AnnotatedSmoothing(NumpyAdapter):
    def smoothed_target(self, targets, V, epsilon, pad_id):
        q = np.full((len(targets), V), epsilon / (V - 2))  # the bug: neither the right token nor padding
        if 0 <= pad_id < V:
            q[:, pad_id] = 0.0
        q[np.arange(len(targets)), targets] = 1.0 - epsilon
        return q


adapter = AnnotatedSmoothing()
