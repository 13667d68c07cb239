"""Two bugs at once, as in OpenNMT-py or torch.nn.Transformer(norm_first=True): pre-norm layers,
x + Sublayer(LayerNorm(x)), and an extra LayerNorm (gamma 1, beta 0) after each stack.

The catalogue's ``pre_norm`` formulas inside ``extra_final_layer_norm``'s model: the layer parts are
pre-norm, the model adds the final norm. Localisation must name both in one line.
"""

from conformance.implementations.mutants import extra_final_layer_norm, pre_norm

adapter = extra_final_layer_norm.ExtraFinalLayerNorm(formulas=pre_norm.adapter.formulas,
                                                     name="pre-norm with a final LayerNorm")
