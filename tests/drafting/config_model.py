"""(a) A model built from one config dataclass, as Hugging Face-style code does, whose config has a field no
suite key names (``max_len``, required), two vocabularies and a generator of its own; and a factory function."""

from dataclasses import dataclass

from drafting_blocks import Stacks
from torch import nn


@dataclass
class TranslationConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    max_len: int
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_layers: int = 6
    dropout: float = 0.1
    pad_token_id: int = 0


class ConfiguredTransformer(Stacks):
    def __init__(self, config: TranslationConfig):
        super().__init__(config.d_model, config.n_heads, config.d_ff, config.n_layers, config.dropout,
                         config.pad_token_id, max_len=config.max_len)
        self.src_embed = nn.Embedding(config.src_vocab_size, config.d_model)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.d_model)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)

    def encode(self, src):
        return self.run_encoder(self.embed(self.src_embed, src), src)

    def decode(self, tgt, memory, src):
        return self.generator(self.run_decoder(self.embed(self.tgt_embed, tgt), memory, tgt, src))


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
    """The Annotated Transformer's way: a function builds the model."""
    return ConfiguredTransformer(TranslationConfig(src_vocab, tgt_vocab, 256, d_model, h, d_ff, N, dropout))
