"""How a multi-rank case's inputs cross from the trusted reference ranks to the submission's
ranks. GPU MODE's eval.py hands `generate_input`'s result to `custom_kernel` in the same
process, so a reference may put its own objects in it (its `amd_distributed/all2all` gives
a `MoEConfig` and a `RankTestData`); the channel carries only tensors, numbers, strings and
tuples, lists and dicts of them.

So an object with attributes crosses as a tagged dict of them, and a torch.dtype as its
name; the submission's rank gets back a SimpleNamespace holding the same attributes, and the
dtype itself. Only the ranks in the sandbox rebuild them: the harness passes the tagged dicts
on, and `check_implementation` runs on the reference's own objects."""

from __future__ import annotations

import types
from typing import Any

import torch

OBJECT = "__kj_object__"
ATTRIBUTES = "attributes"
DTYPE = "__kj_dtype__"
# Callables, classes and modules have attributes too, but are code, not inputs.
_NOT_INPUTS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def carried(node: Any) -> Any:
    """`node` as the channel can carry it; what still cannot cross (one of torch's own
    objects, such as a torch.Generator, or one without attributes) is left for the channel
    to refuse."""
    if isinstance(node, torch.Tensor) or node is None or isinstance(node, bool | int | float | str):
        return node
    if isinstance(node, torch.dtype):
        return {DTYPE: str(node).removeprefix("torch.")}
    if isinstance(node, tuple):
        return tuple(carried(x) for x in node)
    if isinstance(node, list):
        return [carried(x) for x in node]
    if isinstance(node, dict):
        return {key: carried(value) for key, value in node.items()}
    attributes = getattr(node, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(node, _NOT_INPUTS) and not _torch(node):
        fields = {str(key): carried(value) for key, value in attributes.items()}
        return {OBJECT: type(node).__name__, ATTRIBUTES: fields}
    return node


def _torch(node: Any) -> bool:
    """An instance of one of torch's own classes (a Generator, even a subclass of it): its
    attributes are not what it is."""
    return any(cls.__module__.partition(".")[0] == "torch" for cls in type(node).__mro__)


def rebuilt(node: Any) -> Any:
    """What `carried` made of the inputs, as the submission's rank receives them."""
    if isinstance(node, dict):
        if set(node) == {DTYPE}:
            dtype = getattr(torch, str(node[DTYPE]), None)
            if isinstance(dtype, torch.dtype):
                return dtype
        if set(node) == {OBJECT, ATTRIBUTES} and isinstance(node[ATTRIBUTES], dict):
            return types.SimpleNamespace(**{
                str(key): rebuilt(value) for key, value in node[ATTRIBUTES].items()
            })  # fmt: skip
        return {key: rebuilt(value) for key, value in node.items()}
    if isinstance(node, tuple):
        return tuple(rebuilt(x) for x in node)
    if isinstance(node, list):
        return [rebuilt(x) for x in node]
    return node
