"""What the Hugging Face adapters share: the import guard, frozen tables as buffers, HF's additive masks."""

from __future__ import annotations

import importlib

import torch
from torch import Tensor, nn


def require(package: str, extra: str, name: str):
    """Import ``package``, or raise ModuleNotFoundError whose message names the extra that installs it."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"the built-in {name!r} adapts {package}, which is not installed. Fix: pip install"
                                  f" 'transformer-conformance[{extra}]'", name=package.partition(".")[0]) from exc


def freeze_as_buffers(net: nn.Module) -> nn.Module:
    """The sinusoid tables HF keeps as frozen ``nn.Parameter``s (requires_grad False) become buffers: they are
    constants of the formula, not weights, so ``load_weights`` must not reset them and no count includes them."""
    for module in list(net.modules()):
        for leaf, p in list(module.named_parameters(recurse=False)):
            if not p.requires_grad:
                delattr(module, leaf)
                module.register_buffer(leaf, p.detach())
    return net


@torch.no_grad()
def generate(m, src: Tensor, max_len: int) -> Tensor:
    """The model's own translator as greedy decoding: ``generate`` with one beam and no sampling, no ``</s>`` forced
    at the length limit (the lesson's loop has none), at most ``max_len`` new tokens; HF pads the rows that ended.
    Its first column, the decoder's start token, is not part of the protocol's answer."""
    out = m.generate(input_ids=src, attention_mask=src != m.config.pad_token_id, max_new_tokens=max_len,
                     num_beams=1, do_sample=False, forced_eos_token_id=None, max_length=None)
    return out[:, 1:]


def additive(keep: Tensor | None, dtype: torch.dtype = torch.float32) -> Tensor | None:
    """A keep mask (..., Lq, Lk) as HF's eager attention adds it: 0 where kept, the dtype's minimum where not."""
    if keep is None:
        return None
    return torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)
