"""What the checks ask: random problems (sizes, weights, masks), each question as a function of its
problem, the paper's answers (the float64 oracle), and problems fitted into what a candidate declares.
"""
