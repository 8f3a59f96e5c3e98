# threat: 8
# expect: failed
# defence: out is poisoned with NaN in the harness before it is sent, so a no-op is visible
"""Returns the output buffer untouched, hoping it was zeroed or holds the answer."""


def custom_kernel(data):
    return data[2]
