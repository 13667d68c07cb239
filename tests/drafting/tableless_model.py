"""(j) A model whose built module holds no vocabulary table (its stacks given later, elsewhere): nothing in it says
how tables are tied."""

from torch import nn


class Tableless(nn.Module):
    def __init__(self, d_model=512, n_heads=8):
        super().__init__()
        self.mixer = nn.Linear(d_model, d_model)
