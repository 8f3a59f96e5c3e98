# sorts in descending order; must fail.
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data, output = data
    output[...] = torch.sort(data, descending=True)[0]
    return output
