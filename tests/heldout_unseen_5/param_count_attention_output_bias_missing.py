"""Table 3 parameter count that counts each attention as PyTorch's packed ``nn.MultiheadAttention`` by hand and
forgets the output projection's bias: in_proj 3 d^2 (+ 3 d in_proj_bias) and out_proj d^2, but not out_proj.bias,
so with attention biases every attention module is counted with 4 d^2 + 3 d instead of 4 d^2 + 4 d: d_model too few
per attention, 3 N d_model in all (9,216 for the base model with biases: 6 encoder and 12 decoder attentions of
512), where the model has b_O in each of its 3 N attentions. Right without attention biases (the paper's formulas).
The embeddings, the output projection, the FFNs, the LayerNorms, the weight matrices and the number of layers are
right.

Style: pure Python, a function per module returning its count (named after the packed module's tensors); parameter_count
only.
"""

from conformance import Conventions


def multihead_attention(d, bias):
    in_proj = 3 * d * d + (3 * d if bias else 0)  # in_proj_weight, in_proj_bias
    out_proj = d * d  # out_proj.weight
    return in_proj + out_proj


def linear(n_in, n_out):
    return n_in * n_out + n_out


def layer_norm(d):
    return 2 * d


class Counter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def parameter_count(self, config):
        d, d_ff, N, bias = config["d_model"], config["d_ff"], config["N"], config["attention_bias"]
        ffn = linear(d, d_ff) + linear(d_ff, d)
        encoder_layer = multihead_attention(d, bias) + ffn + 2 * layer_norm(d)
        decoder_layer = 2 * multihead_attention(d, bias) + ffn + 3 * layer_norm(d)
        total = N * (encoder_layer + decoder_layer)
        total += config["src_vocab"] * d
        if not config["share_embeddings"]:
            total += config["tgt_vocab"] * d
        if not config["tie_output"]:
            total += d * config["tgt_vocab"]
        return int(total)


adapter = Counter()
