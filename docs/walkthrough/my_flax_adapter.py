"""Adapter of my_flax_transformer.Transformer: the template's draft, its TODOs resolved."""

from conformance import Conventions
from conformance.adapters.jax import JaxAdapter

from my_flax_transformer import Transformer

NAMES = {
    "E": "embed.embedding",
    "encoder.{l}.self_attn.W_Q": "encoder.{l}.attn.query.kernel",
    "encoder.{l}.self_attn.W_K": "encoder.{l}.attn.key.kernel",
    "encoder.{l}.self_attn.W_V": "encoder.{l}.attn.value.kernel",
    "encoder.{l}.self_attn.W_O": "encoder.{l}.attn.out.kernel",
    "encoder.{l}.self_attn.b_Q": "encoder.{l}.attn.query.bias",
    "encoder.{l}.self_attn.b_K": "encoder.{l}.attn.key.bias",
    "encoder.{l}.self_attn.b_V": "encoder.{l}.attn.value.bias",
    "encoder.{l}.self_attn.b_O": "encoder.{l}.attn.out.bias",
    "encoder.{l}.norm1.gamma": "encoder.{l}.ln_attn.scale",
    "encoder.{l}.norm1.beta": "encoder.{l}.ln_attn.bias",
    "encoder.{l}.norm2.gamma": "encoder.{l}.ln_mlp.scale",
    "encoder.{l}.norm2.beta": "encoder.{l}.ln_mlp.bias",
    "*.{l}.ffn.W1": "*.{l}.mlp.wi.kernel",
    "*.{l}.ffn.b1": "*.{l}.mlp.wi.bias",
    "*.{l}.ffn.W2": "*.{l}.mlp.wo.kernel",
    "*.{l}.ffn.b2": "*.{l}.mlp.wo.bias",
    "decoder.{l}.self_attn.W_Q": "decoder.{l}.self_attn.query.kernel",
    "decoder.{l}.self_attn.W_K": "decoder.{l}.self_attn.key.kernel",
    "decoder.{l}.self_attn.W_V": "decoder.{l}.self_attn.value.kernel",
    "decoder.{l}.self_attn.W_O": "decoder.{l}.self_attn.out.kernel",
    "decoder.{l}.self_attn.b_Q": "decoder.{l}.self_attn.query.bias",
    "decoder.{l}.self_attn.b_K": "decoder.{l}.self_attn.key.bias",
    "decoder.{l}.self_attn.b_V": "decoder.{l}.self_attn.value.bias",
    "decoder.{l}.self_attn.b_O": "decoder.{l}.self_attn.out.bias",
    "decoder.{l}.norm1.gamma": "decoder.{l}.ln_self.scale",
    "decoder.{l}.norm1.beta": "decoder.{l}.ln_self.bias",
    "decoder.{l}.cross_attn.W_Q": "decoder.{l}.cross_attn.query.kernel",
    "decoder.{l}.cross_attn.W_K": "decoder.{l}.cross_attn.key.kernel",
    "decoder.{l}.cross_attn.W_V": "decoder.{l}.cross_attn.value.kernel",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.cross_attn.out.kernel",
    "decoder.{l}.cross_attn.b_Q": "decoder.{l}.cross_attn.query.bias",
    "decoder.{l}.cross_attn.b_K": "decoder.{l}.cross_attn.key.bias",
    "decoder.{l}.cross_attn.b_V": "decoder.{l}.cross_attn.value.bias",
    "decoder.{l}.cross_attn.b_O": "decoder.{l}.cross_attn.out.bias",
    "decoder.{l}.norm2.gamma": "decoder.{l}.ln_cross.scale",
    "decoder.{l}.norm2.beta": "decoder.{l}.ln_cross.bias",
    "decoder.{l}.norm3.gamma": "decoder.{l}.ln_mlp.scale",
    "decoder.{l}.norm3.beta": "decoder.{l}.ln_mlp.bias",
}

adapter = JaxAdapter(
    lambda c, rngs: Transformer(vocab_size=c.src_vocab, d_model=c.d_model, num_heads=c.h, d_ff=c.d_ff, num_layers=c.N,
                                dropout_rate=c.dropout, pad_id=c.pad_id, rngs=rngs), names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="jax", arrays="jax",
        supports={"eps": (1e-06,), "attention_bias": (True,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "every LayerNorm is nnx.LayerNorm(epsilon=1e-06)",
                 "attention_bias": "the attention's projections always carry biases",
                 "share_embeddings": "one embedding table for both sides",
                 "tie_output": "the logits come from the target table itself"}),
)
