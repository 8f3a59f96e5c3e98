from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Write the softmax over the last dimension of x, (rows, cols) float32, into out."""
    x, out = data
    shifted = x - x.max(dim=-1, keepdim=True).values
    e = shifted.exp()
    out[...] = e / e.sum(dim=-1, keepdim=True)
    return out
