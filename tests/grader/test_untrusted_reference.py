"""An author's reference graded with `untrusted_reference`: it runs in a sandbox of its own
(grader/untrusted.py), so what it tries against the worker (its files, its environment, the
network, processes that outlive the grading, the harness's own code that grades everyone
else) reaches nothing. Each hostile probe is run once with the reference trusted as well,
where it does reach its target: that shows the probe works, and what the sandbox stops."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import grader.check
from grader.harness import UNTRUSTED_RANKS, grade
from grader.problem import Problem
from grader.report import Status

LINGERING = "kj-hostile-reference-lingers"

# Prepended to vectoradd's reference: every probe runs in generate_input, and whatever it
# found ends the grading as the reference's own error, whose traceback the report shows.
HOSTILE = textwrap.dedent(
    """
    import os, socket, sys

    def _probes():
        found = []
        try:
            with open({secret_file!r}) as f:
                found.append("file:" + f.read())
        except OSError:
            pass
        if {env_name!r} in os.environ:
            found.append("env:" + os.environ[{env_name!r}])
        try:
            with socket.create_connection(("127.0.0.1", {port}), timeout=2):
                found.append("network:connected")
        except OSError:
            pass
        try:
            with open({written!r}, "w") as f:
                f.write("written")
            found.append("wrote:host")
        except OSError:
            pass
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-c", "import time; time.sleep(600)", {lingering!r}],
                dict(os.environ),
                setsid=True,
            )
        except OSError:
            pass
        try:
            import grader.check
            grader.check.run_check = lambda check, data, output: (True, "")
        except Exception:
            pass
        return found
    """
)
REDIRECTED = textwrap.dedent(
    """
    _generate = generate_input

    def generate_input(**kwargs):
        found = _probes()
        if found:
            raise RuntimeError("REACHED " + " ".join(found))
        return _generate(**kwargs)
    """
)


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.1)
    yield server, server.getsockname()[1]
    server.close()


def _accepted(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except OSError:
        return False
    connection.close()
    return True


def _lingering() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if LINGERING.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@contextlib.contextmanager
def restored_checks() -> Iterator[None]:
    original = grader.check.run_check
    try:
        yield
    finally:
        grader.check.run_check = original
        for pid in _lingering():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)  # spawned by this process when the reference was trusted


def _hostile(problem: Problem, tmp_path: Path, port: int) -> tuple[Problem, dict[str, str]]:
    secret_file = tmp_path / "worker-secret.txt"
    secret_file.write_text("s3cret-on-the-worker")
    targets = {
        "secret_file": str(secret_file),
        "env_name": "KJ_HOSTILE_REFERENCE_SECRET",
        "port": str(port),
        "written": str(tmp_path / "written-by-reference"),
        "lingering": LINGERING,
    }
    prelude = HOSTILE.format(**{k: (int(v) if k == "port" else v) for k, v in targets.items()})
    reference = prelude + problem.files["reference.py"] + REDIRECTED
    return dataclasses.replace(problem, files={**problem.files, "reference.py": reference}), targets


def test_an_untrusted_reference_grades_as_a_trusted_one(
    vectoradd: Problem, solution: Callable[[str, str], str]
) -> None:
    right = grade(vectoradd, solution("vectoradd", "pytorch"), untrusted_reference=True)
    assert right.status == Status.PASSED, right.message
    wrong = grade(vectoradd, solution("vectoradd", "wrong_zeros"), untrusted_reference=True)
    assert wrong.status == Status.FAILED
    assert "mismatch at (0, 0)" in wrong.message


@dataclasses.dataclass
class Probed:
    """The hostile reference's problem, what it aims at, and the port it tries."""

    problem: Problem
    targets: dict[str, str]
    server: socket.socket


@pytest.fixture
def probed(
    vectoradd: Problem,
    tmp_path: Path,
    listener: tuple[socket.socket, int],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Probed]:
    server, port = listener
    hostile, targets = _hostile(vectoradd, tmp_path, port)
    monkeypatch.setenv(targets["env_name"], "s3cret-in-the-environment")
    with restored_checks():
        yield Probed(hostile, targets, server)


def test_a_hostile_reference_reaches_nothing_of_the_worker(
    vectoradd: Problem, solution: Callable[[str, str], str], probed: Probed
) -> None:
    report = grade(probed.problem, solution("vectoradd", "pytorch"), untrusted_reference=True)
    # Nothing reached: the probes found nothing, so the reference generated its inputs.
    assert report.status == Status.PASSED, report.message
    assert "REACHED" not in report.message
    assert not _accepted(probed.server)
    assert not Path(probed.targets["written"]).exists()
    assert _lingering() == [], "a process of the reference outlived its grading"
    # The harness's checks are its own still: a wrong kernel on another problem fails.
    wrong = grade(vectoradd, solution("vectoradd", "wrong_zeros"))
    assert wrong.status == Status.FAILED


def test_the_same_reference_trusted_reaches_all_of_it(
    vectoradd: Problem, solution: Callable[[str, str], str], probed: Probed
) -> None:
    """The control: in the harness's process each probe succeeds."""
    report = grade(probed.problem, solution("vectoradd", "pytorch"))
    assert report.status == Status.ERROR
    for reached in ("file:s3cret-on-the-worker", "env:s3cret-in-the-environment",
                    "network:connected", "wrote:host"):  # fmt: skip
        assert reached in report.message
    assert _accepted(probed.server)
    assert _lingering() != []
    wrong = grade(vectoradd, solution("vectoradd", "wrong_zeros"))
    assert wrong.status == Status.PASSED  # the patched check passes everything


def test_a_reference_that_hangs_ends_its_grading_with_a_timeout(
    vectoradd: Problem, solution: Callable[[str, str], str]
) -> None:
    hanging = vectoradd.files["reference.py"] + textwrap.dedent(
        """
        def generate_input(**kwargs):
            import time
            time.sleep(10**6)
        """
    )
    problem = dataclasses.replace(vectoradd, files={**vectoradd.files, "reference.py": hanging})
    report = grade(problem, solution("vectoradd", "pytorch"), timeout_s=8, untrusted_reference=True)
    assert report.status == Status.TIMEOUT
    assert "reference" in report.message
    assert report.wall_s < 30


def test_a_reference_that_dies_is_the_problems_error(
    vectoradd: Problem, solution: Callable[[str, str], str]
) -> None:
    dying = vectoradd.files["reference.py"] + textwrap.dedent(
        """
        def ref_kernel(data):
            import os
            os._exit(3)
        """
    )
    problem = dataclasses.replace(vectoradd, files={**vectoradd.files, "reference.py": dying})
    report = grade(problem, solution("vectoradd", "pytorch"), untrusted_reference=True)
    assert report.status == Status.ERROR
    assert "the problem's reference ref_kernel failed" in report.message


def test_inputs_that_cannot_leave_the_sandbox_are_the_problems_error(
    vectoradd: Problem, solution: Callable[[str, str], str]
) -> None:
    objects = vectoradd.files["reference.py"] + textwrap.dedent(
        """
        class Config:
            pass

        def generate_input(**kwargs):
            return Config()
        """
    )
    problem = dataclasses.replace(vectoradd, files={**vectoradd.files, "reference.py": objects})
    report = grade(problem, solution("vectoradd", "pytorch"), untrusted_reference=True)
    assert report.status == Status.ERROR
    assert "generate_input" in report.message


def test_problems_of_several_ranks_need_a_trusted_reference(vectoradd: Problem) -> None:
    spec = {**vectoradd.spec, "multi_gpu": True}
    report = grade(dataclasses.replace(vectoradd, spec=spec), "", untrusted_reference=True)
    assert report.status == Status.ERROR
    assert report.message == UNTRUSTED_RANKS
