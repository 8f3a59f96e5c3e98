"""Inputs, checks, statistics, framing, devices and the report, without a runner."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from grader import profiling, timing
from grader.check import first_mismatches, normalise_verdict
from grader.device import detect_device, device_type_from_name
from grader.expected import import_reference
from grader.harness import short_calls
from grader.inputs import case_seed, seeded_case, written_paths
from grader.problem import Problem
from grader.protocol import ChannelClosed, ChannelError, ChannelTimeout, recv_message, send_message
from grader.report import CaseKind, CaseResult, Mode, Report, Status, Stop
from grader.timing import Timer, enough_samples, geometric_mean, summarize


def test_secret_seed_changes_inputs_and_public_seed_is_kept() -> None:
    case = {"size": 1024, "seed": 54352}
    assert case_seed(case, None) == 54352
    ranked = {case_seed(case, secret) for secret in (1, 2, 3)}
    assert len(ranked) == 3 and 54352 not in ranked
    assert case_seed(case, 1) == case_seed(dict(case), 1)  # reproducible per secret
    assert case_seed(case, 1, repeat=1) != case_seed(case, 1, repeat=2)
    assert seeded_case(case, 7)["size"] == 1024
    assert 0 <= case_seed(case, 2**80) < 2**31


def test_secret_seeds_give_different_inputs(tmp_path: Path, vectoradd: Problem) -> None:
    for name, text in vectoradd.files.items():
        (tmp_path / name).write_text(text)
    reference = import_reference(tmp_path, ["reference", "utils", "task", "submission"])
    case = {"size": 8, "seed": 54352}
    public = reference.generate_input(**seeded_case(case, None))
    again = reference.generate_input(**seeded_case(case, None))
    first = reference.generate_input(**seeded_case(case, 1))
    second = reference.generate_input(**seeded_case(case, 2))
    assert torch.equal(public[0], again[0])
    assert not torch.equal(public[0], first[0])
    assert not torch.equal(first[0], second[0])
    assert "utils" not in sys.modules or "make_match_reference" not in vars(sys.modules["utils"])


def test_first_mismatches_lists_the_first_elements() -> None:
    expected = torch.arange(16, dtype=torch.float32).reshape(4, 4) + 1
    got = expected.clone()
    got[0, 0] = 0
    got[2, 3] = 5
    text = first_mismatches(got, expected)
    assert text.startswith("mismatch at (0, 0): got 0, expected 1; mismatch at (2, 3): got 5")
    assert text.endswith("(2 shown, 2 of 16 elements differ)")
    assert first_mismatches(expected, expected) == ""
    assert first_mismatches(expected, expected[:2]) == ""  # different shapes: no listing


def test_both_check_implementation_forms_are_understood() -> None:
    assert normalise_verdict((True, "")) == (True, "")
    assert normalise_verdict((False, "bad")) == (False, "bad")
    assert normalise_verdict("") == (True, "")
    assert normalise_verdict("mismatch") == (False, "mismatch")


def test_written_paths_finds_the_output_buffer() -> None:
    data = (torch.ones(3), torch.ones(3), torch.empty(3).fill_(float("nan")))
    after = (data[0].clone(), data[1].clone(), torch.zeros(3))
    assert written_paths(data, after) == {"data[2]"}
    assert written_paths(data, tuple(t.clone() for t in data)) == set()


def test_statistics_of_samples() -> None:
    samples = [float(x) for x in range(1, 11)]
    stats = summarize(samples)
    assert stats.median_s == 5.5 and stats.min_s == 1.0 and stats.samples == 10
    assert stats.p10_s == pytest.approx(1.9) and stats.p90_s == pytest.approx(9.1)
    assert stats.cv == pytest.approx(statistics.stdev(samples) / 5.5)
    assert stats.iqr_over_median == pytest.approx((7.75 - 3.25) / 5.5)
    assert geometric_mean([1e-6, 1e-4]) == pytest.approx(1e-5)
    assert enough_samples([1.0] * 30) and not enough_samples([1.0] * 29)
    assert not enough_samples([1.0, 2.0] * 10)


def test_one_outlier_moves_the_cv_but_not_the_robust_spread() -> None:
    steady = [1e-5] * 30
    with_outlier = [*steady[:-1], 2e-3]
    assert summarize(with_outlier).cv > 1.0
    assert summarize(with_outlier).iqr_over_median == 0.0
    assert summarize(with_outlier).median_s == summarize(steady).median_s


def test_cpu_timer_samples_real_calls() -> None:
    calls = []
    samples, output = Timer("cpu").time_case(lambda d: calls.append(d) or d, 7, budget_s=0.3)
    assert output == 7
    assert 1 <= len(samples.seconds) <= 1000 and samples.wall_s >= sum(samples.seconds)
    assert len(calls) >= 3 + len(samples.seconds)  # warm-up calls are real calls
    assert samples.sm_clock_mhz is None


def test_a_call_of_a_second_is_its_own_warm_up() -> None:
    """Three warm-up calls of a kernel that takes seconds a call (GPU MODE's eigh_py: 8 s)
    spent half a minute of every case; one such call warms the next as well as three."""
    calls = []

    def slow(data: int) -> int:
        calls.append(data)
        time.sleep(timing.WARMUP_LONG_CALL_S)
        return data

    samples, output = Timer("cpu").time_case(slow, 7, budget_s=0.0)
    assert output == 7 and len(samples.seconds) == 1
    assert len(calls) == 2  # one warm-up call, then the one sample the budget allows


class _Opaque:
    pass


def test_protocol_carries_tensors_and_refuses_objects() -> None:
    read_fd, write_fd = os.pipe()
    try:
        message = {"op": "run", "data": (torch.arange(5), [1.5, "x"], {"k": torch.ones(2)})}
        send_message(write_fd, message)
        received = recv_message(read_fd)
        assert received["op"] == "run" and torch.equal(received["data"][0], torch.arange(5))
        send_message(write_fd, {"evil": _Opaque()})
        with pytest.raises(ChannelError):
            recv_message(read_fd)
        send_message(write_fd, {"big": torch.zeros(1000)})
        with pytest.raises(ChannelError, match="exceeds"):
            recv_message(read_fd, max_bytes=100)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_protocol_reports_deadline_and_closed_channel() -> None:
    read_fd, write_fd = os.pipe()
    with pytest.raises(ChannelTimeout):
        recv_message(read_fd, deadline=0)
    os.close(write_fd)
    with pytest.raises(ChannelClosed):
        recv_message(read_fd)
    os.close(read_fd)


def test_device_type_names() -> None:
    assert device_type_from_name("NVIDIA H200") == "h200"
    assert device_type_from_name("NVIDIA H100 80GB HBM3") == "h100"
    assert device_type_from_name("NVIDIA A100-SXM4-80GB") == "a100"
    assert device_type_from_name("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert device_type_from_name("Tesla T4") == "t4"
    assert detect_device("cpu").kind == "cpu"
    with pytest.raises(ValueError):
        detect_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError):
            detect_device("cuda")
        assert detect_device(None).device_type == "cpu"


def test_report_is_json_safe() -> None:
    report = Report(
        status=Status.PASSED,
        problem="p",
        mode=Mode.TEST,
        device="cpu",
        cases=[CaseResult(kind=CaseKind.TEST, params={"size": 1}, status=Status.PASSED)],
    )
    out = report.to_dict()
    # Enum members leave as the plain strings they stand for, in JSON and in the dict.
    plain = [out["status"], out["mode"], out["cases"][0]["kind"], out["cases"][0]["status"]]
    assert [type(value) for value in plain] == [str] * 4
    assert plain == ["passed", "test", "test", "passed"]
    assert json.dumps(out).startswith('{"status": "passed", "problem": "p", "mode": "test", ')
    data = json.loads(json.dumps(out))
    assert data["cases"][0] == {
        "kind": "test",
        "params": {"size": 1},
        "status": "passed",
        "message": "",
        "time": None,
        "runner_time": None,
        "roofline": None,
        "profile": None,
    }
    assert data["score"] is None and data["flags"] == []


def test_protocol_keeps_every_dtype_and_shape_exact() -> None:
    read_fd, write_fd = os.pipe()
    try:
        tensors = [
            torch.randn(3, 5).to(torch.bfloat16),
            torch.tensor(7.5),
            torch.empty(0, 4),
            torch.tensor([True, False]),
            torch.arange(6, dtype=torch.uint8).reshape(2, 3),
            torch.randn(4, dtype=torch.complex64),
            torch.randn(8, 8)[:, ::2],  # not contiguous: arrives as a contiguous copy
        ]
        send_message(write_fd, {"data": tuple(tensors)})
        received = recv_message(read_fd)["data"]
        assert isinstance(received, tuple)
        for sent, got in zip(tensors, received, strict=True):
            assert type(got) is torch.Tensor and got.dtype == sent.dtype
            assert got.shape == sent.shape and torch.equal(got, sent)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_protocol_refuses_forged_tensor_descriptors() -> None:
    """A peer that writes the wire format by hand cannot make the reader build anything but
    a plain tensor of an allowed dtype whose bytes match its shape."""
    import io

    def forge(skeleton: object, raw: bytes, as_json: bool) -> bytes:
        if as_json:
            blob = b"J" + json.dumps(skeleton).encode()
        else:
            buffer = io.BytesIO()
            torch.save(skeleton, buffer)
            blob = b"T" + buffer.getvalue()
        return len(blob).to_bytes(8, "big") + blob + len(raw).to_bytes(8, "big") + raw

    for skeleton, raw in [
        ({"__kj_tensor__": 0, "dtype": "float32", "shape": [4]}, b"\0" * 8),  # too few bytes
        ({"__kj_tensor__": 0, "dtype": "object", "shape": [1]}, b"\0" * 8),  # unknown dtype
        ({"__kj_tensor__": 0, "dtype": "float32", "shape": [-1]}, b"\0" * 4),  # bad shape
    ]:
        for as_json in (True, False):
            read_fd, write_fd = os.pipe()
            try:
                os.write(write_fd, forge(skeleton, raw, as_json))
                with pytest.raises(ChannelError):
                    recv_message(read_fd)
            finally:
                os.close(read_fd)
                os.close(write_fd)


def test_a_profile_from_the_runner_is_kept_bounded_and_well_formed() -> None:
    row = {"name": "k" * 10_000, "device_type": "CUDA", "count": 3, "self_us": 1.0,
           "total_us": 2.0, "self_device_us": 3.0, "device_us": 4.0}  # fmt: skip
    kept = profiling.table_from_reply(
        {"profile": {"calls": 3, "wall_us_per_call": 5.0, "rows": [row] * 1000}},
        "Nsight Compute (ncu) is not installed on this worker",
    )
    assert kept.rows is not None and len(kept.rows) == profiling.MAX_ROWS
    assert len(kept.rows[0]["name"]) == profiling.MAX_NAME
    assert kept.why_not_ncu == "Nsight Compute (ncu) is not installed on this worker"
    for bad in (
        {"profile": "fast"},
        {"profile": {"calls": 3, "wall_us_per_call": 5.0, "rows": [{"name": 1}]}},
        {"profile": {"calls": 3, "wall_us_per_call": float("nan"), "rows": []}},
        {"profile": {"calls": -1, "wall_us_per_call": 5.0, "rows": []}},
        {"profile": {"calls": 3, "wall_us_per_call": 5.0, "rows": [{**row, "self_us": "1"}]}},
    ):
        with pytest.raises(Stop) as stopped:
            profiling.table_from_reply(bad, "")
        assert stopped.value.status == "rejected"


def test_a_batch_subtracts_only_its_trusted_fixed_costs() -> None:
    """One round trip and the copy of the inputs at the measured bandwidth (never longer
    than the copy took): nothing else, and nothing the submission answered."""
    from grader.session import Overheads

    overheads = Overheads(
        round_trip_s=50e-6, copy_bytes_per_s=4e12, window_points=((40e-6, 300e-6),)
    )
    assert overheads.batch_s(2 << 30) == pytest.approx(50e-6 + 2 * (2 << 30) / 4e12)
    assert overheads.batch_s(2 << 30, copied_s=1e-4) == pytest.approx(150e-6)
    assert Overheads(round_trip_s=50e-6).batch_s(1 << 30) == pytest.approx(50e-6)


def test_the_window_floor_allows_only_the_calibrations_uncertainty() -> None:
    """On a GPU the harness's windows time each call alone on its own events: a runner's
    median ranks no more than 2% and 2 µs under them."""
    from grader.clock import window_floor

    assert window_floor(100e-6) == pytest.approx(100e-6 * 0.98 - 2e-6)
    assert window_floor(1e-6) == 0.0


def test_a_windows_mean_loses_the_cost_calibrated_for_a_call_of_its_length() -> None:
    """Two trusted calls (3 µs and 40 µs alone) cost 290 and 294 µs beyond themselves in a
    window: a short call loses the first, a long one the second, one in between a cost on
    the line between them; with one point (or none), the one cost."""
    from grader.session import Overheads

    overheads = Overheads(window_points=((3e-6, 290e-6), (40e-6, 294e-6)))
    assert overheads.window_call_s(292e-6) == pytest.approx(2e-6)
    assert overheads.window_call_s(293e-6) == pytest.approx(3e-6)
    assert overheads.window_call_s(334e-6) == pytest.approx(40e-6)
    assert overheads.window_call_s(1294e-6) == pytest.approx(1000e-6)
    middle = overheads.window_call_s(313.5e-6)  # a 21.5 µs call costs 292 µs
    assert middle == pytest.approx(21.5e-6, rel=1e-6)
    assert overheads.window_call_s(100e-6) == 0.0
    assert overheads.window_s == pytest.approx(294e-6)
    one = Overheads(window_points=((40e-6, 294e-6),))
    assert one.window_call_s(300e-6) == pytest.approx(6e-6)


def test_the_floor_check_leaves_out_what_the_l2_cache_can_hold() -> None:
    """A kernel's writes may still sit in L2 when it ends: the floor a time is judged by
    counts the case's bytes less the cache's size, and never less than half of them."""
    from grader.calibrate import DevicePeaks

    peaks = DevicePeaks(1e12, 1e15, "bf16", cache_bytes=50e6)
    assert peaks.floor_s(150e6, 0) == pytest.approx(150e-6)
    assert peaks.cached_floor_s(150e6, 0) == pytest.approx(100e-6)
    assert peaks.cached_floor_s(60e6, 0) == pytest.approx(30e-6)
    assert peaks.cached_floor_s(150e6, 1e12) == pytest.approx(1e-3)  # bound by its flops
    assert DevicePeaks.from_dict({**peaks.to_dict()}) == peaks
    assert DevicePeaks.from_dict({"copy_bytes_per_s": 1, "matmul_flops_per_s": 1}).cache_bytes == 0


def test_the_arena_hands_out_first_fit_segments_and_merges_what_comes_back() -> None:
    from grader.gate import give_back, take

    free = [(0, 4096)]
    first, second = take(free, 1000), take(free, 512)
    assert (first, second) == (0, 1024)  # rounded up to 512 bytes
    assert take(free, 4096) == -1  # refused: the runner's pool then asks the driver
    give_back(free, first, 1000)
    give_back(free, second, 512)
    assert free == [(0, 4096)]


def test_an_arena_output_is_read_only_where_the_harness_placed_room_for_it() -> None:
    """A runner names an output in its arena by offset; the harness reads it from its own
    copy of the arena, shaped as the set's result slot, and refuses an offset outside."""
    from grader import shared
    from grader.staging import ARENA, Layout, Sets

    data = (torch.ones(4), torch.ones(4))
    layout = Layout.of(data, torch.zeros(4))
    slab = shared.create(layout.set_bytes * 2, "cpu")
    arena = shared.create(4096, "cpu")
    arena.view(512, torch.float32, (4,)).copy_(torch.arange(4.0))
    sets = Sets(slab, layout, 2)
    assert torch.equal(sets.output(1, {ARENA: 512}, arena), torch.arange(4.0))
    for bad in ({ARENA: 4096}, {ARENA: 100}, {ARENA: "512"}):
        with pytest.raises(Stop):
            sets.output(1, bad, arena)
    with pytest.raises(Stop):
        sets.output(1, {ARENA: 512}, None)  # no arena: a runner cannot have made one
    assert sets.fits_slot(0, torch.zeros(4)) and not sets.fits_slot(0, torch.zeros(5))


def test_batches_stop_after_three_and_long_calls_after_two() -> None:
    from grader.clock import MIN_BATCHES, Batches

    assert MIN_BATCHES == 3
    assert not Batches._settled([1e-3, 1.2e-3])
    assert Batches._settled([1e-3, 1.2e-3, 0.9e-3])
    assert Batches._settled([8.2, 8.3])  # GPU MODE's eigh_py: seconds a call, two suffice


def test_the_ranked_floor_is_the_fastest_batch_over_the_ratio_less_the_slack() -> None:
    """A runner can make a batch slower but never faster than its work; an honest call
    timed alone is up to the ratio (and, on a GPU, the slack) faster than in a batch."""
    from grader.clock import Measured, ranked_floor

    assert Measured([2e-3, 0.9e-3, 3e-3], 10).fastest_s == 0.9e-3
    assert ranked_floor("cpu", 0.9e-3) == pytest.approx(0.9e-3 / 5)
    assert ranked_floor("cpu", 2e-3, warm_s=1e-3) == pytest.approx(1e-3 / 5)
    assert ranked_floor("cuda", 250e-6) == pytest.approx(250e-6 / 2.5 - 10e-6)
    assert ranked_floor("cuda", 20e-6) == 0.0


def test_batch_size_fills_the_batch_within_its_memory() -> None:
    from grader.clock import BATCH_S, MAX_CALLS, batch_size

    assert batch_size("cpu", 1e-4, 1 << 10) == int(BATCH_S["cpu"] / 1e-4)
    assert batch_size("cpu", 1e-9, 1 << 10) == MAX_CALLS["cpu"]
    assert batch_size("cpu", 1e-3, 40 << 20) == 1  # one set fills the batch's memory
    assert batch_size("cpu", 10.0, 1 << 10) == 1


def test_reply_numbers_are_finite_and_in_range() -> None:
    """What a runner sends is read as a number only when it is one: huge integers, NaN,
    infinities, bools and strings are not, and never raise."""
    from grader import replies

    assert replies.number(2.5) == 2.5
    assert replies.number(3) == 3.0
    for bad in (10**400, -(10**400), float("nan"), float("inf"), -1.0, True, "1", None, [1]):
        assert replies.number(bad) is None
    assert replies.number(-1.0, low=-2.0) == -1.0
    assert replies.number(2e12) is None
    assert replies.count(7) == 7
    for bad in (-1, 1 << 60, 1.0, False, "7"):
        assert replies.count(bad) is None


def test_a_grading_leaves_torch_determinism_as_it_found_it() -> None:
    """A reference that switches deterministic algorithms on (warn-only) or off does not
    change how the next grading in the same worker computes."""
    from grader.harness import held_torch_settings

    def state() -> tuple[bool, bool]:
        return (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        )

    before = state()
    try:
        with held_torch_settings():
            torch.use_deterministic_algorithms(True, warn_only=True)
        assert state() == before
        torch.use_deterministic_algorithms(True, warn_only=True)
        with held_torch_settings():
            torch.use_deterministic_algorithms(False)
        assert state() == (True, True)
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_a_slow_pilot_call_does_not_leave_batches_of_one_call() -> None:
    """On a busy host a single call's batch can take milliseconds of round trip; sized by
    that alone, every batch would hold one call and the floor would stand far above an
    honest median. The runner's own median sizes them where it is shorter."""
    from grader.clock import MAX_CALLS, Batches
    from grader.staging import Layout

    batches = Batches.__new__(Batches)
    batches.kind = "cpu"
    batches.layout = Layout.of((torch.ones(4),), torch.ones(4))
    batches._staged = None
    asked: list[int] = []

    def run(count: int) -> float:
        settled = batches._staged is not None and batches._staged[1].count == count
        batches._staged = (0, types.SimpleNamespace(count=count), None)  # type: ignore[assignment]
        asked.append(count)
        return 25e-6 if settled else 5e-3

    batches.run = run  # type: ignore[method-assign]
    measured = batches.measure(time.monotonic() + 60, hint_s=20e-6)
    assert asked[0] == 1 and set(asked[1:]) == {MAX_CALLS["cpu"]}
    assert measured.calls_per_batch == MAX_CALLS["cpu"] and measured.fastest_s == 25e-6


def _channel_session(fd: int) -> object:
    from grader.session import RunnerSession

    session = object.__new__(RunnerSession)
    session._fd = fd  # type: ignore[attr-defined]
    session.deadline = time.monotonic() + 10  # type: ignore[attr-defined]
    return session


@pytest.mark.parametrize("says_queued", ["first", "late", "never"])
def test_windows_are_queued_once_the_runner_has_queued_its_calls(says_queued: str) -> None:
    """The harness queues its windows after the runner says its calls are queued (or after
    the wait when it does not), and takes the reply that follows as the answer."""
    import socket
    import threading

    from grader import gate

    ours, theirs = socket.socketpair()
    os.set_blocking(ours.fileno(), False)
    session = _channel_session(ours.fileno())
    events: list[str] = []

    def runner() -> None:
        recv_message(theirs.fileno())
        if says_queued == "first":
            send_message(theirs.fileno(), gate.QUEUED)
        time.sleep(0.3)
        if says_queued == "late":
            send_message(theirs.fileno(), gate.QUEUED)
        events.append("replied")
        send_message(theirs.fileno(), {"ok": True, "outputs": [1]})

    thread = threading.Thread(target=runner)
    thread.start()

    def open_windows() -> str:
        events.append("windows queued")
        return "marks"

    reply, marks, in_time = session._queued_first(  # type: ignore[attr-defined]
        {"op": "windows"}, open_windows, 0.1
    )
    thread.join()
    assert reply == {"ok": True, "outputs": [1]}
    assert marks == "marks"  # what queuing the windows returned comes back with the reply
    assert events == ["windows queued", "replied"]
    # Said in time: later rounds wait for it again; late or never: they open at once.
    assert in_time is (says_queued == "first")
    ours.close()
    theirs.close()


def test_a_windows_cost_follows_every_calibrated_point() -> None:
    from grader.session import Overheads

    # Costs of 290, 290, 294 and 291 µs for trusted calls of 5, 12, 22 and 40 µs: a call of
    # 22 µs (its output dirty in L2) pays the bump, one of 40 µs less again.
    overheads = Overheads(window_points=((5e-6, 290e-6), (12e-6, 290e-6),
                                         (22e-6, 294e-6), (40e-6, 291e-6)))  # fmt: skip
    assert overheads.window_call_s(316e-6) == pytest.approx(22e-6)
    assert overheads.window_call_s(331e-6) == pytest.approx(40e-6)
    assert overheads.window_call_s(300e-6) == pytest.approx(10e-6)
    assert overheads.window_call_s(1291e-6) == pytest.approx(1000e-6)


def test_a_gpu_score_of_mostly_short_calls_says_it_cannot_rank_finely() -> None:
    """At least half the cases under SHORT_CALL_S on a GPU: the score says so, with how
    many; fewer, or on the CPU (whose spread the batches' bounds speak for): nothing."""
    assert "2 of 4 cases time calls under 50 µs" in short_calls("cuda", [5e-6, 9e-6, 1e-4, 2e-4])
    assert "cannot rank finer" in short_calls("cuda", [2e-5])
    assert short_calls("cuda", [5e-6, 1e-4, 2e-4]) == ""
    assert short_calls("cpu", [5e-6, 9e-6]) == ""
    assert short_calls("cuda", []) == ""
