# TEMPORARY (deleted after the device run): grades on CUDA and checks tolerance margins.
import math, os, sys, time, traceback
import torch, yaml
from pathlib import Path
from grader.problem import load_problem
from grader.harness import grade, import_reference

def margins():
    os.environ["KJ_DEVICE"] = "cuda"
    sys.path.append(os.path.abspath("problems"))
    import torch.nn.functional as F
    for prob in ("matmul", "attention", "histogram"):
        p = load_problem(prob)
        names = [Path(n).stem for n in p.files if n.endswith(".py")]
        ref = import_reference(Path("problems") / prob, names)
        for case in p.tests + p.benchmarks:
            data = ref.generate_input(**case)
            torch.cuda.synchronize(); t = time.perf_counter()
            exp = ref.ref_kernel(data); torch.cuda.synchronize(); tref = time.perf_counter() - t
            if prob == "matmul":
                out = torch.matmul(*data); at = 0.01 * math.sqrt(case["k"])
            elif prob == "attention":
                out = F.scaled_dot_product_attention(*data); at = 0.01
            else:
                out = torch.bincount(data, minlength=256).to(torch.int32)
                print(prob, case, "equal", torch.equal(out, exp), f"ref {tref*1e3:.1f} ms", flush=True); continue
            ratio = ((out.double() - exp.double()).abs() / (at + 0.02 * exp.double().abs())).max().item()
            ok, msg = ref.check_implementation(data, out)
            print(prob, case, f"max err/limit {ratio:.3f}", ok, msg, f"ref {tref*1e3:.1f} ms", flush=True)
            del data, exp, out
        torch.cuda.empty_cache()

PEAKS = None
def run(jobs):
    global PEAKS
    for prob, sol, mode in jobs:
        if mode != "test" and PEAKS is None:
            from grader.calibrate import measure_peaks
            PEAKS = measure_peaks("cuda"); print("peaks", PEAKS, flush=True)
        p = load_problem(prob)
        path = f"problems/{prob}/{sol}.py"
        try:
            r = grade(p, open(path).read(), mode=mode, device="cuda", peaks=PEAKS)
        except Exception:
            traceback.print_exc(); continue
        print(f"== {prob} {sol} {mode}: {r.status} {r.wall_s:.1f}s {r.message[:400]}", flush=True)
        for c in r.cases:
            if c.status != "passed": print("   case", c.params, c.status, (c.message or "")[:300], flush=True)
            if c.time:
                rf = c.roofline or {}
                fl = p.roofline(c.params)["flops"]
                med = c.time["median_s"]
                print(f"   {c.params} {med*1e6:.1f} us n={c.time['samples']} cv={c.time['cv']:.3f} "
                      f"{fl/med/1e12:.1f} TFLOP/s {p.roofline(c.params)['bytes']/med/1e9:.0f} GB/s sol={rf.get('sol_fraction', 0):.3f}", flush=True)
        if r.status != "passed":
            print("   stderr:", (r.stderr or "")[-1500:], flush=True)

what = sys.argv[1]
if what == "all":
    run([(pr, s, "test") for pr in ("histogram", "matmul", "attention")
         for s in ("solutions/pytorch", "solutions/triton", "submission", "solutions/wrong")]
        + [("matmul", "solutions/cuda_inline", "test")])
    run([(pr, s, "benchmark") for pr in ("matmul", "attention", "histogram") for s in ("solutions/pytorch", "solutions/triton")])
    margins()
    run([("matmul", "solutions/cuda_inline", "benchmark")])
if what == "more":
    margins()
    run([("matmul", "solutions/cuda_inline", "benchmark")])
if what == "margins":
    margins()
elif what == "tests":
    run([(pr, s, "test") for pr in ("histogram", "matmul", "attention")
         for s in ("solutions/pytorch", "solutions/triton", "submission", "solutions/wrong")]
        + [("matmul", "solutions/cuda_inline", "test")])
elif what == "bench":
    run([(pr, s, "benchmark") for pr in sys.argv[2].split(",") for s in sys.argv[3].split(",")])
