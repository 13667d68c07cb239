"""No label smoothing: the loss is the plain cross-entropy of the right token, whatever eps.

Violates §5.4: "During training, we employed label smoothing of value eps_ls = 0.1"; the lesson's target
q(k) = (1 - eps)[k = right] + eps / n_vocab, whose floor is 0.537 for 13 tokens. A loss written as
``nn.CrossEntropyLoss(ignore_index=PAD)`` without ``label_smoothing=`` ignores eps: 0 for a sure model.
"""


from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class WithoutSmoothing(NumpyAdapter):
    def smoothed_target(self, targets, V, epsilon, pad_id):
        return super().smoothed_target(targets, V, 0.0, pad_id)  # the bug: eps never used


adapter = WithoutSmoothing()
