"""Starting a child process in its own session with rlimits, optionally inside a bubblewrap
sandbox with a seccomp filter and a cgroup, capturing capped output, and killing everything
it started; `start` for talking to it, `run` for one-shot use."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sandbox.bwrap import Isolation, SandboxUnavailable, identity_files
from sandbox.cgroup import Cgroup, CgroupUnavailable
from sandbox.seccomp import SeccompUnsupported, deny_list_program

DEFAULT_CAP = 64 * 1024
_READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """Per-process rlimits applied in the child before exec (None leaves a limit alone)."""

    core_bytes: int | None = 0
    open_files: int | None = 1024
    file_size_bytes: int | None = 1 << 30
    # No address-space limit by default: CUDA reserves terabytes of virtual memory.
    address_space_bytes: int | None = None
    cpu_seconds: int | None = None


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    wall_s: float
    # From the sandbox's cgroup, when there was one.
    oom_killed: bool = False
    peak_memory_bytes: int | None = None


class _CappedReader:
    """Drains a pipe on a thread, keeping the first `cap` bytes and counting the rest,
    so a chatty child never blocks on a full pipe."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        self._stream = stream
        self._cap = cap
        self._kept = bytearray()
        self._dropped = 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                chunk = os.read(fd, _READ_CHUNK)
                if not chunk:
                    break
                room = self._cap - len(self._kept)
                if room > 0:
                    self._kept += chunk[:room]
                self._dropped += max(0, len(chunk) - max(room, 0))
        except OSError:
            pass

    def text(self, join_timeout_s: float = 2.0) -> str:
        # A process that escaped the group kill may still hold the pipe: do not wait forever.
        self._thread.join(join_timeout_s)
        out = bytes(self._kept).decode("utf-8", errors="replace")
        if self._dropped:
            out += f"\n[... output truncated: {self._dropped} more bytes not shown]\n"
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()


def _limit_setter(limits: Limits, cgroup: Cgroup | None = None) -> Callable[[], None]:
    pairs = [
        (resource.RLIMIT_CORE, limits.core_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
    ]
    chosen = [(which, value) for which, value in pairs if value is not None]

    def apply() -> None:
        for which, value in chosen:
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
        # The child must not die of SIGPIPE silently nor inherit an ignored SIGINT.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        # If whoever started it dies (a worker killed mid-grading), the child goes too,
        # rather than keep the GPU busy under the next grading.
        _die_with_parent()
        if cgroup is not None:
            cgroup.attach_self()

    return apply


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def kill_tree(pid: int) -> None:
    """SIGKILL the process group led by `pid` (children started with `start` lead one)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class _Confinement:
    """The host-side parts of one sandbox: identity files, the seccomp program's fd and the
    cgroup. Made before the child starts, undone after it ends."""

    def __init__(self, isolation: Isolation) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="kj-sandbox-"))
        self.cgroup: Cgroup | None = None
        self.seccomp_fd: int | None = None
        try:
            passwd, group = identity_files(self.folder)
            if isolation.seccomp:
                self.seccomp_fd = _program_fd(deny_list_program())
            if isolation.cgroup is not None:
                self.cgroup = Cgroup.create(isolation.cgroup)
            self.argv = isolation.argv(self.seccomp_fd, passwd, group)
        except (CgroupUnavailable, SeccompUnsupported) as exc:
            self.close()
            raise SandboxUnavailable(str(exc)) from exc
        except BaseException:
            self.close()
            raise

    @property
    def fds(self) -> tuple[int, ...]:
        return () if self.seccomp_fd is None else (self.seccomp_fd,)

    def close(self) -> None:
        if self.seccomp_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.seccomp_fd)
            self.seccomp_fd = None
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.folder, ignore_errors=True)


def _program_fd(program: bytes) -> int:
    fd = os.memfd_create("kj-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class Child:
    """A running child in its own session; talk to it through the fds you passed. With an
    `isolation`, the command runs inside bubblewrap and a cgroup of its own."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        pass_fds: Sequence[int] = (),
        stdout_cap: int = DEFAULT_CAP,
        stderr_cap: int = DEFAULT_CAP,
        limits: Limits | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        self.started = time.monotonic()
        self._confinement = _Confinement(isolation) if isolation is not None else None
        prefix: list[str] = []
        extra_fds: tuple[int, ...] = ()
        cgroup = None
        if self._confinement is not None:
            prefix, extra_fds = self._confinement.argv, self._confinement.fds
            cgroup = self._confinement.cgroup
        try:
            self._popen = subprocess.Popen(
                [*prefix, *argv],
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(*pass_fds, *extra_fds),
                close_fds=True,
                start_new_session=True,
                preexec_fn=_limit_setter(limits or Limits(), cgroup),
            )
        except BaseException:
            if self._confinement is not None:
                self._confinement.close()
            raise
        assert self._popen.stdout is not None and self._popen.stderr is not None
        self._out = _CappedReader(self._popen.stdout, stdout_cap)
        self._err = _CappedReader(self._popen.stderr, stderr_cap)
        self.timed_out = False
        self._ended: float | None = None

    @property
    def pid(self) -> int:
        return self._popen.pid

    def cpu_seconds(self) -> float | None:
        """CPU time of everything in the sandbox's cgroup; None without one."""
        if self._confinement is None or self._confinement.cgroup is None:
            return None
        return self._confinement.cgroup.cpu_seconds()

    def pids(self) -> set[int]:
        """The processes of this child: everything in its cgroup, else just the child."""
        if self._confinement is not None and self._confinement.cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                return self._confinement.cgroup.pids() | {self._popen.pid}
        return {self._popen.pid}

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout_s: float | None = None) -> int | None:
        """Wait for the child to exit; None if it is still running after `timeout_s`."""
        try:
            code = self._popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
        if self._ended is None:
            self._ended = time.monotonic()
        return code

    def kill_tree(self) -> None:
        """Kill the child's whole process group (and, in a sandbox, everything in its
        cgroup, which holds the processes that left the group too) and reap the child."""
        kill_tree(self._popen.pid)
        if self._confinement is not None and self._confinement.cgroup is not None:
            self._confinement.cgroup.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(5)
        if self._ended is None:
            self._ended = time.monotonic()

    def result(self) -> ProcessResult:
        """Kill what is left of the group, then collect the capped output."""
        self.kill_tree()
        stdout, stderr = self._out.text(), self._err.text()
        self._out.close()
        self._err.close()
        ended = self._ended if self._ended is not None else time.monotonic()
        oom_killed, peak = False, None
        if self._confinement is not None:
            if self._confinement.cgroup is not None:
                usage = self._confinement.cgroup.usage()
                oom_killed, peak = usage.oom_killed, usage.peak_memory_bytes
            self._confinement.close()
        return ProcessResult(
            returncode=self._popen.returncode,
            stdout=stdout,
            stderr=stderr,
            timed_out=self.timed_out,
            wall_s=ended - self.started,
            oom_killed=oom_killed,
            peak_memory_bytes=peak,
        )


# Start `argv` in a new session with limits (stdin is /dev/null) and get its handle.
start = Child


def run(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    timeout_s: float,
    pass_fds: Sequence[int] = (),
    stdout_cap: int = DEFAULT_CAP,
    stderr_cap: int = DEFAULT_CAP,
    limits: Limits | None = None,
    isolation: Isolation | None = None,
) -> ProcessResult:
    """Run `argv` to completion or until `timeout_s`, then kill everything it started."""
    child = start(
        argv,
        cwd=cwd,
        env=env,
        pass_fds=pass_fds,
        stdout_cap=stdout_cap,
        stderr_cap=stderr_cap,
        limits=limits,
        isolation=isolation,
    )
    if child.wait(timeout_s) is None:
        child.timed_out = True
    return child.result()
