"""Decoder self-attention without the future mask (only the target padding is blocked), sequence-first fused-QKV
torch blocks; model only."""

from _fused import model_only

from conformance.implementations.variants.fused_qkv_model import DecoderBlock, Seq2SeqTransformer, _key_blocked


class Unmasked(DecoderBlock):
    def forward(self, y, memory, tgt_pad, src_pad):
        y = self.norm1(y + self.drop(self.self_attn(y, y, y, _key_blocked(tgt_pad))))  # the bug: no triu(1)
        y = self.norm2(y + self.drop(self.cross_attn(y, memory, memory, _key_blocked(src_pad))))
        return self.norm3(y + self.drop(self.ffn(y)))


class Model(Seq2SeqTransformer):
    def __init__(self, cfg):
        super().__init__(cfg)
        for i, block in enumerate(self.decoder):
            unmasked = Unmasked(cfg.d_model, cfg.h, cfg.d_ff, cfg.eps, cfg.dropout, cfg.attention_bias)
            unmasked.load_state_dict(block.state_dict())
            self.decoder[i] = unmasked


adapter = model_only(Model, "heldout:fused_no_future_mask")
