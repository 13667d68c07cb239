"""The reference declaring two tables and an output matrix of its own (supports: share_embeddings (False,),
tie_output (False,)): a declared deviation from §3.4's tying, its every other part the paper's. Checks about the
tying cannot ask it; every other check must still see the paper."""

from conformance.adapter import Conventions
from conformance.implementations.reference.adapter import ReferenceAdapter


class UntiedTables(ReferenceAdapter):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"share_embeddings": (False,), "tie_output": (False,)},
                              reasons={"share_embeddings": "a source table and a target table",
                                       "tie_output": "an output matrix of its own"})


adapter = UntiedTables()
