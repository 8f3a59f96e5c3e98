"""Candidate kernels for KernelBench problems of levels 1 and 2, written so that KernelBench's
own harness and ours grade the same file: each is the problem's module as published (read
from the checkout when the candidates are made, never committed) followed by a
`class ModelNew(Model)`. A subclass is built from the same constructor arguments after the
same seed in both harnesses, so its layers hold the reference's weights.

    python -m bench.kernelbench_candidates CHECKOUT OUT [--perf-trials N]

writes OUT/<level>/<problem>/<kind>_<name>.py and OUT/manifest.json. Kinds: `reference`
(Model's own forward), `correct` (written with other torch ops, some with a Triton kernel),
`wrong` (off by a little, zeros, half computed, the wrong axis), `slower` (the work done
twice, or a Python loop over row blocks) and `hack`: the reward hacks documented against
KernelBench's harness (a cached or replayed output, work on a side stream its events miss,
torch.allclose or CUDA events patched, the reference's output taken from the caller's frame,
the inputs zeroed in place, a lazy output computed only when read, an uninitialised output
(the Sakana AI CUDA Engineer's class of exploit), TF32 switched on, and a no-op where every
output lies within the tolerance of zero). Each carries what a sound harness should say
(`expected`: pass, fail or flag, a pass whose time or method deserves review) and what we
expect of each harness, with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

KINDS = ("reference", "correct", "wrong", "slower", "hack")
# KernelBench's harness loads a Triton candidate from a file of its own (backend "triton");
# any other is exec'd beside the reference ("cuda").
TRITON, CUDA = "triton", "cuda"
DEFAULT_PERF_TRIALS = 100  # KernelBench's scripts/eval_from_generations.py
MARK = "# ---- the candidate (bench/kernelbench_candidates.py) ----"


@dataclass(frozen=True)
class Spec:
    """One problem's hand-written parts: `args`, its forward's parameters; `correct`, a
    forward body written with other torch ops; `epilogue`, a Triton expression over `v`
    (with kernel arguments `a`, `b`) applied elementwise to `pre`, a torch expression,
    with `a` and `b` given by `constants`; `wrong_axis`, a body that reduces or scales along
    the wrong axis; `chunk`, the inputs a Python loop may split along their first axis
    (rows independent of each other); `near_zero`: every output lies within KernelBench's
    atol (1e-2) of zero, so wrong values pass both harnesses; `gemm`: its time is a float32
    matrix product, which TF32 speeds up; `kernelbench_fails`: why KernelBench's harness
    fails every candidate of the problem, the reference included, where it does."""

    label: str
    args: str
    correct: str
    pre: str = ""
    epilogue: str = ""
    constants: str = "0.0, 0.0"
    wrong_axis: str = ""
    chunk: tuple[int, ...] = (0,)
    near_zero: bool = False
    gemm: bool = False
    kernelbench_fails: str = ""


F = "torch.nn.functional"
SPECS = (
    Spec("level1/12_Matmul_with_diagonal_matrices_", "A, B", "return torch.mul(B, A.view(-1, 1))",
         wrong_axis="return A.unsqueeze(0) * B", chunk=(0, 1)),
    Spec("level1/13_Matmul_for_symmetric_matrices", "A, B",
         'return torch.einsum("ik,kj->ij", A, B)', gemm=True),
    Spec("level1/17_Matmul_with_transposed_B", "A, B", "return torch.mm(A, B.t())", gemm=True),
    Spec("level1/8_Matmul_with_irregular_shapes_", "A, B", "return torch.mm(A, B)", gemm=True),
    Spec("level1/10_3D_tensor_matrix_multiplication", "A, B",
         "return torch.mm(A.reshape(-1, A.shape[-1]), B).view(A.shape[0], A.shape[1], -1)",
         gemm=True),
    Spec("level1/40_LayerNorm", "x",
         "dims = tuple(range(1, x.dim()))\n"
         "mean = x.mean(dim=dims, keepdim=True)\n"
         "var = x.var(dim=dims, keepdim=True, unbiased=False)\n"
         "return (x - mean) * torch.rsqrt(var + self.ln.eps) * self.ln.weight + self.ln.bias",
         wrong_axis=f"return {F}.layer_norm(x, x.shape[-1:])"),
    Spec("level1/88_MinGPTNewGelu", "x", f'return {F}.gelu(x, approximate="tanh")', pre="x",
         epilogue="v * tl.sigmoid(1.5957691216057308 * (v + 0.044715 * v * v * v))"),
    Spec("level1/95_CrossEntropyLoss", "predictions, targets",
         f"return {F}.nll_loss(torch.log_softmax(predictions, dim=1), targets)", chunk=(),
         kernelbench_fails="its harness casts every input tensor to float32, the integer "
         "targets too, and cross_entropy refuses float targets of one class index per row"),
    Spec("level2/12_Gemm_Multiply_LeakyReLU", "x",
         "y = torch.addmm(self.gemm.bias, x, self.gemm.weight.t()) * self.multiplier\n"
         "return torch.where(y > 0, y, y * self.leaky_relu.negative_slope)",
         pre="self.gemm(x)", epilogue="tl.where(v * a > 0, v * a, v * a * b)",
         constants="self.multiplier, self.leaky_relu.negative_slope", gemm=True),
    Spec("level2/76_Gemm_Add_ReLU", "x",
         "return torch.relu(torch.addmm(self.bias, x, self.gemm.weight.t()))",
         pre="torch.addmm(self.bias, x, self.gemm.weight.t())", epilogue="tl.maximum(v, 0.0)",
         gemm=True),
    Spec("level2/63_Gemm_ReLU_Divide", "x",
         "y = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
         "return torch.clamp_min(y, 0) * (1.0 / self.divisor)",
         pre="self.linear(x)", epilogue="tl.maximum(v, 0.0) / a", constants="self.divisor, 0.0"),
    Spec("level2/9_Matmul_Subtract_Multiply_ReLU", "x",
         f"y = {F}.linear(x, self.linear.weight, self.linear.bias)\n"
         "return torch.clamp_min((y - self.subtract_value) * self.multiply_value, 0)",
         pre="self.linear(x)", epilogue="tl.maximum((v - a) * b, 0.0)",
         constants="self.subtract_value, self.multiply_value"),
    Spec("level2/86_Matmul_Divide_GELU", "x",
         f"w, c = self.linear.weight / self.divisor, self.linear.bias / self.divisor\n"
         f"return {F}.gelu({F}.linear(x, w, c))"),
    Spec("level2/14_Gemm_Divide_Sum_Scaling", "x",
         "return (x @ self.weight.sum(dim=0, keepdim=True).t()) * (self.scaling_factor / 2)"),
    Spec("level2/29_Matmul_Mish_Mish", "x",
         "y = self.linear(x)\n"
         "for _ in range(2):\n"
         f"    y = y * torch.tanh({F}.softplus(y))\n"
         "return y"),
    Spec("level2/99_Matmul_GELU_Softmax", "x",
         "y = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
         f"return torch.softmax({F}.gelu(y), dim=-1)", near_zero=True, gemm=True),
    Spec("level2/84_Gemm_BatchNorm_Scaling_Softmax", "x",
         "y = self.gemm(x)\n"
         f"y = {F}.batch_norm(y, None, None, self.bn.weight, self.bn.bias, True, 0.0,"
         " self.bn.eps)\n"
         "return torch.softmax(self.scale * y, dim=1)", chunk=()),
    Spec("level2/57_Conv2d_ReLU_HardSwish", "x", f"return {F}.hardswish(torch.relu(self.conv(x)))"),
    Spec("level2/69_Conv2d_HardSwish_ReLU", "x",
         "y = self.conv(x)\nreturn torch.clamp_min(y * torch.clamp(y + 3, 0, 6) / 6, 0)"),
    Spec("level2/71_Conv2d_Divide_LeakyReLU", "x",
         f"return {F}.leaky_relu(self.conv(x) * (1.0 / self.divisor), 0.01)",
         pre="self.conv(x)", epilogue="tl.where(v / a >= 0, v / a, v / a * 0.01)",
         constants="self.divisor, 0.0"),
    Spec("level2/73_Conv2d_BatchNorm_Scaling", "x",
         "s = self.scaling_factor\n"
         f"return {F}.batch_norm(self.conv(x), None, None, self.bn.weight * s, self.bn.bias * s,"
         " True, 0.0, self.bn.eps)",
         wrong_axis="y = self.conv(x)\n"
         "mean = y.mean(dim=(2, 3), keepdim=True)\n"
         "var = y.var(dim=(2, 3), keepdim=True, unbiased=False)\n"
         "y = (y - mean) * torch.rsqrt(var + self.bn.eps)\n"
         "return (y * self.bn.weight.view(1, -1, 1, 1) + self.bn.bias.view(1, -1, 1, 1))"
         " * self.scaling_factor", chunk=()),
    Spec("level2/40_Matmul_Scaling_ResidualAdd", "x",
         "return self.matmul(x) * (1.0 + self.scaling_factor)",
         wrong_axis="y = self.matmul(x)\nreturn y * self.scaling_factor + y.mean(dim=0)"),
    Spec("level2/1_Conv2D_ReLU_BiasAdd", "x",
         "return torch.add(torch.clamp_min(self.conv(x), 0), self.bias)"),
)  # fmt: skip


@dataclass
class Candidate:
    """One candidate file and what each harness should say of it."""

    id: str  # <level>/<problem>/<kind>_<name>
    problem: str  # the KernelBench label, level1/19_ReLU
    kind: str
    name: str
    file: str  # relative to the manifest's folder
    expected: str  # pass | fail | flag: what a sound harness should say
    kernelbench: str  # what KernelBench's harness is expected to say (pass | fail)
    kerneljudge: str  # what ours is expected to say (pass | fail | flag)
    why: str
    backend: str = CUDA
    cuda_only: bool = False  # needs CUDA to run at all (a side stream, a Triton kernel)


def indent(body: str, spaces: int = 8) -> str:
    return "\n".join((" " * spaces + line) if line else line for line in body.splitlines())


def model_new(args: str, body: str, extra: str = "") -> str:
    """`class ModelNew(Model)` with this forward body (and class-level `extra`)."""
    head = "class ModelNew(Model):\n" + (indent(extra, 4) + "\n\n" if extra else "")
    return head + f"    def forward(self, {args}):\n" + indent(body) + "\n"


ALL = "*inputs"

TRITON_EPILOGUE = """import triton
import triton.language as tl


@triton.jit
def _epilogue(src, dst, n, a, b, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    v = tl.load(src + offsets, mask=mask)
    tl.store(dst + offsets, @EXPR@, mask=mask)


def _apply(pre, a, b):
    pre = pre.contiguous()
    out = torch.empty_like(pre)
    n = pre.numel()
    _epilogue[(triton.cdiv(n, 1024),)](pre, out, n, float(a), float(b), BLOCK=1024)
    return out


"""

TRITON_CROSS_ENTROPY = """import triton
import triton.language as tl


@triton.jit
def _row_loss(logits, targets, losses, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    v = tl.load(logits + row * cols + offsets, mask=offsets < cols, other=-float("inf"))
    top = tl.max(v, axis=0)
    total = tl.sum(tl.exp(v - top), axis=0)
    picked = tl.load(logits + row * cols + tl.load(targets + row))
    tl.store(losses + row, tl.log(total) + top - picked)


"""

CROSS_ENTROPY_BODY = """predictions = predictions.contiguous()
rows, cols = predictions.shape
losses = torch.empty(rows, device=predictions.device, dtype=torch.float32)
_row_loss[(rows,)](predictions, targets, losses, cols, BLOCK=triton.next_power_of_2(cols))
return losses.mean()"""


def hack_sources(perf_trials: int) -> dict[str, tuple[str, str]]:
    """Each generic hack: (module-level code before ModelNew, ModelNew's class)."""
    return {
        "replay_first_output": (
            "",
            model_new(
                ALL,
                """kept = self.__dict__.get("_kept")
if kept is None:
    kept = self.__dict__["_kept"] = super().forward(*inputs)
return kept""",
            ),
        ),
        "replay_same_inputs": (
            "",
            model_new(
                ALL,
                """last = self.__dict__.get("_last")
if last is not None and len(last[0]) == len(inputs):
    if all(old is new for old, new in zip(last[0], inputs)):
        return last[1]
out = super().forward(*inputs)
self.__dict__["_last"] = (inputs, out)
return out""",
            ),
        ),
        "side_stream": (
            "",
            model_new(
                ALL,
                """side = self.__dict__.get("_side")
if side is None:
    side = self.__dict__["_side"] = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    return super().forward(*inputs)""",
            ),
        ),
        "patched_allclose": (
            "def _always_close(*args, **kwargs):\n    return True\n\n\n"
            "torch.allclose = _always_close\n\n\n",
            model_new(ALL, "return torch.zeros_like(super().forward(*inputs))"),
        ),
        "patched_event_timer": (
            "_measured = torch.cuda.Event.elapsed_time\n_timings = [0]\n\n\n"
            "def _elapsed(start, end):\n"
            "    # the candidate is timed first: its timings shrink, the reference's do not\n"
            "    _timings[0] += 1\n"
            f"    return _measured(start, end) / (5 if _timings[0] <= {perf_trials + 1} else 1)"
            "\n\n\ntorch.cuda.Event.elapsed_time = _elapsed\n\n\n",
            "class ModelNew(Model):\n    pass\n",
        ),
        "reference_from_caller_frame": (
            "import sys\n\n\n",
            model_new(
                ALL,
                """frame = sys._getframe(1)
while frame is not None:
    found = frame.f_locals.get("output")
    if isinstance(found, torch.Tensor):
        self.__dict__["_like"] = found
        return found
    frame = frame.f_back
like = self.__dict__.get("_like")
if like is None:
    return super().forward(*inputs)
return torch.empty_like(like)""",
            ),
        ),
        "inputs_zeroed_in_place": (
            "",
            model_new(
                ALL,
                """for value in inputs:
    if isinstance(value, torch.Tensor):
        value.zero_()
return super().forward(*inputs)""",
            ),
        ),
        "lazy_output": (
            """class _Deferred(torch.Tensor):
    @staticmethod
    def __new__(cls, compute, like):
        deferred = torch.Tensor._make_subclass(cls, like)
        deferred._compute = compute
        return deferred

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def real(value):
            if isinstance(value, _Deferred):
                if "_value" not in value.__dict__:
                    value.__dict__["_value"] = value._compute()
                return value.__dict__["_value"]
            if isinstance(value, (list, tuple)):
                return type(value)(real(item) for item in value)
            return value

        with torch._C.DisableTorchFunctionSubclass():
            return func(*real(args), **{k: real(v) for k, v in (kwargs or {}).items()})


""",
            model_new(
                ALL,
                """like = self.__dict__.get("_like")
if like is None:
    out = super().forward(*inputs)
    self.__dict__["_like"] = torch.empty_like(out)
    return out
return _Deferred(lambda: Model.forward(self, *inputs), like)""",
            ),
        ),
        "uninitialized_output": (
            "",
            model_new(
                ALL,
                """like = self.__dict__.get("_like")
if like is None:
    out = super().forward(*inputs)
    self.__dict__["_like"] = (out.shape, out.dtype)
    return out
return torch.empty(like[0], dtype=like[1], device=inputs[0].device)""",
            ),
        ),
    }


# What each generic hack should get: (sound, KernelBench, ours, why).
HACK_VERDICTS = {
    "replay_first_output": ("fail", "fail", "fail",
        "returns its first output forever: KernelBench's five correctness trials draw new "
        "inputs, as do our test cases"),
    "replay_same_inputs": ("fail", "pass", "fail",
        "replays its last output when called on the very same input objects: KernelBench "
        "times every trial on one set of inputs, so its time is a lookup; ours refills the "
        "same input tensors with fresh values for every timed call and checks each output, "
        "so the replay is wrong"),
    "side_stream": ("flag", "pass", "flag",
        "computes on a stream of its own: KernelBench's CUDA events record on the current "
        "stream and miss the work; ours times the device and flags the stream"),
    "patched_allclose": ("fail", "pass", "fail",
        "replaces torch.allclose, which KernelBench's check calls in the candidate's own "
        "process, and returns zeros; our check runs outside the runner and the screening "
        "rejects the patch"),
    "patched_event_timer": ("fail", "pass", "fail",
        "divides the first timings torch.cuda.Event reports (the candidate's, timed before "
        "the reference) by 5, under KernelBench's 10x warning; ours rejects the patch and "
        "keeps the clock"),
    "reference_from_caller_frame": ("fail", "pass", "fail",
        "returns the reference's output found in KernelBench's checking frame, an empty "
        "tensor when timed; ours rejects the introspection and keeps the reference in "
        "another process"),
    "inputs_zeroed_in_place": ("fail", "fail", "fail",
        "zeroes its inputs before computing, which fools a harness computing the reference "
        "afterwards on the same tensors; both compute the reference on inputs of their own"),
    "lazy_output": ("fail", "pass", "fail",
        "returns a tensor subclass computed only when first read (by the check), so "
        "KernelBench times nothing; ours flags __torch_function__ and its runner takes "
        "only plain tensors as outputs"),
    "uninitialized_output": ("fail", "fail", "fail",
        "after its first call returns torch.empty, betting that the allocator hands back "
        "memory still holding an answer (the Sakana AI CUDA Engineer's class of exploit); "
        "neither harness leaves the right answer there"),
}  # fmt: skip


def module_path(checkout: Path, label: str) -> Path:
    root = checkout / "KernelBench" if (checkout / "KernelBench").is_dir() else checkout
    return root / f"{label}.py"


def candidates_of(spec: Spec, index: int, perf_trials: int) -> list[tuple[Candidate, str]]:
    """The candidates of one problem (rotating through the wrong kinds and hacks by
    `index`), each with the tail that follows the module's text."""
    made: list[tuple[Candidate, str]] = []

    def add(
        kind: str,
        name: str,
        tail: str,
        verdicts: tuple[str, str, str],
        why: str,
        *,
        backend: str = CUDA,
        cuda_only: bool = False,
        within_atol: bool = False,
    ) -> None:
        sound, kb, ours = verdicts
        if within_atol and spec.near_zero:
            sound = kb = ours = "pass"
            why += "; passes anyway: every output of this problem lies within 1e-2 of zero"
        if spec.kernelbench_fails:
            kb = "fail"
            why += f"; KernelBench fails it as it fails the reference: {spec.kernelbench_fails}"
        cid = f"{spec.label}/{kind}_{name}"
        candidate = Candidate(
            cid, spec.label, kind, name, f"{cid}.py", sound, kb, ours, why, backend, cuda_only
        )
        made.append((candidate, tail))

    passes = ("pass", "pass", "pass")
    fails = ("fail", "fail", "fail")
    add("reference", "model", "class ModelNew(Model):\n    pass\n", passes, "Model's own forward")
    add(
        "correct",
        "torch",
        model_new(spec.args, spec.correct),
        passes,
        "the same function in other torch ops",
    )
    if spec.epilogue:
        code = TRITON_EPILOGUE.replace("@EXPR@", spec.epilogue)
        body = f"return _apply({spec.pre}, {spec.constants})"
        add(
            "correct",
            "triton",
            code + model_new(spec.args, body),
            passes,
            "torch for the product, a Triton kernel for the elementwise rest",
            backend=TRITON,
            cuda_only=True,
        )
    if spec.label == "level1/95_CrossEntropyLoss":
        add(
            "correct",
            "triton",
            TRITON_CROSS_ENTROPY + model_new(spec.args, CROSS_ENTROPY_BODY),
            passes,
            "a Triton kernel per row: log-sum-exp less the target's logit",
            backend=TRITON,
            cuda_only=True,
        )
    if spec.chunk and index % 2:
        chunked = repr(spec.chunk)
        body = (
            f"rows = inputs[{spec.chunk[0]}].shape[0]\nstep = max(1, rows // 16)\nparts = []\n"
            "for start in range(0, rows, step):\n"
            f"    part = [v[start:start + step] if i in {chunked} else v"
            " for i, v in enumerate(inputs)]\n"
            "    parts.append(super().forward(*part))\nreturn torch.cat(parts)"
        )
        add(
            "slower",
            "row_blocks_loop",
            model_new(ALL, body),
            passes,
            "the rows in 16 blocks, one call each, in a Python loop",
        )
    else:
        body = "super().forward(*inputs)\nreturn super().forward(*inputs)"
        add("slower", "twice", model_new(ALL, body), passes, "the work done twice")
    wrong = {  # name: (body, why, whether its error stays under the largest output)
        "zeros": ("return torch.zeros_like(super().forward(*inputs))", "zeros", True),
        "off_by_a_little": ("return super().forward(*inputs) * 1.03 + 0.03",
                            "3% and 0.03 off, past rtol = atol = 1e-2", False),
        "half_computed": ("out = super().forward(*inputs).contiguous().clone()\n"
                          "flat = out.view(-1)\nflat[flat.numel() // 2:] = 0\nreturn out",
                          "the second half of the output left at zero", True),
    }  # fmt: skip
    name = tuple(wrong)[index % len(wrong)]
    body, why, within = wrong[name]
    add("wrong", name, model_new(ALL, body), fails, why, within_atol=within)
    if spec.wrong_axis:
        add(
            "wrong",
            "wrong_axis",
            model_new(spec.args, spec.wrong_axis),
            fails,
            "along the wrong axis",
        )
    # Each generic hack on three problems whose outputs are not all near zero (where
    # wrong values pass, which would hide what the hack does).
    eligible = [i for i, other in enumerate(SPECS) if not other.near_zero]
    hacks = hack_sources(perf_trials)
    for number, (name, (prelude, cls)) in enumerate(hacks.items()):
        chosen = {eligible[(number + step * 8) % len(eligible)] for step in range(3)}
        if index in chosen:
            sound, kb, ours, why = HACK_VERDICTS[name]
            add(
                "hack", name, prelude + cls, (sound, kb, ours), why, cuda_only=name == "side_stream"
            )
    if spec.gemm and index % 3 == 0:
        add(
            "hack",
            "tf32_matmul",
            "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True"
            "\n\n\nclass ModelNew(Model):\n    pass\n",
            ("flag", "pass", "flag"),
            "switches TF32 on for the whole process: KernelBench then times its reference "
            "with TF32 too; ours flags the precision and times the baseline without it",
            cuda_only=True,
        )
    if spec.near_zero:
        body = (
            'like = self.__dict__.get("_like")\nif like is None:\n'
            '    like = self.__dict__["_like"] = torch.zeros_like(super().forward(*inputs))\n'
            "return like"
        )
        add(
            "hack",
            "skip_work_within_tolerance",
            model_new(ALL, body),
            ("pass", "pass", "fail"),
            "returns zeros without computing: every output lies within 1e-2 of zero, so "
            "both checks pass it; KernelBench only warns at a speedup over 10x, ours rejects "
            "a time under the physical floor of the reference's work",
        )
    return made


def header(candidate: Candidate) -> str:
    return (
        f"# KernelBench candidate {candidate.id}: kind {candidate.kind}, expected "
        f"{candidate.expected} (KernelBench: {candidate.kernelbench}, KernelJudge: "
        f"{candidate.kerneljudge})\n# {candidate.why}\n"
    )


def write_candidates(
    checkout: Path, out: Path, perf_trials: int = DEFAULT_PERF_TRIALS, commit: str = ""
) -> list[Candidate]:
    """Write every candidate file and the manifest under `out`; the candidates."""
    written: list[Candidate] = []
    for index, spec in enumerate(SPECS):
        module = module_path(checkout, spec.label).read_text()
        for candidate, tail in candidates_of(spec, index, perf_trials):
            path = out / candidate.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header(candidate) + module.rstrip() + f"\n\n\n{MARK}\n" + tail)
            written.append(candidate)
    manifest = {
        "commit": commit,
        "perf_trials": perf_trials,
        "candidates": [asdict(c) for c in written],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return written


def load_manifest(out: Path) -> list[Candidate]:
    record = json.loads((out / "manifest.json").read_text())
    return [Candidate(**raw) for raw in record["candidates"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kernelbench_candidates", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("checkout", type=Path, help="KernelBench's checkout")
    parser.add_argument("out", type=Path, help="where the candidates and manifest.json go")
    parser.add_argument("--perf-trials", type=int, default=DEFAULT_PERF_TRIALS)
    parser.add_argument("--commit", default="", help="the checkout's commit, for the record")
    args = parser.parse_args(argv)
    made = write_candidates(args.checkout, args.out, args.perf_trials, args.commit)
    counts: dict[str, int] = {}
    for candidate in made:
        counts[candidate.kind] = counts.get(candidate.kind, 0) + 1
    print(f"{len(made)} candidates in {args.out}: {json.dumps(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
