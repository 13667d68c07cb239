"""Helpers for writing an adapter around real code; importing this package needs no torch.

* ``conformance.adapters.names``: name maps, canonical names -> an implementation's parameter paths
  (``NameMap``, ``sub_names``), with fused projections and copies of a shared table, and what a model's map
  implies (``module_of``, ``layer_names``, ``sublayer_names``, ``attention_modules``);
* ``conformance.adapters.propose``: ``propose_mapping``, a draft name map from parameter names and shapes;
* ``conformance.adapters.draft`` and ``construct``: ``template --from``, a whole adapter drafted from any ``nn.Module``
  class or factory (its construction from the config planned argument by argument, its declarations read off a
  model it builds);
* ``conformance.adapters.convert``: a KL or summed loss and a LambdaLR schedule in the protocol's terms;
* ``conformance.adapters.pytrees``: a name map over a flattened parameter tree (path -> array), for frameworks
  without ``nn.Module``s: (in, out) kernels, per-head kernels, fused projections;
* ``conformance.adapters.jax`` (imports JAX): ``flatten`` a pytree by dotted path, ``FlaxModel`` and ``JaxAdapter``
  around any Flax NNX encoder-decoder, and (``draft_jax``) ``template --from`` a Flax NNX class;
* ``conformance.adapters.torch`` (imports torch): ``TorchAdapter``, a whole adapter declared (its parts as
  functions on tensors and ``Component``s), ``TorchModel``, a whole ``Model`` around any ``nn.Module``
  encoder-decoder, and ``load_component`` for the layer parts.

docs/adapter-protocol.md, "A contract for real code", and docs/walkthrough.md show them at work.
"""

from conformance.adapters.convert import (
    cross_entropy_from_kl,
    mean_from_sum,
    rate_from_lambda_lr,
    smoothed_target_entropy,
)
from conformance.adapters.names import NameMap, NameMapError, sub_names

__all__ = ["NameMap", "NameMapError", "cross_entropy_from_kl", "mean_from_sum", "rate_from_lambda_lr",
           "smoothed_target_entropy", "sub_names"]
