"""The sandbox's two worker-host settings, read from the environment (stdlib only; the
grader's `grader/hostsettings.py` holds them beside its own, the README lists them all)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

BWRAP_ENV = "KJ_BWRAP"
CGROUP_ENV = "KJ_SANDBOX_CGROUP"


@dataclass(frozen=True)
class SandboxSettings:
    """Read afresh at each use: a worker's environment is its configuration."""

    bwrap: str = ""
    """KJ_BWRAP: the bubblewrap binary; empty: `bwrap` on PATH."""
    sandbox_cgroup: str = ""
    """KJ_SANDBOX_CGROUP: the delegated cgroup sandboxes' groups are made under, relative to
    the cgroup mount (`/kj`) or with it (`/sys/fs/cgroup/kj`); empty: the worker's own."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SandboxSettings:
        env = os.environ if environ is None else environ
        return cls(bwrap=env.get(BWRAP_ENV, ""), sandbox_cgroup=env.get(CGROUP_ENV, ""))
