"""What a sandboxed process may see, and the bubblewrap command line that builds it: new
user, pid, network, mount, ipc, uts and cgroup namespaces; an empty, read-only root holding
only the read-only paths it is given (never `/` or `/etc` whole: a user namespace made by
root maps the sandbox user back to root outside); private tmpfs folders; a fresh /proc; a
minimal /dev plus the GPU nodes named; non-root, no capabilities, no new user namespaces."""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.cgroup import CgroupLimits
from sandbox.settings import BWRAP_ENV, SandboxSettings

SANDBOX_UID = 65534
SANDBOX_USER = "sandbox"
SANDBOX_HOME = "/home/sandbox"
# Read-only system paths every sandbox gets, where they exist. /etc contributes only the
# dynamic linker's cache and the alternatives symlinks compilers are reached through.
SYSTEM_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    # CPU topology: torch's cpuinfo complains on stderr without it.
    "/sys/devices/system/cpu",
)
# The device nodes CUDA needs; never nvidia-uvm-tools (profiling other processes) or
# nvidia-caps / nvidia-modeset.
GPU_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm")
# The driver's per-GPU folders, named by PCI address, each giving the GPU's device number.
NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or a part of the isolation) cannot run on this host; says what to do."""


def bwrap_path() -> str:
    found = SandboxSettings.from_env().bwrap or shutil.which("bwrap")
    if not found or not os.access(found, os.X_OK):
        raise SandboxUnavailable(
            "bubblewrap is not installed: install the Debian/Ubuntu package `bubblewrap` "
            f"(or set {BWRAP_ENV} to its binary)"
        )
    return found


def gpu_device_nodes(visible: str | None = None) -> list[str]:
    """The GPU device nodes a sandbox gets: the control nodes plus /dev/nvidiaN of the GPUs
    `visible` names (CUDA_VISIBLE_DEVICES by default; every GPU when it is unset). Only the
    worker's own GPUs: CUDA_VISIBLE_DEVICES alone is a request a submission's child process
    could change, while a device node that is not there cannot be opened."""
    numbered = sorted(
        p for p in glob.glob("/dev/nvidia[0-9]*") if p[len("/dev/nvidia") :].isdigit()
    )
    if not numbered:
        return []
    if visible is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        numbered = [f"/dev/nvidia{minor}" for minor in visible_gpu_minors(visible)]
    return numbered + [p for p in GPU_CONTROL_NODES if os.path.exists(p)]


def visible_gpu_minors(visible: str) -> list[int]:
    """The device-node numbers of the GPUs CUDA_VISIBLE_DEVICES names: indices in PCI bus
    order (nvidia-smi's order, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID) or UUIDs.
    Refuses what it cannot map, rather than exposing every GPU of the host."""
    wanted = [part.strip() for part in visible.split(",") if part.strip()]
    if not wanted:
        return []
    gpus = _nvidia_gpus()
    minors = []
    for name in wanted:
        match = [gpu for gpu in gpus if name == gpu[0] or gpu[1].startswith(name)]
        if len(match) != 1:
            raise SandboxUnavailable(
                f"CUDA_VISIBLE_DEVICES names {name!r}, which is not one GPU of this host "
                f"(nvidia-smi lists {[gpu[0] for gpu in gpus]})"
            )
        minors.append(match[0][2])
    return minors


def _nvidia_gpus() -> list[tuple[str, str, int]]:
    """(index, uuid, device minor) of every GPU, from nvidia-smi and the driver's /proc."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise SandboxUnavailable("nvidia-smi is needed to find this worker's GPU device nodes")
    return list(_listed_gpus(smi, NVIDIA_PROC))


@functools.lru_cache
def _listed_gpus(smi: str, proc: Path) -> tuple[tuple[str, str, int], ...]:
    """Asked once per process: a worker asks before it forks its grading processes, which
    then build every sandbox without running nvidia-smi again."""
    try:
        listing = subprocess.run(
            [smi, "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"nvidia-smi failed: {exc}") from exc
    gpus = []
    for line in listing.splitlines():
        if not line.strip():
            continue
        index, uuid, bus_id = (part.strip() for part in line.split(","))
        gpus.append((index, uuid, _device_minor(bus_id, proc)))
    return tuple(gpus)


def _device_minor(bus_id: str, proc: Path) -> int:
    """nvidia-smi writes an 8-digit PCI domain; the driver's /proc folder a 4-digit one."""
    domain, rest = bus_id.lower().split(":", 1)
    info = proc / f"{domain[-4:]}:{rest}" / "information"
    try:
        for line in info.read_text().splitlines():
            if line.startswith("Device Minor:"):
                return int(line.split(":", 1)[1])
    except (OSError, ValueError) as exc:
        raise SandboxUnavailable(f"cannot read the device number of GPU {bus_id}: {exc}") from exc
    raise SandboxUnavailable(f"{info} names no device minor")


@dataclass(frozen=True)
class Isolation:
    """One sandbox's view of the system. Paths in `ro_paths` appear read-only at the same
    place; `ro_binds` maps host paths to other places inside; `tmpfs` folders are private,
    sized, and gone when the sandbox ends."""

    cwd: str
    ro_paths: Sequence[str] = SYSTEM_PATHS
    ro_binds: Sequence[tuple[str, str]] = ()
    tmpfs: Sequence[tuple[str, int]] = (("/tmp", 2 << 30), (SANDBOX_HOME, 2 << 30))
    devices: Sequence[str] = ()
    cgroup: CgroupLimits | None = field(default_factory=CgroupLimits)
    seccomp: bool = True
    hostname: str = "sandbox"

    def argv(self, seccomp_fd: int | None, passwd_file: str, group_file: str) -> list[str]:
        """bubblewrap's arguments up to and including `--`; the command follows."""
        args = [
            bwrap_path(),
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop", "ALL",
            "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_UID),
            "--hostname", self.hostname,
            "--proc", "/proc",
            # A user namespace made by root maps the sandbox user to root outside, and the
            # kernel checks sysctl writes by that uid: the knobs must be read-only.
            "--ro-bind", "/proc/sys", "/proc/sys",
            "--dev", "/dev",
        ]  # fmt: skip
        if os.path.exists("/proc/sysrq-trigger"):
            args += ["--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
        # tmpfs first: a read-only path below /tmp (a site-packages folder, say) stays visible.
        for path, size in self.tmpfs:
            args += ["--size", str(size), "--tmpfs", path]
        for path in self.ro_paths:
            args += _expose(path)
        args += ["--ro-bind", passwd_file, "/etc/passwd", "--ro-bind", group_file, "/etc/group"]
        for source, target in self.ro_binds:
            args += ["--ro-bind", source, target]
        for node in self.devices:
            args += ["--dev-bind", node, node]
        # The root is bubblewrap's own tmpfs, unsized and writable until made read-only:
        # without this a submission could make folders of its own anywhere (/var/tmp, a
        # PATH entry the host has but the sandbox does not) and fill memory there.
        args += ["--remount-ro", "/"]
        args += ["--chdir", self.cwd]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return [*args, "--"]


def _expose(path: str) -> list[str]:
    """Arguments that make host `path` appear read-only inside; a symlink (as /lib is on
    merged-/usr systems) stays a symlink."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.exists(path):
        return ["--ro-bind", path, path]
    return []


def identity_files(folder: Path) -> tuple[str, str]:
    """An /etc/passwd and /etc/group that know only the sandbox user (some libraries look
    the user up); the host's own never enter the sandbox."""
    passwd = folder / "passwd"
    group = folder / "group"
    passwd.write_text(
        f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_UID}:{SANDBOX_USER}:{SANDBOX_HOME}:/bin/sh\n"
    )
    group.write_text(f"{SANDBOX_USER}:x:{SANDBOX_UID}:\n")
    return str(passwd), str(group)
