"""Table 3 parameter count that gives each decoder layer two LayerNorms (4 d_model parameters) instead of three
(6 d_model: after self-attention, cross-attention and the FFN): 2 * d_model * N too few (6,144 for the base model).
Pure Python, summed from a per-module table."""

from conformance import Conventions


def count(cfg):
    d, f, N = cfg["d_model"], cfg["d_ff"], cfg["N"]
    modules = {
        "attention": 4 * d * d + (4 * d if cfg["attention_bias"] else 0),
        "ffn": d * f + f + f * d + d,
        "norm": 2 * d,
    }
    encoder_layer = modules["attention"] + modules["ffn"] + 2 * modules["norm"]
    decoder_layer = 2 * modules["attention"] + modules["ffn"] + 2 * modules["norm"]  # the bug: 3 norms
    tables = cfg["src_vocab"] * d if cfg["share_embeddings"] else (cfg["src_vocab"] + cfg["tgt_vocab"]) * d
    output = 0 if cfg["tie_output"] else d * cfg["tgt_vocab"]
    return N * (encoder_layer + decoder_layer) + tables + output


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def parameter_count(self, config):
        return count(config)


adapter = Adapter()
