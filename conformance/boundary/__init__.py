"""The candidate, whatever its framework, process or conventions: loading it, checking its declarations,
converting and validating everything that crosses (``candidate``), and running it in a sandboxed worker
(``isolation``).
"""
