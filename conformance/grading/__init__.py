"""Grading submissions: one, a class, Gradescope, points."""
