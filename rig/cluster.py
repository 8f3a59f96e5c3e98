"""Throwaway PostgreSQL clusters and Redis servers, each on a port and in a temp folder of its
own, for tests and bench scripts that stop, kill and restart them. The machine's own
PostgreSQL and Redis are never touched.

    with postgres_cluster() as pg, redis_server(appendonly=True) as broker:
        url = pg.create_database("kj")      # postgresql+psycopg://postgres@127.0.0.1:PORT/kj
        pg.stop(); pg.start()               # same data, same port
        broker.kill(); broker.start()

Starting a cluster takes about 2 s on a 2-core machine (initdb about 1.5 s, the server about
0.3 s); a Redis server about 0.1 s. With ``netns=NAME`` the server runs inside that network
namespace (``ip netns exec``) and listens on ``host``, an address there; readiness is checked
over the Unix socket in the temp folder, which every namespace reaches."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import redis
from psycopg import sql
from psycopg.conninfo import make_conninfo
from redis.backoff import NoBackoff
from redis.retry import Retry

POSTGRES_USER = "postgres"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class ServiceUnavailable(RuntimeError):
    """A server could not be set up or did not come up; the message holds its log's tail."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps them off the PATH)."""
    installed = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: int(path.parent.name)
    )
    if installed:
        return installed[-1]
    found = shutil.which("postgres")
    if found is None:
        raise ServiceUnavailable("PostgreSQL's binaries (initdb, postgres) are not installed")
    return Path(found).parent


def in_netns(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def as_postgres_user() -> list[str]:
    """PostgreSQL refuses to run as root. setpriv execs (no process in between), so the
    pid we hold is the postmaster's and signals reach it directly."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={POSTGRES_USER}", f"--regid={POSTGRES_USER}", "--init-groups"]


def log_tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if process.poll() is not None:
            raise ServiceUnavailable(f"{process.args!r} exited:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            raise ServiceUnavailable(f"{process.args!r} did not come up:\n{log_tail(log)}")
        time.sleep(0.05)


class ServerProcess:
    """One server process in a session of its own (so a hard stop takes its children too),
    its output appended to ``log_path``."""

    def __init__(self, root: Path, log_name: str) -> None:
        self.root = root
        self.log_path = root / log_name
        self.process: subprocess.Popen[bytes] | None = None
        # Left running, with its folder, when the block ends (a bench's --keep).
        self.keep = False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.running and self.process else None

    def spawn(self, argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
        if self.running:
            raise RuntimeError(f"{argv[0]} is running already")
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return self.process

    def signal_and_wait(self, sig: int, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Send ``sig`` to the server; SIGKILL its whole session if it outlives the wait."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout_s)
        self.kill_session()

    def kill_session(self) -> None:
        """SIGKILL everything in the server's session, as a lost machine would end it."""
        if self.process is None:
            return
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=STOP_TIMEOUT_S)
        self.process = None

    def remove(self) -> None:
        if self.keep:
            return
        self.kill_session()
        shutil.rmtree(self.root, ignore_errors=True)


class PostgresCluster(ServerProcess):
    """A cluster made by initdb in a temp folder: user ``postgres``, trust authentication,
    TCP on ``host:port``, its Unix socket in the folder."""

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        netns: str | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(Path(tempfile.mkdtemp(prefix="kj-postgres-")), "postgres.log")
        self.host = host
        self.port = port or free_port()
        self.netns = netns
        self.settings = dict(settings or {})
        self.data_dir = self.root / "data"
        self.bin = postgres_bin()

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, POSTGRES_USER, POSTGRES_USER)
        argv = [
            *as_postgres_user(), str(self.bin / "initdb"), "-D", str(self.data_dir),
            "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C",
            "--no-sync", "--no-instructions",
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            done = subprocess.run(argv, cwd=self.root, stdout=log, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise ServiceUnavailable(f"initdb failed:\n{log_tail(self.log_path)}")
        # initdb trusts loopback only; a multi-host test reaches the cluster from another
        # namespace's address. What it listens on (``host``) bounds who can connect.
        with (self.data_dir / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n")

    def start(self) -> None:
        """Start the server on the data folder (a first time, or again after a stop or kill)
        and wait until it takes connections."""
        options = {
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": str(self.root),
            **self.settings,
        }
        argv = [
            *in_netns(self.netns), *as_postgres_user(), str(self.bin / "postgres"),
            "-D", str(self.data_dir),
            *[arg for key, value in options.items() for arg in ("-c", f"{key}={value}")],
        ]  # fmt: skip
        process = self.spawn(argv, cwd=self.root)
        wait_until(self.accepts_connections, process, self.log_path)

    def accepts_connections(self) -> bool:
        try:
            psycopg.connect(self.socket_conninfo("postgres"), connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def socket_conninfo(self, dbname: str) -> str:
        """Over the Unix socket, which works whatever namespace the server listens in."""
        return make_conninfo(host=str(self.root), port=self.port, user="postgres", dbname=dbname)

    def stop(self) -> None:
        """A fast shutdown (SIGINT): sessions are ended, the data is consistent."""
        self.signal_and_wait(signal.SIGINT)

    def kill(self) -> None:
        """A hard stop of the postmaster and every backend; the next start recovers from
        the WAL."""
        self.kill_session()

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """A new, empty database; returns its URL."""
        with psycopg.connect(self.socket_conninfo("postgres"), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)


class RedisServer(ServerProcess):
    """A redis-server with no snapshots, on ``host:port`` and a Unix socket in its temp
    folder; with ``appendonly`` its data outlives a stop or a kill (up to the last second)."""

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        appendonly: bool = False,
        netns: str | None = None,
    ) -> None:
        super().__init__(Path(tempfile.mkdtemp(prefix="kj-redis-")), "redis.log")
        self.host = host
        self.port = port or free_port()
        self.appendonly = appendonly
        self.netns = netns
        self.socket_path = self.root / "redis.sock"

    def start(self) -> None:
        argv = [
            *in_netns(self.netns), "redis-server",
            "--port", str(self.port), "--bind", self.host,
            # Reached only by this machine's tests; a non-loopback address is refused otherwise.
            "--protected-mode", "no",
            "--dir", str(self.root), "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--unixsocket", str(self.socket_path), "--unixsocketperm", "700",
        ]  # fmt: skip
        process = self.spawn(argv, cwd=self.root)
        wait_until(self.answers, process, self.log_path)

    def client(self) -> redis.Redis:
        """Over the Unix socket. No retries: redis-py's default retries a refused
        connection for seconds, and a stopped server must read as stopped at once."""
        return redis.Redis(
            unix_socket_path=str(self.socket_path), socket_timeout=5, retry=Retry(NoBackoff(), 0)
        )

    def answers(self) -> bool:
        try:
            with self.client() as client:
                return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False

    def stop(self) -> None:
        """SHUTDOWN NOSAVE (the append-only file is still flushed); SIGTERM if it does not
        answer."""
        if self.running:
            try:
                with self.client() as client:
                    client.shutdown(nosave=True)
            except redis.RedisError:
                pass  # SIGTERM below ends it
        self.signal_and_wait(signal.SIGTERM)

    def kill(self) -> None:
        self.kill_session()

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"


@contextmanager
def postgres_cluster(
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    netns: str | None = None,
    settings: Mapping[str, str] | None = None,
) -> Iterator[PostgresCluster]:
    """A fresh, running cluster; killed and removed when the block ends, however it ends
    (unless its ``keep`` was set)."""
    cluster = PostgresCluster(port=port, host=host, netns=netns, settings=settings)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@contextmanager
def redis_server(
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    appendonly: bool = False,
    netns: str | None = None,
) -> Iterator[RedisServer]:
    """A fresh, running redis-server; killed and removed when the block ends, however it
    ends (unless its ``keep`` was set)."""
    server = RedisServer(port=port, host=host, appendonly=appendonly, netns=netns)
    try:
        server.start()
        yield server
    finally:
        server.remove()
