"""Positional-encoding table returned transposed, (d_model, n) instead of one row per position (n, d_model).

Violates §3.5: "The positional encodings have the same dimension d_model as the embeddings, so that
the two can be summed": row pos of PE is added to the embedding of position pos. A table kept as
(d_model, max_len), as a buffer registered column-wise, hands out columns for rows.
"""

from conformance.implementations.reference.adapter import ReferenceAdapter


class TransposedTable(ReferenceAdapter):
    def positional_encoding(self, n, d_model):
        return super().positional_encoding(n, d_model).T


adapter = TransposedTable(name="mutant:pe_table_transposed")
