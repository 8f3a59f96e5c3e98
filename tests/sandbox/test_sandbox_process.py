"""sandbox: limits, capped output, environment allow-list, killing the whole group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import sandbox

PY = sys.executable


def _alive(pid: int) -> bool:
    """True for a live process; a zombie waiting for its reaper counts as dead."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_run_returns_output_and_exit_code(tmp_path: Path) -> None:
    result = sandbox.run(
        [PY, "-c", "print('hi'); import sys; sys.exit(3)"], cwd=tmp_path, env={}, timeout_s=30
    )
    assert result.returncode == 3 and result.stdout == "hi\n" and not result.timed_out


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = f"""
import os, time
pid = os.fork()
if pid == 0:
    time.sleep(1000)
    os._exit(0)
open({str(pid_file)!r}, "w").write(str(pid))
time.sleep(1000)
"""
    started = time.monotonic()
    result = sandbox.run([PY, "-c", script], cwd=tmp_path, env={}, timeout_s=2)
    assert result.timed_out
    assert time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_output_is_capped_and_the_child_never_blocks(tmp_path: Path) -> None:
    script = "import sys\nsys.stdout.write('a' * 5_000_000)\nsys.stderr.write('b' * 300)\n"
    result = sandbox.run(
        [PY, "-c", script], cwd=tmp_path, env={}, timeout_s=30, stdout_cap=1000, stderr_cap=100
    )
    assert result.returncode == 0 and not result.timed_out
    assert result.stdout.startswith("a" * 1000)
    assert "output truncated: 4999000 more bytes" in result.stdout
    assert result.stderr.startswith("b" * 100) and "200 more bytes" in result.stderr


def test_environment_is_exactly_what_was_given(tmp_path: Path) -> None:
    os.environ["KJ_SANDBOX_SECRET"] = "1"
    try:
        result = sandbox.run(
            [PY, "-c", "import os; print(sorted(os.environ))"],
            cwd=tmp_path,
            env={"ONLY": "x"},
            timeout_s=30,
        )
    finally:
        del os.environ["KJ_SANDBOX_SECRET"]
    assert "KJ_SANDBOX_SECRET" not in result.stdout
    assert "'ONLY'" in result.stdout


def test_limits_and_session_apply_in_the_child(tmp_path: Path) -> None:
    script = (
        "import os, resource\n"
        "print(resource.getrlimit(resource.RLIMIT_CORE)[0],"
        " resource.getrlimit(resource.RLIMIT_NOFILE)[0],"
        " os.getsid(0) == os.getpid())\n"
    )
    result = sandbox.run(
        [PY, "-c", script], cwd=tmp_path, env={}, timeout_s=30, limits=sandbox.Limits(open_files=64)
    )
    assert result.stdout.split() == ["0", "64", "True"]


def test_other_descriptors_are_closed_and_passed_ones_kept(tmp_path: Path) -> None:
    kept_r, kept_w = os.pipe()
    other_r, other_w = os.pipe()
    os.set_inheritable(other_w, True)
    try:
        script = (
            "import os, sys\n"
            "def ok(fd):\n"
            "    try:\n        os.fstat(fd)\n        return True\n"
            "    except OSError:\n        return False\n"
            f"print(ok({kept_w}), ok({other_w}))\n"
        )
        result = sandbox.run(
            [PY, "-c", script], cwd=tmp_path, env={}, timeout_s=30, pass_fds=(kept_w,)
        )
        assert result.stdout.split() == ["True", "False"]
    finally:
        for fd in (kept_r, kept_w, other_r, other_w):
            os.close(fd)


def test_start_gives_a_handle_to_a_running_child(tmp_path: Path) -> None:
    child = sandbox.start(
        [PY, "-c", "import time; print('up', flush=True); time.sleep(100)"], cwd=tmp_path, env={}
    )
    assert child.wait(1.5) is None and child.poll() is None
    child.kill_tree()
    result = child.result()
    assert result.returncode == -9 and "up" in result.stdout


def test_child_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A worker killed mid-grading must not leave its runner behind on the GPU."""
    import subprocess
    import sys
    import time

    starter = (
        "import os, sys, sandbox\n"
        "child = sandbox.start([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " cwd='.', env={'PATH': os.environ['PATH']})\n"
        "print(child.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", starter], capture_output=True, text=True, timeout=60,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError("the child outlived the process that started it")
