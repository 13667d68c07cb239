"""Adapter template: copy this file, fill in the parts your implementation has, delete the rest.

Run it with:  transformer-conformance certify path/to/my_adapter.py

For a PyTorch nn.Module, start from a draft instead: ``transformer-conformance template --from
my_module:MyTransformer > my_adapter.py`` writes the model side on ``conformance.adapters.torch.TorchModel``
with a proposed name map (docs/walkthrough.md).

Every value crossing the boundary is a numpy array or a Python scalar, both ways: convert your
tensors with ``tensor.detach().cpu().numpy()`` and build them with ``torch.from_numpy(array)``.
A part you delete is reported as "not implemented", never as a failure. The full contract, with
shapes, is in docs/adapter-protocol.md and conformance/adapter.py; canonical weight names are in
conformance/weights.py.
"""

import numpy as np

from conformance import Conventions


class MyAdapter:
    # What your code expects; the suite converts its inputs to match. mask: "keep" (True = may
    # attend), "blocked" (True = hidden, as torch.nn), or "additive" (0 / -inf floats).
    # If your code builds only some configurations, say which (docs/adapter-protocol.md, "Configurations
    # you support"), e.g. supports={"attention_bias": (True,), "eps": (1e-6,)}, reasons={...}; or raise
    # NotImplementedError("why") for the examples you cannot build: they are skipped, not failed.
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    def positional_encoding(self, n: int, d_model: int) -> np.ndarray:
        """(n, d_model): sine in even columns, cosine in odd columns, positions 0..n-1."""
        raise NotImplementedError

    def layer_norm(self, x, gamma, beta, eps: float) -> np.ndarray:
        """Normalise the last axis of x; same shape as x."""
        raise NotImplementedError

    def scaled_dot_product_attention(self, q, k, v, mask):
        """q (B, Lq, d_k), k (B, Lk, d_k), v (B, Lk, d_v), mask (B, Lq, Lk) or None -> (output, weights)."""
        raise NotImplementedError

    def multi_head_attention(self, query, key, value, weights: dict, h: int, mask):
        """weights: W_Q, W_K, W_V, W_O (d_model, d_model) as x @ W, biases b_Q.. if present.
        -> (output (B, Lq, d_model), weights (B, h, Lq, Lk))."""
        raise NotImplementedError

    def feed_forward(self, x, weights: dict) -> np.ndarray:
        """weights: W1 (d_model, d_ff), b1, W2 (d_ff, d_model), b2 -> (B, L, d_model)."""
        raise NotImplementedError

    def encoder_layer(self, x, weights: dict, h: int, eps: float, src_mask) -> np.ndarray:
        """weights: self_attn.*, norm1.*, ffn.*, norm2.*; src_mask (B, S) key padding."""
        raise NotImplementedError

    def decoder_layer(self, y, memory, weights: dict, h: int, eps: float, tgt_mask, src_mask) -> np.ndarray:
        """weights: self_attn.*, norm1.*, cross_attn.*, norm2.*, ffn.*, norm3.*; apply the causal mask yourself."""
        raise NotImplementedError

    # If your attention and FFN modules add the residual and apply the LayerNorm themselves, expose these
    # instead of multi_head_attention and feed_forward (their checks run only where those are missing).
    def attention_sublayer(self, x, memory, weights: dict, h: int, eps: float, mask) -> np.ndarray:
        """LayerNorm(x + MultiHead(x, kv, kv)), kv = memory (cross-attention) or x (memory None);
        weights: W_Q.. (b_Q..), norm.gamma, norm.beta."""
        raise NotImplementedError

    def ffn_sublayer(self, x, weights: dict, eps: float) -> np.ndarray:
        """LayerNorm(x + FFN(x)); weights: W1, b1, W2, b2, norm.gamma, norm.beta."""
        raise NotImplementedError

    def learning_rate(self, step: int, d_model: int, warmup: int) -> float:
        raise NotImplementedError

    def label_smoothed_loss(self, logits, targets, epsilon: float, pad_id: int) -> float:
        raise NotImplementedError

    def parameter_count(self, config: dict) -> int:
        raise NotImplementedError

    # def build_model(self, config: dict, seed: int):
    #     """Return an object with load_weights, dump_weights, forward, encode, decode,
    #     greedy_decode and train_step; see conformance.adapter.Model (for torch code:
    #     conformance.adapters.torch.TorchModel(module, config, names=NAME_MAP)). Parameters without a canonical
    #     name stay at their identity values (bias 0, gamma 1, beta 0) in load_weights and are listed by
    #     unmapped_parameters() -> {name: count}. The loss is the mean smoothed cross-entropy over the
    #     non-padding targets (conformance.adapters converts a KL or a sum); steps count from 1."""


adapter = MyAdapter()
