"""The reference declaring a source table and a target table (supports: share_embeddings (False,)), its output
layer tied to the target table (§3.4 ties the pre-softmax projection to the embedding the decoder reads)."""

from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter


class SeparateTables(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"share_embeddings": (False,)},
                              reasons={"share_embeddings": "a source table and a target table"})


adapter = SeparateTables()
