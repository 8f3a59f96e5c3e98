from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Write 0.2989 R + 0.5870 G + 0.1140 B of the (N, N, 3) image into out, (N, N); return out."""
    rgb, out = data
    out[...] = 0.2989 * rgb[..., 0] + 0.5870 * rgb[..., 1] + 0.1140 * rgb[..., 2]
    return out
