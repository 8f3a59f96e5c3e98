# a cheat. If the output buffer
# already holds the answer (checked on one output row only), it returns it without
# computing; that is the case on every call after the first when the same inputs and the
# same un-refilled output buffer are passed again. Must not get a real score.
import torch
import torch.nn.functional as F
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    input_tensor, kernel, output = data
    torch.backends.cudnn.allow_tf32 = False  # as the reference (else it fails on Hopper)
    ks = kernel.shape[-1]
    probe = F.conv2d(input_tensor[:1, :, :ks, :], kernel[:1])
    if torch.allclose(output[:1, :1, :1, :], probe, rtol=1e-5, atol=1e-5):
        return output
    output[...] = F.conv2d(input_tensor, kernel, stride=1, padding=0)
    return output
