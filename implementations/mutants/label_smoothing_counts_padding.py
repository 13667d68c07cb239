"""The smoothed loss averages over every target, padding included.

Violates §5.4 as the lesson trains: nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
ignores padding targets, so padded positions neither add loss nor dilute the mean.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class CountsPadding(NumpyAdapter):
    def reduce_loss(self, per_token, targets, pad_id):
        return float(per_token.mean())  # the bug: no ignore_index


adapter = CountsPadding()
