from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # Sums only the first half: right shape and dtype, wrong value.
    return data[: data.numel() // 2].sum()
