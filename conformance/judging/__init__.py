"""The claims and their verdicts: the ``check`` fixture, one module of checks per paper section
(``checks/``), the toy training run, the randomised twins of published numbers, declared deviations.
"""
