"""Constructors no config key fully names: an argument only a person can give (the draft still reads the name map
off a model built with None for it), and one the model cannot be built without (the draft is a skeleton)."""

from drafting_blocks import Stacks
from torch import nn


class NeedsTokenizer(Stacks):
    """Keeps a tokenizer it does not need to be built."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, tokenizer, dropout=0.1):
        super().__init__(d_model, n_heads, d_ff, n_layers, dropout, pad_id=0)
        self.tokenizer = tokenizer
        self.embedding = nn.Embedding(vocab_size, d_model)


class NeedsSpecialTokens(Stacks):
    """Sizes its table from its special tokens: nothing is built without them."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, special_tokens, dropout=0.1):
        super().__init__(d_model, n_heads, d_ff, n_layers, dropout, pad_id=special_tokens["<pad>"])
        self.embedding = nn.Embedding(vocab_size, d_model)
