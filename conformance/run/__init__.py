"""From a command to a report: the pytest session and plugin, the report dict, the live progress, the
listing, the coverage of published numbers, the kill matrix, Dask tasks, opt-in timing.
"""
