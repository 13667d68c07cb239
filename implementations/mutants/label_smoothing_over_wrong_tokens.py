"""Label smoothing puts eps / (V - 1) on each wrong token and exactly 1 - eps on the right one.

A documented alternative convention (Szegedy et al. spread over the other classes), but not what
the lesson and PyTorch compute (§5.4 as the lesson states it: q(k) = (1 - eps)[k = right] + eps / V).
The published target 0.9077 becomes 0.9000, and the floor 0.537 becomes 0.5448.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class OverWrongTokens(NumpyAdapter):
    def smoothed_target(self, targets, V, epsilon, pad_id):
        q = np.full((len(targets), V), epsilon / (V - 1))  # the bug: V - 1 wrong tokens share eps ...
        q[np.arange(len(targets)), targets] = 1.0 - epsilon  # ... and the right one gets 1 - eps alone
        return q


adapter = OverWrongTokens()
