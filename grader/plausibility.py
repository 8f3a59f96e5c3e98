"""The plausibility checks: why a time the runner reports is accepted, flagged or rejected.
The runner times the calls in the submission's own process, so its times can be forged; a
time stands only if it fits the harness's own clock and the device's physical floor."""

from __future__ import annotations

from dataclasses import dataclass

from grader.report import Stop

# A case may not run faster than this fraction of its physical floor on this device.
FLOOR_MARGIN = 0.9
# The harness's own clock around a batch of back-to-back calls: long enough to be measured
# well, and a per-call allowance for launch overhead the events rightly leave out.
CROSS_CHECK_BATCH_S = 0.05
CROSS_CHECK_BATCHES = 2
CROSS_CHECK_MAX_CALLS = 2000
CROSS_CHECK_RATIO = 1.5
CROSS_CHECK_REJECT_RATIO = 3.0
# Per device: (slack before a flag, slack before a rejection). On CUDA the events leave
# out launch overhead the launch lead hides (up to about 100 µs); on the CPU the runner's
# clock and ours time the same Python calls.
CROSS_CHECK_SLACK_S = {"cuda": (50e-6, 150e-6), "cpu": (2e-6, 5e-6)}
# On the CPU the runner's clock times the whole call, as ours does, so an honest median is
# within a small factor of our per-call time even where the slack above would excuse the
# gap (a claimed picosecond against a 4 µs call): beyond this ratio it cannot be real.
CPU_CROSS_CHECK_IMPOSSIBLE_RATIO = 100.0


def label(case: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in case.items())


def check_claims(case_label: str, samples: list[float], wall_s: float) -> None:
    """Claimed kernel time cannot exceed the wall time we measured around it."""
    if sum(samples) > wall_s:
        raise Stop(
            "rejected",
            f"case {case_label}: the reported timings add up to {sum(samples):.6g} s, more "
            f"than the {wall_s:.6g} s the grader measured around them",
        )


def check_floor(case_label: str, median_s: float, floor_s: float) -> None:
    """A median under FLOOR_MARGIN of the physical floor cannot be real."""
    if median_s < FLOOR_MARGIN * floor_s:
        raise Stop(
            "rejected",
            f"case {case_label}: a median of {median_s * 1e6:.3f} µs is under "
            f"{FLOOR_MARGIN:g}× the physical floor of {floor_s * 1e6:.3f} µs (the case's "
            "bytes and flops at this GPU's measured peaks); no kernel can be that fast",
        )


@dataclass(frozen=True)
class HarnessClock:
    """What the harness's own clock says one call costs, and how it measured it."""

    per_call_s: float
    how: str


def judge(kind: str, case_label: str, median_s: float, clock: HarnessClock) -> str | None:
    """Reject (raise Stop) when the harness's clock says the reported median cannot be
    real; return a flag for organizers when the two disagree less, else None."""
    flag_slack, reject_slack = CROSS_CHECK_SLACK_S[kind]
    per_call = clock.per_call_s
    shown = (
        f"the grader's own clock measured {per_call * 1e6:.1f} µs per call {clock.how}, "
        f"against a reported median of {median_s * 1e6:.3f} µs"
    )
    impossible = kind == "cpu" and per_call > CPU_CROSS_CHECK_IMPOSSIBLE_RATIO * median_s
    if impossible or per_call > CROSS_CHECK_REJECT_RATIO * median_s + reject_slack:
        raise Stop("rejected", f"case {case_label}: {shown}: the reported times cannot be real")
    if per_call > CROSS_CHECK_RATIO * median_s + flag_slack:
        return f"case {case_label}: {shown}"
    return None


def batch_clock(
    calls: int,
    batches: list[tuple[float, float | None]],
    pings: list[tuple[float, float | None]],
    on_cpu: bool,
) -> HarnessClock:
    """Per-call time from batches of back-to-back calls on staged inputs, net of an empty
    round trip. The faster batch is the one least disturbed by other work here; on a busy
    CPU the wall clock also counts time the runner waited for a core, which the kernel's
    count of the sandbox's CPU time does not (and it cannot be forged)."""
    per_call = max(0.0, min(w for w, _ in batches) - min(w for w, _ in pings)) / calls
    cpu_batches = [c for _, c in batches if c is not None]
    cpu_pings = [c for _, c in pings if c is not None]
    if on_cpu and cpu_batches and cpu_pings:
        per_call = min(per_call, max(0.0, min(cpu_batches) - min(cpu_pings)) / calls)
    return HarnessClock(per_call, f"over {calls} back-to-back calls")
