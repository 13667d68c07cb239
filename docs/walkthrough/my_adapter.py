"""The adapter of my_transformer.Transformer: the template's draft, its TODOs resolved, four parts added."""

from conformance import Conventions
from conformance.adapters.torch import Component, TorchAdapter
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

adapter = TorchAdapter(
    lambda c: Transformer(vocab_size=c.src_vocab, d_model=c.d_model, n_heads=c.h, d_ff=c.d_ff, n_layers=c.N,
                          dropout=c.dropout, pad_idx=c.pad_id), names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-06,), "attention_bias": (True,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the attention projections always carry biases",
                 "share_embeddings": "one vocabulary and one table",
                 "tie_output": "one vocabulary and one table"}),
    positional_encoding=positional_encoding, learning_rate=rate,
    supplied=("greedy_decode", "train_step"),  # my_transformer has no decoding loop and no trainer: the suite's
    # Each part: how to build your module from the weights' sizes, how to call it (masks: (B, L) keep -> yours).
    attention_sublayer=Component(lambda s: MultiHeadBlock(s.d_model, s.h, 0.0, cross=s.cross),
                                 lambda block, x, memory, keep: block(x, keep[:, None], memory)),
    ffn_sublayer=Component(lambda s: FeedForwardBlock(s.d_model, s.d_ff, 0.0)),
    encoder_layer=Component(lambda s: EncoderLayer(s.d_model, s.h, s.d_ff, 0.0),
                            lambda layer, x, keep: layer(x, keep[:, None, None])),
    decoder_layer=Component(lambda s: DecoderLayer(s.d_model, s.h, s.d_ff, 0.0), lambda layer, y, memory, tgt, src:
                            layer(y, memory, src[:, None, None], tgt[:, None, None] & subsequent_mask(y.shape[1]))),
)
