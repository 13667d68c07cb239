"""The layers' LayerNorm epsilon fixed at 1e-12 and declared (code ported from TensorFlow's BERT), not 10⁻⁵.

§3.1's LayerNorm gives no epsilon; the lesson gives PyTorch's default, "ε (10⁻⁵ in PyTorch) avoids dividing by 0".
Every check runs the layers and the model at the declared 1e-12, where they compute the paper's formula: only the
suite's convention on the lesson's epsilon advises on it, never fails it.
"""

from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter


class EpsOfBert(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"eps": (1e-12,)},
                              reasons={"eps": "LayerNorm(d_model, eps=1e-12) in every layer, as ported from"
                                              " TensorFlow"})


adapter = EpsOfBert(name="layer_norm_eps_of_bert")
