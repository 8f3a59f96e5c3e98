"""Static screening of submission source by its AST, before it runs: what cannot be part of a
kernel is a rejection, what can be but deserves a look (streams, threads, ctypes) is a flag.
A second layer only, never the only defence: code built from computed strings escapes it."""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

# Why each finding matters: the part of a message after "line N: <what found>: ".
INTROSPECTION = (
    "searching the interpreter for other objects (the grader's, the expected output) "
    "cannot be part of a kernel"
)
PATCHING = "patching torch, time, builtins or other library modules cannot be part of a kernel"
HARNESS = "the grader's own modules and the problem's reference are out of a submission's reach"
SIGNALS = "signalling other processes cannot be part of a kernel"
TRACING = "tracing or writing into other processes cannot be part of a kernel"
PROC = "another process's /proc entries hold its environment, memory and arguments"
NETWORK = "a kernel has no use for the network"
PROCESSES = "starting programs or processes cannot be part of a kernel"
HOST_FILES = "a kernel's sources may include headers, not files from the host"
OVERRIDE = "overriding PyTorch's own operators cannot be part of a kernel"

STREAMS = "work on another stream or a replayed graph can finish after the timer stops"
THREADS = "background work can finish after the timer stops"
NATIVE = "native calls act where this screening cannot see"
DYNAMIC = "code built or imported at run time escapes this screening"
IDENTITY = "a cache keyed on a tensor's address or identity can replay results"
RESULT_CACHE = "a cache keyed on the arguments can replay results instead of computing them"
PRECISION = "lower-precision math can hide behind the tolerance"
FILES = "files can hold planted results or carry data between gradings"
ENVIRON = "the environment can hold secrets"
OUT_OF_BAND = "code run at exit or on a signal runs outside the timed, checked calls"
EXITING = "ending the process or unwinding past the runner's error handling"
MEMORY = "it limits GPU memory for the whole process, the runner's part included"
COMPUTED_NAME = "an attribute named at run time cannot be screened"
INTERCEPT = "intercepting PyTorch operations changes what all other code computes"
REACH = "it can reach objects and classes outside the submission"
GPU_SETTINGS = "GPU management calls can change clocks and other settings"
INCLUDE_FLAGS = "compiler flags can pull host files into the build"
MACRO_INCLUDE = "a header named by a macro cannot be checked here"

# Each reason's stable code, for programs that read a report's flags (grader/verdicts.py):
# a flag's text may be reworded, its code is not.
REASON_CODES = {
    INTROSPECTION: "introspection",
    PATCHING: "patching",
    HARNESS: "harness",
    SIGNALS: "signals",
    TRACING: "tracing",
    PROC: "proc",
    NETWORK: "network",
    PROCESSES: "processes",
    HOST_FILES: "host_files",
    OVERRIDE: "override",
    STREAMS: "streams",
    THREADS: "threads",
    NATIVE: "native",
    DYNAMIC: "dynamic_code",
    IDENTITY: "identity_cache",
    RESULT_CACHE: "result_cache",
    PRECISION: "precision",
    FILES: "files",
    ENVIRON: "environ",
    OUT_OF_BAND: "out_of_band",
    EXITING: "exiting",
    MEMORY: "memory_limit",
    COMPUTED_NAME: "computed_name",
    INTERCEPT: "intercept",
    REACH: "reach",
    GPU_SETTINGS: "gpu_settings",
    INCLUDE_FLAGS: "include_flags",
    MACRO_INCLUDE: "macro_include",
}

# Modules whose attributes a submission may not assign; config namespaces are exempt.
PATCH_ROOTS = frozenset(
    {"torch", "triton", "time", "builtins", "os", "sys", "io", "gc", "math", "statistics",
     "select", "fcntl", "pickle", "importlib", "traceback", "numpy"}
)  # fmt: skip
CONFIG_PREFIXES = (
    "torch.backends.",
    "torch._dynamo.config.",
    "torch._inductor.config.",
    "torch._functorch.config.",
    "triton.knobs.",
)
PRECISION_KNOB = re.compile(r"tf32|reduced_precision|fp32_precision")

# Dotted names (fnmatch patterns) that are rejected or flagged wherever they are used.
REJECTED_NAMES: dict[str, str] = {
    "gc.get_objects": INTROSPECTION,
    "gc.get_referrers": INTROSPECTION,
    "gc.get_referents": INTROSPECTION,
    "gc.garbage": INTROSPECTION,
    "sys._getframe": INTROSPECTION,
    "sys._getframemodulename": INTROSPECTION,
    "sys._current_frames": INTROSPECTION,
    "sys.settrace": INTROSPECTION,
    "sys.setprofile": INTROSPECTION,
    "sys.monitoring": INTROSPECTION,
    "sys.monitoring.*": INTROSPECTION,
    "threading.settrace*": INTROSPECTION,
    "threading.setprofile*": INTROSPECTION,
    "inspect.currentframe": INTROSPECTION,
    "inspect.stack": INTROSPECTION,
    "inspect.trace": INTROSPECTION,
    "inspect.getouterframes": INTROSPECTION,
    "inspect.getinnerframes": INTROSPECTION,
    "traceback.walk_stack": INTROSPECTION,
    "traceback.walk_tb": INTROSPECTION,
    "sys.modules": HARNESS,
    "os.kill": SIGNALS,
    "os.killpg": SIGNALS,
    "signal.pthread_kill": SIGNALS,
    "os.system": PROCESSES,
    "os.popen": PROCESSES,
    "os.exec*": PROCESSES,
    "os.spawn*": PROCESSES,
    "os.posix_spawn*": PROCESSES,
    "os.fork": PROCESSES,
    "os.forkpty": PROCESSES,
    "asyncio.create_subprocess_*": PROCESSES,
}
REJECTED_MODULES: dict[str, str] = {
    "grader": HARNESS,
    "__main__": HARNESS,  # the runner runs as __main__
    "reference": HARNESS,
    "sandbox": HARNESS,
    "server": HARNESS,
    **dict.fromkeys(
        ["socket", "_socket", "socketserver", "ssl", "_ssl", "urllib", "urllib3", "http",
         "requests", "httpx", "aiohttp", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib",
         "nntplib", "xmlrpc", "websocket", "websockets", "paramiko", "zmq", "grpc"],
        NETWORK,
    ),
    **dict.fromkeys(["subprocess", "_posixsubprocess", "pty", "pexpect"], PROCESSES),
}  # fmt: skip
FLAGGED_NAMES: dict[str, str] = {
    "torch.cuda.Stream": STREAMS,
    "torch.cuda.stream": STREAMS,
    "torch.cuda.streams": STREAMS,
    "torch.cuda.ExternalStream": STREAMS,
    "torch.cuda.set_stream": STREAMS,
    "torch.Stream": STREAMS,
    "torch.cuda.graph": STREAMS,
    "torch.cuda.graphs": STREAMS,
    "torch.cuda.CUDAGraph": STREAMS,
    "torch.cuda.make_graphed_callables": STREAMS,
    "builtins.exec": DYNAMIC,
    "builtins.eval": DYNAMIC,
    "builtins.compile": DYNAMIC,
    "builtins.__import__": DYNAMIC,
    "builtins.id": IDENTITY,
    "functools.cache": RESULT_CACHE,
    "functools.lru_cache": RESULT_CACHE,
    "builtins.open": FILES,
    "io.open": FILES,
    "io.FileIO": FILES,
    "os.open": FILES,
    "os.fdopen": FILES,
    "os.read": FILES,
    "os.write": FILES,
    "os.listdir": FILES,
    "os.scandir": FILES,
    "os.walk": FILES,
    "glob.*": FILES,
    "shutil.*": FILES,
    "torch.load": FILES,
    "torch.save": FILES,
    "numpy.load": FILES,
    "numpy.fromfile": FILES,
    "os.environ": ENVIRON,
    "os.environb": ENVIRON,
    "os.getenv*": ENVIRON,
    "os.putenv": ENVIRON,
    "os.unsetenv": ENVIRON,
    "sys.exit": EXITING,
    "os._exit": EXITING,
    "os.abort": EXITING,
    "builtins.exit": EXITING,
    "builtins.quit": EXITING,
    "torch.cuda.set_per_process_memory_fraction": MEMORY,
    "torch.cuda.cudart": NATIVE,
    "torch.ops.load_library": NATIVE,
    "torch.overrides.TorchFunctionMode": INTERCEPT,
    "torch.utils._python_dispatch.TorchDispatchMode": INTERCEPT,
}
FLAGGED_MODULES: dict[str, str] = {
    **dict.fromkeys(
        ["threading", "_thread", "multiprocessing", "torch.multiprocessing",
         "concurrent.futures", "asyncio"],
        THREADS,
    ),
    **dict.fromkeys(["ctypes", "_ctypes", "cffi"], NATIVE),
    **dict.fromkeys(["importlib", "runpy", "marshal"], DYNAMIC),
    "atexit": OUT_OF_BAND,
    "signal": OUT_OF_BAND,
    "pynvml": GPU_SETTINGS,
}  # fmt: skip
# Attribute names rejected or flagged on any object.
FRAME_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "f_builtins", "tb_frame"})
REACHING_ATTRS = frozenset({"__globals__", "__subclasses__"})
FILE_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes"})
TRACING_CALLS = frozenset({"ptrace", "process_vm_writev", "process_vm_readv"})
# Library functions reached through a ctypes or cffi handle (libc.system and the like).
NATIVE_CALLS: dict[str, str] = {
    **dict.fromkeys(TRACING_CALLS, TRACING),
    **dict.fromkeys(
        ["system", "popen", "fork", "vfork", "execv", "execve", "execvp", "execl", "execlp",
         "posix_spawn", "posix_spawnp"],
        PROCESSES,
    ),
    **dict.fromkeys(["kill", "killpg", "tgkill", "tkill"], SIGNALS),
    **dict.fromkeys(["socket", "connect"], NETWORK),
}  # fmt: skip
# A string equal to one of these names is how getattr and friends reach them.
NAMED_IN_STRINGS: dict[str, str] = {
    **dict.fromkeys(
        ["get_objects", "get_referrers", "get_referents", "_getframe", "_current_frames",
         "currentframe", "getouterframes", "getinnerframes", *FRAME_ATTRS],
        INTROSPECTION,
    ),
    **dict.fromkeys(TRACING_CALLS, TRACING),
}  # fmt: skip
SETATTR_FUNCS = frozenset(
    {"builtins.setattr", "builtins.delattr", "builtins.object.__setattr__",
     "builtins.object.__delattr__", "builtins.type.__setattr__", "builtins.type.__delattr__"}
)  # fmt: skip
ATTRIBUTE_FUNCS = frozenset({"builtins.getattr", "builtins.setattr", "builtins.delattr"})
IMPORT_FUNCS = frozenset({"builtins.__import__", "importlib.import_module", "importlib.__import__"})
NAMESPACE_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})
LIBRARY_FUNCS = frozenset(
    {"torch.library.Library", "torch.library.impl", "torch.library.register_kernel",
     "torch.library.register_autograd", "torch.library.register_fake"}
)  # fmt: skip
EXITING_EXCEPTIONS = frozenset(
    {"builtins.SystemExit", "builtins.KeyboardInterrupt", "builtins.BaseException",
     "builtins.GeneratorExit"}
)  # fmt: skip
NATIVE_MODULES = frozenset({"ctypes", "_ctypes", "cffi"})
# C-level modules that are their public module under another name.
MODULE_SYNONYMS = {"posix": "os", "nt": "os", "_signal": "signal", "_io": "io"}

INCLUDE = re.compile(r"^[ \t]*#[ \t]*(?:include|include_next|import|embed)\b[ \t]*(.*)$", re.M)
INCLUDE_PATH = re.compile(r"[<\"]([^>\"]*)[>\"]")
COMPILER_INCLUDE_FLAG = re.compile(r"^-(?:I|isystem|iquote|idirafter|include|imacros)\s*(.*)$")
PROC_PATH = re.compile(r"/proc(?![\w.-])(?:/([^/\s\"']*))?")
PROC_SYSTEM_WIDE = frozenset(
    {"cpuinfo", "meminfo", "loadavg", "uptime", "version", "stat", "driver", "sys"}
)
PROC_OWN = frozenset({"self", "thread-self"})
# Patterns in C, C++ and CUDA source (strings that hold code for load_inline).
C_MARKERS = ("#include", "__global__", "__device__", "::", ";", "{")
C_REJECTED: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bptrace\s*\(|<sys/ptrace\.h>|\bprocess_vm_(?:read|write)v\b"), TRACING),
    (
        re.compile(
            r"\b(?:system|popen|fork|vfork|execv|execve|execvp|execvpe|execl|execlp|execle"
            r"|posix_spawnp?)\s*\("
        ),
        PROCESSES,
    ),
    (re.compile(r"\b(?:kill|killpg|tgkill|tkill)\s*\("), SIGNALS),
    (
        re.compile(r"<sys/socket\.h>|<netinet/|<arpa/inet\.h>|<netdb\.h>|\bsocket\s*\("),
        NETWORK,
    ),
    (re.compile(r"\.incbin\b"), HOST_FILES),
]
C_FLAGGED: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"\bcudaStreamCreate\w*|\bgetStreamFromPool\b|\bcudaLaunchHostFunc\b"
            r"|\bcudaStreamAddCallback\b|\bcudaGraphLaunch\b"
        ),
        STREAMS,
    ),
    (re.compile(r"\bstd::(?:thread|jthread|async)\b|\bpthread_create\b"), THREADS),
    (re.compile(r"\bdl(?:open|sym)\s*\("), NATIVE),
    (re.compile(r"\b(?:secure_)?getenv\s*\(|\benviron\b"), ENVIRON),
    (re.compile(r"\bfopen\s*\(|\bstd::[io]?fstream\b|\bopen\s*\("), FILES),
    (re.compile(r"\bnvml[A-Z]\w*"), GPU_SETTINGS),
]
PLACEHOLDER = "\x00"  # stands for the computed parts of an f-string or a concatenation


@dataclass(frozen=True)
class Screening:
    """Messages of the form "line N: what was found: why it matters"."""

    rejections: list[str]
    flags: list[str]


def screen(code: str) -> Screening:
    """Screen the source of submission.py. A syntax error screens clean: the runner
    reports it with its own traceback."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return Screening(rejections=[], flags=[])
    screener = _Screener(tree)
    screener.run()
    return Screening(rejections=_by_line(screener.rejections), flags=_by_line(screener.flags))


def _constant_str(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _line_of(node: ast.AST) -> int:
    line = getattr(node, "lineno", 0)
    return line if isinstance(line, int) else 0


def _related(name: str, other: str) -> bool:
    return name == other or name.startswith(other + ".") or other.startswith(name + ".")


def _by_line(messages: list[str]) -> list[str]:
    return sorted(messages, key=lambda message: int(message.split(":")[0].removeprefix("line ")))


def _normalise(name: str) -> str:
    head, _, rest = name.partition(".")
    head = MODULE_SYNONYMS.get(head, head)
    return f"{head}.{rest}" if rest else head


def _in_module(name: str, modules: dict[str, str]) -> str | None:
    for module, why in modules.items():
        if name == module or name.startswith(module + "."):
            return why
    return None


def _matching(name: str, patterns: dict[str, str]) -> str | None:
    for pattern, why in patterns.items():
        if fnmatchcase(name, pattern):
            return why
    return None


class _Screener:
    """Resolves names to the dotted names they stand for (through imports and simple
    assignments, flow-insensitively), then checks every node against the rules."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.rejections: list[str] = []
        self.flags: list[str] = []
        self._messages: set[str] = set()
        self._flagged: set[tuple[str, str]] = set()
        self._subjects: dict[int, list[str]] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.aliases: dict[str, set[str]] = {}
        self.defined: set[str] = set()
        self.star_modules: list[str] = []
        self.native = False

    # -- collecting what names stand for ------------------------------------------------

    def run(self) -> None:
        self._collect_imports_and_definitions()
        self._collect_assigned_aliases()
        bound = [name for names in self.aliases.values() for name in names]
        self.native = any(
            name.split(".")[0] in NATIVE_MODULES for name in bound + self.star_modules
        )
        for node in ast.walk(self.tree):
            self._check_node(node)
        self._check_strings()

    def _bind(self, name: str, targets: set[str]) -> bool:
        known = self.aliases.setdefault(name, set())
        new = {_normalise(t) for t in targets} - known
        known |= new
        return bool(new)

    def _collect_imports_and_definitions(self) -> None:
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._bind(alias.asname, {alias.name})
                    else:
                        top = alias.name.split(".")[0]
                        self._bind(top, {top})
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    if alias.name == "*":
                        self.star_modules.append(_normalise(node.module))
                    else:
                        self._bind(alias.asname or alias.name, {f"{node.module}.{alias.name}"})
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.defined.add(node.id)
            elif isinstance(node, ast.arg):
                self.defined.add(node.arg)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)
            elif isinstance(node, ast.ExceptHandler):
                self.defined.add(node.name or "")

    def _collect_assigned_aliases(self) -> None:
        """`T = torch`, `f = gc.get_objects`, `(m := torch.cuda)`, until nothing changes."""
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                pairs += [(target, node.value) for target in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs.append((node.target, node.value))
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                if self._is_container(node.iter):
                    pairs.append((node.target, ast.Starred(node.iter)))
            elif isinstance(node, ast.arguments):
                positional = node.posonlyargs + node.args
                defaults = list(
                    zip(
                        positional[len(positional) - len(node.defaults) :],
                        node.defaults,
                        strict=True,
                    )
                )
                defaults += [
                    (a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d
                ]
                pairs += [(ast.Name(arg.arg), default) for arg, default in defaults]
        for _ in range(10):
            if not any([self._bind_target(target, value) for target, value in pairs]):
                break

    def _bind_target(self, target: ast.expr, value: ast.expr) -> bool:
        if isinstance(target, ast.Name):
            found = self.resolve(value)
            return self._bind(target.id, found) if found else False
        if (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
        ):
            return any(
                [self._bind_target(t, v) for t, v in zip(target.elts, value.elts, strict=True)]
            )
        return False

    def resolve(self, node: ast.expr) -> set[str]:
        """The dotted names `node` may stand for: `T.allclose` -> {"torch.allclose"}."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id == "__builtins__":
                return {"builtins"}
            if node.id in self.defined:
                return set()
            found = {f"{module}.{node.id}" for module in self.star_modules}
            if hasattr(builtins, node.id):
                found.add(f"builtins.{node.id}")
            return found
        if isinstance(node, ast.Attribute):
            return {f"{base}.{node.attr}" for base in self.resolve(node.value)}
        if isinstance(node, ast.Call):
            return self._resolve_call(node)
        if isinstance(node, ast.Subscript):
            return self.resolve(node.value) if self._is_container(node.value) else set()
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return set().union(*(self.resolve(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            return set().union(*(self.resolve(v) for v in node.values))
        if isinstance(node, ast.IfExp):
            return self.resolve(node.body) | self.resolve(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.resolve(v) for v in node.values))
        if isinstance(node, ast.Starred | ast.NamedExpr):
            return self.resolve(node.value)
        return set()

    @staticmethod
    def _is_container(node: ast.expr) -> bool:
        """Only literal containers resolve to what they hold: `[torch][0]`, not `x[0]`."""
        return isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict)

    def _resolve_call(self, node: ast.Call) -> set[str]:
        funcs = self.resolve(node.func)
        args = node.args
        if "builtins.getattr" in funcs and len(args) >= 2:
            name = _constant_str(args[1])
            if name is not None:
                return {f"{base}.{name}" for base in self.resolve(args[0])}
        if funcs & IMPORT_FUNCS and args:
            module = _constant_str(args[0])
            if module is not None:
                if "builtins.__import__" in funcs:
                    return {_normalise(module.split(".")[0])}
                return {_normalise(module)}
        if "builtins.vars" in funcs and len(args) == 1:
            return {f"{base}.__dict__" for base in self.resolve(args[0])}
        return set()

    # -- reporting ----------------------------------------------------------------------

    def _report(self, rejected: bool, line: int, what: str, why: str, subject: str) -> None:
        """Each message once; a flag once per file for the same finding; and on one line,
        one message for a dotted name and the names it is part of (`a.b` and `a.b.c`)."""
        message = f"line {line}: {what}: {why}"
        if message in self._messages or (not rejected and (what, why) in self._flagged):
            return
        on_line = self._subjects.setdefault(line, [])
        if subject and any(_related(subject, seen) for seen in on_line):
            return
        self._messages.add(message)
        on_line.append(subject)
        if rejected:
            self.rejections.append(message)
        else:
            self._flagged.add((what, why))
            self.flags.append(message)

    def reject(
        self, node: ast.AST, what: str, why: str, line: int | None = None, subject: str = ""
    ) -> None:
        self._report(True, _line_of(node) if line is None else line, what, why, subject)

    def flag(
        self, node: ast.AST, what: str, why: str, line: int | None = None, subject: str = ""
    ) -> None:
        self._report(False, _line_of(node) if line is None else line, what, why, subject)

    # -- the rules ----------------------------------------------------------------------

    def _check_node(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self._check_name(node, _normalise(alias.name), "imports")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = _normalise(node.module)
            if not self._check_name(node, module, "imports"):
                for alias in node.names:
                    if alias.name != "*":
                        self._check_name(node, f"{module}.{alias.name}", "imports")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            resolved = self.resolve(node)
            for name in sorted(resolved):
                self._check_name(node, name, "uses")
            called = isinstance(self.parents.get(node), ast.Call)
            for name in sorted(resolved & ATTRIBUTE_FUNCS):
                if not (called and getattr(self.parents[node], "func", None) is node):
                    self.flag(
                        node, f"passes {name.removeprefix('builtins.')} around", COMPUTED_NAME
                    )
        elif isinstance(node, ast.Attribute):
            self._check_attribute(node)
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            for name in sorted(self.resolve(node.value)):
                if self._is_protected_namespace(name):
                    self.reject(node, f"assigns {name}[...]", PATCHING)
        elif isinstance(node, ast.Call):
            self._check_call(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name in ("__torch_function__", "__torch_dispatch__"):
                self.flag(node, f"defines {node.name}", INTERCEPT)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            for name in sorted(self.resolve(raised) & EXITING_EXCEPTIONS):
                self.flag(node, f"raises {name.removeprefix('builtins.')}", EXITING)

    def _check_name(self, node: ast.AST, name: str, verb: str) -> bool:
        """Report a use or import of the dotted `name`; True if a rule matched."""
        why = _matching(name, REJECTED_NAMES) or _in_module(name, REJECTED_MODULES)
        if why:
            self.reject(node, f"{verb} {name}", why, subject=name)
            return True
        why = _matching(name, FLAGGED_NAMES) or _in_module(name, FLAGGED_MODULES)
        if why:
            self.flag(node, f"{verb} {name}", why, subject=name)
            return True
        return False

    def _check_attribute(self, node: ast.Attribute) -> None:
        if node.attr in FRAME_ATTRS:
            self.reject(node, f"reads the frame attribute {node.attr}", INTROSPECTION)
        elif node.attr in REACHING_ATTRS:
            self.flag(node, f"uses {node.attr}", REACH)
        elif node.attr in TRACING_CALLS:
            self.reject(node, f"uses {node.attr}", TRACING)
        elif self.native and node.attr in NATIVE_CALLS:
            self.reject(
                node, f"reaches {node.attr} through a native handle", NATIVE_CALLS[node.attr]
            )
        if isinstance(node.ctx, ast.Load):
            for name in sorted(self.resolve(node)):
                self._check_name(node, name, "uses")
            return
        verb = "deletes" if isinstance(node.ctx, ast.Del) else "assigns"
        for base in sorted(self.resolve(node.value)):
            self._check_patch(node, f"{base}.{node.attr}", verb)

    def _check_patch(
        self, node: ast.AST, name: str, verb: str, value: ast.expr | None = None
    ) -> None:
        if name.split(".")[0] not in PATCH_ROOTS:
            return
        if not name.startswith(CONFIG_PREFIXES):
            self.reject(node, f"{verb} {name}", PATCHING, subject=name)
            return
        if value is None:
            parent = self.parents.get(node)
            value = parent.value if isinstance(parent, ast.Assign | ast.AnnAssign) else None
        harmless = isinstance(value, ast.Constant) and value.value in (False, "ieee", "highest")
        if PRECISION_KNOB.search(name.rsplit(".", 1)[-1]) and not harmless:
            self.flag(node, f"sets {name}", PRECISION)

    @staticmethod
    def _is_protected_namespace(name: str) -> bool:
        root = name.split(".")[0]
        return root in PATCH_ROOTS and (name == root or name.endswith(".__dict__"))

    def _check_call(self, node: ast.Call) -> None:
        funcs = self.resolve(node.func)
        args = node.args
        func = node.func
        if funcs & SETATTR_FUNCS and len(args) >= 2:
            self._check_setattr(node, args[0], args[1], args[2] if len(args) > 2 else None)
        elif (
            isinstance(func, ast.Attribute) and func.attr in ("__setattr__", "__delattr__") and args
        ):
            self._check_setattr(node, func.value, args[0], args[1] if len(args) > 1 else None)
        if "builtins.getattr" in funcs and len(args) >= 2:
            if _constant_str(args[1]) is None:
                for base in sorted(self.resolve(args[0]))[:1]:
                    self.flag(node, f"getattr on {base} with a computed name", COMPUTED_NAME)
            for name in sorted(self.resolve(node)):
                self._check_name(node, name, "uses")
        if funcs & IMPORT_FUNCS and args:
            module = _constant_str(args[0])
            if module is not None:
                self._check_name(node, _normalise(module), "imports")
        if isinstance(func, ast.Attribute):
            if func.attr in NAMESPACE_MUTATORS:
                for name in sorted(self.resolve(func.value)):
                    if self._is_protected_namespace(name):
                        self.reject(node, f"changes {name}", PATCHING)
            if func.attr == "data_ptr":
                self.flag(node, "calls .data_ptr()", IDENTITY)
            if func.attr in FILE_METHODS:
                self.flag(node, f"calls .{func.attr}()", FILES)
        highest = bool(args) and _constant_str(args[0]) == "highest"
        if "torch.set_float32_matmul_precision" in funcs and not highest:
            self.flag(node, "calls torch.set_float32_matmul_precision", PRECISION)
        if funcs & LIBRARY_FUNCS and args:
            target = _constant_str(args[0]) or ""
            if target.split("::")[0] in ("aten", "prim", "prims"):
                self.reject(node, f"registers {target!r} with torch.library", OVERRIDE)
        if any(keyword.arg == "extra_include_paths" for keyword in node.keywords):
            self.flag(node, "passes extra_include_paths", INCLUDE_FLAGS)

    def _check_setattr(
        self, node: ast.Call, target: ast.expr, name: ast.expr, value: ast.expr | None
    ) -> None:
        attr = _constant_str(name)
        for base in sorted(self.resolve(target)):
            if attr is not None:
                self._check_patch(node, f"{base}.{attr}", "setattr on", value)
            elif base.split(".")[0] in PATCH_ROOTS:
                self.reject(node, f"setattr on {base} with a computed name", PATCHING)
            else:
                self.flag(node, f"setattr on {base} with a computed name", COMPUTED_NAME)

    # -- strings: C and CUDA sources, paths, names for getattr ---------------------------

    def _fold(self, node: ast.AST) -> tuple[str, bool] | None:
        """The text of a string expression, PLACEHOLDER for its computed parts, and whether
        it holds any literal text; None for what is not a string expression."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            value = node.value
            return (value.decode("latin-1") if isinstance(value, bytes) else value), True
        if isinstance(node, ast.JoinedStr):
            parts = [_constant_str(v) for v in node.values]
            return "".join(PLACEHOLDER if p is None else p for p in parts), True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
            left, right = self._fold(node.left), self._fold(node.right)
            if left is None and right is None:
                return None
            if isinstance(node.op, ast.Mod):
                return left if left is not None else None
            (lt, ll), (rt, rl) = left or (PLACEHOLDER, False), right or (PLACEHOLDER, False)
            return lt + rt, ll or rl
        return None

    def _check_strings(self) -> None:
        for node in ast.walk(self.tree):
            folded = self._fold(node)
            if folded is None or not folded[1]:
                continue
            parent = self.parents.get(node)
            if isinstance(parent, ast.Expr):
                continue  # a docstring or a bare string: never used
            if parent is not None and self._fold(parent) is not None:
                continue  # checked as part of the larger expression
            self._check_text(node, folded[0])

    def _line(self, node: ast.AST, text: str, position: int) -> int:
        start = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", None) or start
        return min(start + text.count("\n", 0, position), end)

    def _check_text(self, node: ast.AST, text: str) -> None:
        shown = text.replace(PLACEHOLDER, "{...}")
        if text.strip() in NAMED_IN_STRINGS:
            self.reject(node, f"names {text.strip()!r}", NAMED_IN_STRINGS[text.strip()])
        for match in INCLUDE.finditer(text):
            self._check_include(node, match.group(1).strip(), self._line(node, text, match.start()))
        flag = COMPILER_INCLUDE_FLAG.match(text)
        if flag:
            path = flag.group(1)
            if self._is_host_path(path) and text.startswith(("-include", "-imacros")):
                self.reject(node, f"includes {path!r} through a compiler flag", HOST_FILES)
            else:
                self.flag(node, f"passes the compiler flag {shown!r}", INCLUDE_FLAGS)
        for match in PROC_PATH.finditer(text):
            entry = match.group(1) or ""
            line = self._line(node, text, match.start())
            if entry in PROC_OWN and "/.." not in text[match.end() :]:
                self.flag(node, f"names {shown!r}", FILES, line)
            elif entry not in PROC_SYSTEM_WIDE:
                self.reject(node, f"names the path {shown!r}", PROC, line)
        if any(marker in text for marker in C_MARKERS):
            for pattern, why in C_REJECTED:
                for match in pattern.finditer(text):
                    line = self._line(node, text, match.start())
                    self.reject(node, f"source code uses {match.group(0)!r}", why, line)
            for pattern, why in C_FLAGGED:
                for match in pattern.finditer(text):
                    line = self._line(node, text, match.start())
                    self.flag(node, f"source code uses {match.group(0)!r}", why, line)

    @staticmethod
    def _is_host_path(path: str) -> bool:
        return path.startswith(("/", "~")) or ".." in re.split(r"[/\\]", path)

    def _check_include(self, node: ast.AST, spec: str, line: int) -> None:
        quoted = INCLUDE_PATH.match(spec)
        if quoted is None:
            self.flag(node, f"includes through the macro {spec!r}", MACRO_INCLUDE, line)
        elif self._is_host_path(quoted.group(1)):
            self.reject(node, f"includes {quoted.group(1)!r}", HOST_FILES, line)
