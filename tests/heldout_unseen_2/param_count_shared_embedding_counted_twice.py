"""Table 3 parameter count that counts a shared embedding table twice: it always adds src_vocab * d_model for the
source embedding and tgt_vocab * d_model for the target embedding, even when the configuration shares one table E
between them (share_embeddings true), where the paper's model shares the same weight matrix between the two
embedding layers and the pre-softmax linear transformation (§3.4): one V x d_model matrix. With the lesson's
37,000-token vocabulary and d_model 512 the count is 37,000 x 512 = 18,944,000 too many. Separate tables, an untied
output matrix, the layers, the biases and the norms are counted right.

Style: pure Python arithmetic (a dict of per-module counts summed), no framework; parameter_count only.
"""

from conformance import Conventions


def _attention(d, bias):
    return 4 * d * d + (4 * d if bias else 0)


def _ffn(d, d_ff):
    return d * d_ff + d_ff + d_ff * d + d


class ArithmeticCount:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def parameter_count(self, config):
        d, d_ff, N = config["d_model"], config["d_ff"], config["N"]
        bias = config["attention_bias"]
        norm = 2 * d
        parts = {
            "source embedding": config["src_vocab"] * d,
            "target embedding": config["tgt_vocab"] * d,
            "output": 0 if config["tie_output"] else d * config["tgt_vocab"],
            "encoder": N * (_attention(d, bias) + _ffn(d, d_ff) + 2 * norm),
            "decoder": N * (2 * _attention(d, bias) + _ffn(d, d_ff) + 3 * norm),
        }
        return int(sum(parts.values()))


adapter = ArithmeticCount()
