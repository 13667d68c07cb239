"""What the paper and the two lessons say: the formulas (float64 NumPy), every published number, the claims.

Nothing here knows a candidate; everything above reads it.
"""
