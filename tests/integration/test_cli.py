"""The `kerneljudge` command as a user types it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rig.processes import REPO_ROOT, kerneljudge, service_env

pytestmark = pytest.mark.integration

SOLUTIONS = REPO_ROOT / "problems" / "vectoradd" / "solutions"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        kerneljudge(*args), cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_grade_json_prints_one_report_and_exit_code_follows_status(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text(
        "import torch\nprint('hello from the submission')\n"
        "def custom_kernel(data):\n    a, b, out = data\n    print('called')\n"
        "    return torch.add(a, b, out=out)\n"
    )
    done = run("grade", "problems/vectoradd", str(noisy), "--device", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert report["status"] == "passed" and report["mode"] == "test"
    assert "hello from the submission" in report["stdout"]

    wrong = run(
        "grade", "vectoradd", str(SOLUTIONS / "wrong_zeros.py"), "--device", "cpu", "--json"
    )
    assert wrong.returncode == 1
    assert json.loads(wrong.stdout)["status"] == "failed"


def test_grade_benchmark_table_and_bad_arguments(tmp_path: Path) -> None:
    done = run(
        "grade",
        "vectoradd",
        str(SOLUTIONS / "pytorch.py"),
        "--mode",
        "benchmark",
        "--device",
        "cpu",
    )
    assert done.returncode == 0, done.stderr
    assert "passed" in done.stdout and "score" in done.stdout

    missing = run("grade", "no-such-problem", str(SOLUTIONS / "pytorch.py"))
    assert missing.returncode == 2 and "no-such-problem" in missing.stderr
    bad_mode = run(
        "grade", "vectoradd", str(SOLUTIONS / "pytorch.py"), "--mode", "fast", "--device", "cpu"
    )
    assert bad_mode.returncode == 2 and "fast" in bad_mode.stderr
    absent = run("grade", "vectoradd", str(tmp_path / "absent.py"), "--device", "cpu")
    assert absent.returncode == 2 and "absent.py" in absent.stderr


def test_user_add_and_problem_add(tmp_path: Path) -> None:
    env = service_env(tmp_path / "var")
    first = run("user", "add", "linus", "--admin", env=env)
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip().splitlines()[-1]
    assert token.startswith("kj_") and len(token) > 40
    again = run("user", "add", "linus", env=env)
    assert again.returncode == 1 and "already exists" in again.stderr

    added = run(
        "problem", "add", str(REPO_ROOT / "problems" / "vectorsum"), "--name", "my-sum", env=env
    )
    assert added.returncode == 0, added.stderr
    assert "'my-sum' is at version 1" in added.stdout
    # Not live until a worker (started by `serve`) has validated it.
    assert "status: validating; validation queued for the cpu queue(s)" in added.stdout
    sideways = run(
        "problem", "add", str(REPO_ROOT / "problems" / "vectorsum"), "--leaderboard", "sideways",
        env=env,
    )  # fmt: skip
    assert sideways.returncode == 1 and "unknown leaderboard choice 'sideways'" in sideways.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "task.yml").write_text("files:\n  - {name: reference.py, source: ../nowhere.py}\n")
    refused = run("problem", "add", str(broken), env=env)
    assert refused.returncode == 1 and "nowhere.py" in refused.stderr


def test_grade_runs_the_submission_in_the_sandbox_unless_told_not_to(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("CANARY-7f3a")
    prying = tmp_path / "prying.py"
    prying.write_text(
        "import os, torch\n"
        f"print('secret visible:', os.path.exists({str(secret)!r}))\n"
        "def custom_kernel(data):\n    a, b, out = data\n    return torch.add(a, b, out=out)\n"
    )
    boxed = run("grade", "vectoradd", str(prying), "--device", "cpu", "--json")
    assert boxed.returncode == 0, boxed.stderr
    assert "secret visible: False" in json.loads(boxed.stdout)["stdout"]
    assert "warning" not in boxed.stderr

    bare = run("grade", "vectoradd", str(prying), "--device", "cpu", "--json", "--no-sandbox")
    assert "secret visible: True" in json.loads(bare.stdout)["stdout"]
    assert "warning: --no-sandbox" in bare.stderr


def test_grade_without_bubblewrap_says_what_to_install(tmp_path: Path) -> None:
    env = service_env(tmp_path)
    env["KJ_BWRAP"] = str(tmp_path / "no-bwrap-here")
    done = run("grade", "vectoradd", str(SOLUTIONS / "pytorch.py"), "--device", "cpu", env=env)
    assert done.returncode == 2
    assert "bubblewrap is not installed" in done.stderr
