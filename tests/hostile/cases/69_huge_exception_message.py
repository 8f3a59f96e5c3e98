# threat: 24
# expect: error
# defence: the report's message is capped; only a tail of the traceback is kept
"""Raises an exception with a 20 MB message from custom_kernel."""


def custom_kernel(data):
    raise ValueError("passed " * 3_000_000)
