"""Positional-encoding table returned transposed, (d_model, n) instead of one row per position (n, d_model).

Violates §3.5: "The positional encodings have the same dimension d_model as the embeddings, so that
the two can be summed": row pos of PE is added to the embedding of position pos. A table kept as
(d_model, max_len), as a buffer registered column-wise, hands out columns for rows; the model, which
indexes its own buffer correctly, is right.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class TransposedTable(NumpyAdapter):
    def positional_encoding(self, n, d_model):
        return self.sinusoids(n, d_model).T  # the bug: the part hands out the stored (d_model, n) layout


adapter = TransposedTable()
