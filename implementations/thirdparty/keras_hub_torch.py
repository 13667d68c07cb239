"""Built-in ``keras-hub-torch``: the paper's encoder-decoder assembled from keras-hub's layers, Keras 3 on PyTorch.

keras-hub's ``TransformerEncoder`` and ``TransformerDecoder`` (post-norm, ReLU, the config's d_ff, h, LayerNorm eps
and dropout), ``SinePositionEncoding``, and ``ReversibleEmbedding`` for the tied output; the embedding x sqrt(d_model)
(§3.4) and greedy decoding are the assembly's (``_keras.py``). What the layers fix is declared in ``supports``:
biases on every attention projection. Its deviations from the paper, with file:line, are in docs/third-party.md.
"""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "torch"  # read once, when keras is first imported (by _keras)
from conformance.implementations.thirdparty import _keras  # noqa: E402 - after the backend is chosen

adapter = _keras.adapter("torch")
