"""Table 3 parameter count that gives every head its own d_model x d_model query, key and value matrices: each
attention counts 3 * h * d_model^2 + d_model^2 weights (plus its biases), where the paper's head i has
W_i^Q, W_i^K in R^(d_model x d_k) and W_i^V in R^(d_model x d_v) with d_k = d_v = d_model / h, 3 * d_model^2 in all
per attention (+ d_model^2 for W^O). Too many by 3 (h - 1) d_model^2 per attention sublayer; right only for h = 1.

Style: pure Python, the count summed from a per-module table of shapes; parameter_count only.
"""

from conformance import Conventions


def shapes(c):
    d, f, h = c["d_model"], c["d_ff"], c["h"]
    attention = [(d, d)] * (3 * h) + [(d, d)]  # the bug: each head's W_Q, W_K, W_V counted d_model x d_model
    if c["attention_bias"]:
        attention += [(d,)] * 4
    ffn = [(d, f), (f,), (f, d), (d,)]
    norm = [(d,), (d,)]
    encoder = attention + norm + ffn + norm
    decoder = attention + norm + attention + norm + ffn + norm
    tables = [(c["src_vocab"], d)] if c["share_embeddings"] else [(c["src_vocab"], d), (c["tgt_vocab"], d)]
    if not c["tie_output"]:
        tables.append((d, c["tgt_vocab"]))
    return tables + encoder * c["N"] + decoder * c["N"]


def size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Table:
    conventions = Conventions(mask="keep", dtype="float64", framework="pure python")

    def parameter_count(self, config):
        return sum(size(s) for s in shapes(config))


adapter = Table()
