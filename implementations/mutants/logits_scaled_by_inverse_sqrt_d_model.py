"""Logits multiplied by d_model^-0.5: softmax(y E^T / sqrt(d_model)) instead of softmax(y E^T).

Violates §3.4: the output layer is the "usual learned linear transformation" y E^T, tied to the
embedding, with no scale; the sqrt(d_model) of §3.4 multiplies the embedding on the way in. Mesh
TensorFlow and T5 scale the tied output by d_model^-0.5 instead, which flattens every distribution.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("logits_scaled_by_inverse_sqrt_d_model", output_scale=lambda d_model: d_model**-0.5)
