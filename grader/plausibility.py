"""The checks that a case's figures can be real: the runner's own event times (benchmark
mode's detail, never ranked) cannot exceed the wall time the harness measured around them,
and no ranked time may beat the device's physical floor."""

from __future__ import annotations

from grader.report import Status, Stop

# A case may not run faster than this fraction of its physical floor on this device.
FLOOR_MARGIN = 0.9
# Where the floor comes from the reference's own call (a problem that declares no roofline):
# its inputs read once, its outputs written once and the flops torch counted. An honest
# kernel may read less or compute less than that reference (an input it need not read
# whole, a structure it exploits), so only a time under half of it is rejected; a forged
# figure of a microsecond still is.
MEASURED_FLOOR_MARGIN = 0.5


def label(case: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in case.items())


def check_claims(case_label: str, samples: list[float], wall_s: float) -> None:
    """Claimed kernel time cannot exceed the wall time we measured around it."""
    if sum(samples) > wall_s:
        raise Stop(
            Status.REJECTED,
            f"case {case_label}: the reported timings add up to {sum(samples):.6g} s, more "
            f"than the {wall_s:.6g} s the grader measured around them",
        )


def check_floor(
    case_label: str, median_s: float, floor_s: float, margin: float = FLOOR_MARGIN
) -> None:
    """A time under `margin` of the physical floor cannot be real."""
    if median_s < margin * floor_s:
        raise Stop(
            Status.REJECTED,
            f"case {case_label}: a time of {median_s * 1e6:.3f} µs a call is under "
            f"{margin:g}× the physical floor of {floor_s * 1e6:.3f} µs (the case's "
            "bytes, less what the GPU's L2 cache holds, and flops at this GPU's measured "
            "peaks); no kernel can be that fast",
        )
