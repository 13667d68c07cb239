"""Adapter draft for seq2seq_model.Seq2Seq.

Finished: encode and decode written from Seq2Seq.forward; the two LayerNorm guesses checked and deleted.

Written by `transformer-conformance template --from seq2seq_model:Seq2Seq` from the parameters' names
and shapes. Resolve each TODO (docs/walkthrough.md says how), then certify it:
    transformer-conformance certify my_adapter.py --json report.json --html report.html
Add the parts your code has (positional_encoding=, encoder_layer=Component(...), ...): docs/walkthrough.md.
"""

from conformance import Conventions
from conformance.adapters.torch import TorchAdapter

from seq2seq_model import Encoder, Decoder, Seq2Seq

NAMES = {
    "E_src": "encoder.tok_embedding.weight",
    "E_tgt": "decoder.tok_embedding.weight",
    "W_out": "decoder.fc_out.weight",
    "*.{l}.self_attn.W_Q": "*.layers.{l}.self_attention.fc_q.weight",
    "*.{l}.self_attn.W_K": "*.layers.{l}.self_attention.fc_k.weight",
    "*.{l}.self_attn.W_V": "*.layers.{l}.self_attention.fc_v.weight",
    "*.{l}.self_attn.W_O": "*.layers.{l}.self_attention.fc_o.weight",
    "*.{l}.norm1": "*.layers.{l}.self_attn_layer_norm",
    "encoder.{l}.norm2": "encoder.layers.{l}.ff_layer_norm",
    "*.{l}.ffn.W1": "*.layers.{l}.positionwise_feedforward.fc_1.weight",
    "*.{l}.ffn.W2": "*.layers.{l}.positionwise_feedforward.fc_2.weight",
    "decoder.{l}.cross_attn.W_Q": "decoder.layers.{l}.encoder_attention.fc_q.weight",
    "decoder.{l}.cross_attn.W_K": "decoder.layers.{l}.encoder_attention.fc_k.weight",
    "decoder.{l}.cross_attn.W_V": "decoder.layers.{l}.encoder_attention.fc_v.weight",
    "decoder.{l}.cross_attn.W_O": "decoder.layers.{l}.encoder_attention.fc_o.weight",
    "decoder.{l}.norm2": "decoder.layers.{l}.enc_attn_layer_norm",
    "decoder.{l}.norm3": "decoder.layers.{l}.ff_layer_norm",
}


def module(c):
    encoder = Encoder(input_dim=c.src_vocab, hid_dim=c.d_model, n_layers=c.N, n_heads=c.h, pf_dim=c.d_ff,
                      dropout=c.dropout, device="cpu")
    decoder = Decoder(output_dim=c.tgt_vocab, hid_dim=c.d_model, n_layers=c.N, n_heads=c.h, pf_dim=c.d_ff,
                      dropout=c.dropout, device="cpu")
    return Seq2Seq(encoder, decoder, src_pad_idx=c.pad_id, trg_pad_idx=c.pad_id, device="cpu")


def encode(m, src):
    return m.encoder(src, m.make_src_mask(src))


def decode(m, tgt_in, memory, src):
    return m.decoder(tgt_in, memory, m.make_trg_mask(tgt_in), m.make_src_mask(src))[0]


adapter = TorchAdapter(
    module, names=NAMES,
    conventions=Conventions(
        mask="keep", batch_first=True, framework="torch",
        supports={"eps": (1e-05,), "attention_bias": (True,), "share_embeddings": (False,), "tie_output": (False,)},
        reasons={"eps": "the LayerNorms' eps is fixed in the implementation",
                 "attention_bias": "the attention projections always carry biases",
                 "share_embeddings": "separate source and target tables",
                 "tie_output": "the output projection is a matrix of its own"}),
    model={"encode": encode, "decode": decode},
)
