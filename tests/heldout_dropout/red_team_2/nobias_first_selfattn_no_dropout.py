"""MISPLACEMENT: no dropout on the output of each stack's first self-attention, in a model without attention biases
(declared: supports attention_bias=(False,), the paper's formulas have none)."""
from conformance.adapter import Conventions
from first_selfattn_no_dropout import A
class N(A):
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch",
                              supports={"attention_bias": (False,)})
adapter = N(name="redteam2:nobias_first_selfattn_no_dropout")
