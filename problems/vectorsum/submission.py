from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Return the sum of data as a 0-dimensional float32 tensor."""
    return data.sum()
