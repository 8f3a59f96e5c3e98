"""Where the runner runs: its environment (an allow-list) and, by default, the sandbox it is
confined to. Inside, it sees the system's read-only libraries, Python with torch and Triton,
the grader package, and a read-only copy of the grading's work folder (submission.py and
the problem's files other than the reference); it writes only to private tmpfs folders."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import sandbox
from grader.hostsettings import HostSettings
from sandbox.bwrap import SANDBOX_HOME, SANDBOX_USER, SYSTEM_PATHS

GRADER_PACKAGE = Path(__file__).resolve().parent
# Inside the sandbox.
RUN_DIR = "/kj/run"
LIB_DIR = "/kj/lib"
DEFAULT_MEMORY_BYTES = 8 << 30


RUNNER_MODULES = ("torch", "triton", "yaml", "numpy")
# Kernel languages a GPU worker offers when their packages are installed (the package's
# `helion` and `cute` extras): found without importing them. CuTe DSL's `cutlass` lies in
# nvidia_cutlass_dsl/dsl_packages and looks for its runtime library (cu13/lib) in the
# folders above, so the folder holding nvidia_cutlass_dsl goes in as well.
LANGUAGE_MODULES = ("helion", "cutlass", "nvidia_cutlass_dsl")


def _site_dirs() -> list[str]:
    """The folders the modules a runner needs were imported from (their site-packages),
    and those of the kernel languages installed here."""
    found = []
    for module_name in RUNNER_MODULES:
        origin = getattr(sys.modules.get(module_name), "__file__", None)
        if origin:
            found.append(str(Path(origin).resolve().parent.parent))
    for module_name in LANGUAGE_MODULES:
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            continue
        places = list(spec.submodule_search_locations or []) if spec else []
        if spec is not None and spec.origin and spec.origin != "namespace":
            places.insert(0, str(Path(spec.origin).parent))
        if places:
            found.append(str(Path(places[0]).resolve().parent))
    return list(dict.fromkeys(found))


def _python_paths() -> list[str]:
    """The interpreter, its standard library and the site-packages of the runner's modules,
    without folders already inside another."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *_site_dirs()}
    return sorted(p for p in paths if not any(p.startswith(s + "/") for s in paths if s != p))


def runner_folders(prefix: str) -> tuple[Path, Path, Path]:
    """A new temporary root for one runner's sandbox, and in it the work folder (with the
    home and tmp an unisolated runner writes to) and the lib folder on its PYTHONPATH: only
    the grader package is importable from the runner, not the rest of the repo. Returns the
    root (the caller removes it), the work folder and the lib folder."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    work, lib = root / "run", root / "lib"
    for folder in (work / "home", work / "tmp", lib):
        folder.mkdir(parents=True)
    (lib / "grader").symlink_to(GRADER_PACKAGE, target_is_directory=True)
    return root, work, lib


def runner_isolation(
    work: Path,
    kind: str,
    memory_bytes: int | None = None,
    more_paths: Sequence[str] = (),
    gpus: Sequence[str] | None = None,
) -> sandbox.Isolation:
    """`more_paths`: host folders this runner needs (Nsight Compute's) besides those the
    site names in KJ_SANDBOX_RO_PATHS. `gpus`: on a GPU, the GPUs whose device nodes the
    sandbox holds (indices or UUIDs, as CUDA_VISIBLE_DEVICES names them: a grading's lease
    in a worker of several); None: those CUDA_VISIBLE_DEVICES names."""
    extra = list(HostSettings.from_env().sandbox_ro_paths)
    extra += [p for p in more_paths if p not in extra]
    return sandbox.Isolation(
        cwd=RUN_DIR,
        ro_paths=(*SYSTEM_PATHS, *_python_paths(), *extra),
        ro_binds=((str(work), RUN_DIR), (str(GRADER_PACKAGE), f"{LIB_DIR}/grader")),
        devices=_gpu_nodes(gpus) if kind == "cuda" else (),
        cgroup=sandbox.CgroupLimits(memory_bytes=memory_bytes or DEFAULT_MEMORY_BYTES),
    )


def _gpu_nodes(gpus: Sequence[str] | None) -> list[str]:
    return sandbox.gpu_device_nodes(None if gpus is None else ",".join(gpus))


# The submission's memory stays with its process once freed: buffers up to 32 MiB come from
# the heap and the heap is never given back. With glibc's defaults a call that makes an
# 8 MiB temporary (vectorsum's reference, `data.double()`) found fresh pages every so often
# and took 5 ms instead of 0.4 ms, depending on what the runner had allocated in between:
# its times then moved by ten times for no fault of the submission's.
MALLOC_TUNABLES = (
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184"
    ":glibc.malloc.top_pad=67108864"
)


def runner_env(work: Path, lib: Path, kind: str, isolated: bool) -> dict[str, str]:
    """The runner's whole environment: an allow-list, nothing else from ours. `work` and
    `lib` are host folders, used only when the runner is not isolated."""
    home = SANDBOX_HOME if isolated else str(work / "home")
    # The venv's bin folder holds ninja, which load_inline builds with.
    path = os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]
    )
    env = {
        "PATH": path,
        "HOME": home,
        "USER": SANDBOX_USER,
        "LOGNAME": SANDBOX_USER,
        "TMPDIR": "/tmp" if isolated else str(work / "tmp"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        # The runner's modules may come from a folder outside the interpreter's own paths.
        "PYTHONPATH": os.pathsep.join([LIB_DIR if isolated else str(lib), *_site_dirs()]),
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # The submission's own prints reach the report even if the runner is killed.
        "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": f"{home}/.triton/cache",
        "TORCH_EXTENSIONS_DIR": f"{home}/.cache/torch_extensions",
        # Helion's configs and Triton code, Inductor's and CuTe DSL's caches: all in the
        # sandbox's own home, never shared with another submission.
        "HELION_CACHE_DIR": f"{home}/.cache/helion",
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/.cache/torchinductor",
        "CUTE_DSL_CACHE_DIR": f"{home}/.cache/cute_dsl",
        "GLIBC_TUNABLES": MALLOC_TUNABLES,
    }
    if "CUDA_HOME" in os.environ:
        env["CUDA_HOME"] = os.environ["CUDA_HOME"]
    if kind == "cuda":
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        # Isolated, the sandbox holds only this worker's GPUs' device nodes (sandbox.bwrap),
        # and CUDA numbers those from 0: the host's CUDA_VISIBLE_DEVICES would name others.
        if not isolated and "CUDA_VISIBLE_DEVICES" in os.environ:
            env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    if kind == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run on CPU tensors in the interpreter
        # One thread: steadier times on a shared CPU.
        env["OMP_NUM_THREADS"] = "1"
    return env


CHECK_SCRIPT = """
import torch
x = torch.ones(1024, device="{device}")
assert float(x.sum()) == 1024.0
print("ok")
"""


def check_sandbox(kind: str, timeout_s: float = 120.0) -> str:
    """Start one sandboxed Python that imports torch and uses the device, as a runner
    would; return '' if it worked, else what went wrong (for a worker to refuse to start)."""
    with tempfile.TemporaryDirectory(prefix="kj-check-") as root:
        work = Path(root)
        try:
            result = sandbox.run(
                [sys.executable, "-c", CHECK_SCRIPT.format(device=kind)],
                cwd=work,
                env=runner_env(work, work, kind, isolated=True),
                timeout_s=timeout_s,
                isolation=runner_isolation(work, kind),
            )
        except sandbox.SandboxUnavailable as exc:
            return str(exc)
    if result.stdout.strip() != "ok":
        detail = (result.stderr or result.stdout).strip()[-2000:]
        return f"a sandboxed test run failed (exit code {result.returncode}): {detail}"
    return ""
