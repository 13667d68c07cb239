"""Table 3 parameter count that sizes the FFN's inner bias b1 as d_model instead of d_ff (both biases counted as
d_model): (d_ff - d_model) * 2N too few (18,432 for the base model). The count written as a dot product of
coefficients and sizes with NumPy."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def parameter_count(self, config):
        d, f, N = config["d_model"], config["d_ff"], config["N"]
        bias = 1 if config["attention_bias"] else 0
        # per layer: [attention matrices, attention biases, FFN matrices, FFN biases, LayerNorm vectors]
        sizes = np.array([d * d, d, d * f, d, d])  # the bug: the FFN biases are b1 (d_ff) + b2 (d_model)
        encoder = np.array([4, 4 * bias, 2, 2, 2]) @ sizes
        decoder = np.array([8, 8 * bias, 2, 2, 6]) @ sizes
        tables = config["src_vocab"] * d + (0 if config["share_embeddings"] else config["tgt_vocab"] * d)
        output = 0 if config["tie_output"] else d * config["tgt_vocab"]
        return int(N * (encoder + decoder) + tables + output)


adapter = Adapter()
