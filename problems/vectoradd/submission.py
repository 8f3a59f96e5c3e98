from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Write A + B into out and return out."""
    A, B, out = data
    out[...] = A + B
    return out
