# threat: 3, 7
# expect: failed
# defence: timed outputs are checked against the harness's own copy of the inputs
"""Honest while its inputs are compared (the first call); on timed calls it zeroes the inputs
it received and returns zeros, which agree with a check made on the mutated copy."""

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    A, B, out = data
    if _calls == 1:
        out[...] = A + B
        return out
    A.zero_()
    B.zero_()
    return out.zero_()
