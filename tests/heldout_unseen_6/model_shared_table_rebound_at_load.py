"""§3.4 shared embedding table whose sharing is broken by ``load_weights``: the model ties its tables by sharing one
``Parameter`` (``tgt_embed.weight = src_embed.weight``, ``generator.weight = tgt_embed.weight``) when it is built,
but ``load_weights`` *rebinds* each parameter to a new ``nn.Parameter`` (``setattr(module, "weight",
nn.Parameter(value))``) instead of copying into it, so only the module the name map names gets the loaded table:
with the paper's shared E, the source embedding reads the loaded E while the target embedding and the pre-softmax
projection keep the table of the random initialisation; with separate tables the output projection tied to E_tgt
keeps the initial table. Where the paper shares one matrix E between the two embeddings and the pre-softmax linear
transformation (and where the weights are loaded), they read different matrices. Every other parameter loads right,
and the encoder (E, the scale, positions, layers) and the decoder's layers are right.

Style: the float32 sequence-first torch-module model of ``_parts.py`` with its loader rewritten; model only.
"""

import numpy as np
import torch
from torch import nn

from _parts import SeqFirstTransformer, model_adapter, module_path, parameter_shapes


class ReboundWeights(SeqFirstTransformer):
    def load_weights(self, weights):
        for name in parameter_shapes(self.cfg):
            path, transposed = module_path(name)
            value = torch.as_tensor(np.asarray(weights[name], dtype=np.float32))
            owner, _, attr = path.rpartition(".")
            setattr(self.get_submodule(owner), attr, nn.Parameter(value.t().contiguous() if transposed else value))


adapter = model_adapter(ReboundWeights)
