"""Loading problems in the GPU MODE reference-kernels layout (folder with task.yml).

Extra task.yml keys of our own, all optional:
  roofline: {bytes: "3*size*size*2", flops: "size*size"}  arithmetic on case parameters,
      used for the speed-of-light fraction;
  gpus: [h200, cpu, ...]  device types the problem may be graded on;
  tolerance: {rtol: ..., atol: ...}  informational (the problem's check_implementation decides)
      and used for our own first-mismatch listing;
  case_time_budget_s: seconds of timing per benchmark case (default 10);
  load_timeout: seconds for the submission's import, compilation included (default 120);
  test_cases_timeout: seconds for the test cases once the submission has loaded (default:
      derived at validation from the reference's own time, derived_test_cases_timeout): a
      hung kernel in test mode holds a worker this long, not the whole test_timeout;
  cpu_benchmarks: benchmark cases for CPU workers, where the GPU-sized ones would take
      minutes (default: the benchmarks);
  format: kernelbench  for problems made from a KernelBench module (grader/kernelbench.py),
      whose submissions define ModelNew instead of custom_kernel;
  requires: {packages, devices, compute_capability}  what the problem needs of a worker
      (grader/requirements.py);
  difficulty: easy, medium or hard  how hard the organizers rate it (the problem list
      orders by it).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader import kernelbench, requirements
from grader.precision import Precision
from grader.report import Mode
from grader.requirements import Requirements

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILTIN_DIR = REPO_ROOT / "problems"
DEFAULT_LOAD_TIMEOUT_S = 120.0
# Test mode's short limit where task.yml sets no test_cases_timeout: TEST_CASES_MULTIPLE
# times the reference's own test cases, as validation grades it in test mode on the device
# type, at least TEST_CASES_FLOOR_S, at most the problem's test_timeout
# (derived_test_cases_timeout). The floor is the fixed limit every problem had before: a
# hung kernel on a problem whose test cases take seconds (every built-in one) frees its
# worker as fast as it did. The multiple leaves room for a correct submission several times
# slower than the reference (a first try, an unfused kernel, a device shared with other
# gradings), while a hung one still frees its worker long before test_timeout unless the
# reference itself needs that long.
TEST_CASES_FLOOR_S = 20.0
TEST_CASES_MULTIPLE = 10.0
SUBMISSION_MARK = "@SUBMISSION@"
# A problem folder's example solutions (example_solutions): every .py under it, at most this
# many, each at most this large.
SOLUTIONS_DIR = "solutions"
MAX_SOLUTIONS = 50
MAX_SOLUTION_BYTES = 1_000_000
# GPU MODE's own harness: we use ours, so it is neither required nor shipped to the runner.
SKIPPED_FILES = frozenset({"eval.py"})
MAX_EVALUATOR_CHARS = 1_000_000  # read only to say why a problem depending on it is refused
TASK_FILE = "task.yml"
# task.yml's `difficulty`, easiest first.
DIFFICULTIES = ("easy", "medium", "hard")
# The most ranks a case of a problem that spans several ranks may name (its `world_size`).
MAX_RANKS = 8


class ProblemError(Exception):
    """A problem that cannot be loaded; the message says what is wrong and where."""


@dataclass(frozen=True)
class Problem:
    name: str
    files: dict[str, str]
    spec: dict[str, Any]
    # Test mode's short limit that validation derived for the device type it is graded on
    # (the server keeps it with the problem's version); task.yml's test_cases_timeout wins.
    validated_test_cases_timeout: float | None = None

    @property
    def description(self) -> str:
        return str(self.spec.get("description") or "")

    @property
    def lang(self) -> str:
        return str(self.spec.get("lang", "py"))

    @property
    def tests(self) -> list[dict[str, Any]]:
        return [dict(case) for case in self.spec.get("tests") or []]

    @property
    def benchmarks(self) -> list[dict[str, Any]]:
        return [dict(case) for case in self.spec.get("benchmarks") or []]

    def benchmarks_for(self, kind: str) -> list[dict[str, Any]]:
        """The benchmark cases graded on a device of this kind ("cpu" or "cuda")."""
        if kind == "cpu" and self.spec.get("cpu_benchmarks"):
            return [dict(case) for case in self.spec["cpu_benchmarks"]]
        return self.benchmarks

    def write_trusted(self, root: Path) -> Path:
        """The problem's files but the submission, in `root`/trusted: what the harness's own
        side (its reference, inputs and checks) imports, never the runner."""
        trusted = root / "trusted"
        trusted.mkdir()
        for name, text in self.files.items():
            if name != "submission.py":
                (trusted / name).write_text(text)
        return trusted

    @property
    def multi_gpu(self) -> bool:
        """GPU MODE's `multi_gpu: true`: every case names its `world_size`, and the problem
        is graded by grader/rankharness.py with one process per rank."""
        return bool(self.spec.get("multi_gpu", False))

    def gpus_for(self, kind: str) -> int:
        """The GPUs one grading of it holds on a device of this kind ("cpu" or "cuda"): on a
        GPU, a problem whose cases span ranks holds one per rank of its largest world size
        over its test and benchmark cases (a grading holds as many rank processes as that,
        and ranks past a case's world size sit it out: grader/rankharness.py); 1 otherwise,
        and on the CPU, whose ranks are processes on its cores. A world size that is not
        one (the grading ends in `error` over it) counts as none."""
        if kind != "cuda" or not self.multi_gpu:
            return 1
        sizes = [case.get("world_size") for case in self.tests + self.benchmarks_for(kind)]
        return max(
            (
                size
                for size in sizes
                if isinstance(size, int) and not isinstance(size, bool) and 1 <= size <= MAX_RANKS
            ),
            default=1,
        )

    @property
    def test_timeout(self) -> float:
        return float(self.spec.get("test_timeout", 180))

    @property
    def benchmark_timeout(self) -> float:
        return float(self.spec.get("benchmark_timeout", 180))

    @property
    def ranked_timeout(self) -> float:
        return float(self.spec.get("ranked_timeout", 300))

    @property
    def load_timeout(self) -> float:
        return float(self.spec.get("load_timeout", DEFAULT_LOAD_TIMEOUT_S))

    @property
    def declared_test_cases_timeout(self) -> float | None:
        """task.yml's test_cases_timeout, where the organizer set one."""
        declared = self.spec.get("test_cases_timeout")
        return None if declared is None else float(declared)

    @property
    def test_cases_timeout(self) -> float:
        """Seconds test mode's cases may take once the submission has loaded: task.yml's
        test_cases_timeout, else the limit validation derived on this device type, else
        the floor (a problem never validated here: the built-in ones)."""
        declared = self.declared_test_cases_timeout
        if declared is not None:
            return declared
        if self.validated_test_cases_timeout is not None:
            return self.validated_test_cases_timeout
        return TEST_CASES_FLOOR_S

    def timeout_for(self, mode: str, precision: Precision = Precision.STANDARD) -> float:
        """Wall-clock limit of a whole grading in this mode, compilation included; in the
        timed modes, longer by what a precision's longer case budgets take."""
        limits: dict[str, float] = {
            Mode.TEST: self.test_timeout,
            Mode.BENCHMARK: self.benchmark_timeout,
            Mode.LEADERBOARD: self.ranked_timeout,
            Mode.PROFILE: self.benchmark_timeout,
        }
        if mode not in (Mode.BENCHMARK, Mode.LEADERBOARD):
            return limits[mode]
        cases = max(len(self.benchmarks), len(self.benchmarks_for("cpu")))
        return limits[mode] + precision.extra_time_s(self.case_time_budget_s, cases)

    @property
    def ranking_by(self) -> str:
        return str(self.spec.get("ranking_by", "geom"))

    @property
    def gpus(self) -> list[str]:
        return [str(g) for g in self.spec.get("gpus") or []]

    @property
    def tolerance(self) -> dict[str, float]:
        return {k: float(v) for k, v in (self.spec.get("tolerance") or {}).items()}

    @property
    def case_time_budget_s(self) -> float:
        return float(self.spec.get("case_time_budget_s", 10.0))

    @property
    def format(self) -> str:
        """'gpumode' (reference.py with custom_kernel submissions) or 'kernelbench'."""
        return str(self.spec.get("format", "gpumode"))

    @property
    def kernelbench_init_seed(self) -> int:
        return int((self.spec.get("kernelbench") or {}).get("init_seed", kernelbench.INIT_SEED))

    @property
    def requirements(self) -> Requirements:
        """What the problem declares it needs of a worker (task.yml's `requires`)."""
        try:
            return requirements.parse(self.spec)
        except requirements.RequirementsError as exc:
            raise ProblemError(f"problem {self.name!r}: {exc}") from exc

    @property
    def difficulty(self) -> str | None:
        """task.yml's `difficulty` (one of DIFFICULTIES), where the organizer set one."""
        declared = self.spec.get("difficulty")
        return None if declared is None else str(declared).lower()

    @property
    def submission_template(self) -> str:
        return self.files.get("submission.py", "")

    @property
    def declares_roofline(self) -> bool:
        return isinstance(self.spec.get("roofline"), dict)

    def roofline(self, case: dict[str, Any]) -> dict[str, float] | None:
        """Bytes moved and flops of one case, from the `roofline` expressions."""
        exprs = self.spec.get("roofline")
        if not isinstance(exprs, dict):
            return None
        return {str(k): eval_arithmetic(str(v), case) for k, v in exprs.items()}


def derived_test_cases_timeout(reference_cases_s: float, test_timeout: float) -> float:
    """Test mode's short limit from the seconds the reference's own test cases took, graded
    in test mode on the device type (whole seconds)."""
    derived = math.ceil(TEST_CASES_MULTIPLE * reference_cases_s)
    return min(test_timeout, max(TEST_CASES_FLOOR_S, float(derived)))


def load_problem(ref: str | Path) -> Problem:
    """`ref` is a problem folder, a KernelBench module (a .py file, or a folder holding one
    and no task.yml), or the name of a built-in problem under <repo>/problems/."""
    path = Path(ref)
    kernelbench_module = _kernelbench_module(path)
    if kernelbench_module is not None:
        name = path.stem if path.is_file() else path.resolve().name
        return problem_from_files(name, kernelbench.problem_files(kernelbench_module))
    if not (path / TASK_FILE).is_file():
        builtin = BUILTIN_DIR / str(ref)
        if isinstance(ref, str) and "/" not in ref and (builtin / TASK_FILE).is_file():
            path = builtin
        elif path.is_dir():
            raise ProblemError(f"{path}: no {TASK_FILE} in this folder")
        else:
            raise ProblemError(f"{ref}: neither a problem folder nor a built-in problem")
    return _load_folder(path.resolve())


def _kernelbench_module(path: Path) -> str | None:
    """The text of the KernelBench module `path` is or holds, if it is one."""
    if path.is_file() and path.suffix == ".py":
        text = path.read_text(errors="replace")
        if not kernelbench.is_kernelbench_module(text):
            raise ProblemError(
                f"{path}: not a KernelBench module (it needs Model, get_inputs and "
                "get_init_inputs at top level)"
            )
        return text
    if path.is_dir() and not (path / TASK_FILE).is_file():
        modules = kernelbench.find_modules(path)
        return modules[0].read_text() if len(modules) == 1 else None
    return None


def _load_folder(folder: Path) -> Problem:
    task_path = folder / TASK_FILE
    try:
        spec = yaml.safe_load(task_path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ProblemError(f"{task_path}: cannot read: {exc}") from exc
    if not isinstance(spec, dict):
        raise ProblemError(f"{task_path}: expected a mapping at the top level")
    files: dict[str, str] = {TASK_FILE: task_path.read_text()}
    entries = spec.get("files")
    if not isinstance(entries, list):
        raise ProblemError(f"{task_path}: 'files' must be a list of {{name, source}}")
    skipped: dict[str, Path] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry or "source" not in entry:
            raise ProblemError(f"{task_path}: bad files entry {entry!r}")
        name, source = str(entry["name"]), str(entry["source"])
        if name in SKIPPED_FILES:
            skipped[name] = (folder / source).resolve()
            continue
        if source == SUBMISSION_MARK:
            template = folder / name
            if template.is_file():
                files[name] = template.read_text()
            continue
        source_path = (folder / source).resolve()
        if not source_path.is_file():
            raise ProblemError(f"{task_path}: file {name!r} refers to missing {source_path}")
        files[name] = source_path.read_text()
    if "reference.py" not in files:
        raise ProblemError(f"{task_path}: the files list has no reference.py")
    refusal = _own_evaluator(folder, spec, skipped, files["reference.py"])
    if refusal:
        raise ProblemError(f"{task_path}: {refusal}")
    return problem_from_files(folder.name, files)


def _own_evaluator(folder: Path, spec: dict[str, Any], skipped: dict[str, Path], ref: str) -> str:
    """Why the problem is refused if it depends on its own evaluator (the file task.yml's
    config.main names, or its eval.py entry), else ''. KernelJudge never runs it."""
    config = spec.get("config")
    main = config.get("main") if isinstance(config, dict) else None
    name = str(main) if isinstance(main, str) and main else "eval.py"
    path = skipped.get(name) or (folder / name).resolve()
    if not path.is_file():
        return ""
    with path.open(errors="replace") as evaluator:
        text = evaluator.read(MAX_EVALUATOR_CHARS)
    return requirements.own_evaluator_refusal(name, text, ref)


def problem_from_files(name: str, files: dict[str, str]) -> Problem:
    """Rebuild a problem from its resolved files (how a worker receives it, as JSON)."""
    if TASK_FILE not in files:
        raise ProblemError(f"problem {name!r}: no {TASK_FILE} among its files")
    try:
        spec = yaml.safe_load(files[TASK_FILE])
    except yaml.YAMLError as exc:
        raise ProblemError(f"problem {name!r}: {TASK_FILE} is not valid YAML: {exc}") from exc
    if not isinstance(spec, dict):
        raise ProblemError(f"problem {name!r}: {TASK_FILE} must be a mapping")
    if "reference.py" not in files:
        raise ProblemError(f"problem {name!r}: no reference.py among its files")
    for key in ("tests", "benchmarks", "cpu_benchmarks"):
        cases = spec.get(key) or []
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise ProblemError(f"problem {name!r}: {key!r} must be a list of mappings")
    try:
        requirements.parse(spec)
    except requirements.RequirementsError as exc:
        raise ProblemError(f"problem {name!r}: {exc}") from exc
    problem = Problem(name=name, files=dict(files), spec=spec)
    if problem.difficulty is not None and problem.difficulty not in DIFFICULTIES:
        raise ProblemError(
            f"problem {name!r}: difficulty {spec['difficulty']!r} is none of "
            f"{', '.join(DIFFICULTIES)}"
        )
    return problem


def builtin_problems() -> list[Problem]:
    """Every folder under <repo>/problems/ that has a task.yml."""
    if not BUILTIN_DIR.is_dir():
        return []
    return [
        _load_folder(child.resolve())
        for child in sorted(BUILTIN_DIR.iterdir())
        if (child / TASK_FILE).is_file()
    ]


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def eval_arithmetic(expr: str, names: dict[str, Any]) -> float:
    """Evaluate `expr` allowing only numbers, case parameter names and + - * / // % **;
    problem files are semi-trusted, and the server evaluates these too."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ProblemError(f"roofline expression {expr!r}: {exc.msg}") from exc

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            value = names.get(node.id)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ProblemError(f"roofline expression {expr!r}: unknown number {node.id!r}")
            return float(value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            if isinstance(node.op, ast.Pow):
                exponent = walk(node.right)
                if abs(exponent) > 16:
                    raise ProblemError(f"roofline expression {expr!r}: exponent too large")
                return float(_BINARY[ast.Pow](walk(node.left), exponent))
            return float(_BINARY[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return float(_UNARY[type(node.op)](walk(node.operand)))
        raise ProblemError(f"roofline expression {expr!r}: only arithmetic is allowed")

    return walk(tree)


def example_solutions(folder: Path) -> dict[str, str]:
    """The example solutions shipped with a problem folder: every .py file under
    ``solutions/`` (GPU MODE's ``solutions/correct`` and ``solutions/wrong`` included), by
    path relative to the folder."""
    root = folder / SOLUTIONS_DIR
    if not root.is_dir():
        return {}
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if not path.is_file() or path.stat().st_size > MAX_SOLUTION_BYTES:
            continue
        found[path.relative_to(folder).as_posix()] = path.read_text(errors="replace")
        if len(found) >= MAX_SOLUTIONS:
            break
    return found
