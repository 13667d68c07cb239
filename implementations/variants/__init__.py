"""Correct implementations written differently from the reference, so the suite is seen to accept them.

``fused_qkv_model``: PyTorch with one fused (d_model, 3 d_model) QKV projection, sequence-first tensors and
torch.nn's "blocked" mask polarity; ``fused_qkv`` is its adapter (built-in ``torch-fused-qkv``).
"""
