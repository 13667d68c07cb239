"""Hidden keys' scores filled with -10 instead of -inf (a "large negative" that is not large), torch functional."""

import torch

from conformance import Conventions


class Adapter:
    conventions = Conventions(mask="blocked", dtype="float32", framework="torch")

    def scaled_dot_product_attention(self, q, k, v, blocked):
        q, k, v = (torch.from_numpy(t) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        if blocked is not None:
            s = s.masked_fill(torch.from_numpy(blocked), -10.0)
        p = s.softmax(-1)
        return (p @ v).numpy(), p.numpy()


adapter = Adapter()
