"""A case's input sets and result slots laid out in a slab (grader/shared.py). The harness
writes each set there from its own pristine copy and poisons what the submission must write
before every call; the runner sees a set as the tensors custom_kernel receives and leaves
its output in the set's result slots, or names the input buffer its output is. Every
placement is the harness's: a runner names only a set, a slot or an input path the harness
listed, and the harness copies what it reads out of the slab before judging it.

A slab of several sets holds first every set's inputs that a call reads (the `read` part,
set after set), then every set's buffers it writes and result slots (the `rest`): the
harness's own-clock batches copy only the read part inside their timed span."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from grader.inputs import iter_tensors, poison_tensor
from grader.protocol import DTYPES, ChannelError
from grader.report import Status, Stop
from grader.shared import ALIGN, SharedMemoryError, Slab, aligned
from grader.trees import map_tree

INPUT = "__kj_input__"
SLOT = "__kj_slot__"
ALIAS = "__kj_alias__"
# An output the runner made in its arena (grader/gate.py), at a byte offset there.
ARENA = "__kj_arena__"
# An output that is neither in the slots nor an input buffer travels in the message itself
# (a wrong shape or dtype, say): the harness still reads it to say what was wrong.
INLINE = "inline"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


READ, REST = 0, 1  # the two parts of a slab


@dataclass(frozen=True)
class Placement:
    """One tensor of a set: which part of the slab it is in, where it starts (bytes from the
    set's start in that part) and what it is."""

    path: str
    part: int
    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = 1
        for n in self.shape:
            count *= n
        return count * DTYPES[self.dtype].itemsize

    def to_message(self) -> list[Any]:
        return [self.path, self.part, self.offset, self.dtype, list(self.shape)]

    @classmethod
    def from_message(cls, raw: Any) -> Placement:
        if not (isinstance(raw, list) and len(raw) == 5):
            raise ChannelError("malformed placement")
        path, part, offset, dtype, shape = raw
        if (
            not isinstance(path, str)
            or part not in (READ, REST)
            or not isinstance(offset, int)
            or offset < 0
            or offset % ALIGN
            or dtype not in DTYPES
            or not isinstance(shape, list)
            or not all(isinstance(n, int) and n >= 0 for n in shape)
        ):
            raise ChannelError("malformed placement")
        return cls(path, part, offset, dtype, tuple(shape))


def _skeleton(data: Any, path: str = "data") -> Any:
    """The data tree with each tensor replaced by its path."""
    if isinstance(data, torch.Tensor):
        return {INPUT: path}
    if isinstance(data, tuple):
        return tuple(_skeleton(x, f"{path}[{i}]") for i, x in enumerate(data))
    if isinstance(data, list):
        return [_skeleton(x, f"{path}[{i}]") for i, x in enumerate(data)]
    if isinstance(data, dict):
        return {k: _skeleton(v, f"{path}[{k!r}]") for k, v in data.items()}
    return data


@dataclass(frozen=True)
class Layout:
    """Where one input set and its result slots lie: `read_bytes` of it in the read part,
    `rest_bytes` in the rest, set after set in each."""

    skeleton: Any
    inputs: tuple[Placement, ...]
    results: tuple[Placement, ...]
    read_bytes: int
    rest_bytes: int

    @property
    def set_bytes(self) -> int:
        return self.read_bytes + self.rest_bytes

    @classmethod
    def of(
        cls, data: Any, expected: Any, written: set[str] | frozenset[str] = frozenset()
    ) -> Layout:
        """The layout for sets shaped like `data` (the tensors at `written` being buffers the
        call writes), with slots shaped like `expected`."""
        offsets = [0, 0]
        placed: list[list[Placement]] = [[], []]
        for index, tree in enumerate((data, expected)):
            for path, tensor in iter_tensors(tree, "data" if index == 0 else "output"):
                dtype = _dtype_name(tensor.dtype)
                if dtype not in DTYPES:
                    raise ValueError(f"{path}: tensors of {tensor.dtype} cannot be shared")
                part = READ if index == 0 and path not in written else REST
                placement = Placement(path, part, offsets[part], dtype, tuple(tensor.shape))
                placed[index].append(placement)
                offsets[part] += aligned(max(placement.nbytes, 1))
        return cls(
            _skeleton(data),
            tuple(placed[0]),
            tuple(placed[1]),
            max(offsets[READ], ALIGN),
            max(offsets[REST], ALIGN),
        )

    def to_message(self) -> dict[str, Any]:
        return {
            "skeleton": self.skeleton,
            "inputs": [p.to_message() for p in self.inputs],
            "results": [p.to_message() for p in self.results],
            "read_bytes": self.read_bytes,
            "rest_bytes": self.rest_bytes,
        }

    @classmethod
    def from_message(cls, raw: Any) -> Layout:
        if not isinstance(raw, dict):
            raise ChannelError("malformed layout")
        inputs = tuple(Placement.from_message(p) for p in raw.get("inputs") or [])
        results = tuple(Placement.from_message(p) for p in raw.get("results") or [])
        strides = (raw.get("read_bytes"), raw.get("rest_bytes"))
        if not all(isinstance(n, int) and n > 0 and n % ALIGN == 0 for n in strides):
            raise ChannelError("malformed layout")
        if any(p.offset + p.nbytes > strides[p.part] for p in (*inputs, *results)):  # type: ignore[operator]
            raise ChannelError("malformed layout")
        if any(p.part != REST for p in results):
            raise ChannelError("malformed layout")
        return cls(raw.get("skeleton"), inputs, results, *strides)  # type: ignore[arg-type]

    def read_part(self, count: int) -> tuple[int, int]:
        """(offset, bytes) of the read part of a slab of `count` sets."""
        return 0, count * self.read_bytes


def _build(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    def placed(node: dict[str, Any]) -> torch.Tensor:
        found = tensors.get(str(node[INPUT]))
        if found is None:
            raise ChannelError("the layout names an input it does not place")
        return found

    return map_tree(skeleton, lambda node: isinstance(node, dict) and INPUT in node, placed)


class Sets:
    """`count` sets of one layout in one slab, seen from either side. Views are made once per
    set: a batch of calls then costs the calls, not the bookkeeping."""

    def __init__(self, slab: Slab, layout: Layout, count: int) -> None:
        if count < 1 or count * layout.set_bytes > slab.nbytes:
            raise ChannelError("the sets do not fit their slab")
        self.slab = slab
        self.layout = layout
        self.count = count
        self._views: dict[int, _SetViews] = {}

    def _set(self, index: int) -> _SetViews:
        views = self._views.get(index)
        if views is None:
            if not isinstance(index, int) or not 0 <= index < self.count:
                raise ChannelError(f"there is no set {index}")
            layout = self.layout
            bases = (
                index * layout.read_bytes,
                self.count * layout.read_bytes + index * layout.rest_bytes,
            )

            def view(p: Placement) -> torch.Tensor:
                return self.slab.view(bases[p.part] + p.offset, DTYPES[p.dtype], p.shape)

            inputs = {p.path: view(p) for p in self.layout.inputs}
            views = _SetViews(
                inputs,
                [view(p) for p in self.layout.results],
                _build(self.layout.skeleton, inputs),
                {_memory(t): path for path, t in inputs.items()},
            )
            self._views[index] = views
        return views

    def inputs(self, index: int) -> dict[str, torch.Tensor]:
        return self._set(index).inputs

    def slots(self, index: int) -> list[torch.Tensor]:
        return self._set(index).slots

    def data(self, index: int) -> Any:
        """Set `index` as the tree custom_kernel receives (views into the slab)."""
        return self._set(index).data

    # -- the harness's side ----------------------------------------------------------------

    def write(self, index: int, data: Any, written: set[str]) -> None:
        """Copy `data` into set `index`, then poison the buffers the submission writes and
        every result slot, so that only what the coming call writes can pass."""
        views = self.inputs(index)
        for path, tensor in iter_tensors(data):
            view = views.get(path)
            if view is None or view.shape != tensor.shape or view.dtype != tensor.dtype:
                raise ValueError(f"{path} does not fit the layout its case was given")
            view.copy_(tensor)
        for path in written:
            if path in views:
                poison_tensor(views[path])
        for slot in self.slots(index):
            poison_tensor(slot)

    def output(self, index: int, described: Any, arena: Slab | None = None) -> Any:
        """The runner's output for set `index` as it describes it, copied out of the slab (a
        runner still writing to it afterwards changes nothing the harness judges), or out of
        `arena` (the harness's copy of the runner's arena) for one made there. Raises Stop
        when the description names what the harness never placed."""
        if not isinstance(index, int) or not 0 <= index < self.count:
            raise Stop(Status.ERROR, "the runner named a set that does not exist")
        if isinstance(described, torch.Tensor):
            return described.clone()
        if isinstance(described, dict) and set(described) == {ARENA}:
            offset = described[ARENA]
            if arena is None or len(self.layout.results) != 1 or not isinstance(offset, int):
                raise Stop(Status.ERROR, "the runner named an arena output it could not have made")
            slot = self.layout.results[0]
            try:
                return arena.view(offset, DTYPES[slot.dtype], slot.shape).clone()
            except SharedMemoryError as exc:
                raise Stop(
                    Status.ERROR, f"the runner named an arena output outside it: {exc}"
                ) from exc
        if isinstance(described, dict) and set(described) == {SLOT}:
            slot = described[SLOT]
            slots = self.slots(index)
            if not isinstance(slot, int) or not 0 <= slot < len(slots):
                raise Stop(Status.ERROR, "the runner named a result slot that does not exist")
            return slots[slot].clone()
        if isinstance(described, dict) and set(described) == {ALIAS}:
            found = self.inputs(index).get(str(described[ALIAS]))
            if found is None:
                raise Stop(Status.ERROR, "the runner named an input that does not exist")
            return found.clone()
        if type(described) in (tuple, list):
            return type(described)(self.output(index, x) for x in described)
        return described  # not a tensor tree: the harness's verdict says so

    # -- the runner's side -----------------------------------------------------------------

    def fits_slot(self, index: int, output: torch.Tensor) -> bool:
        """Whether `output` is shaped as the set's one result slot (and is not an input)."""
        views = self._set(index)
        if len(views.slots) != 1 or _memory(output) in views.by_memory:
            return False
        slot = views.slots[0]
        return output.shape == slot.shape and output.dtype == slot.dtype

    def deposit(self, index: int, output: Any) -> Any:
        """Leave `output` (exact tensors) in set `index`: the description the harness reads
        back. A tensor that is one of the set's inputs is named; the others go into the slots
        when they match them in order, shape and dtype, and otherwise travel inline."""
        views = self._set(index)
        single = type(output) is torch.Tensor
        if single:
            # The common case, as cheaply as it can be: a batch's calls pay for this.
            alias = views.by_memory.get(_memory(output))
            if alias is not None:
                return {ALIAS: alias}
            if len(views.slots) == 1:
                slot = views.slots[0]
                if output.shape == slot.shape and output.dtype == slot.dtype:
                    slot.copy_(output)
                    return {SLOT: 0}
        leaves = [output] if single else [t for _, t in iter_tensors(output)]
        slots = views.slots
        fits = len(leaves) == len(slots) and all(
            t.shape == s.shape and t.dtype == s.dtype for t, s in zip(leaves, slots, strict=True)
        )
        counter = iter(range(len(leaves)))

        def describe(node: Any) -> Any:
            if isinstance(node, torch.Tensor):
                position = next(counter)
                alias = views.by_memory.get(_memory(node))
                if alias is not None:
                    return {ALIAS: alias}
                if not fits:
                    return node.detach().to("cpu").contiguous()
                slots[position].copy_(node)
                return {SLOT: position}
            return type(node)(describe(x) for x in node)

        return describe(output)


@dataclass(frozen=True)
class _SetViews:
    inputs: dict[str, torch.Tensor]
    slots: list[torch.Tensor]
    data: Any
    by_memory: dict[tuple[Any, ...], str]


def _memory(tensor: torch.Tensor) -> tuple[Any, ...]:
    """What makes two tensors the same memory seen the same way."""
    return (tensor.device, tensor.data_ptr(), tensor.shape, tensor.dtype, tensor.stride())
