"""Table 3 parameter count that counts each LayerNorm as d_model parameters (its gain gamma only; the shift beta
forgotten), where each of the paper's LayerNorms has a gain and a bias of d_model each, 2 * d_model: the count is
d_model too small per LayerNorm, 5 N d_model in all (two norms per encoder layer, three per decoder layer): 15,360
too few for the base model (N = 6, d_model = 512). The embeddings, the attention projections (with or without
biases), the FFNs and the output matrix are counted right.

Style: pure Python, a list of (module, count) rows built by small helper functions, then summed;
parameter_count only.
"""

from conformance import Conventions


def attention_rows(prefix, d, bias):
    rows = [(f"{prefix}.W_{n}", d * d) for n in "QKVO"]
    return rows + ([(f"{prefix}.b_{n}", d) for n in "QKVO"] if bias else [])


def ffn_rows(prefix, d, d_ff):
    return [(f"{prefix}.W1", d * d_ff), (f"{prefix}.b1", d_ff), (f"{prefix}.W2", d_ff * d), (f"{prefix}.b2", d)]


def norm_rows(prefix, d):
    return [(f"{prefix}.gamma", d)]


class RowCount:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def parameter_count(self, config):
        d, d_ff, N, bias = config["d_model"], config["d_ff"], config["N"], config["attention_bias"]
        rows = []
        if config["share_embeddings"]:
            rows.append(("E", config["src_vocab"] * d))
        else:
            rows += [("E_src", config["src_vocab"] * d), ("E_tgt", config["tgt_vocab"] * d)]
        if not config["tie_output"]:
            rows.append(("W_out", d * config["tgt_vocab"]))
        for l in range(N):
            rows += attention_rows(f"encoder.{l}.self_attn", d, bias) + norm_rows(f"encoder.{l}.norm1", d)
            rows += ffn_rows(f"encoder.{l}.ffn", d, d_ff) + norm_rows(f"encoder.{l}.norm2", d)
        for l in range(N):
            rows += attention_rows(f"decoder.{l}.self_attn", d, bias) + norm_rows(f"decoder.{l}.norm1", d)
            rows += attention_rows(f"decoder.{l}.cross_attn", d, bias) + norm_rows(f"decoder.{l}.norm2", d)
            rows += ffn_rows(f"decoder.{l}.ffn", d, d_ff) + norm_rows(f"decoder.{l}.norm3", d)
        return int(sum(count for _, count in rows))


adapter = RowCount()
