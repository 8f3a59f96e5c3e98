# threat: 26
# device: cuda
# expect: passed
# leftover: kj-leftover-triton-0c55
# defence: TRITON_CACHE_DIR is a private tmpfs wiped after grading; the host's ~/.triton is hidden
"""Compiles a Triton kernel, then writes a planted entry and an override into every Triton cache
it can reach, so a later submission would load its binary."""

import os
import pwd

import triton
import triton.language as tl

MARKER = "kj-leftover-triton-0c55"


@triton.jit
def _add(a, b, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(o + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


for root in (
    os.environ.get("TRITON_CACHE_DIR", ""),
    os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".triton", "cache"),
    os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".triton", "override"),
):
    if not root:
        continue
    try:
        os.makedirs(os.path.join(root, MARKER), exist_ok=True)
        with open(os.path.join(root, MARKER, "_add.cubin"), "wb") as handle:
            handle.write(b"\x7fELF planted")
    except OSError as exc:
        print("cannot plant in", root, exc.strerror)


def custom_kernel(data):
    A, B, out = data
    n = out.numel()
    _add[(triton.cdiv(n, 1024),)](A, B, out, n, BLOCK=1024)
    return out
