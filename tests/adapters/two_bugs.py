"""A NumPy implementation with two of the catalogue's bugs at once, written as real code would have them (not
composed from the mutants): LayerNorm's variance divided by d - 1, and attention scores not scaled by
1/sqrt(d_k). No single mutant matches its encoder layer; the diagnosis names the pair
(tests/test_combinations.py).
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class TwoBugs(NumpyAdapter):
    def layer_norm_variance(self, centred):
        return centred.var(-1, ddof=1, keepdims=True)  # bug 1: d - 1 (torch.var's default)

    def scale_scores(self, scores, d_k, h):
        return scores  # bug 2: no / sqrt(d_k)


adapter = TwoBugs()
