"""FAITHFUL: attention without biases, separate source/target tables and an untied output matrix."""
from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter, HALF

class NB(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"attention_bias": (False,), "share_embeddings": (False,), "tie_output": (False,)})
adapter = NB(name="redteam:nobias_untied")
