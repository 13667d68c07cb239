"""MISPLACEMENT (control): Flax-style head-shared attention-weight dropout in every attention, cross too."""
from selfattn_broadcast_weight_dropout import B
class C(B):
    where = ("self_attn", "cross_attn")
adapter = C(name="redteam2:all_broadcast_weight_dropout")
