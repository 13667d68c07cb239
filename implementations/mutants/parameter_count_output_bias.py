"""The output projection gets a bias of its own: V extra parameters.

Violates §3.4 as the lesson counts it: the pre-softmax projection is the transposed embedding, with
no new weights ("a linear layer multiplies by the transposed embedding table, with no new weights").
The base model would count 63,119,496 instead of 63,082,496.
"""

from conformance.implementations.reference.adapter import ReferenceAdapter


class OutputBiasAdapter(ReferenceAdapter):
    def parameter_count(self, config: dict) -> int:
        return super().parameter_count(config) + config["tgt_vocab"]


CAUGHT_BY = {
    "parameter_count_matches_formula_for_any_config",
    "parameter_count_matches_published_value[fact_id=german.total]",
    "parameter_count_matches_published_value[fact_id=params.total]",
    "parameter_count_matches_published_value[fact_id=params.total_separate_output]",
    "parameter_count_matches_published_value[fact_id=toy.parameters]",
    "parameter_count_without_attention_biases",
    "published_parameter_counts",
}
ERRORED = set()
adapter = OutputBiasAdapter(name="mutant:parameter_count_output_bias")
