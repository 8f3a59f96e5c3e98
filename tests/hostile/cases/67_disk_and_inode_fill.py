# threat: 24
# expect: passed, error
# leftover: kj-leftover-disk-c07b
# defence: RLIMIT_FSIZE, a size-limited private tmpfs, the work dir wiped after grading
"""Writes 1.5 GiB in 256 MiB files and 20,000 empty files into every writable place it has,
then computes the right answer."""

import os
import tempfile

MARKER = "kj-leftover-disk-c07b"
block = b"\0" * (16 << 20)
written = 0
for folder in (".", tempfile.gettempdir()):
    for index in range(3):
        path = os.path.join(folder, f"{MARKER}-{index}")
        try:
            with open(path, "wb") as handle:
                for _ in range(16):
                    handle.write(block)
                    written += len(block)
        except OSError as exc:
            print("disk refused at", written, exc)
            break
for index in range(20_000):
    try:
        open(os.path.join(tempfile.gettempdir(), f"{MARKER}-i{index}"), "w").close()
    except OSError as exc:
        print("inodes refused at", index, exc)
        break
print("wrote", written >> 20, "MiB")


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
