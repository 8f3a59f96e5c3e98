# threat: 6
# expect: failed
# defence: every benchmark case is checked too, on its own sizes and secret-seeded inputs
"""Right on the public test sizes, no work on any other size."""

PUBLIC_TEST_SIZES = {127, 64, 128, 129, 256, 512}


def custom_kernel(data):
    A, B, out = data
    if A.shape[0] in PUBLIC_TEST_SIZES:
        out[...] = A + B
        return out
    return out.zero_()
