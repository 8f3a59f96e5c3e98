"""A control group per sandboxed run: a ceiling on host memory, tasks and CPU, a way to kill
everything that ever started inside it, and a record of whether it ran out of memory.

cgroup v2 (one unified hierarchy) where its controllers are available, else cgroup v1 (one
hierarchy per controller). Groups are made under the cgroup this process already belongs
to, or under `KJ_SANDBOX_CGROUP` when an administrator delegated one."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from sandbox.settings import CGROUP_ENV, SandboxSettings

_GROUP_PREFIX = "kj-"
_SUPERVISOR = "kj-supervisor"
_V2_CONTROLLERS = ("memory", "pids", "cpu")
_V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
_CPU_PERIOD_US = 100_000


class CgroupUnavailable(RuntimeError):
    """No cgroup with memory and pids limits can be made here; the message says why."""


@dataclass(frozen=True)
class CgroupLimits:
    memory_bytes: int = 8 << 30
    tasks: int = 4096  # threads count: torch starts one per core, CUDA a few more
    cpu_cores: float | None = None


@dataclass(frozen=True)
class CgroupUsage:
    peak_memory_bytes: int | None
    oom_killed: bool


def _mounts() -> list[tuple[str, str, list[str]]]:
    """(mount point, filesystem type, super options) of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4], tail[0], tail[2].split(",")))
    return found


def _under_mount(path: str, mount: Path) -> str:
    """A cgroup path relative to its file system: `/kj` and `/sys/fs/cgroup/kj` alike."""
    if path.startswith(f"{mount}/"):
        path = path[len(str(mount)) :]
    return path.lstrip("/")


def _own_paths() -> dict[str, str]:
    """Controller (or '' for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class Cgroup:
    """One group (a directory per hierarchy); `attach_self` moves the calling process in."""

    def __init__(self, version: int, dirs: dict[str, Path], limits: CgroupLimits) -> None:
        self.version = version
        self.dirs = dirs
        self.limits = limits
        self._procs_files = sorted({str(d / "cgroup.procs") for d in dirs.values()})

    @classmethod
    def create(cls, limits: CgroupLimits) -> Cgroup:
        name = _GROUP_PREFIX + secrets.token_hex(6)
        mounts = _mounts()
        v1 = {opt: Path(point) for point, kind, opts in mounts if kind == "cgroup" for opt in opts}
        if "memory" in v1 and "pids" in v1:
            return cls._create_v1(name, v1, limits)
        unified = [Path(point) for point, kind, _ in mounts if kind == "cgroup2"]
        if unified:
            return cls._create_v2(name, unified[0], limits)
        raise CgroupUnavailable("no cgroup file system with memory and pids controllers")

    @classmethod
    def _create_v1(cls, name: str, mounts: dict[str, Path], limits: CgroupLimits) -> Cgroup:
        own = _own_paths()
        dirs: dict[str, Path] = {}
        try:
            for controller in _V1_CONTROLLERS:
                if controller not in mounts:
                    continue
                parent = SandboxSettings.from_env().sandbox_cgroup or own.get(controller, "/")
                folder = mounts[controller] / _under_mount(parent, mounts[controller]) / name
                if folder not in dirs.values():  # controllers mounted together share one
                    folder.mkdir()
                dirs[controller] = folder
            group = cls(1, dirs, limits)
            _write(dirs["memory"] / "memory.limit_in_bytes", str(limits.memory_bytes))
            # Without swap accounting the limit above already bounds what can be used.
            with contextlib.suppress(OSError):
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            _write(dirs["pids"] / "pids.max", str(limits.tasks))
            if limits.cpu_cores and "cpu" in dirs:
                quota = int(limits.cpu_cores * _CPU_PERIOD_US)
                _write(dirs["cpu"] / "cpu.cfs_period_us", str(_CPU_PERIOD_US))
                _write(dirs["cpu"] / "cpu.cfs_quota_us", str(quota))
            return group
        except OSError as exc:
            for folder in dirs.values():
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise CgroupUnavailable(f"cannot make a cgroup v1 group: {exc}") from exc

    @classmethod
    def _create_v2(cls, name: str, mount: Path, limits: CgroupLimits) -> Cgroup:
        own = _own_paths().get("", "/")
        if own.endswith("/" + _SUPERVISOR):
            own = own[: -len(_SUPERVISOR) - 1] or "/"
        parent = mount / _under_mount(SandboxSettings.from_env().sandbox_cgroup or own, mount)
        try:
            _enable_controllers(parent)
            folder = parent / name
            folder.mkdir()
        except OSError as exc:
            raise CgroupUnavailable(
                f"cannot make a cgroup v2 group under {parent}: {exc}; run the worker in a "
                f"cgroup of its own, or delegate one and name it in {CGROUP_ENV}"
            ) from exc
        group = cls(2, {"": folder}, limits)
        try:
            _write(folder / "memory.max", str(limits.memory_bytes))
            with contextlib.suppress(OSError):
                _write(folder / "memory.swap.max", "0")
            _write(folder / "pids.max", str(limits.tasks))
            if limits.cpu_cores:
                quota = int(limits.cpu_cores * _CPU_PERIOD_US)
                _write(folder / "cpu.max", f"{quota} {_CPU_PERIOD_US}")
        except OSError as exc:
            group.remove()
            raise CgroupUnavailable(f"cannot set limits on {folder}: {exc}") from exc
        return group

    def attach_self(self) -> None:
        """Move the calling process into the group (called in the child before exec)."""
        for procs in self._procs_files:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self._procs_files:
            found.update(int(p) for p in _read(Path(procs)).split())
        return found

    def kill(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the group, forks included; True once it is empty."""
        kill_file = self.dirs.get("", Path("/nonexistent")) / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                _write(kill_file, "1")
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.pids()
            if not left:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def cpu_seconds(self) -> float | None:
        """CPU time used by everything in the group so far (all threads and processes); the
        kernel's count, unaffected by time spent waiting for a CPU."""
        if self.version == 2:
            for line in _read(self.dirs[""] / "cpu.stat").splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec" and value.strip().isdigit():
                    return int(value) / 1e6
            return None
        folder = self.dirs.get("cpuacct")
        text = _read(folder / "cpuacct.usage").strip() if folder else ""
        return int(text) / 1e9 if text.isdigit() else None

    def usage(self) -> CgroupUsage:
        if self.version == 2:
            folder, events, peak = self.dirs[""], "memory.events", "memory.peak"
        else:
            folder, events, peak = (
                self.dirs["memory"],
                "memory.oom_control",
                "memory.max_usage_in_bytes",
            )
        counts = dict(line.split() for line in _read(folder / events).splitlines() if line)
        peak_text = _read(folder / peak).strip()
        return CgroupUsage(
            peak_memory_bytes=int(peak_text) if peak_text.isdigit() else None,
            oom_killed=int(counts.get("oom_kill", "0")) > 0,
        )

    def remove(self) -> None:
        """Kill what is left and delete the group's directories."""
        self.kill()
        for folder in dict.fromkeys(self.dirs.values()):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _enable_controllers(parent: Path) -> None:
    """Make memory, pids and cpu available to the children of `parent` (cgroup v2)."""
    wanted = [c for c in _V2_CONTROLLERS if c in _read(parent / "cgroup.controllers").split()]
    missing = {"memory", "pids"} - set(wanted)
    if missing:
        raise OSError(f"the controllers {', '.join(sorted(missing))} are not delegated here")
    enabled = set(_read(parent / "cgroup.subtree_control").split())
    todo = [c for c in wanted if c not in enabled]
    if not todo:
        return
    request = " ".join(f"+{c}" for c in todo)
    try:
        _write(parent / "cgroup.subtree_control", request)
    except OSError:
        # A cgroup holding processes cannot hand controllers to children ("no internal
        # processes"): move this process into a leaf of its own, then try once more.
        leaf = parent / _SUPERVISOR
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        _write(parent / "cgroup.subtree_control", request)
