"""The adapter of my_transformer.Transformer: the template's draft, its TODOs resolved, five parts added."""

import torch

from conformance import Conventions
from conformance.adapters import sub_names
from conformance.adapters.torch import TorchModel, floats, load_component, mask, numpy, seeded
from my_transformer import DecoderLayer, EncoderLayer, FeedForwardBlock, MultiHeadBlock, Transformer
from my_transformer import positional_encoding, rate, subsequent_mask

NAMES = {
    "E": "embedding.weight",
    "encoder.{l}.self_attn.W_QKV": "encoder.{l}.attention.qkv.weight",
    "encoder.{l}.self_attn.W_O": "encoder.{l}.attention.out.weight",
    "encoder.{l}.norm1": "encoder.{l}.attention.norm",
    "encoder.{l}.norm2": "encoder.{l}.feed_forward.norm",
    "*.{l}.ffn.W1": "*.{l}.feed_forward.fc1.weight",
    "*.{l}.ffn.W2": "*.{l}.feed_forward.fc2.weight",
    "decoder.{l}.self_attn.W_QKV": "decoder.{l}.self_attention.qkv.weight",
    "decoder.{l}.self_attn.W_O": "decoder.{l}.self_attention.out.weight",
    "decoder.{l}.norm1": "decoder.{l}.self_attention.norm",
    "decoder.{l}.cross_attn.W_Q": "decoder.{l}.cross_attention.q.weight",
    "decoder.{l}.cross_attn.W_KV": "decoder.{l}.cross_attention.kv.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.cross_attention.out.weight",
    "decoder.{l}.norm2": "decoder.{l}.cross_attention.norm",
    "decoder.{l}.norm3": "decoder.{l}.feed_forward.norm",
}
ATTENTION = {
    "encoder.{l}.self_attn": "encoder.{l}.attention",
    "decoder.{l}.self_attn": "decoder.{l}.self_attention",
    "decoder.{l}.cross_attn": "decoder.{l}.cross_attention",
}
# The same names for one block or layer built alone (its weights come without the layer prefix).
BLOCK = {"self": sub_names(NAMES, "encoder.{l}.self_attn.", "encoder.{l}.attention.") | {"norm": "norm"},
         "cross": sub_names(NAMES, "decoder.{l}.cross_attn.", "decoder.{l}.cross_attention.") | {"norm": "norm"},
         "ffn": sub_names(NAMES, "encoder.{l}.ffn.", "encoder.{l}.feed_forward.") | {"norm": "norm"}}
LAYER = {stack: sub_names(NAMES, f"{stack}.{{l}}.", f"{stack}.{{l}}.") for stack in ("encoder", "decoder")}


def keys(keep):  # (B, L) key padding -> the model's (B, 1, 1, L)
    return mask(keep)[:, None, None]


class Adapter:
    conventions = Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-06,), "attention_bias": (True,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the projections always carry biases",
                 "share_embeddings": "one vocabulary and one table",
                 "tie_output": "one vocabulary and one table"},
    )
    model_class = TorchModel

    def build_model(self, config, seed):
        with seeded(seed):
            net = Transformer(vocab_size=config["src_vocab"], d_model=config["d_model"], n_heads=config["h"],
                              d_ff=config["d_ff"], n_layers=config["N"], dropout=config["dropout"],
                              pad_idx=config["pad_id"])
        return TorchModel(net, config, names=NAMES, attention=ATTENTION, seed=seed)

    def positional_encoding(self, n, d_model):
        return numpy(positional_encoding(n, d_model))

    def learning_rate(self, step, d_model, warmup):
        return rate(step, d_model, warmup)

    def parameter_count(self, config):
        with torch.device("meta"):  # shapes only
            return sum(p.numel() for p in self.build_model(config, 0).module.parameters())

    @torch.no_grad()
    def attention_sublayer(self, x, memory, weights, h, eps, keep):
        cross = memory is not None
        block = MultiHeadBlock(len(weights["W_O"]), h, 0.0, cross=cross)
        block = load_component(block, weights, BLOCK["cross" if cross else "self"])
        return numpy(block(floats(x), mask(keep)[:, None], floats(memory) if cross else None))

    @torch.no_grad()
    def ffn_sublayer(self, x, weights, eps):
        return numpy(load_component(FeedForwardBlock(*weights["W1"].shape, 0.0), weights, BLOCK["ffn"])(floats(x)))

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        layer = load_component(EncoderLayer(len(weights["ffn.W1"]), h, weights["ffn.W1"].shape[1], 0.0),
                               weights, LAYER["encoder"])
        return numpy(layer(floats(x), keys(src_mask)))

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        layer = load_component(DecoderLayer(len(weights["ffn.W1"]), h, weights["ffn.W1"].shape[1], 0.0),
                               weights, LAYER["decoder"])
        causal = keys(tgt_mask) & subsequent_mask(tgt_mask.shape[1])
        return numpy(layer(floats(y), floats(memory), keys(src_mask), causal))


adapter = Adapter()
