"""Running one untrusted command with limits and reading its output safely (stdlib only):
a new session, rlimits, capped output, and, with an `Isolation`, bubblewrap namespaces, a
seccomp deny-list and a cgroup; everything the command started is killed at the end."""

from sandbox.bwrap import Isolation, SandboxUnavailable, gpu_device_nodes
from sandbox.cgroup import CgroupLimits
from sandbox.process import Child, Limits, ProcessResult, kill_tree, run, start

__all__ = [
    "CgroupLimits",
    "Child",
    "Isolation",
    "Limits",
    "ProcessResult",
    "SandboxUnavailable",
    "gpu_device_nodes",
    "kill_tree",
    "run",
    "start",
]
