"""Diagnosis: why a check failed, in the suite's one catalogue of known bugs.

The catalogue is ``implementations/mutants/``: one module per known bug, each a runnable implementation
with that bug. When a comparison fails, the check hands over its question (``Question``: how to ask any
candidate the same thing); the suite asks every mutant, and names a mutant only when

1. the mutant's answer equals the candidate's on the failing example, and
2. asked again on a second, independent, non-degenerate problem (bigger sizes, fresh weights), the
   mutant's answer equals the candidate's there too, and differs from the paper's.

So a match on a degenerate example (d_model 4, one position, where two bugs give the same numbers) is
never printed, and a NaN matches nothing. Beside the catalogue: ``localise`` says *where* a composite
first diverges (layer, sublayer), ``structure`` recognises the patterns no single mutant reproduces
(torch.nn.Transformer's final norms and its padded fast path). ``message`` writes one tail for the
failure, in a fixed order: likely cause, first divergence, structure; each bug named once.
"""

from conformance.diagnosis.catalogue import EXCLUDE_ENV, known_bugs
from conformance.diagnosis.matching import confirmed_matches
from conformance.diagnosis.question import PROBE_SEED, Question, probe_of
from conformance.diagnosis.structure import PATTERNS, find_structure

__all__ = [
    "EXCLUDE_ENV", "PATTERNS", "PROBE_SEED", "Question", "confirmed_matches", "find_structure", "known_bugs",
    "probe_of",
]
