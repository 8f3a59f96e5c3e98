import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # Sums the k rank-one products in a bfloat16 accumulator: every addition rounds to
    # 8 significant bits, and over a long k the error grows past the tolerance.
    A, B = data
    acc = torch.zeros(A.shape[0], B.shape[1], dtype=torch.bfloat16, device=A.device)
    for p in range(A.shape[1]):
        acc += A[:, p, None] * B[None, p, :]
    return acc
