"""Adapter draft for bias_free_model.BiasFreeTransformer.

Written by `transformer-conformance template --from bias_free_model:BiasFreeTransformer` from the parameters' names
and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:
    transformer-conformance certify my_adapter.py --json report.json --html report.html
Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...): docs/walkthrough.md.
"""

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

from bias_free_model import BiasFreeTransformer

NAMES = {
    "E": "embedding.weight",
    "*.{l}.self_attn.W_Q": "*.{l}.self_attn.q_proj.weight",
    "*.{l}.self_attn.W_K": "*.{l}.self_attn.k_proj.weight",
    "*.{l}.self_attn.W_V": "*.{l}.self_attn.v_proj.weight",
    "*.{l}.self_attn.W_O": "*.{l}.self_attn.out_proj.weight",
    "*.{l}.norm1": "*.{l}.norm1",
    "*.{l}.norm2": "*.{l}.norm2",
    "*.{l}.ffn.W1": "*.{l}.feed_forward.fc1.weight",
    "*.{l}.ffn.W2": "*.{l}.feed_forward.fc2.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.{l}.cross_attn.q_proj.weight",
    "decoder.{l}.cross_attn.W_K": "decoder.{l}.cross_attn.k_proj.weight",
    "decoder.{l}.cross_attn.W_V": "decoder.{l}.cross_attn.v_proj.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.{l}.cross_attn.out_proj.weight",
    "decoder.{l}.norm3": "decoder.{l}.norm3",
}

adapter = TorchAdapter(
    lambda c: BiasFreeTransformer(vocab_size=c.src_vocab, d_model=c.d_model, n_heads=c.h, d_ff=c.d_ff, n_layers=c.N,
                                  dropout=c.dropout, pad_id=c.pad_id), names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-05,), "attention_bias": (False,), "share_embeddings": (True,), "tie_output": (True,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the attention projections never carry biases",
                 "share_embeddings": "one vocabulary and one table",
                 "tie_output": "one vocabulary and one table"}),
)
