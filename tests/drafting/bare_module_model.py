"""(o) A composition constructor annotated with nn.Module itself (The Annotated Transformer's EncoderDecoder style):
the annotation says a module goes there, not which."""

from torch import nn


class Encoder(nn.Module):
    def __init__(self, d_model: int, num_layers: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(num_layers))


class EncoderDecoder(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: nn.Module, generator: nn.Module):
        super().__init__()
        self.encoder, self.decoder, self.generator = encoder, decoder, generator
