"""Dropout stays on at evaluation: the model never switches to eval mode for forward and decoding.

Violates §5.4 and the lesson's greedy decoding (``model.eval()`` before decoding): dropout is a
training-time regulariser, "applied to the output of each sub-layer" during training only. A wrapper
that forgets ``model.eval()`` (an ``nn.Module`` starts in training mode, and ``train_step`` leaves it
there) gives a different answer at every call on the same input, and a worse one.

Checks that build the model with dropout 0 cannot see it; with the recipe's dropout 0.1, two
evaluations of the same input differ, and every comparison of the logits with an oracle fails.
Trained, the training check that always catches it is ``evaluation_mode_has_no_dropout``: its noisy greedy
decoding reached 95% exact match only at step 1,400 (seed 0), so whether the convergence and
learned-behaviour checks fail depends on the dropout draws, and they are not promised.
"""

from __future__ import annotations

import numpy as np
import torch

from conformance.implementations.reference.adapter import ReferenceAdapter, ReferenceModel, _floats, _ids, _numpy


class ForgetsEvalModel(ReferenceModel):
    """The reference model with every ``self.module.eval()`` left out."""

    @torch.no_grad()
    def forward(self, src, tgt_in):
        return _numpy(self.module(_ids(src), _ids(tgt_in)), self.dtype)

    @torch.no_grad()
    def encode(self, src):
        return _numpy(self.module.encode(_ids(src)), self.dtype)

    @torch.no_grad()
    def decode(self, tgt_in, memory, src):
        return _numpy(self.module.decode(_ids(tgt_in), _floats(memory, self.dtype), _ids(src)), self.dtype)

    @torch.no_grad()
    def greedy_decode(self, src, max_len):
        ids = self.module.formulas.greedy_decode(self.module, _ids(src), int(max_len))
        return ids.cpu().numpy().astype(np.int64)

    @torch.no_grad()
    def attention_weights(self, src, tgt_in):
        self.module(_ids(src), _ids(tgt_in))
        return {name: _numpy(w, self.dtype) for name, w in self.module.attention_weights().items()}


class ForgetsEval(ReferenceAdapter):
    model_class = ForgetsEvalModel

    def build_model(self, config: dict, seed: int) -> ForgetsEvalModel:
        from conformance.config import ModelConfig

        return ForgetsEvalModel(ModelConfig.from_dict(config), int(seed), self.formulas, self.torch_dtype)


adapter = ForgetsEval(name="mutant:dropout_at_evaluation")
