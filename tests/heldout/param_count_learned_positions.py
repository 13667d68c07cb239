"""Parameter count that includes a learned position table of 512 rows per stack (an nn.Embedding(512, d) each),
summed module by module as a framework's parameter listing would."""

from conformance import Conventions


def modules(c):
    d, d_ff = c["d_model"], c["d_ff"]
    attention = 4 * d * d + (4 * d if c["attention_bias"] else 0)
    yield from [("src_tokens", c["src_vocab"] * d), ("src_positions", 512 * d), ("tgt_positions", 512 * d)]
    if not c["share_embeddings"]:
        yield "tgt_tokens", c["tgt_vocab"] * d
    for _ in range(c["N"]):
        yield from [("enc_attn", attention), ("enc_ffn", 2 * d * d_ff + d_ff + d), ("enc_norms", 4 * d)]
        yield from [("dec_attn", 2 * attention), ("dec_ffn", 2 * d * d_ff + d_ff + d), ("dec_norms", 6 * d)]
    if not c["tie_output"]:
        yield "generator", d * c["tgt_vocab"]


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def parameter_count(self, config):
        return sum(size for _, size in modules(config))


adapter = Adapter()
