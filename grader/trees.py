"""Walking the trees of tuples, lists and dicts that carry a case's inputs and outputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def map_tree(node: Any, is_leaf: Callable[[Any], bool], leaf: Callable[[Any], Any]) -> Any:
    """`node` rebuilt with `leaf(x)` for every `x` that `is_leaf` picks out; tuples, lists and
    dicts that are not leaves are walked into, anything else is kept as it is."""
    if is_leaf(node):
        return leaf(node)
    if isinstance(node, tuple):
        return tuple(map_tree(x, is_leaf, leaf) for x in node)
    if isinstance(node, list):
        return [map_tree(x, is_leaf, leaf) for x in node]
    if isinstance(node, dict):
        return {k: map_tree(v, is_leaf, leaf) for k, v in node.items()}
    return node


def is_tensor(node: Any) -> bool:
    return isinstance(node, torch.Tensor)
