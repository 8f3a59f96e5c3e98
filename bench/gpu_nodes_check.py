"""On a host of several GPUs: a sandboxed runner sees only its worker's GPU, and a child
it starts with another CUDA_VISIBLE_DEVICES cannot reach the others.

    CUDA_VISIBLE_DEVICES=1 python -m bench.gpu_nodes_check

Prints what the sandboxed program saw and exits 1 if it could use a GPU it was not given."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import sandbox
from grader.confine import runner_env, runner_isolation

PROBE = r"""
import glob, json, os, subprocess, sys
import torch
seen = {"nodes": sorted(glob.glob("/dev/nvidia*")), "count": torch.cuda.device_count(),
        "uuids": [str(torch.cuda.get_device_properties(i).uuid)
                  for i in range(torch.cuda.device_count())]}
child = ("import torch, json; n = torch.cuda.device_count(); "
         "print(json.dumps([str(torch.cuda.get_device_properties(i).uuid) for i in range(n)]))")
for visible in ("0", "1", ""):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible)
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True)
    seen["child_" + (visible or "unset")] = done.stdout.strip() or done.stderr.strip()[-300:]
print(json.dumps(seen))
"""


def main() -> int:
    listing = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    host = dict(line.split(", ") for line in listing.strip().splitlines())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    mine = {host[v].removeprefix("GPU-") for v in visible.split(",") if v}
    print("host GPUs:", host, "this worker's:", visible)
    with tempfile.TemporaryDirectory(prefix="kj-nodes-") as root:
        work = Path(root)
        result = sandbox.run(
            [sys.executable, "-c", PROBE],
            cwd=work,
            env=runner_env(work, work, "cuda", isolated=True),
            timeout_s=120,
            isolation=runner_isolation(work, "cuda"),
        )
    print("exit", result.returncode, result.stderr[-1500:])
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    print(json.dumps(seen, indent=1))
    reached = set(seen["uuids"])
    for key in ("child_0", "child_1", "child_unset"):
        with contextlib.suppress(ValueError, TypeError):
            reached |= set(json.loads(seen[key]))
    reached = {u.removeprefix("GPU-") for u in reached}
    print("GPUs reached from the sandbox:", sorted(reached), "given:", sorted(mine))
    return 0 if reached and reached <= mine else 1


if __name__ == "__main__":
    sys.exit(main())
