"""A batch item learning another item's inputs: item A plants the secret inputs of its
leaderboard-mode grading everywhere it can write (its work folder, /tmp, HOME, /dev/shm,
every writable folder it finds, a daemon on an abstract socket, a SysV segment), and item B,
graded next by the same harness process as a worker's pool process grades a batch's items,
looks for them there and in every process it can see. Each grading's runner is a fresh
sandbox (its own mount, pid, ipc and network namespaces, tmpfs folders, work folder wiped
after), so B finds nothing; within A's own grading the plants are there, which shows the
search would see them if they outlived it."""

from __future__ import annotations

import re
import secrets
from typing import Any

from tests.hostile.conftest import Canaries
from tests.hostile.test_corpus import Rig, rig, run_in_rig

__all__ = ["rig"]  # the corpus rig, one per module

PROBLEM = "vectoradd"

# Shared by both items: where a plant could be (folders found writable, known places) and
# the SysV key the rig's leftover scan derives from the marker.
COMMON = r'''
import ctypes
import hashlib
import os
import socket
import zlib

MARKER = "__MARKER__"
KEY = zlib.crc32(MARKER.encode()) & 0x7FFFFFFF
SKIP = ("/proc", "/sys", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")
KNOWN = ["/tmp", "/var/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~"),
         os.path.expanduser("~/.cache"), os.environ.get("TMPDIR", "/tmp"),
         os.environ.get("TRITON_CACHE_DIR", "/tmp"),
         os.environ.get("TORCH_EXTENSIONS_DIR", "/tmp")]
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


def folders(writable):
    """Every folder under / to a small depth (the system's read-only trees left out)."""
    found, stack = [], [("/", 0)]
    while stack:
        top, depth = stack.pop()
        if top.startswith(SKIP) and top != "/":
            continue
        if not writable or os.access(top, os.W_OK):
            found.append(top)
        if depth < 4:
            try:
                with os.scandir(top) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((entry.path, depth + 1))
            except OSError:
                pass
    for place in KNOWN:
        if os.path.isdir(place) and (not writable or os.access(place, os.W_OK)):
            found.append(place)
    return sorted(set(found))


def digest(data):
    a, b, _ = data
    return hashlib.sha256(a.numpy().tobytes() + b.numpy().tobytes()).hexdigest()
'''

PLANTER = (
    COMMON
    + r'''
import time
import torch

SEEN = []
PLANTED = []
DAEMON = []


def plant():
    text = "\n".join(SEEN) + "\n"
    for folder in folders(writable=True):
        path = os.path.join(folder, MARKER + "-inputs")
        try:
            with open(path, "w") as out:
                out.write(text)
            PLANTED.append(path)
        except OSError:
            pass
    shm = libc.shmget(KEY, 1 << 16, 0o1000 | 0o666)
    if shm >= 0:
        at = libc.shmat(shm, None, 0)
        if at not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(at, text.encode(), len(text))
    if not DAEMON and os.fork() == 0:  # a daemon holding them on an abstract socket
        os.setsid()
        server = socket.socket(socket.AF_UNIX)
        server.bind("\0" + MARKER)
        server.listen(8)
        while True:
            conn, _ = server.accept()
            conn.sendall(text.encode())
            conn.close()
    DAEMON.append(1)


def look_back():
    """Within this grading: the plants are there to be found."""
    for path in sorted(set(PLANTED)):
        with open(path) as planted:
            if SEEN[0] in planted.read():
                print("KJ-SELF file", os.path.dirname(path), flush=True)
    time.sleep(0.2)
    try:
        client = socket.socket(socket.AF_UNIX)
        client.connect("\0" + MARKER)
        if SEEN[0] in client.recv(1 << 16).decode():
            print("KJ-SELF socket", flush=True)
    except OSError as exc:
        print("KJ-SELF no socket", exc, flush=True)
    if libc.shmget(KEY, 0, 0) >= 0:
        print("KJ-SELF shm", flush=True)


def custom_kernel(data):
    a, b, out = data
    if len(SEEN) < 8:
        seen = digest(data)
        if seen not in SEEN:
            SEEN.append(seen)
            print("KJ-INPUT", seen, flush=True)
            if len(SEEN) in (1, 8):
                plant()
            if len(SEEN) == 8:
                look_back()
    return torch.add(a, b, out=out)
'''
)

SEEKER = (
    COMMON
    + r"""
import torch


def found(where, text):
    print("KJ-FOUND", where, text[:400].replace("\n", " "), flush=True)


def seek():
    looked = 0
    for folder in folders(writable=False):
        looked += 1
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if MARKER in name:
                try:
                    with open(os.path.join(folder, name), errors="replace") as planted:
                        found("file " + os.path.join(folder, name), planted.read())
                except OSError as exc:
                    found("file " + os.path.join(folder, name), str(exc))
    try:
        client = socket.socket(socket.AF_UNIX)
        client.connect("\0" + MARKER)
        found("socket", client.recv(1 << 16).decode(errors="replace"))
    except OSError:
        pass
    if libc.shmget(KEY, 0, 0) >= 0:
        found("shm", str(KEY))
    me = str(os.getpid())
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or pid == me:
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as proc:
                    if MARKER.encode() in proc.read():
                        found(f"process {pid} {part}", "")
            except OSError:
                pass
        try:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
                for line in maps:
                    start, end = (int(x, 16) for x in line.split()[0].split("-"))
                    if "r" not in line.split()[1] or end - start > 64 << 20:
                        continue
                    try:
                        mem.seek(start)
                        if MARKER.encode() in mem.read(end - start):
                            found(f"process {pid} memory", line.strip())
                    except (OSError, ValueError, OverflowError):
                        pass
        except OSError:
            pass
    print("KJ-LOOKED", looked, flush=True)


SEEN = []


def custom_kernel(data):
    a, b, out = data
    if not SEEN:
        seek()
    if len(SEEN) < 8:
        seen = digest(data)
        if seen not in SEEN:
            SEEN.append(seen)
            print("KJ-INPUT", seen, flush=True)
    return torch.add(a, b, out=out)
"""
)


def digests(report: dict[str, Any]) -> set[str]:
    return set(re.findall(r"KJ-INPUT ([0-9a-f]{64})", report["stdout"]))


def test_a_batch_item_cannot_learn_the_inputs_of_the_item_before_it(
    rig: Rig, canaries: Canaries, cpu_peaks: dict[str, Any]
) -> None:
    marker = "kjbatchspy" + secrets.token_hex(6)
    planter, seeker = (code.replace("__MARKER__", marker) for code in (PLANTER, SEEKER))
    result = run_in_rig(
        rig,
        cpu_peaks,
        problem=PROBLEM,
        code=planter,
        mode="leaderboard",
        device="cpu",
        timeout_s=90,
        leftover=marker,
        sequence=[planter, seeker],
    )
    assert "rig_failure" not in result, result["rig_failure"]
    planted, sought = result["reports"]
    for report in (planted, sought):
        assert report["status"] == "passed", (report["message"], report["stderr"][-2000:])
        assert not canaries.leaks(report["stdout"] + report["stderr"])

    # Within its own grading the planter's inputs are where it put them, so the seeker's
    # search would see them there had they outlived that grading.
    where = set(re.findall(r"KJ-SELF file (\S+)", planted["stdout"]))
    assert "/tmp" in where and len(where) >= 2, planted["stdout"][-3000:]
    assert "KJ-SELF socket" in planted["stdout"] and "KJ-SELF shm" in planted["stdout"]
    learnt = digests(planted)
    assert len(learnt) == 8, planted["stdout"][-3000:]

    # The next item of the batch finds none of it: no file, socket, segment or process.
    assert "KJ-LOOKED" in sought["stdout"], sought["stdout"][-3000:]
    assert "KJ-FOUND" not in sought["stdout"], sought["stdout"][-3000:]
    assert not learnt & set(re.findall(r"[0-9a-f]{64}", sought["stdout"]))
    assert digests(sought) and not digests(sought) & learnt  # its own secret inputs
    assert not result["leftovers"], result["leftovers"]
