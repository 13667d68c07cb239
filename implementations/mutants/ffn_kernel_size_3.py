"""FFN hidden layer reads the neighbouring positions too, as a convolution of kernel size 3 would.

Violates §3.3: "each of the layers in our encoder and decoder contains a fully connected feed-forward
network, which is applied to each position separately and identically ... Another way of describing
this is as two convolutions with kernel size 1."
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def relu_with_neighbours(z):  # z (B, L, d_ff): x W1 + b1 at every position
    return torch.relu(z + 0.5 * (torch.roll(z, 1, dims=-2) + torch.roll(z, -1, dims=-2)))


adapter = with_formulas("ffn_kernel_size_3", activation=relu_with_neighbours)
