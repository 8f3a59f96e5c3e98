"""The device-resident transport on the CPU: slabs shared through a file descriptor, input
sets and result slots laid out in them, and what each side may and may not name."""

from __future__ import annotations

import os
import socket

import pytest
import torch

from grader import shared
from grader.protocol import ChannelError, recv_fd, send_fd
from grader.report import Stop
from grader.runner import Runner, SubmissionError
from grader.staging import ALIAS, READ, SLOT, Layout, Sets


def vectoradd_set(n: int = 8) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)


def staged(count: int = 1) -> tuple[Sets, Layout]:
    data = vectoradd_set()
    layout = Layout.of(data, data[2], {"data[2]"})
    slab = shared.create(count * layout.set_bytes, "cpu")
    return Sets(slab, layout, count), layout


def test_a_slab_handed_over_by_fd_is_the_same_memory_and_cannot_be_shrunk() -> None:
    slab = shared.create(4096, "cpu")
    ours, theirs = socket.socketpair()
    try:
        send_fd(ours, slab.fd)
        received = shared.attach(recv_fd(theirs), slab.nbytes, "cpu")
        received.view(0, torch.float32, [4]).copy_(torch.arange(4.0))
        assert torch.equal(slab.view(0, torch.float32, [4]), torch.arange(4.0))
        # The runner's fd cannot make the harness's mapping fault by shrinking the memfd.
        with pytest.raises(OSError):
            os.ftruncate(received.fd, 0)
        with pytest.raises(shared.SharedMemoryError, match="outside the slab"):
            received.view(slab.nbytes - 8, torch.float32, [4])
        received.close()
    finally:
        ours.close()
        theirs.close()
        slab.close()


def test_a_layout_survives_the_channel_and_a_forged_one_is_refused() -> None:
    sets, layout = staged()
    again = Layout.from_message(layout.to_message())
    assert again == layout
    for field, value in ((2, layout.read_bytes), (3, "object"), (1, 7)):
        forged = layout.to_message()
        forged["inputs"][0][field] = value  # past the end of its part, no dtype, no part
        with pytest.raises(ChannelError):
            Layout.from_message(forged)
    forged = layout.to_message()
    forged["results"][0][1] = READ  # a result slot among the inputs the calls read
    with pytest.raises(ChannelError):
        Layout.from_message(forged)
    sets.slab.close()


def test_writing_a_set_poisons_what_the_call_must_write() -> None:
    sets, _ = staged()
    data = vectoradd_set()
    data[2].fill_(5.0)
    sets.write(0, data, {"data[2]"})
    inputs = sets.inputs(0)
    assert torch.equal(inputs["data[0]"], data[0]) and torch.equal(inputs["data[1]"], data[1])
    assert torch.isnan(inputs["data[2]"]).all() and torch.isnan(sets.slots(0)[0]).all()
    with pytest.raises(ValueError, match="does not fit"):
        sets.write(0, vectoradd_set(4), {"data[2]"})
    sets.slab.close()


def test_outputs_come_back_as_slots_aliases_or_inline_and_only_as_listed() -> None:
    sets, _ = staged(count=2)
    sets.write(1, vectoradd_set(), {"data[2]"})
    a, b, out = sets.data(1)
    torch.add(a, b, out=out)
    assert sets.deposit(1, out) == {ALIAS: "data[2]"}
    assert torch.equal(sets.output(1, {ALIAS: "data[2]"}), a + b)
    fresh = a * 2
    assert sets.deposit(1, fresh) == {SLOT: 0}
    copied = sets.output(1, {SLOT: 0})
    assert torch.equal(copied, fresh)
    sets.slots(1)[0].zero_()  # a runner writing after its reply changes nothing read before
    assert torch.equal(copied, fresh)
    wrong_shape = sets.deposit(1, torch.ones(3))
    assert isinstance(wrong_shape, torch.Tensor)
    assert torch.equal(sets.output(1, wrong_shape), torch.ones(3))
    # Two outputs where one is expected: they do not fit the slots and travel inline, but an
    # input buffer is still named.
    pair = sets.deposit(1, (fresh, out))
    assert isinstance(pair[0], torch.Tensor) and pair[1] == {ALIAS: "data[2]"}
    for bad in ({SLOT: 1}, {SLOT: -1}, {SLOT: "0"}, {ALIAS: "data[7]"}):
        with pytest.raises(Stop, match="does not exist"):
            sets.output(1, bad)
    with pytest.raises(Stop, match="does not exist"):
        sets.output(2, {SLOT: 0})
    with pytest.raises(ChannelError):
        sets.data(2)
    sets.slab.close()


def test_a_runner_runs_a_batch_on_the_sets_it_was_handed() -> None:
    calls: list[int] = []

    def kernel(data: tuple[torch.Tensor, ...]) -> torch.Tensor:
        calls.append(1)
        a, b, out = data
        return torch.add(a, b, out=out)

    ours, theirs = socket.socketpair()
    runner = Runner(kernel, "cpu", theirs)
    sets, layout = staged(count=3)
    try:
        with pytest.raises(SubmissionError, match="not given"):
            runner.handle({"op": "batch", "slab": 1})
        send_fd(ours, sets.slab.fd)
        message = {"op": "attach", "slab": 1, "nbytes": sets.slab.nbytes, "sets": 3,
                   "layout": layout.to_message()}  # fmt: skip
        assert runner.handle(message) == {"ok": True}
        pristine = [vectoradd_set() for _ in range(3)]
        for index, data in enumerate(pristine):
            sets.write(index, data, {"data[2]"})
        reply = runner.handle({"op": "batch", "slab": 1})
        assert len(calls) == 3 and reply["outputs"] == [{ALIAS: "data[2]"}] * 3
        for index, (a, b, _) in enumerate(pristine):
            assert torch.equal(sets.output(index, reply["outputs"][index]), a + b)
        assert runner.handle({"op": "release", "slab": 1}) == {"ok": True}
        with pytest.raises(SubmissionError):
            runner.handle({"op": "run", "slab": 1, "set": 0})
    finally:
        ours.close()
        theirs.close()
        sets.slab.close()


def test_a_slab_of_sets_holds_every_read_input_first() -> None:
    """The own-clock batches copy only what the calls read inside their timed span: every
    set's read inputs lie together at the slab's start, the buffers the calls write and the
    result slots after them."""
    sets, layout = staged(count=3)
    start, length = layout.read_part(3)
    read_ends = []
    for index in range(3):
        inputs = sets.inputs(index)
        for path in ("data[0]", "data[1]"):
            offset = inputs[path].data_ptr() - sets.slab.raw.data_ptr()
            read_ends.append(offset + inputs[path].nbytes)
        rest = inputs["data[2]"].data_ptr() - sets.slab.raw.data_ptr()
        assert rest >= start + length
        assert sets.slots(index)[0].data_ptr() - sets.slab.raw.data_ptr() >= start + length
    assert max(read_ends) <= start + length
    sets.slab.close()
