# threat: 17
# expect: error
# defence: the runner catches BaseException and the harness treats any missing answer as an error
"""Raises KeyboardInterrupt inside custom_kernel, past any `except Exception`."""


def custom_kernel(data):
    raise KeyboardInterrupt
