"""Model and training configurations, in the paper's symbols (Vaswani et al., 2017, Table 3 and §5).

`ModelConfig` is plain data: it crosses the adapter boundary as a dict (`as_dict`) so that an
implementation in any framework, or in another process, can build the model it describes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Recipe:
    """The paper's training recipe (§5.3, §5.4); the lesson's toy keeps it but for warmup 400."""

    warmup: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    label_smoothing: float = 0.1
    dropout: float = 0.1


@dataclass(frozen=True)
class ModelConfig:
    """One encoder-decoder Transformer.

    Vocabulary: the paper shares one vocabulary and one matrix E between the source embedding, the
    target embedding and the pre-softmax projection (§3.4). `share_embeddings=False` gives separate
    source and target tables (the lesson's German variant); `tie_output=False` adds an output matrix
    W_out of its own. Token ids `pad_id`, `bos_id`, `eos_id` are part of the config because the
    model derives its padding masks from `pad_id`.
    """

    src_vocab: int
    tgt_vocab: int
    d_model: int = 512
    h: int = 8
    d_ff: int = 2048
    N: int = 6
    dropout: float = 0.1
    eps: float = 1e-5  # LayerNorm epsilon, inside the square root (PyTorch's default)
    attention_bias: bool = True  # the lesson's 63,082,496 counts them; the paper's formulas have none
    share_embeddings: bool = True
    tie_output: bool = True
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    recipe: Recipe = field(default_factory=Recipe)

    def __post_init__(self):
        if self.d_model % self.h:
            raise ValueError(f"d_model={self.d_model} must be divisible by h={self.h}")
        if self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even for the sinusoidal encoding (§3.5)")
        if self.share_embeddings and self.src_vocab != self.tgt_vocab:
            raise ValueError("share_embeddings=True needs src_vocab == tgt_vocab")

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        data = dict(data)
        recipe = data.pop("recipe", None)
        if isinstance(recipe, dict):
            recipe = Recipe(**{**recipe, "adam_betas": tuple(recipe.get("adam_betas", (0.9, 0.98)))})
        return cls(**data, recipe=recipe or Recipe())

    def replace(self, **changes) -> ModelConfig:
        return dataclasses.replace(self, **changes)


def base_config(**changes) -> ModelConfig:
    """The paper's base model (Table 3) with the lesson's assumed shared vocabulary of 37,000."""
    return ModelConfig(**{"src_vocab": 37000, "tgt_vocab": 37000, **changes})


def toy_config(**changes) -> ModelConfig:
    """The lesson's reversal toy: 13 tokens (pad 0, <s> 1, </s> 2, a..j 3..12), 2 + 2 layers."""
    defaults = dict(src_vocab=13, tgt_vocab=13, d_model=64, h=4, d_ff=256, N=2, recipe=Recipe(warmup=400))
    return ModelConfig(**{**defaults, **changes})


def german_config(**changes) -> ModelConfig:
    """The lesson's "Your turn": separate 32,000-token vocabularies, target embedding tied to the output."""
    return ModelConfig(**{"src_vocab": 32000, "tgt_vocab": 32000, "share_embeddings": False, **changes})
