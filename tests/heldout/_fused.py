"""A model-only adapter of a sequence-first, fused-QKV torch model (``implementations/variants``'s layout, not the
reference's), for the held-out bugs that live in the model: each passes its own ``nn.Module`` subclass."""

from conformance.adapter import Conventions
from conformance.adapters.torch import TorchAdapter
from conformance.implementations.variants.fused_qkv import NAMES
from conformance.implementations.variants.fused_qkv_model import initialise


def model_only(module, name: str, *, supplied=("greedy_decode", "train_step"), **options) -> TorchAdapter:
    return TorchAdapter(module, names=NAMES, name=name,
                        conventions=Conventions(mask="blocked", batch_first=False, dtype="float32", framework="torch"),
                        init=lambda model, seed: initialise(model.views(), model.config.d_model, seed),
                        supplied=supplied, **options)
