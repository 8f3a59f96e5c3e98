# threat: 20, 26
# device: cuda
# expect: passed, error
# defence: the build runs in the sandbox: its mount namespace hides host files; its cache is private
"""A load_inline extension whose C++ source includes host files (the harness's environment,
a worker's temp canary); the build error or the constant it compiles prints them."""

import glob
import os

from torch.utils.cpp_extension import load_inline

targets = [*glob.glob("/tmp/kj-hostile-canary-*"), f"/proc/{os.getppid()}/environ"]
includes = "".join(
    f'static const char* leak_{i} = R"kj(\n#include "{path}"\n)kj";\n'
    for i, path in enumerate(targets)
)
try:
    module = load_inline(
        name="kj_hostile_include",
        cpp_sources=includes + "int probe() { return 0; }",
        functions=["probe"],
        verbose=False,
    )
    print("built", module)
except Exception as exc:
    print("build failed:", str(exc)[-3000:])


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
