"""Many hosts, for real, on one machine: network namespaces joined by a bridge. The API host
runs PostgreSQL, Redis and `kerneljudge serve` on its own address; two GPU hosts (CPU
workers here) each run one `kerneljudge worker` under a host name of their own, reaching
Redis over the network and holding no database credentials; the test reaches the API over
the bridge. Submissions are graded on the worker hosts, and a worker host cut off from the
network mid-grading hands its job back: the other grades it, and it is recorded once."""

from __future__ import annotations

import os
import random
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.pool import NullPool

from rig.cluster import free_port, postgres_cluster, redis_server
from rig.faults import (
    GRADED,
    KERNEL,
    PROBLEM,
    tails_on_failure,
    wait_for_api,
    wait_for_line,
)
from rig.processes import TERMINAL, add_user, kerneljudge, running, service_env
from server.models import GradingSlot
from tests.services import IN_CI

pytestmark = pytest.mark.integration

# Above the slow grading below (3-6 s of grading plus its 6 s import on two busy cores), so
# only a cut-off host's job is handed out again.
VISIBILITY_TIMEOUT_S = 25
# Slow enough at import that the host can be cut off while it grades.
SLOW_KERNEL = f"import time\ntime.sleep(6)\n{KERNEL}"


@dataclass(frozen=True)
class Host:
    """A network namespace with one address on the bridge, and the host name its
    processes see."""

    name: str
    netns: str
    address: str
    link: str  # its veth end on the bridge, in the root namespace: down cuts it off

    def run(self, argv: list[str]) -> list[str]:
        """``argv`` on this host. nsenter, not `ip netns exec`: that remounts /sys, which
        hides the cgroup file systems the sandbox makes its groups in."""
        return [
            "nsenter", f"--net=/run/netns/{self.netns}", "--",
            "unshare", "--uts", "--",
            "sh", "-c", 'hostname "$0" && exec "$@"', self.name, *argv,
        ]  # fmt: skip


class Network:
    """A bridge in the root namespace (which gets the subnet's first address, so this
    process reaches every host) and one namespace per host, each on a veth pair."""

    def __init__(self) -> None:
        self.suffix = secrets.token_hex(3)
        self.subnet = unused_subnet()
        self.bridge = f"kjbr{self.suffix}"
        self.hosts: list[Host] = []

    def create(self) -> None:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def add_host(self, role: str) -> Host:
        host = Host(
            name=f"{role}-{self.suffix}",
            netns=f"kj-{role}-{self.suffix}",
            address=f"{self.subnet}.{len(self.hosts) + 2}",
            link=f"kjv{len(self.hosts)}{self.suffix}",
        )
        inside = f"kjp{len(self.hosts)}{self.suffix}"
        self.hosts.append(host)
        ip("netns", "add", host.netns)
        ip("link", "add", host.link, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", host.netns)
        ip("link", "set", host.link, "master", self.bridge, "up")
        ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", inside)
        ip("-n", host.netns, "link", "set", inside, "up")
        ip("-n", host.netns, "link", "set", "lo", "up")
        return host

    def cut(self, host: Host) -> None:
        ip("link", "set", host.link, "down")

    def mend(self, host: Host) -> None:
        ip("link", "set", host.link, "up")

    def remove(self) -> None:
        """Everything this network made, whatever state a failed test left it in."""
        for host in self.hosts:
            with suppress(subprocess.CalledProcessError):
                ip("netns", "del", host.netns)  # takes the veth pair with it
            with suppress(subprocess.CalledProcessError):
                ip("link", "del", host.link)
        with suppress(subprocess.CalledProcessError):
            ip("link", "del", self.bridge)


def unused_subnet() -> str:
    """A /24 in 10.0.0.0/8 that no route of this machine names yet, so the bridge's route
    is the only one to it (a run in parallel picks another)."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    while True:
        subnet = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
        if f"{subnet}." not in routes:
            return subnet


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextmanager
def network() -> Iterator[Network]:
    """A fresh network, removed afterwards; a machine that cannot make one skips the test
    (fails it under CI)."""
    why = namespaces_unavailable()
    if why:
        if IN_CI:
            pytest.fail(f"network namespaces are needed: {why}")
        pytest.skip(f"network namespaces are needed: {why}")
    net = Network()
    try:
        try:
            net.create()
        except subprocess.CalledProcessError as exc:
            pytest.fail(f"could not make a bridge: {exc.stderr}")
        yield net
    finally:
        net.remove()


def namespaces_unavailable() -> str:
    if os.geteuid() != 0:
        return "the test must run as root"
    missing = [tool for tool in ("ip", "nsenter", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not installed"
    probe = f"kj-probe-{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ""


@dataclass
class Cluster:
    """The hosts and what runs on them."""

    net: Network
    api: Host
    gpus: list[Host]
    base: str
    token: str
    database_url: str
    logs: Path

    def worker_log(self, host: Host) -> Path:
        return self.logs / f"worker-{host.name}.log"

    def submit(self, code: str) -> int:
        response = httpx.post(
            f"{self.base}/api/v1/submissions",
            json={"problem": PROBLEM, "code": code, "mode": "test"},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        assert response.status_code == 202, response.text
        return int(response.json()["id"])

    def read(self, submission_id: int) -> dict[str, Any]:
        response = httpx.get(
            f"{self.base}/api/v1/submissions/{submission_id}",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def wait_for(self, submission_id: int, statuses: set[str], timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while (seen := self.read(submission_id))["status"] not in statuses:
            assert time.monotonic() < deadline, f"submission {submission_id} stayed {seen}"
            time.sleep(0.5)
        return seen

    def host_of(self, worker: str | None) -> Host:
        """The host that a report's `worker` (host:pid) names."""
        name = str(worker).rsplit(":", 1)[0]
        return next(host for host in [self.api, *self.gpus] if host.name == name)

    def wait_for_slots(self, count: int, timeout_s: float) -> None:
        """Until this many grading slots have said they are there (each pool process does
        as it starts), so the dispatcher sends that many jobs at once."""
        engine = create_engine(self.database_url, poolclass=NullPool)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                with engine.connect() as connection:
                    seen = connection.scalar(select(func.count()).select_from(GradingSlot))
                if int(seen or 0) >= count:
                    return
                assert time.monotonic() < deadline, f"{seen} of {count} grading slots said hello"
                time.sleep(0.5)
        finally:
            engine.dispose()


@contextmanager
def many_hosts(tmp_path: Path) -> Iterator[Cluster]:
    """The API host with its servers and `serve`, and two worker hosts, all started."""
    logs = tmp_path / "logs"
    logs.mkdir()
    with network() as net, ExitStack() as stack:
        api = net.add_host("api")
        gpus = [net.add_host("gpu-a"), net.add_host("gpu-b")]
        postgres = stack.enter_context(postgres_cluster(host=api.address, netns=api.netns))
        redis = stack.enter_context(redis_server(host=api.address, netns=api.netns))
        database_url = postgres.create_database("kerneljudge")
        env = service_env(tmp_path / "api", database_url=database_url, broker_url=redis.url())
        token = add_user(env, "grace")
        cluster = Cluster(net, api, gpus, "", token, database_url, logs)
        # The worker hosts know only the broker's address: no database credentials.
        for host in gpus:
            worker_env = service_env(
                tmp_path / host.name,
                broker_url=redis.url(),
                visibility_timeout_s=str(VISIBILITY_TIMEOUT_S),
                restore_interval_s="2",
            )
            stack.enter_context(
                running(host.run(kerneljudge("worker")), worker_env, cluster.worker_log(host))
            )
        port = free_port()
        serve = kerneljudge("serve", "--host", api.address, "--port", str(port))
        process = stack.enter_context(running(api.run(serve), env, logs / "serve.log"))
        cluster.base = f"http://{api.address}:{port}"
        wait_for_api(cluster.base, process, logs / "serve.log")
        for host in gpus:
            wait_for_line(cluster.worker_log(host), " ready.", timeout_s=180)
        cluster.wait_for_slots(len(gpus), timeout_s=60)
        try:
            yield cluster
        finally:
            for path in (postgres.log_path, redis.log_path):
                shutil.copy(path, logs / path.name)


@pytest.mark.timeout(300)
def test_worker_hosts_grade_over_the_network_and_a_host_cut_off_hands_its_job_back(
    tmp_path: Path,
) -> None:
    with tails_on_failure(tmp_path / "logs"), many_hosts(tmp_path) as cluster:
        graded_on_both_hosts(cluster)
        cut_off_mid_grading_then_back(cluster)


def graded_on_both_hosts(cluster: Cluster) -> None:
    """Two submissions at once, neither host having graded anything: each idle worker host
    takes one (both said they are there, so both jobs go at once; each takes a few seconds,
    so neither host is free again before the other has taken its job)."""
    ids = [cluster.submit(f"import time\ntime.sleep(3)\n{KERNEL}\n# {n}\n") for n in range(2)]
    reports = [cluster.wait_for(sid, TERMINAL, timeout_s=120) for sid in ids]
    assert [r["status"] for r in reports] == ["passed", "passed"], reports
    assert {cluster.host_of(r["worker"]) for r in reports} == set(cluster.gpus)


def cut_off_mid_grading_then_back(cluster: Cluster) -> None:
    """The host grading a slow submission loses its link; after the visibility timeout
    the other host grades it. When the link is back, the cut-off host's own report
    arrives too, and is dropped: the submission keeps the report first recorded."""
    sid = cluster.submit(SLOW_KERNEL)
    running_on = cluster.host_of(cluster.wait_for(sid, {"running"}, timeout_s=120)["worker"])
    cluster.net.cut(running_on)
    (other,) = [host for host in cluster.gpus if host != running_on]
    report = cluster.wait_for(sid, TERMINAL, timeout_s=VISIBILITY_TIMEOUT_S + 90)
    assert report["status"] == "passed", report["message"]
    assert cluster.host_of(report["worker"]) == other
    assert len(report["cases"]) > 0

    cluster.net.mend(running_on)
    # Its grading ran on while it was cut off; its report waited for the broker.
    wait_for_line(cluster.worker_log(running_on), GRADED, timeout_s=90, count=2)
    wait_for_line(cluster.logs / "serve.log", f"submission {sid} already recorded", timeout_s=30)
    again = cluster.read(sid)
    recorded = ("status", "worker", "finished_at", "cases")
    assert {k: again[k] for k in recorded} == {k: report[k] for k in recorded}
