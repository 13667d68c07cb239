"""A model-only adapter whose greedy decoding stops when every row has produced </s> but leaves a finished row's
later tokens as the model predicts them, where the paper's rows hold padding after </s> (no known bug: its answers
equal greedy_never_stops's wherever some row runs to max_len, so only a problem where every row ends tells them
apart). Built on the NumPy implementation; only ``build_model`` is offered."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter, NumpyModel


class Unpadded(NumpyModel):
    def greedy_decode(self, src, max_len):
        src = np.asarray(src, dtype=np.int64)
        memory = self.encode(src)
        generated = np.full((src.shape[0], 1), self.config.bos_id, dtype=np.int64)
        done = np.zeros(src.shape[0], dtype=bool)
        while generated.shape[1] <= max_len and not done.all():
            choice = self.decode(generated, memory, src)[:, -1, :].argmax(-1)  # no padding for the finished rows
            done = done | (choice == self.config.eos_id)
            generated = np.concatenate([generated, choice[:, None]], axis=1)
        return generated[:, 1:]


class Parts(NumpyAdapter):
    model_class = Unpadded


class Adapter:
    conventions = Parts.conventions

    def build_model(self, config, seed):
        return Parts().build_model(config, seed)


adapter = Adapter()
