"""Table 3 parameter count whose loops over the layers run ``range(1, N)`` (layers numbered from 1, as the paper
numbers them, with the upper bound left at N): each stack is counted with N - 1 layers, so one encoder layer and
one decoder layer are missing from the total (for the base model, 3,150,336 + 4,199,936 = 7,350,272 too few: 4 d^2
+ 2 d d_ff + d_ff + 5 d for the encoder layer, 8 d^2 + 2 d d_ff + d_ff + 7 d for the decoder layer, without
attention biases; 4 d and 8 d more with them), where the paper's encoder and decoder are stacks of N identical
layers each. With N = 1 no layer is counted. The embeddings, the output projection and each layer's own count are
right.

Style: pure Python, a dict of per-module counts filled by numbered loops and summed; parameter_count only.
"""

from conformance import Conventions


def attention(d, bias):
    return 4 * d * d + (4 * d if bias else 0)


def ffn(d, d_ff):
    return d * d_ff + d_ff + d_ff * d + d


def norm(d):
    return 2 * d


class ModuleCounts:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def parameter_count(self, config):
        d, d_ff, N, bias = config["d_model"], config["d_ff"], config["N"], config["attention_bias"]
        counts = {}
        if config["share_embeddings"]:
            counts["embedding"] = config["src_vocab"] * d
        else:
            counts["src_embedding"] = config["src_vocab"] * d
            counts["tgt_embedding"] = config["tgt_vocab"] * d
        if not config["tie_output"]:
            counts["generator"] = d * config["tgt_vocab"]
        for layer in range(1, N):
            counts[f"encoder.layer{layer}"] = attention(d, bias) + ffn(d, d_ff) + 2 * norm(d)
        for layer in range(1, N):
            counts[f"decoder.layer{layer}"] = 2 * attention(d, bias) + ffn(d, d_ff) + 3 * norm(d)
        return int(sum(counts.values()))


adapter = ModuleCounts()
