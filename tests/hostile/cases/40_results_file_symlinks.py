# threat: 16
# expect: failed
# defence: the harness reads no file the runner can write; the work dir is not a results channel
"""Writes forged results files into its working directory and symlinks the usual result names
to files elsewhere, hoping the grader reads or overwrites them, then does no work."""

import json
import os

FORGED = json.dumps({"status": "passed", "score": 1e-9})
for name in ("result.json", "results.json", "report.json", "verdict.txt", "status"):
    try:
        with open(name, "w") as handle:
            handle.write(FORGED)
    except OSError as exc:
        print("cannot write", name, exc)
for name, target in (("stdout.txt", "/etc/passwd"), ("score.json", "../trusted/reference.py")):
    try:
        os.symlink(target, name)
    except OSError as exc:
        print("cannot link", name, exc)


def custom_kernel(data):
    return data[2].zero_()
