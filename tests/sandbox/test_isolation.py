"""The bubblewrap sandbox: what a command inside can see, reach, call and use, and that
everything it starts is gone afterwards."""

from __future__ import annotations

import os
import secrets
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sandbox
from sandbox.bwrap import SYSTEM_PATHS
from sandbox.seccomp import DENIED_X86_64
from tests.proc import processes

PY = sys.executable
PYTHON_PATHS = tuple(sorted({sys.prefix, sys.base_prefix}))


def _isolation(**overrides: object) -> sandbox.Isolation:
    settings: dict[str, object] = {"cwd": "/tmp", "ro_paths": (*SYSTEM_PATHS, *PYTHON_PATHS)}
    settings.update(overrides)
    return sandbox.Isolation(**settings)  # type: ignore[arg-type]


def _python(
    script: str,
    tmp_path: Path,
    *,
    timeout_s: float = 60,
    isolation: sandbox.Isolation | None = None,
    env: dict[str, str] | None = None,
) -> sandbox.ProcessResult:
    return sandbox.run(
        [PY, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        env=env or {"PATH": "/usr/bin:/bin"},
        timeout_s=timeout_s,
        isolation=isolation or _isolation(),
    )


def _processes_with(marker: str) -> list[int]:
    return [p.pid for p in processes() if marker in p.cmdline and p.pid != os.getpid()]


def test_runs_as_an_unprivileged_user_with_no_capabilities(tmp_path: Path) -> None:
    result = _python(
        """
        import os
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        print(os.getuid(), os.getgid(), status["CapEff"].strip(), status["CapBnd"].strip(),
              status["NoNewPrivs"].strip(), status["Seccomp"].strip())
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["65534", "65534", "0" * 16, "0" * 16, "1", "2"]


def test_host_files_and_secrets_are_out_of_reach(tmp_path: Path) -> None:
    canary = tmp_path / "secret.txt"
    canary.write_text("CANARY")
    result = _python(
        f"""
        import os
        for path in ("/etc/shadow", "/etc/hostname", {str(canary)!r}, "/var", "/root/.bashrc",
                     "/proc/1/root/etc/shadow", "/sys/fs/cgroup"):
            print(path, os.path.exists(path))
        print(os.listdir("/home"), sorted(os.listdir("/etc")))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(line.endswith("False") for line in lines[:-1]), result.stdout
    # Only the linker's files, the alternatives symlinks and a passwd knowing one user.
    assert lines[-1].startswith("['sandbox'] ")
    assert "shadow" not in lines[-1] and "hosts" not in lines[-1] and "ssl" not in lines[-1]


def test_only_the_sandbox_user_is_known(tmp_path: Path) -> None:
    result = _python("print(open('/etc/passwd').read())", tmp_path)
    assert result.stdout.strip() == "sandbox:x:65534:65534:sandbox:/home/sandbox:/bin/sh"


def test_the_root_is_read_only_and_tmp_is_private(tmp_path: Path) -> None:
    marker = f"kj-marker-{secrets.token_hex(4)}"
    script = f"""
        import os
        for target in ("/usr/{marker}", "{sys.prefix}/{marker}"):
            try:
                open(target, "w")
                print("wrote", target)
            except OSError as exc:
                print("refused", exc.errno)
        print(os.path.exists("/tmp/{marker}"))
        # Folders the host has but the sandbox does not show, and the empty root itself.
        for folder in ("/var/tmp", "/root/.local/bin", "/{marker}"):
            try:
                os.makedirs(folder, exist_ok=True)
                open(folder + "/{marker}", "w")
                print("wrote", folder)
            except OSError as exc:
                print("refused", exc.errno)
        open("/tmp/{marker}", "w").write("x")
        open(os.path.expanduser("~/{marker}"), "w").write("x")
        """
    first = _python(script, tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[:3] == ["refused 30", "refused 30", "False"]
    assert lines[3:6] == ["refused 30"] * 3
    # Nothing written inside reached the host or the next sandbox.
    assert not (Path("/tmp") / marker).exists()
    second = _python(script, tmp_path)
    assert second.stdout.splitlines()[2] == "False"


def test_there_is_no_network_not_even_the_hosts_loopback(tmp_path: Path) -> None:
    result = _python(
        """
        import os, socket
        for address in (("127.0.0.1", 6379), ("127.0.0.1", 5432), ("1.1.1.1", 53)):
            try:
                socket.create_connection(address, timeout=2)
                print("connected", address)
            except OSError as exc:
                print("refused")
        print(os.path.exists("/var/run/postgresql"), os.path.exists("/run"))
        print(sorted(name for _, name in socket.if_nameindex()))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["refused"] * 3 + ["False False", "['lo']"]


def test_seccomp_refuses_the_dangerous_system_calls(tmp_path: Path) -> None:
    if os.uname().machine != "x86_64":
        pytest.skip("the deny-list's numbers are x86_64's")
    result = _python(
        f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, number in {DENIED_X86_64!r}.items():
            ctypes.set_errno(0)
            rc = libc.syscall(number, 0, 0, 0, 0, 0, 0)
            print(name, rc, ctypes.get_errno())
        # clone() creating a user namespace, and terminal input injection.
        print("clone_newuser", libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0), ctypes.get_errno())
        print("tiocsti", libc.ioctl(0, 0x5412, ctypes.c_char_p(b"x")), ctypes.get_errno())
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for line in result.stdout.splitlines():
        name, rc, error = line.split()
        assert (rc, error) == ("-1", "1"), f"{name} was not refused with EPERM: {line}"
    assert len(result.stdout.splitlines()) == len(DENIED_X86_64) + 2


def test_threads_and_subprocesses_still_work(tmp_path: Path) -> None:
    """clone3 answers ENOSYS so the C library falls back to clone, whose flags are checked."""
    result = _python(
        """
        import subprocess, threading
        out = []
        threads = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
        [t.start() for t in threads]; [t.join() for t in threads]
        print(sorted(out) == list(range(8)), subprocess.run(["true"]).returncode)
        """,
        tmp_path,
    )
    assert result.stdout.strip() == "True 0", result.stderr


def test_host_processes_are_invisible(tmp_path: Path) -> None:
    result = _python(
        f"""
        import os
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        print(max(pids) < 10, {os.getpid()} in pids)
        """,
        tmp_path,
    )
    assert result.stdout.strip() == "True False", result.stderr


def test_a_host_memory_bomb_is_killed_and_reported(tmp_path: Path) -> None:
    isolation = _isolation(cgroup=sandbox.CgroupLimits(memory_bytes=256 << 20))
    result = _python(
        """
        blocks = []
        while True:
            blocks.append(bytearray(64 << 20))
        """,
        tmp_path,
        isolation=isolation,
    )
    assert result.returncode != 0 and result.oom_killed, result
    assert result.peak_memory_bytes is None or result.peak_memory_bytes <= (256 << 20) + (8 << 20)


def test_filling_tmp_is_bounded_by_the_memory_limit(tmp_path: Path) -> None:
    isolation = _isolation(cgroup=sandbox.CgroupLimits(memory_bytes=256 << 20))
    result = _python(
        """
        chunk = b"x" * (16 << 20)
        with open("/tmp/fill", "wb") as f:
            while True:
                f.write(chunk)
        """,
        tmp_path,
        isolation=isolation,
    )
    assert result.returncode != 0


def test_a_fork_bomb_is_contained_and_cleaned_up(tmp_path: Path) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"
    isolation = _isolation(cgroup=sandbox.CgroupLimits(tasks=64))
    started = time.monotonic()
    result = _python(
        f"""
        import os, subprocess
        while True:
            try:
                if os.fork() == 0:
                    os.execvp("sleep", ["sleep", "{marker}"])
            except OSError:
                break
        print("stopped by the tasks limit")
        """,
        tmp_path,
        isolation=isolation,
        timeout_s=30,
    )
    assert "stopped by the tasks limit" in result.stdout, result.stderr
    assert time.monotonic() - started < 30
    assert _processes_with(marker) == []


def test_daemons_that_leave_the_session_are_killed_at_the_end(tmp_path: Path) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.25"
    result = _python(
        f"""
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "{marker}"])
            os._exit(0)
        print("parent leaves")
        """,
        tmp_path,
    )
    assert result.stdout.strip() == "parent leaves", result.stderr
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []


def test_a_missing_bubblewrap_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KJ_BWRAP", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap is not installed"):
        _python("print(1)", tmp_path)


def test_a_read_only_folder_below_tmp_stays_visible(tmp_path: Path) -> None:
    """Packages installed under /tmp (as on a host that carries its own wheels) still load."""
    (tmp_path / "shown.txt").write_text("visible")
    isolation = _isolation(ro_paths=(*SYSTEM_PATHS, *PYTHON_PATHS, str(tmp_path)))
    result = _python(
        f"print(open({str(tmp_path / 'shown.txt')!r}).read())", tmp_path, isolation=isolation
    )
    assert result.stdout.strip() == "visible", result.stderr


def test_kernel_settings_are_read_only(tmp_path: Path) -> None:
    result = _python(
        """
        import os
        # Opening for writing is enough to be refused; nothing is written if it is not.
        for knob in ("/proc/sys/kernel/perf_event_paranoid", "/proc/sys/vm/drop_caches",
                     "/proc/sysrq-trigger"):
            try:
                os.close(os.open(knob, os.O_WRONLY))
                print("opened", knob)
            except OSError as exc:
                print("refused", exc.errno)
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    # EROFS (30), or ENOENT (2) where a kernel has no sysrq-trigger.
    assert all(line in ("refused 30", "refused 2") for line in result.stdout.splitlines()), (
        result.stdout
    )
