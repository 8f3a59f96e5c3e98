"""Static screening of submissions: what cannot be part of a kernel is rejected with a message
naming the line and the thing, what can be is flagged, and no example solution is rejected."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from grader.problem import BUILTIN_DIR
from grader.screen import Screening, screen

SOLUTIONS = sorted(BUILTIN_DIR.glob("*/solutions/*.py"))
PLAIN = [path for path in SOLUTIONS if path.stem in ("pytorch", "triton")]


def _names(messages: list[str], line: int, *found: str) -> bool:
    return any(
        message.startswith(f"line {line}: ") and all(text in message for text in found)
        for message in messages
    )


def assert_rejected(code: str, line: int, *found: str) -> Screening:
    result = screen(code)
    assert _names(result.rejections, line, *found), result
    return result


def assert_flagged(code: str, line: int, *found: str) -> Screening:
    result = screen(code)
    assert result.rejections == [], result
    assert _names(result.flags, line, *found), result
    return result


def _ids(cases: list[tuple[str, int, str]]) -> list[str]:
    return [case[2] for case in cases]


# -- rejections --------------------------------------------------------------------------

INTROSPECTION = [
    ("import gc\n\nobjs = gc.get_objects()\n", 3, "gc.get_objects"),
    ("import gc\nrefs = gc.get_referrers(object())\n", 2, "gc.get_referrers"),
    ("import gc\nrefs = gc.get_referents(object())\n", 2, "gc.get_referents"),
    ("import sys\ncaller = sys._getframe(1)\n", 2, "sys._getframe"),
    ("import inspect\nframe = inspect.currentframe()\n", 2, "inspect.currentframe"),
    ("import inspect\nstack = inspect.stack()\n", 2, "inspect.stack"),
    ("import inspect\nouter = inspect.getouterframes(f)\n", 2, "inspect.getouterframes"),
    ("def custom_kernel(data):\n    return frame.f_back.f_locals['expected']\n", 2, "f_back"),
    ("g = frame.f_globals\n", 1, "f_globals"),
    (
        "try:\n    1 / 0\nexcept Exception as exc:\n    f = exc.__traceback__.tb_frame\n",
        4,
        "tb_frame",
    ),
    ("import sys\nsys.settrace(spy)\n", 2, "sys.settrace"),
]


@pytest.mark.parametrize(("code", "line", "found"), INTROSPECTION, ids=_ids(INTROSPECTION))
def test_introspection_that_finds_other_objects_is_rejected(
    code: str, line: int, found: str
) -> None:
    assert_rejected(code, line, found, "cannot be part of a kernel")


PATCHING = [
    ("import torch\ntorch.allclose = lambda *a, **k: True\n", 2, "assigns torch.allclose"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", 2, "assigns time.perf_counter"),
    (
        "import torch\ntorch.cuda.Event.elapsed_time = lambda s, e: 1e-9\n",
        2,
        "assigns torch.cuda.Event.elapsed_time",
    ),
    ("import torch\n\ntorch.Tensor.__eq__ = always\n", 3, "assigns torch.Tensor.__eq__"),
    ("import torch\nsetattr(torch, 'allclose', always)\n", 2, "setattr on torch.allclose"),
    ("import torch\nsetattr(torch, name, always)\n", 2, "setattr on torch with a computed name"),
    ("import torch\nobject.__setattr__(torch, 'allclose', f)\n", 2, "torch.allclose"),
    ("import torch\ntorch.__setattr__('allclose', f)\n", 2, "torch.allclose"),
    ("import torch\ndel torch.testing.assert_close\n", 2, "deletes torch.testing.assert_close"),
    ("import builtins\nbuiltins.print = quiet\n", 2, "assigns builtins.print"),
    ("__builtins__['open'] = fake_open\n", 1, "builtins"),
    ("import torch\ntorch.__dict__['allclose'] = f\n", 2, "torch.__dict__"),
    ("import torch\nvars(torch).update(allclose=f)\n", 2, "torch.__dict__"),
    ("import time\ntime.perf_counter_ns += 0\n", 2, "time.perf_counter_ns"),
]


@pytest.mark.parametrize(("code", "line", "found"), PATCHING, ids=_ids(PATCHING))
def test_patching_torch_time_or_builtins_is_rejected(code: str, line: int, found: str) -> None:
    assert_rejected(code, line, found, "patching torch, time, builtins")


ALIASES = [
    ("import torch as T\nT.allclose = f\n", 2, "torch.allclose"),
    ("from torch import testing as tt\ntt.assert_close = f\n", 2, "torch.testing.assert_close"),
    ("from torch import Tensor\nTensor.__sub__ = f\n", 2, "torch.Tensor.__sub__"),
    ("from torch.cuda import Event as E\nE.elapsed_time = f\n", 2, "torch.cuda.Event"),
    ("import torch\nX = torch\nY = X.cuda\nY.Event.elapsed_time = f\n", 4, "torch.cuda.Event"),
    ("import torch\nfor m in [torch]:\n    m.allclose = f\n", 3, "torch.allclose"),
    ("import torch\ndef patch(m=torch):\n    m.allclose = f\n", 3, "torch.allclose"),
    ("import torch\n(t := torch).allclose = f\n", 2, "torch.allclose"),
    ("t = __import__('torch')\nt.allclose = f\n", 2, "torch.allclose"),
    ("import importlib\nimportlib.import_module('time').time = f\n", 2, "time.time"),
    ("import torch\ngetattr(torch, 'cuda').Event.elapsed_time = f\n", 2, "torch.cuda.Event"),
    ("from gc import get_objects as g\n\ndef f():\n    return g()\n", 4, "gc.get_objects"),
    ("import gc as collector\nobjs = collector.get_objects()\n", 2, "gc.get_objects"),
    ("import gc\nobjs = getattr(gc, 'get_objects')()\n", 2, "gc.get_objects"),
    ("from gc import *\nobjs = get_objects()\n", 2, "gc.get_objects"),
    ("import posix\nposix.system('id')\n", 2, "os.system"),
]


@pytest.mark.parametrize(("code", "line", "found"), ALIASES, ids=_ids(ALIASES))
def test_aliases_are_resolved(code: str, line: int, found: str) -> None:
    assert_rejected(code, line, found)


def test_an_import_of_a_rejected_function_is_itself_named() -> None:
    assert_rejected("from gc import get_objects as g\n", 1, "imports gc.get_objects")


HARNESS = [
    ("import grader\n", 1, "imports grader"),
    ("from grader.runner import Runner\n", 1, "imports grader.runner"),
    ("from grader import timing\n", 1, "imports grader"),
    ("import __main__\n", 1, "imports __main__"),
    ("import reference\n", 1, "imports reference"),
    ("import importlib\nr = importlib.import_module('grader.runner')\n", 2, "grader.runner"),
    ("import sys\nrunner = sys.modules['__main__']\n", 2, "sys.modules"),
    ("from sys import modules\n", 1, "sys.modules"),
]


@pytest.mark.parametrize(("code", "line", "found"), HARNESS, ids=_ids(HARNESS))
def test_reaching_for_the_harness_is_rejected(code: str, line: int, found: str) -> None:
    assert_rejected(code, line, found, "grader's own modules")


PROCESSES = [
    ("import os\nos.kill(os.getppid(), 9)\n", 2, "os.kill", "signalling"),
    ("import os\nos.killpg(0, 9)\n", 2, "os.killpg", "signalling"),
    ("from os import kill\nkill(1, 15)\n", 2, "os.kill", "signalling"),
    ("import signal\nsignal.pthread_kill(1, 9)\n", 2, "signal.pthread_kill", "signalling"),
    ("import subprocess\n", 1, "subprocess", "starting programs"),
    ("import os\nos.system('nvidia-smi')\n", 2, "os.system", "starting programs"),
    ("import os\nos.popen('env')\n", 2, "os.popen", "starting programs"),
    ("import os\nos.execv('/bin/sh', ['sh'])\n", 2, "os.execv", "starting programs"),
    ("import os\npid = os.fork()\n", 2, "os.fork", "starting programs"),
    ("import pty\n", 1, "pty", "starting programs"),
    ("m = __import__('subprocess')\n", 1, "subprocess", "starting programs"),
    ("import socket\n", 1, "socket", "network"),
    ("import urllib.request\n", 1, "urllib.request", "network"),
    ("from urllib import request\n", 1, "urllib", "network"),
    ("import http.client\n", 1, "http.client", "network"),
    ("import requests\n", 1, "requests", "network"),
    ("import ssl\n", 1, "ssl", "network"),
]


@pytest.mark.parametrize(
    ("code", "line", "found", "why"), PROCESSES, ids=[f"{c[2]}-{c[1]}" for c in PROCESSES]
)
def test_processes_signals_and_network_are_rejected(
    code: str, line: int, found: str, why: str
) -> None:
    assert_rejected(code, line, found, why)


def test_ptrace_through_ctypes_is_rejected_and_ctypes_flagged() -> None:
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.ptrace(16, 1, 0, 0)\n"
        "write = getattr(libc, 'process_vm_writev')\n"
        "libc.system(b'id')\n"
    )
    result = assert_rejected(code, 3, "ptrace", "tracing or writing into other processes")
    assert _names(result.rejections, 4, "process_vm_writev")
    assert _names(result.rejections, 5, "system", "starting programs")
    assert _names(result.flags, 1, "imports ctypes")


PROC = [
    ("pid = 1\nopen(f'/proc/{pid}/environ').read()\n", 2, "/proc/{...}/environ"),
    ("text = open('/proc/1/cmdline').read()\n", 1, "/proc/1/cmdline"),
    ("import os\npath = os.path.join('/proc', str(pid), 'mem')\n", 2, "/proc"),
    ("path = '/proc/' + str(pid) + '/environ'\n", 1, "/proc/{...}/environ"),
    ("path = b'/proc/1/mem'\n", 1, "/proc/1/mem"),
]


@pytest.mark.parametrize(("code", "line", "found"), PROC, ids=_ids(PROC))
def test_other_processes_proc_entries_are_rejected(code: str, line: int, found: str) -> None:
    assert_rejected(code, line, found, "/proc entries")


def test_own_and_system_wide_proc_entries_are_not_rejected() -> None:
    result = screen("a = open('/proc/self/status')\nb = open('/proc/cpuinfo')\n")
    assert result.rejections == []
    assert _names(result.flags, 1, "/proc/self/status")


CUDA_HEADER = 'from torch.utils.cpp_extension import load_inline\nSRC = r"""\n'

INCLUDES = [
    (CUDA_HEADER + '#include "/etc/shadow"\n"""\n', 3, "'/etc/shadow'"),
    (CUDA_HEADER + '#include <torch/extension.h>\n#include <../../secret.h>\n"""\n', 4, ".."),
    (CUDA_HEADER + '  #  include "~/.ssh/id_rsa"\n"""\n', 3, "id_rsa"),
    ("flags = ['-O3', '-include/etc/passwd']\n", 1, "/etc/passwd"),
    ("SRC = '#include \"' + '/etc/hostname' + '\"'\n", 1, "/etc/hostname"),
]


@pytest.mark.parametrize(("code", "line", "found"), INCLUDES, ids=_ids(INCLUDES))
def test_including_host_files_is_rejected(code: str, line: int, found: str) -> None:
    assert_rejected(code, line, found, "not files from the host")


C_SOURCES = [
    ('system("curl x");', "system(", "starting programs"),
    ("kill(getppid(), 9);", "kill(", "signalling"),
    ("ptrace(PTRACE_ATTACH, 1, 0, 0);", "ptrace(", "tracing"),
    ("int s = socket(AF_INET, SOCK_STREAM, 0);", "socket(", "network"),
    ('asm(".incbin \\"/etc/shadow\\"");', ".incbin", "not files from the host"),
]


@pytest.mark.parametrize(("statement", "found", "why"), C_SOURCES, ids=[c[1] for c in C_SOURCES])
def test_c_sources_that_do_what_python_may_not_are_rejected(
    statement: str, found: str, why: str
) -> None:
    code = CUDA_HEADER + "#include <torch/extension.h>\nvoid f() {\n    " + statement + '\n}\n"""\n'
    assert_rejected(code, 5, found, why)


def test_overriding_aten_operators_is_rejected() -> None:
    code = "import torch\nlib = torch.library.Library('aten', 'IMPL')\n"
    assert_rejected(code, 2, "'aten'", "overriding PyTorch's own operators")
    assert screen("import torch\nlib = torch.library.Library('mylib', 'DEF')\n").rejections == []


# -- flags -------------------------------------------------------------------------------

FLAGS = [
    ("import torch\ns = torch.cuda.Stream()\n", 2, "torch.cuda.Stream", "another stream"),
    ("import torch\nwith torch.cuda.stream(s):\n    pass\n", 2, "torch.cuda.stream", "stream"),
    ("from torch.cuda import Stream as S\n", 1, "torch.cuda.Stream", "another stream"),
    (CUDA_HEADER + 'cudaStreamCreate(&s);\n"""\n', 3, "cudaStreamCreate", "another stream"),
    ("import threading\n", 1, "threading", "background work"),
    ("import multiprocessing\n", 1, "multiprocessing", "background work"),
    ("from concurrent.futures import ThreadPoolExecutor\n", 1, "concurrent.futures", "background"),
    ("import ctypes\n", 1, "ctypes", "native calls"),
    ("import cffi\n", 1, "cffi", "native calls"),
    ("exec(source)\n", 1, "exec", "run time"),
    ("value = eval(text)\n", 1, "eval", "run time"),
    ("code = compile(text, 'k', 'exec')\n", 1, "compile", "run time"),
    ("m = __import__(name)\n", 1, "__import__", "run time"),
    ("import importlib\n", 1, "importlib", "run time"),
    (
        "CACHE = {}\ndef custom_kernel(x):\n    return CACHE[x.data_ptr()]\n",
        3,
        ".data_ptr()",
        "replay",
    ),
    ("CACHE = {}\ndef custom_kernel(x):\n    return CACHE[id(x)]\n", 3, "id", "replay"),
    (
        "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n",
        2,
        "torch.backends.cuda.matmul.allow_tf32",
        "precision",
    ),
    ("import torch\ntorch.set_float32_matmul_precision('high')\n", 2, "precision", "tolerance"),
    ("text = open('answers.txt').read()\n", 1, "open", "files"),
    ("import os\nsecret = os.environ['KJ_SECRET']\n", 2, "os.environ", "secrets"),
    ("import os\nsecret = os.getenv('KJ_SECRET')\n", 2, "os.getenv", "secrets"),
    ("import atexit\n", 1, "atexit", "at exit"),
    (
        "import torch\ntorch.cuda.set_per_process_memory_fraction(0.1)\n",
        2,
        "set_per_process_memory_fraction",
        "GPU memory",
    ),
    ("import triton.language as tl\nf = getattr(tl, name)\n", 2, "getattr on triton.language", ""),
    ("import gc\nf = getattr(gc, 'get_' + suffix)\n", 2, "getattr on gc with a computed name", ""),
    ("import operator\nsetattr(operator, name, f)\n", 2, "setattr on operator", ""),
    (CUDA_HEADER + '#include SECRET_HEADER\n"""\n', 3, "SECRET_HEADER", "macro"),
    ("import sys\nsys.exit(0)\n", 2, "sys.exit", "ending the process"),
]


@pytest.mark.parametrize(("code", "line", "found", "why"), FLAGS, ids=[f[2] for f in FLAGS])
def test_patterns_that_can_be_legitimate_are_flagged(
    code: str, line: int, found: str, why: str
) -> None:
    assert_flagged(code, line, found, why)


NOT_FLAGGED = [
    "import time\nstart = time.perf_counter()\n",
    "import torch\ntorch.cuda.synchronize()\n",
    "import torch\ne = torch.cuda.Event(enable_timing=True)\ns = torch.cuda.current_stream()\n",
    "import torch\nk = torch.compile(f)\n",
    "import re\npattern = re.compile('x')\n",
    "def compile(x):\n    return x\n\ny = compile(1)\n",
    "import torch\ntorch.backends.cudnn.benchmark = True\n",
    "import torch\ntorch.backends.cuda.matmul.allow_tf32 = False\n",
    "import torch\ntorch.set_float32_matmul_precision('highest')\n",
    "import torch\ntorch._dynamo.config.cache_size_limit = 64\n",
    "import torch\nout = torch.empty(4)\nout.requires_grad = False\n",
    "import os\npath = os.path.join('a', 'b')\n",
    '"""Reads /proc/1/environ and calls gc.get_objects(), says the docstring."""\n',
    'SRC = "#include <cuda_fp16.h>\\n__global__ void k() { __threadfence_system(); }"\n',
]


@pytest.mark.parametrize("code", NOT_FLAGGED)
def test_ordinary_code_is_neither_rejected_nor_flagged(code: str) -> None:
    assert screen(code) == Screening(rejections=[], flags=[])


# -- the contract --------------------------------------------------------------------------


def test_a_syntax_error_screens_clean() -> None:
    assert screen("def custom_kernel(data):\n    return data[\n") == Screening([], [])


def test_a_screening_is_frozen_and_sorted_by_line() -> None:
    result = screen("import socket\nimport os\nos.system('x')\nimport subprocess\n")
    lines = [int(message.split(":")[0].removeprefix("line ")) for message in result.rejections]
    assert lines == sorted(lines) == [1, 3, 4]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.flags = []  # type: ignore[misc]


def test_each_message_says_line_thing_and_why() -> None:
    [message] = screen("import torch\n\ntorch.allclose = f\n").rejections
    assert message == (
        "line 3: assigns torch.allclose: patching torch, time, builtins or other library "
        "modules cannot be part of a kernel"
    )


def test_a_flag_is_not_repeated_for_every_use() -> None:
    code = "CACHE = {}\ndef f(x):\n    return CACHE[x.data_ptr()] + CACHE[x.data_ptr()]\n"
    code += "def g(x):\n    return x.data_ptr()\n"
    assert len(screen(code).flags) == 1


def test_there_are_solutions_to_screen() -> None:
    assert len(SOLUTIONS) >= 8 and len(PLAIN) >= 8


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_no_example_solution_is_rejected(path: Path) -> None:
    assert screen(path.read_text()).rejections == []


@pytest.mark.parametrize("path", PLAIN, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_plain_pytorch_and_triton_solutions_are_not_flagged(path: Path) -> None:
    assert screen(path.read_text()).flags == []
