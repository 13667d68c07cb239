"""Adapters built on PyTorch's own ``torch.nn.Transformer``: the lesson's "Our code equals PyTorch's
nn.Transformer" and its "Common mistake", as two built-in implementations.

``adapter.py`` holds both (built-ins ``torch-nn-transformer`` and ``torch-nn-transformer-fixed``):
``torch_nn_default`` keeps nn.Transformer's defaults (an extra final LayerNorm after each stack, the
eval-mode nested-tensor fast path) and is expected to fail the model-level checks;
``torch_nn_fixed`` removes the final norms, switches the fast path off and keeps dropout where §5.4 puts it: it
computes the paper's model.
Nothing is imported here, so that listing the package does not import torch.
"""
