"""The reference declaring the LayerNorm epsilon of code ported from TensorFlow's BERT, 1e-12 (supports: eps
(1e-12,)): every check runs its layers and model at that epsilon, and the report says it is not the lesson's."""

from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter


class EpsOfBert(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"eps": (1e-12,)},
                              reasons={"eps": "LayerNorm(d_model, eps=1e-12) in every layer, as ported from"
                                              " TensorFlow"})


adapter = EpsOfBert()
