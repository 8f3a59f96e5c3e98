"""Problems shaped like GPU MODE's reference-kernels ones (written here, small): what an
organizer and a competitor see when a problem fills a buffer of another dtype than its
reference returns, returns torch's named tuples (torch.geqrf), needs a package or device
the worker lacks, or depends on its own evaluator."""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from grader import problem as problem_module
from grader.device import DeviceInfo
from grader.harness import grade
from grader.problem import Problem, ProblemError, example_solutions, load_problem
from grader.requirements import Requirements, device_shortfall
from grader.validate import validate

# GPU MODE's layout: a shared utils.py and eval.py one folder up, named in task.yml.
TASK = """\
files:
  - {{"name": "submission.py", "source": "@SUBMISSION@"}}
  - {{"name": "task.py", "source": "task.py"}}
  - {{"name": "utils.py", "source": "../utils.py"}}
  - {{"name": "reference.py", "source": "reference.py"}}
  - {{"name": "eval.py", "source": "../eval.py"}}
lang: "py"
config:
  main: "eval.py"
tests:
{tests}
benchmarks:
{benchmarks}
test_timeout: 120
benchmark_timeout: 120
{extra}
"""
UTILS = """\
import torch


def match(output, expected, rtol, atol):
    if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
        return False, "wrong shape"
    close = torch.allclose(output.double(), expected.double(), rtol=rtol, atol=atol)
    return close, "" if close else "mismatch"
"""
# Never run by KernelJudge: were it run, the grading would end here.
EVAL = "raise SystemExit('eval.py ran')\n"
TASK_PY = "input_t = tuple\noutput_t = object\n"

# pmpp_v2/prefixsum_py's shape: a float32 buffer the reference ignores, a float64 result.
SCAN_REFERENCE = """\
import torch
from utils import match


def generate_input(size, seed):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(size, device="cuda", dtype=torch.float32, generator=gen)
    y = torch.empty(size, device="cuda", dtype=torch.float32)
    return x, y


def ref_kernel(data):
    data, output = data
    return torch.cumsum(data.to(torch.float64), dim=0)


def check_implementation(data, output):
    return match(output, ref_kernel(data), rtol=1e-4 * data[0].numel() ** 0.5, atol=1e-4)
"""
SCAN_SOLUTION = """\
import torch


def custom_kernel(data):
    data, output = data
    output[...] = torch.cumsum(data, dim=0)
    return output
"""
SCAN_EMPTY = "def custom_kernel(data):\n    return data[1]\n"

# linalg/qr_py's shape: the reference and the template return torch.geqrf's named tuple.
QR_REFERENCE = """\
import torch


def generate_input(batch, n, seed):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return torch.randn((batch, n, n), device="cuda", dtype=torch.float32, generator=gen)


def ref_kernel(data):
    return torch.geqrf(data)


def check_implementation(data, output):
    if not isinstance(output, tuple) or len(output) != 2:
        return False, "output must be a tuple (H, tau)"
    h, tau = output
    if type(h) is not torch.Tensor or h.shape != data.shape or tau.shape != data.shape[:2]:
        return False, "H and tau have the wrong shapes"
    q = torch.linalg.householder_product(h, tau).double()
    residual = (torch.triu(h).double() - q.transpose(-1, -2) @ data.double()).abs().max()
    return bool(residual < 1e-3), f"residual {float(residual):.3g}"
"""
QR_TEMPLATE = """\
import torch


def custom_kernel(data):
    return torch.geqrf(data)
"""


def write_problem(
    root: Path,
    name: str,
    reference: str,
    *,
    tests: str,
    benchmarks: str,
    template: str,
    solutions: dict[str, str] | None = None,
    extra: str = "",
) -> Path:
    (root / "utils.py").write_text(UTILS)
    (root / "eval.py").write_text(EVAL)
    folder = root / name
    folder.mkdir()
    task = TASK.format(tests=tests, benchmarks=benchmarks, extra=extra)
    (folder / "task.yml").write_text(task)
    (folder / "task.py").write_text(TASK_PY)
    (folder / "reference.py").write_text(reference)
    (folder / "submission.py").write_text(template)
    for path, code in (solutions or {}).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(code)
    return folder


def scan_folder(root: Path, extra: str = "") -> Path:
    return write_problem(
        root,
        "scan_py",
        SCAN_REFERENCE,
        tests='  - {"size": 1023, "seed": 4242}\n  - {"size": 4096, "seed": 9173}',
        benchmarks='  - {"size": 8192, "seed": 54352}',
        template=SCAN_SOLUTION,
        solutions={
            "solutions/correct/ref.py": SCAN_SOLUTION,
            "solutions/wrong/empty.py": SCAN_EMPTY,
        },
        extra=extra + "case_time_budget_s: 0.3\n",
    )


def qr_problem(root: Path) -> Problem:
    return load_problem(
        write_problem(
            root,
            "qr_py",
            QR_REFERENCE,
            tests='  - {"batch": 3, "n": 16, "seed": 53124}\n  - {"batch": 2, "n": 33, "seed": 1}',
            benchmarks='  - {"batch": 4, "n": 32, "seed": 43214}',
            template=QR_TEMPLATE,
        )
    )


def statuses(report: dict) -> dict[str, tuple[str, str]]:
    return {check["name"]: (check["outcome"], check["status"]) for check in report["checks"]}


# -- an output buffer of another dtype than the reference's result ----------------------------

# pmpp/vectorsum_py's solutions/wrong/cheat.py: right at test sizes, 1% off at benchmark ones.
SCAN_CHEAT = """\
import torch


def custom_kernel(data):
    data, output = data
    scale = 1.0 if data.numel() <= 4096 else 0.99
    output[...] = torch.cumsum(data, dim=0) * scale
    return output
"""


@pytest.fixture(scope="module")
def scan_validation(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The scan folder validated once with GPU MODE's three kinds of example solution: its
    correct one, an empty one and the cheat (a validation grades each in turn, so one
    validation of the three asks what two validations of part of them would)."""
    folder = scan_folder(tmp_path_factory.mktemp("scan"))
    (folder / "solutions/wrong/cheat.py").write_text(SCAN_CHEAT)
    return validate(load_problem(folder), example_solutions(folder), device="cpu").to_dict()


def test_a_float32_buffer_beside_a_float64_result_validates_as_its_folders_promise(
    scan_validation: dict,
) -> None:
    """GPU MODE's prefixsum: its own correct solution was refused for writing the buffer."""
    report = scan_validation
    assert report["status"] == "passed", report["message"]
    assert statuses(report)["solutions/correct/ref.py"] == ("ok", "passed")
    assert statuses(report)["solutions/wrong/empty.py"] == ("ok", "failed")


def test_a_wrong_solution_that_is_right_only_at_test_sizes_fails_validation_as_promised(
    scan_validation: dict,
) -> None:
    report = scan_validation
    assert report["status"] == "passed", report["message"]
    cheat = next(c for c in report["checks"] if c["name"] == "solutions/wrong/cheat.py")
    assert (cheat["outcome"], cheat["status"]) == ("ok", "failed")
    assert cheat["message"].startswith("passed the test cases, then in benchmark mode: ")
    assert "size=8192" in cheat["message"]
    # An honest solution is graded on the test cases alone, as before.
    assert statuses(report)["solutions/correct/ref.py"] == ("ok", "passed")


def test_a_reference_slower_than_the_test_cases_limit_is_told_to_raise_it(
    tmp_path: Path,
) -> None:
    """bioml/trimul's shape on an H200: the reference's own test cases outlast test mode's
    short limit (test_cases_timeout, 20 s by default); the organizer reads what to change."""
    slow = SCAN_REFERENCE.replace(
        "def ref_kernel(data):\n", "def ref_kernel(data):\n    __import__('time').sleep(0.7)\n"
    )
    folder = write_problem(
        tmp_path,
        "slow_py",
        slow,
        tests='  - {"size": 16, "seed": 1}\n  - {"size": 32, "seed": 2}',
        benchmarks='  - {"size": 64, "seed": 3}',
        template=SCAN_SOLUTION,
        extra="test_cases_timeout: 1\ncase_time_budget_s: 0.2\n",
    )
    report = validate(load_problem(folder), {}, device="cpu").to_dict()
    assert report["status"] == "failed"
    check = next(c for c in report["checks"] if c["name"] == "reference graded in test mode")
    assert check["status"] == "timeout"
    assert "the test cases exceeded their time limit of 1 s" in check["message"]
    assert "raise it" in check["message"] and "test_cases_timeout" in check["message"]
    # The organizer's test_cases_timeout wins over any derived limit.
    assert (report["test_cases_timeout_s"], report["test_cases_timeout_from"]) == (1, "task.yml")
    assert report["reference_test_cases_s"] is None


# linalg/qr_py's shape on a CPU: the reference and its own template take longer on the test
# cases than test mode's fixed limit allowed.
SLOW_S = 0.5
SLOW_QR_REFERENCE = QR_REFERENCE.replace(
    "def ref_kernel(data):\n", f"def ref_kernel(data):\n    __import__('time').sleep({SLOW_S})\n"
)
SLOW_QR_TEMPLATE = QR_TEMPLATE.replace(
    "def custom_kernel(data):\n",
    f"def custom_kernel(data):\n    __import__('time').sleep({SLOW_S})\n",
)


def test_test_modes_limit_comes_from_the_reference_s_own_time_where_task_yml_sets_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A problem as published (no key of ours) whose test cases outlast the floor (1 s here,
    for 20 s): validation grades the reference in test mode, derives the limit from its
    time, says it, and grades the template under it, which passes; a worker given that
    limit grades it so."""
    monkeypatch.setattr(problem_module, "TEST_CASES_FLOOR_S", 1.0)
    folder = write_problem(
        tmp_path,
        "qr_py",
        SLOW_QR_REFERENCE,
        tests='  - {"batch": 3, "n": 16, "seed": 53124}\n  - {"batch": 2, "n": 33, "seed": 1}',
        benchmarks='  - {"batch": 4, "n": 32, "seed": 43214}',
        template=SLOW_QR_TEMPLATE,
    )
    problem = load_problem(folder)
    assert problem.declared_test_cases_timeout is None
    before = grade(problem, SLOW_QR_TEMPLATE)
    assert before.status == "timeout"
    assert "the test cases exceeded their time limit of 1 s" in before.message

    report = validate(problem, {"submission.py": SLOW_QR_TEMPLATE}, device="cpu")
    assert report.status == "passed", report.message
    assert statuses(report.to_dict())["submission.py"] == ("ok", "passed")
    # Two test cases, each running the reference in the harness and the template (here as
    # slow) in the sandbox.
    reference_s = report.reference_test_cases_s
    assert reference_s is not None and reference_s >= 2 * SLOW_S
    limit = math.ceil(problem_module.TEST_CASES_MULTIPLE * reference_s)
    assert (report.test_cases_timeout_s, report.test_cases_timeout_from) == (limit, "reference")
    assert f"test mode's cases may take {limit:g} s on cpu" in report.message

    after = grade(replace(problem, validated_test_cases_timeout=report.test_cases_timeout_s),
                  SLOW_QR_TEMPLATE)  # fmt: skip
    assert after.status == "passed", after.message


def test_the_input_the_reference_reads_still_may_not_be_written(tmp_path: Path) -> None:
    problem = load_problem(scan_folder(tmp_path))
    zeroes_input = SCAN_SOLUTION.replace(
        "    return output\n", "    data.zero_()\n    return output\n"
    )
    report = grade(problem, zeroes_input)
    assert report.status == "failed"
    assert "custom_kernel modified its inputs (data[0])" in report.message


def test_the_buffer_of_another_dtype_is_poisoned_before_every_timed_call(tmp_path: Path) -> None:
    problem = load_problem(scan_folder(tmp_path))
    once = (
        "import torch\ncalls = 0\n\n\ndef custom_kernel(data):\n    global calls\n"
        "    calls += 1\n    data, output = data\n    if calls == 1:\n"
        "        output[...] = torch.cumsum(data, dim=0)\n    return output\n"
    )
    report = grade(problem, once, mode="benchmark")
    assert report.status == "failed", report.message
    assert "output of the last timed call" in report.message


# -- torch's named tuples as outputs ------------------------------------------------------------


def test_a_geqrf_result_is_accepted_like_a_tuple_of_tensors(tmp_path: Path) -> None:
    problem = qr_problem(tmp_path)
    assert grade(problem, QR_TEMPLATE).status == "passed"
    report = validate(problem, {}, device="cpu").to_dict()
    assert report["status"] == "passed", report["message"]


@pytest.mark.parametrize(
    "returned",
    [
        # A tensor subclass inside torch's own named tuple.
        "torch.return_types.geqrf((h.as_subclass(Lying), tau))",
        # Something that is not a tensor at all inside it.
        "torch.return_types.geqrf((h, 'tau'))",
        # A named tuple of the submission's own making.
        "collections.namedtuple('geqrf', 'a tau')(h, tau)",
    ],
)
def test_named_tuples_open_no_door_to_other_objects(tmp_path: Path, returned: str) -> None:
    code = (
        "import collections\nimport torch\n\n\nclass Lying(torch.Tensor):\n    pass\n\n\n"
        f"def custom_kernel(data):\n    h, tau = torch.geqrf(data)\n    return {returned}\n"
    )
    report = grade(qr_problem(tmp_path), code)
    assert report.status == "error"
    assert "custom_kernel must return a torch.Tensor" in report.message


# -- what the worker lacks, said in a sentence -------------------------------------------------


def test_a_missing_package_is_named_in_one_sentence(tmp_path: Path) -> None:
    code = (
        "import torch\nimport kj_absent_dsl\nimport kj_absent_dsl.language as hl\n"
        + (SCAN_SOLUTION.split("\n", 1)[1])
    )
    report = grade(load_problem(scan_folder(tmp_path)), code)
    assert report.status == "error"
    assert report.message == (
        "submission.py failed to load:\nthe package 'kj_absent_dsl' is not installed on this "
        "worker (submission.py, line 2: import kj_absent_dsl)"
    )


def test_importing_the_private_reference_is_told_so(tmp_path: Path) -> None:
    """The reference stays the harness's. Screening rejects a submission importing it; a
    problem's own helper doing so (amd_distributed/all2all's task.py) fails behind it, and
    the message says why."""
    code = "from reference import ref_kernel\n\n\ndef custom_kernel(data):\n    return 0\n"
    report = grade(load_problem(scan_folder(tmp_path)), code, screen=False)
    assert report.status == "error"
    assert report.message == (
        "submission.py failed to load:\nthe problem's reference.py is not given to submissions "
        "(submission.py, line 1: from reference import ref_kernel)"
    )


@pytest.mark.parametrize(
    "line",
    [
        "    torch.cuda.synchronize()",
        "    data = data.cuda()",
        "    event = torch.cuda.Event(enable_timing=True)",
    ],
)
def test_cuda_code_on_a_cpu_worker_is_told_it_needs_a_gpu(tmp_path: Path, line: str) -> None:
    code = SCAN_SOLUTION.replace("    data, output = data\n", f"    data, output = data\n{line}\n")
    report = grade(load_problem(scan_folder(tmp_path)), code, device="cpu")
    assert report.status == "error"
    assert report.message.startswith(
        "custom_kernel raised:\nthis submission needs a GPU: it uses CUDA (submission.py, "
        f"line 6: {line.strip()}), and this worker grades on the CPU; "
    )
    assert "Traceback" not in report.message


@pytest.mark.skipif(torch.version.cuda is not None, reason="a CUDA build of torch compiles it")
def test_a_cuda_extension_built_on_a_cpu_worker_is_told_it_needs_a_gpu(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """\
        from torch.utils.cpp_extension import load_inline

        module = load_inline(
            name="scan", cpp_sources="void scan();", cuda_sources="void scan() {}",
            functions=["scan"],
        )


        def custom_kernel(data):
            return data[1]
        """
    )
    report = grade(load_problem(scan_folder(tmp_path)), code, device="cpu")
    assert report.status == "error"
    assert "this submission needs a GPU: it uses CUDA (submission.py, line 3:" in report.message


def test_a_cuda_solution_is_skipped_on_a_cpu_worker_not_failed(tmp_path: Path) -> None:
    cuda_solution = SCAN_SOLUTION.replace(
        "    return output\n", "    torch.cuda.synchronize()\n    return output\n"
    )
    folder = scan_folder(tmp_path)
    report = validate(load_problem(folder), {"solutions/correct/sync.py": cuda_solution})
    assert report.status == "passed", report.message
    sync = report.to_dict()["checks"][-1]
    assert (sync["outcome"], sync["message"]) == (
        "skipped",
        "needs CUDA; this worker grades on the CPU",
    )


# -- what a problem declares it needs ----------------------------------------------------------


def test_a_declared_device_the_worker_lacks_is_reported_as_needed(tmp_path: Path) -> None:
    folder = scan_folder(tmp_path, "requires:\n  devices: [cuda]\n")
    problem = load_problem(folder)
    report = validate(problem, example_solutions(folder), device="cpu").to_dict()
    assert report["status"] == "needs"
    assert report["message"] == (
        "needs a CUDA GPU (task.yml's requires.devices: cuda); this worker grades on the CPU"
    )
    assert {outcome for outcome, _ in statuses(report).values()} == {"skipped"}
    graded = grade(problem, SCAN_SOLUTION, device="cpu")
    assert graded.status == "error"
    assert graded.message.startswith("this problem needs a CUDA GPU")


def test_a_declared_device_type_is_matched_against_the_workers() -> None:
    """nvidia/*'s NVFP4 problems run on B200s only: an H200 worker says so."""
    blackwell = Requirements(devices=("b200", "gb200"))
    h200 = DeviceInfo(kind="cuda", device_type="h200", name="NVIDIA H200")
    lacking = device_shortfall(blackwell, h200)
    assert lacking is not None and lacking.message == (
        "needs a device of one of the types b200, gb200 (task.yml's requires.devices: "
        "b200, gb200); this worker has an NVIDIA H200"
    )
    assert device_shortfall(blackwell, DeviceInfo("cuda", "b200", "NVIDIA B200")) is None
    assert device_shortfall(Requirements(devices=("cuda",)), h200) is None


def test_a_declared_compute_capability_needs_a_gpu_that_has_it(tmp_path: Path) -> None:
    problem = load_problem(scan_folder(tmp_path, "requires:\n  compute_capability: 10.0\n"))
    assert problem.requirements.compute_capability == (10, 0)
    report = validate(problem, {}, device="cpu")
    assert report.status == "needs"
    assert report.message.startswith("needs a CUDA GPU of compute capability 10.0 or higher")


def test_a_declared_package_the_worker_lacks_is_named(tmp_path: Path) -> None:
    folder = scan_folder(tmp_path, "requires:\n  packages: [torch, kj_absent_dsl]\n")
    report = validate(load_problem(folder), example_solutions(folder), device="cpu")
    assert report.status == "failed"
    assert report.message == (
        "this worker lacks kj_absent_dsl, which task.yml's requires.packages names: install "
        "it in the worker's Python environment, or grade the problem on workers that have them"
    )
    assert grade(load_problem(folder), SCAN_SOLUTION).message == report.message


@pytest.mark.parametrize(
    ("requires", "said"),
    [
        ("  devices: [NVIDIA H200]\n", "name device kinds (cpu, cuda) or device types"),
        ("  compute_capability: sm90\n", "must be a version such as 9.0 or 10.0"),
        ("  packages: [nvidia-cutlass-dsl]\n", "give the name imported, e.g. cutlass"),
        ("  gpus: [h200]\n", "unknown keys gpus"),
    ],
)
def test_a_malformed_declaration_is_refused_when_loaded(
    tmp_path: Path, requires: str, said: str
) -> None:
    with pytest.raises(ProblemError, match="requires") as refused:
        load_problem(scan_folder(tmp_path, "requires:\n" + requires))
    assert said in str(refused.value)


# -- a problem's own evaluator -------------------------------------------------------------------

# princeton/cross_entropy_py's shape: other entry points, and an eval.py of its own calling them.
OWN_REFERENCE = """\
import torch


def reference_forward(logits, targets):
    return torch.nn.functional.cross_entropy(logits.float(), targets, reduction="none")


def generate_inputs(batch_size, vocab_size, seed=42):
    torch.manual_seed(seed)
    return torch.randn(batch_size, vocab_size), torch.randint(0, vocab_size, (batch_size,))
"""
OWN_EVAL = """\
from reference import generate_inputs, reference_forward


def main():
    import submission
    logits, targets = generate_inputs(8, 32)
    return submission.cross_entropy_forward(logits, targets) - reference_forward(logits, targets)
"""
OWN_TASK = """\
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "eval.py"}
lang: "py"
config:
  main: "eval.py"
tests:
  - {"vocab_size": 32}
"""


def test_a_problem_depending_on_its_own_evaluator_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    for name, text in {"task.yml": OWN_TASK, "reference.py": OWN_REFERENCE}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "eval.py").write_text(OWN_EVAL)
    with pytest.raises(ProblemError) as refused:
        load_problem(tmp_path)
    reason = str(refused.value)
    assert "this problem depends on its own evaluator (eval.py)" in reason
    assert "does not define generate_input, ref_kernel, check_implementation" in reason
    assert "eval.py calls its generate_inputs, reference_forward instead" in reason
    # The same reference without an evaluator to stand in for it is validation's to report.
    (tmp_path / "eval.py").unlink()
    assert load_problem(tmp_path).name == tmp_path.name


def test_an_evaluator_of_its_own_beside_a_full_reference_is_simply_not_run(
    tmp_path: Path,
) -> None:
    """linalg/qr_py ships an eval.py of its own and still defines the three entry points."""
    folder = qr_problem(tmp_path).name
    (tmp_path / folder / "eval.py").write_text(EVAL)
    task = tmp_path / folder / "task.yml"
    task.write_text(task.read_text().replace('"../eval.py"', '"eval.py"'))
    problem = load_problem(tmp_path / folder)
    assert "eval.py" not in problem.files
    assert grade(problem, QR_TEMPLATE).status == "passed"
