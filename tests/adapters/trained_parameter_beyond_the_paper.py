"""The reference with one parameter the paper does not have, a learned logit offset outside the canonical names (as
an output bias or learned positions are): load_weights sets it to its identity value 0, a training step moves it.
Its dropout is the paper's; only a twin that copies canonical weights alone would tell the models apart."""

from conformance.implementations.reference.adapter import ReferenceAdapter


class WithOffset:
    def __init__(self, inner):
        self._inner, self.offset = inner, 0.0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def load_weights(self, weights):
        self.offset = 0.0  # no canonical name: its identity value
        return self._inner.load_weights(weights)

    def train_step(self, *batch):
        self.offset += 0.25  # learned
        return self._inner.train_step(*batch)

    def forward(self, src, tgt_in):
        return self._inner.forward(src, tgt_in) + self.offset


class TrainedParameterBeyondThePaper(ReferenceAdapter):
    def build_model(self, config, seed):
        return WithOffset(super().build_model(config, seed))


adapter = TrainedParameterBeyondThePaper()
