# threat: 3
# expect: failed
# defence: the expected output is computed before the call, and inputs are compared after it
"""Zeroes the inputs and the output: a reference computed afterwards on the mutated inputs
would agree with the zero output."""


def custom_kernel(data):
    A, B, out = data
    A.zero_()
    B.zero_()
    out.zero_()
    return out
