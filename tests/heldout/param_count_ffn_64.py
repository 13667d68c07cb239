"""Parameter count with the feed-forward inner size fixed at 64 (a hard-coded hidden width), whatever d_ff."""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def parameter_count(self, config):
        d, N, V = config["d_model"], config["N"], config["src_vocab"]
        attention = 4 * d * d + (4 * d if config["attention_bias"] else 0)
        ffn = 2 * d * 64 + 64 + d
        layers = N * (attention + ffn + 4 * d) + N * (2 * attention + ffn + 6 * d)
        tables = V * d + (0 if config["share_embeddings"] else config["tgt_vocab"] * d)
        return layers + tables + (0 if config["tie_output"] else d * config["tgt_vocab"])


adapter = Adapter()
