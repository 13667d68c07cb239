"""Adapter draft for untied_model.UntiedTransformer.

Written by `transformer-conformance template --from untied_model:UntiedTransformer` from the parameters' names
and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:
    transformer-conformance certify my_adapter.py --json report.json --html report.html
Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...): docs/walkthrough.md.
"""

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

from untied_model import UntiedTransformer

NAMES = {
    "E_src": "src_tok.weight",
    "E_tgt": "tgt_tok.weight",
    "W_out": "to_logits.weight",
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
    lambda c: UntiedTransformer(src_vocab_size=c.src_vocab, tgt_vocab_size=c.tgt_vocab, d_model=c.d_model,
                                nhead=c.h, dim_feedforward=c.d_ff, num_layers=c.N, dropout=c.dropout,
                                pad_idx=c.pad_id), names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-05,), "attention_bias": (True,), "share_embeddings": (False,), "tie_output": (False,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the attention projections always carry biases",
                 "share_embeddings": "separate source and target tables",
                 "tie_output": "the output projection is a matrix of its own"}),
)
