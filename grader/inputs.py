"""Case seeds (the secret seed mixed in for ranked runs) and the tensor-tree helpers that
clone, move and compare a case's input data."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import torch

from grader.trees import is_tensor, map_tree

SEED_BITS = 31  # generators of every device accept it, and so do problems doing arithmetic


def case_seed(case: dict[str, Any], secret_seed: int | None, *, repeat: int = 0) -> int:
    """The seed a case's inputs are generated from. Without a secret (and repeat 0) it is
    the public seed; with one it is a hash of both, so public seeds cannot be precomputed.
    `repeat` gives the fresh input sets of leaderboard timing."""
    public = int(case.get("seed", 0))
    if secret_seed is None and repeat == 0:
        return public
    params = json.dumps(case, sort_keys=True, default=str)
    key = f"{secret_seed}|{repeat}|{params}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % (1 << SEED_BITS)


def ranked_seed(secret_seed: int | None, nonce: int | None = None) -> int:
    """The seed one leaderboard-mode grading draws its inputs from: the problem's secret
    seed mixed with a nonce that is fresh for every grading (from the operating system
    unless given), so no two gradings share a ranked input and nothing a submission learns
    from one grading (its own printout, its timings) says anything about the next."""
    if nonce is None:
        nonce = secrets.randbits(128)
    key = f"ranked|{secret_seed}|{nonce}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def seeded_case(
    case: dict[str, Any], secret_seed: int | None, *, repeat: int = 0
) -> dict[str, Any]:
    """The keyword arguments for generate_input: the case with its effective seed."""
    out = dict(case)
    if "seed" in case or secret_seed is not None or repeat:
        out["seed"] = case_seed(case, secret_seed, repeat=repeat)
    return out


def map_tensors(data: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply `fn` to every tensor in a tree of tuples, lists and dicts."""
    return map_tree(data, is_tensor, fn)


def iter_tensors(data: Any, path: str = "data") -> Iterator[tuple[str, torch.Tensor]]:
    """(readable path, tensor) for every tensor in the tree, e.g. ("data[2]", out)."""
    if isinstance(data, torch.Tensor):
        yield path, data
    elif isinstance(data, tuple | list):
        for i, x in enumerate(data):
            yield from iter_tensors(x, f"{path}[{i}]")
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from iter_tensors(v, f"{path}[{k!r}]")


def clone_data(data: Any) -> Any:
    return map_tensors(data, lambda t: t.clone())


def to_device(data: Any, device: str) -> Any:
    return map_tensors(data, lambda t: t.to(device))


def devices_of(data: Any) -> set[str]:
    return {t.device.type for _, t in iter_tensors(data)}


def same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise-style equality that treats NaN as equal to NaN at the same place."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(
            torch.equal(a, b)
            or (
                torch.equal(torch.isnan(a), torch.isnan(b))
                and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
            )
        )
    return bool(torch.equal(a, b))


def written_paths(before: Any, after: Any) -> set[str]:
    """Paths of tensors that differ between two trees of the same structure."""
    after_map = dict(iter_tensors(after))
    return {
        path
        for path, tensor in iter_tensors(before)
        if path not in after_map or not same_tensor(tensor, after_map[path].to(tensor.device))
    }


def poison(data: Any, paths: set[str] | list[str]) -> None:
    """Fill the output tensors at `paths` with values no kernel should leave there (NaN, or
    the integer type's maximum), so a call that writes nothing cannot pass on what an
    earlier call, or stale memory, left behind."""
    wanted = set(paths)
    for path, tensor in iter_tensors(data):
        if path in wanted:
            poison_tensor(tensor)


def poison_tensor(tensor: torch.Tensor) -> None:
    """NaN for floating types, True for booleans, the integer type's maximum otherwise."""
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)
