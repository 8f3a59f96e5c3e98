"""Fixtures of the hostile corpus: the canaries a worker would hold (environment, HOME and
temp files, a loopback service, the secret seed) and the device's measured peaks."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.calibrate import measure_peaks

# A stand-in for the broker and database on the grader's loopback; cases know these names.
CANARY_PORT = 47391
CANARY_UNIX = "\0kj-hostile-broker"


@dataclass(frozen=True)
class Canaries:
    token: str  # every planted secret contains it
    secret_seed: int
    env: dict[str, str]  # the rig's (the worker's) whole environment
    home: Path

    def leaks(self, text: str) -> list[str]:
        return [s for s in (self.token, str(self.secret_seed)) if s in text]


def _serve_banner(server: socket.socket, banner: bytes, stop: threading.Event) -> None:
    server.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        with conn, contextlib.suppress(OSError):
            conn.sendall(banner)


@contextlib.contextmanager
def _listeners(token: str) -> Iterator[None]:
    banner = f"KJ-BROKER redis://:{token}@redis\n".encode()
    stop = threading.Event()
    servers: list[socket.socket] = []
    threads = []
    try:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        servers.append(tcp)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", CANARY_PORT))
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        servers.append(unix)
        unix.bind(CANARY_UNIX)
        for server in servers:
            server.listen(16)
            thread = threading.Thread(
                target=_serve_banner, args=(server, banner, stop), daemon=True
            )
            thread.start()
            threads.append(thread)
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(2)
        for server in servers:
            server.close()


@pytest.fixture(scope="module")
def canaries() -> Iterator[Canaries]:
    token = "CANARY" + secrets.token_hex(8)
    secret_seed = secrets.SystemRandom().randrange(10**9, 2**31)
    home = Path(tempfile.mkdtemp(prefix="kj-hostile-home-"))
    (home / ".pgpass").write_text(f"db:5432:kj:kj:{token}pg\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"[default]\naws_secret_access_key = {token}aws\n")
    temp_file = Path(tempfile.gettempdir()) / f"kj-hostile-canary-{secrets.token_hex(4)}.txt"
    temp_file.write_text(f"worker secret {token}tmp\n")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "KJ_DATABASE_URL": f"postgresql://kj:{token}db@db/kj",
        "KJ_BROKER_URL": f"redis://:{token}redis@redis",
        "KJ_SECRET_KEY": f"{token}key",
        "AWS_SECRET_ACCESS_KEY": f"{token}aws",
        "KJ_SECRET_SEED": str(secret_seed),
    }
    # The worker's own settings: where bubblewrap is, the delegated cgroup, the GPU order.
    passed = ("KJ_BWRAP", "KJ_SANDBOX_CGROUP", "KJ_SANDBOX_RO_PATHS", "CUDA_DEVICE_ORDER")
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", *passed):
        if name in os.environ:
            env[name] = os.environ[name]
    try:
        with _listeners(token):
            yield Canaries(token, secret_seed, env, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        temp_file.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def cpu_peaks() -> dict[str, object]:
    return measure_peaks("cpu").to_dict()
