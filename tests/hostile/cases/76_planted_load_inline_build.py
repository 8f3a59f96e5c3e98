# threat: 26
# device: cuda
# expect: passed
# leftover: kj-leftover-ext-a913
# defence: TORCH_EXTENSIONS_DIR is a private tmpfs wiped after grading; the host's is not mounted
"""Builds a load_inline extension under a name other submissions use, leaves its lock file
held, and writes a poisoned copy into the default (host) extension folder."""

import os
import pwd

import torch
from torch.utils.cpp_extension import load_inline

MARKER = "kj-leftover-ext-a913"
module = load_inline(
    name="kj_vectoradd",
    cpp_sources="int answer() { return 42; }",
    functions=["answer"],
)
print("built", module.answer())
for root in (
    os.environ.get("TORCH_EXTENSIONS_DIR", ""),
    os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "torch_extensions"),
    "/tmp/torch_extensions",
):
    if not root:
        continue
    try:
        os.makedirs(os.path.join(root, "kj_vectoradd"), exist_ok=True)
        with open(os.path.join(root, "kj_vectoradd", "lock"), "w") as handle:
            handle.write(MARKER)
        os.makedirs(os.path.join(root, MARKER), exist_ok=True)
    except OSError as exc:
        print("cannot plant in", root, exc.strerror)


def custom_kernel(data):
    A, B, out = data
    return torch.add(A, B, out=out)
