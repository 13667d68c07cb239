"""Adapter draft for config_model.ConfiguredTransformer.

Finished: its one TODO (max_len=1024, a length no config key gives) checked and deleted.

Written by `transformer-conformance template --from config_model:ConfiguredTransformer` from the parameters' names
and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:
    transformer-conformance certify my_adapter.py --json report.json --html report.html
Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...): docs/walkthrough.md.
"""

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

from config_model import TranslationConfig, ConfiguredTransformer

NAMES = {
    "E_src": "src_embed.weight",
    "E_tgt": "tgt_embed.weight",
    "W_out": "generator.weight",
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


def module(c):
    # ConfiguredTransformer(config) takes a config object: built here from the suite's sizes
    model_config = TranslationConfig(src_vocab_size=c.src_vocab, tgt_vocab_size=c.tgt_vocab, max_len=1024,
                                     d_model=c.d_model, n_heads=c.h, d_ff=c.d_ff, n_layers=c.N, dropout=c.dropout,
                                     pad_token_id=c.pad_id)
    return ConfiguredTransformer(model_config)


adapter = TorchAdapter(
    module, names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-05,), "attention_bias": (True,), "share_embeddings": (False,), "tie_output": (False,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the attention projections always carry biases",
                 "share_embeddings": "separate source and target tables",
                 "tie_output": "the output projection is a matrix of its own"}),
)
