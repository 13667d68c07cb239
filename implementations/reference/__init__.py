"""The reference implementation of the original Transformer (Vaswani et al. 2017), written from the lessons.

``model.py`` holds the formulas (``Formulas``, ``REFERENCE``) and the modules, ``training.py`` the paper's
recipe, ``adapter.py`` the protocol adapter (``conformance.implementations.reference.adapter:adapter``).
Nothing is imported here, so that listing the package does not import torch.
"""
