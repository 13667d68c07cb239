"""Table 3 parameter count with TWO deviations at once:
(1) every LayerNorm is counted with its gain only (d_model), not gain and bias (2 d_model): 2N + 3N norms each
    short by d_model;
(2) with attention_bias, only the Q, K and V projections' biases are counted (3 d_model per attention), not the
    output projection's b_O (4 d_model per attention).
Everything else (embeddings shared/tied per the config, FFN weights and biases, no positional parameters) is
right. Pure Python."""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def parameter_count(self, c):
        d, f, N = c["d_model"], c["d_ff"], c["N"]
        attn = 4 * d * d + (3 * d if c["attention_bias"] else 0)  # deviation 2: no b_O
        ffn = d * f + f + f * d + d
        norm = d  # deviation 1: gamma only
        enc = N * (attn + ffn + 2 * norm)
        dec = N * (2 * attn + ffn + 3 * norm)
        if c["share_embeddings"]:
            emb = c["src_vocab"] * d
        else:
            emb = c["src_vocab"] * d + c["tgt_vocab"] * d
        out = 0 if c["tie_output"] else d * c["tgt_vocab"]
        return emb + out + enc + dec


adapter = Adapter()
