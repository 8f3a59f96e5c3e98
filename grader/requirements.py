"""What a problem needs of the worker that grades it, as task.yml's `requires` declares it
(packages, device kinds, a minimum CUDA compute capability), and what this worker lacks of
it, in a sentence an organizer can act on. Also the one dependency a problem may not have:
its own evaluator (GPU MODE's eval.py standing in for reference.py's entry points), which
KernelJudge never runs.

    requires:
      packages: [helion]          # modules the problem's code or its submissions import
      devices: [cuda]             # where it can be graded: device kinds (cpu, cuda) or
                                  # device types (b200, h200: what workers' queues are named)
      compute_capability: 10.0    # the least CUDA compute capability it runs on
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from typing import Any

from grader.device import DeviceInfo

REQUIRES_KEY = "requires"
DEVICE_KINDS = ("cpu", "cuda")
ENTRY_POINTS = ("generate_input", "ref_kernel", "check_implementation")
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
DEVICE_NAME = re.compile(r"^[a-z0-9]+$")
CAPABILITY = re.compile(r"^(\d{1,2})(?:\.(\d))?$")


class RequirementsError(ValueError):
    """task.yml's `requires` is malformed; the message says how."""


@dataclass(frozen=True)
class Requirements:
    packages: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()  # device kinds and device types; empty: any
    compute_capability: tuple[int, int] | None = None

    @property
    def capability_text(self) -> str:
        major, minor = self.compute_capability or (0, 0)
        return f"{major}.{minor}"


@dataclass(frozen=True)
class Shortfall:
    """What this worker lacks: `device` (it cannot grade the problem here at all: the
    validation reports it as needs) or `package` (installing the package fixes it)."""

    kind: str  # "device" | "package"
    message: str


def parse(spec: dict[str, Any]) -> Requirements:
    """task.yml's `requires`, checked; raises RequirementsError naming what is wrong."""
    raw = spec.get(REQUIRES_KEY)
    if raw is None:
        return Requirements()
    if not isinstance(raw, dict):
        raise RequirementsError(f"{REQUIRES_KEY!r} must be a mapping (packages, devices, ...)")
    unknown = sorted(set(raw) - {"packages", "devices", "compute_capability"})
    if unknown:
        raise RequirementsError(
            f"{REQUIRES_KEY!r} has unknown keys {', '.join(unknown)}; it may have packages, "
            "devices and compute_capability"
        )
    packages = _names(raw.get("packages"), "packages")
    bad = [name for name in packages if not MODULE_NAME.match(name)]
    if bad:
        raise RequirementsError(
            f"{REQUIRES_KEY}.packages names {', '.join(map(repr, bad))}, which are not module "
            "names (give the name imported, e.g. cutlass for nvidia-cutlass-dsl)"
        )
    devices = tuple(name.lower() for name in _names(raw.get("devices"), "devices"))
    bad = [name for name in devices if not DEVICE_NAME.match(name)]
    if bad:
        raise RequirementsError(
            f"{REQUIRES_KEY}.devices names {', '.join(map(repr, bad))}; name device kinds "
            f"({', '.join(DEVICE_KINDS)}) or device types as workers report them (h200, b200)"
        )
    capability = raw.get("compute_capability")
    return Requirements(packages, devices, None if capability is None else _capability(capability))


def _names(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RequirementsError(f"{REQUIRES_KEY}.{key} must be a list of names")
    return tuple(value)


def _capability(value: Any) -> tuple[int, int]:
    found = CAPABILITY.match(str(value)) if isinstance(value, int | float | str) else None
    if found is None or isinstance(value, bool):
        raise RequirementsError(
            f"{REQUIRES_KEY}.compute_capability must be a version such as 9.0 or 10.0, "
            f"not {value!r}"
        )
    return int(found.group(1)), int(found.group(2) or 0)


def device_shortfall(requirements: Requirements, info: DeviceInfo) -> Shortfall | None:
    """Whether this worker's device is of a kind or type the problem declares, and new
    enough."""
    devices = requirements.devices
    if requirements.compute_capability is not None and not devices:
        devices = ("cuda",)  # a compute capability is a CUDA GPU's
    if devices and info.kind not in devices and info.device_type not in devices:
        if devices == ("cuda",):
            wanted = "a CUDA GPU"
            if requirements.compute_capability is not None:
                wanted += f" of compute capability {requirements.capability_text} or higher"
        elif devices == ("cpu",):
            wanted = "the CPU"
        else:
            wanted = (
                "a device of type " if len(devices) == 1 else "a device of one of the types "
            ) + ", ".join(devices)
        here = "grades on the CPU" if info.kind == "cpu" else f"has an {info.name}"
        return Shortfall(
            "device",
            f"needs {wanted} (task.yml's requires.devices: {', '.join(devices)}); "
            f"this worker {here}",
        )
    if info.kind == "cuda" and requirements.compute_capability is not None:
        import torch  # only where a device is checked: the API lists problems without it

        have = torch.cuda.get_device_capability()
        if tuple(have) < requirements.compute_capability:
            return Shortfall(
                "device",
                f"needs a GPU of compute capability {requirements.capability_text} or higher "
                f"(task.yml's requires.compute_capability); this worker's {info.name} has "
                f"{have[0]}.{have[1]}",
            )
    return None


def missing_packages(requirements: Requirements) -> list[str]:
    """The declared packages this worker's Python cannot import (found, not imported)."""
    missing = []
    for name in requirements.packages:
        top = name.partition(".")[0]
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def shortfall(requirements: Requirements, info: DeviceInfo) -> Shortfall | None:
    """The first thing this worker lacks of what the problem declares, or None."""
    lacking = device_shortfall(requirements, info)
    if lacking is not None:
        return lacking
    missing = missing_packages(requirements)
    if missing:
        them = "it" if len(missing) == 1 else "them"
        return Shortfall(
            "package",
            f"this worker lacks {', '.join(missing)}, which task.yml's requires.packages "
            f"names: install {them} in the worker's Python environment, or grade the problem "
            "on workers that have them",
        )
    return None


# -- languages a GPU worker may add --------------------------------------------------------

# The kernel languages beyond PyTorch, Triton and CUDA C++ that a GPU worker offers when the
# package's extra is installed there: import name -> (language, extra).
GPU_LANGUAGES = {
    "helion": ("Helion", "kerneljudge[helion]"),
    "cutlass": ("CuTe DSL", "kerneljudge[cute]"),
}


def imported_modules(code: str) -> set[str]:
    """The top-level modules `code` imports anywhere (empty when it does not parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.partition(".")[0])
    return found


def language_shortfall(code: str, info: DeviceInfo) -> str:
    """'' unless `code` is written in a GPU language (Helion, CuTe DSL) that this worker
    cannot run: on the CPU, or without the package. Then why, in a sentence."""
    for module in sorted(imported_modules(code) & set(GPU_LANGUAGES)):
        language, extra = GPU_LANGUAGES[module]
        if info.kind != "cuda":
            return (
                f"written in {language}, which runs on GPU workers; this worker grades on the CPU"
            )
        if not missing_packages(Requirements(packages=(module,))):
            continue
        return (
            f"written in {language} (it imports {module}), which this worker does not have: "
            f"install {extra} on GPU workers to grade it"
        )
    return ""


# -- a problem's own evaluator ---------------------------------------------------------------


def own_evaluator_refusal(evaluator: str, evaluator_text: str, reference_text: str) -> str:
    """'' unless the problem depends on its own evaluator: reference.py surely lacks one of
    the entry points the harness calls, while `evaluator` (the file task.yml's config.main
    or files name, GPU MODE's eval.py) is there to stand in for them. Then the reason it
    is refused."""
    defined = _top_level_names(reference_text)
    if defined is None:
        return ""  # unreadable or `import *`: validation tells what is wrong, if anything
    lacking = [name for name in ENTRY_POINTS if name not in defined]
    if not lacking:
        return ""
    functions = _top_level_names(reference_text, functions_only=True) or set()
    used = [name for name in _names_taken_from_reference(evaluator_text) if name in functions]
    instead = f", and {evaluator} calls its {', '.join(used)} instead" if used else ""
    return (
        f"this problem depends on its own evaluator ({evaluator}): reference.py does not "
        f"define {', '.join(lacking)}, which KernelJudge's harness calls{instead}; KernelJudge "
        "never runs a problem's own evaluator (it would time submissions in their own "
        "process, where they can change its clock), so give reference.py generate_input, "
        "ref_kernel and check_implementation"
    )


def _top_level_names(text: str, *, functions_only: bool = False) -> set[str] | None:
    """Names a module defines at its top level (in any branch of an if or try there), or
    None when that cannot be known from its text."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif functions_only:
            pass
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add((alias.asname or alias.name).partition(".")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        if isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for field in ("body", "orelse", "finalbody"):
                statements += getattr(node, field, [])
            for handler in getattr(node, "handlers", []):
                statements += handler.body
    return names


def _names_taken_from_reference(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return sorted(
        {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "reference"
            for alias in node.names
            if alias.name != "*"
        }
    )
