"""Table 3 parameter count that sums the tensors of the module's ``state_dict()`` instead of its ``parameters()``:
the model of ``_parts.py`` is built on the meta device and counted as ``sum(t.numel() for t in
model.state_dict().values())``, but a state dict lists a tied ``Parameter`` once under *each* module that holds it
(``parameters()`` yields it once), so the shared table is counted once per use: with the paper's shared and tied E
(src_embed, tgt_embed and generator) V x d_model is counted 3 times (2 V d_model too many: 37,888,000 for the base
model's 37,000 x 512); with shared but untied, twice; with separate tables and a tied output, E_tgt twice. Untied and
unshared it is right. The layers (attentions with or without biases, FFNs, LayerNorms) and N are right.

Style: torch, the ``nn.Module`` model of ``_parts.py`` built on ``torch.device("meta")``; parameter_count only.
"""

import torch

from _parts import SeqFirstTransformer
from conformance import Conventions


class StateDictCounter:
    conventions = Conventions(mask="additive", batch_first=False, dtype="float32", framework="torch (nn.Module)")

    def parameter_count(self, config):
        with torch.device("meta"):
            model = SeqFirstTransformer(config)
        return int(sum(t.numel() for t in model.state_dict().values()))


adapter = StateDictCounter()
