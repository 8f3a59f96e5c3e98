# threat: 26
# expect: passed
# leftover: kj-leftover-cache-4e6a
# defence: private tmpfs for /tmp, HOME and the Triton and extension caches, wiped after grading
"""Plants files for later submissions in every cache and temp place it can name: its HOME's
and the real home's Triton cache and override folders, torch-extension builds with lock
files, /tmp and /var/tmp; computes the right answer."""

import os
import pwd

MARKER = "kj-leftover-cache-4e6a"
homes = {os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir, "/root"}
places = [os.environ.get("TRITON_CACHE_DIR", ""), os.environ.get("TORCH_EXTENSIONS_DIR", "")]
for home in homes:
    places += [
        os.path.join(home, ".triton", "cache"),
        os.path.join(home, ".triton", "override"),
        os.path.join(home, ".cache", "torch_extensions", "py311_cpu"),
    ]
places += ["/tmp", "/var/tmp", "/tmp/torch_extensions"]
for place in places:
    if not place:
        continue
    folder = os.path.join(place, MARKER)
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "lock"), "w") as handle:
            handle.write("held")
        with open(os.path.join(folder, MARKER + ".so"), "w") as handle:
            handle.write("a prebuilt extension for the next submission")
        print("planted", folder)
    except OSError as exc:
        print("cannot plant in", place, exc.strerror)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
