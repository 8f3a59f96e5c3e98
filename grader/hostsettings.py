"""A worker host's settings: every environment variable (prefix ``KJ_``) a GPU or CPU worker
host reads, with its default and meaning. Standard library only, as on a host without the
service's packages; the service's own settings are `server/settings.py`'s. Read on the
harness's side only: it imports sandbox/, which the runner's sandbox does not hold."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from sandbox.settings import SandboxSettings

RO_PATHS_ENV = "KJ_SANDBOX_RO_PATHS"
NCU_ENV = "KJ_NCU"
CLOCK_ENV = "KJ_GPU_CLOCK"
WORLD_SIZES_ENV = "KJ_WORLD_SIZES"
WINDOWS, BATCHES = "windows", "batches"


@dataclass(frozen=True)
class HostSettings:
    """Read afresh at each use (`from_env`): a worker's environment is its configuration."""

    sandbox_ro_paths: tuple[str, ...] = ()
    """KJ_SANDBOX_RO_PATHS: extra host paths every sandbox sees read-only (a CUDA toolkit
    under /opt, say), separated by `:`."""
    ncu: str = ""
    """KJ_NCU: the `ncu` profile mode runs; empty: `ncu` on PATH, else the newest
    /usr/local/cuda*/bin/ncu."""
    gpu_clock: str = WINDOWS
    """KJ_GPU_CLOCK: what a GPU grading's ranked times come from: `windows` (each call
    between the harness's own events, grader/gate.py) or `batches` (back-to-back calls on
    the harness's host clock, grader/clock.py's `Batches`, as where the driver cannot make
    the gate); any other value means `windows`."""
    world_sizes: tuple[int, ...] = ()
    """KJ_WORLD_SIZES: the world sizes this host offers a problem that spans several ranks,
    separated by `,` (`2,4`): a case asking for another is graded at the largest of these
    below it, and its report says so (grader/rankharness.py). Empty: each case's own."""
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    """KJ_BWRAP and KJ_SANDBOX_CGROUP, which the sandbox reads itself (sandbox/ imports
    nothing of the grader's)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HostSettings:
        env = os.environ if environ is None else environ
        return cls(
            sandbox_ro_paths=tuple(p for p in env.get(RO_PATHS_ENV, "").split(":") if p),
            ncu=env.get(NCU_ENV, ""),
            gpu_clock=env.get(CLOCK_ENV, WINDOWS).strip().lower(),
            world_sizes=world_sizes(env.get(WORLD_SIZES_ENV, "")),
            sandbox=SandboxSettings.from_env(env),
        )

    @property
    def clock_windows(self) -> bool:
        """Whether GPU gradings time their calls in windows (KJ_GPU_CLOCK)."""
        return self.gpu_clock != BATCHES


def world_sizes(text: str) -> tuple[int, ...]:
    """KJ_WORLD_SIZES's sizes, smallest first; a ValueError names what is not a size."""
    sizes = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"{WORLD_SIZES_ENV}: {part!r} is not a world size (1, 2, ...)")
        sizes.add(int(part))
    return tuple(sorted(sizes))
