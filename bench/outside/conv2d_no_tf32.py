import torch
import torch.nn.functional as F


def custom_kernel(data):
    x, w, out = data
    # The reference turns TF32 off for cuDNN; fp32 convolutions use it by default on Hopper.
    torch.backends.cudnn.allow_tf32 = False
    out[...] = F.conv2d(x, w, stride=1, padding=0)
    return out
