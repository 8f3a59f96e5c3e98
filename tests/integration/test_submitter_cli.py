"""The submitter's commands as a competitor types them, against a real ``kerneljudge serve``
with its embedded CPU worker: log in, follow a submission to its verdict (the exit code
naming it), read leaderboards and lists, download a problem's folder and grade it locally,
and all of it from an install without torch."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, update

from rig.processes import (
    REPO_ROOT,
    add_user,
    free_port,
    kerneljudge,
    service_env,
    serving,
)
from server.models import Problem, Submission
from server.outbox import task_names
from server.outbox.app import RESULTS_QUEUE, make_celery
from server.settings import Settings
from tests.integration.package import package_source
from tests.services import service_missing

pytestmark = pytest.mark.integration

VECTORADD = REPO_ROOT / "problems" / "vectoradd" / "solutions"
VECTORSUM = REPO_ROOT / "problems" / "vectorsum" / "solutions"
GRAYSCALE = REPO_ROOT / "problems" / "grayscale" / "solutions"
PREFIXSUM = REPO_ROOT / "problems" / "prefixsum" / "solutions"
RATE_LIMIT = 4
BROKEN = 'import torch\n\nraise RuntimeError("broken on purpose")\n'
PRYING = (
    "import gc\nimport torch\n\n\ndef custom_kernel(data):\n    gc.get_objects()\n"
    "    a, b, out = data\n    return torch.add(a, b, out=out)\n"
)
HUNG = "import time\n\n\ndef custom_kernel(data):\n    time.sleep(3600)\n"
SERVER_STACK = ("torch", "fastapi", "sqlalchemy", "celery", "numpy", "yaml")
GENERIC_NAMES = ("server", "grader", "sandbox")


@dataclass
class Site:
    base: str
    token: str  # ada's
    other_token: str  # rita's, for the rate limit
    root: Path
    log: Path

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("submitter")
    env = service_env(root / "var", submission_rate_limit=str(RATE_LIMIT))
    ada, rita = add_user(env, "ada"), add_user(env, "rita")
    log = root / "serve.log"
    with serving(env, log) as base:
        yield Site(base, ada, rita, root, log)


def client_env(site: Site, **variables: str) -> dict[str, str]:
    """A competitor's shell: their own config folder, no server settings; KJ_URL and
    KJ_TOKEN as given (by default the server and ada's token)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("KJ_")}
    env["XDG_CONFIG_HOME"] = str(site.root / "config")
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update({"KJ_URL": site.base, "KJ_TOKEN": site.token})
    for key, value in variables.items():
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return env


def cli(
    site: Site,
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    cwd: Path | None = None,
    argv: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        (argv or kerneljudge()) + list(args),
        env=env or client_env(site),
        cwd=cwd or site.root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_line(stderr: str) -> str:
    """The whole of stderr, which must be one line, and no traceback."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def progress(stderr: str, submission_id: int) -> list[str]:
    """The statuses the live output went through, in order."""
    seen = re.findall(rf"^submission {submission_id}: (\w+)", stderr, flags=re.MULTILINE)
    return [status for index, status in enumerate(seen) if index == 0 or seen[index - 1] != status]


def submitted_id(stderr: str) -> int:
    match = re.search(r"submission (\d+) \(", stderr)
    assert match, stderr
    return int(match.group(1))


def fetch(site: Site, path: str, token: str | None = None) -> Any:
    response = httpx.get(f"{site.base}{path}", headers=site.headers(token), timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def write(site: Site, name: str, code: str) -> Path:
    path = site.root / name
    path.write_text(code)
    return path


def test_login_stores_the_token_readable_only_by_its_owner(site: Site) -> None:
    bare = client_env(site, KJ_URL="", KJ_TOKEN="")
    stored = site.root / "config" / "kerneljudge" / "login.json"
    refused = cli(site, "login", site.base, "--token", "kj_not-a-token", env=bare)
    assert refused.returncode == 6
    assert "refused your token" in one_line(refused.stderr)
    assert not stored.exists()

    done = cli(site, "login", site.base, env=bare, stdin=site.token + "\n")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    assert json.loads(stored.read_text()) == {"url": site.base, "token": site.token}

    mine = cli(site, "submissions", "--json", env=bare)
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout)["submissions"] == []
    # The environment wins over what is stored...
    wrong = cli(site, "submissions", env=client_env(site, KJ_URL="", KJ_TOKEN="kj_revoked"))
    assert wrong.returncode == 6 and "refused your token" in one_line(wrong.stderr)
    # ...and the stored token is never sent to another server than its own.
    elsewhere = f"http://127.0.0.1:{free_port()}"
    other = cli(site, "submissions", env=client_env(site, KJ_URL=elsewhere, KJ_TOKEN=""))
    assert other.returncode == 2
    assert f"no API token for {elsewhere}" in one_line(other.stderr)


def test_an_unreachable_server_or_an_unknown_problem_is_one_line_and_an_exit_code(
    site: Site,
) -> None:
    kernel = write(site, "kernel.py", (VECTORADD / "pytorch.py").read_text())
    away = client_env(site, KJ_URL=f"http://127.0.0.1:{free_port()}")
    for args in (["problems"], ["submit", str(kernel), "--problem", "vectoradd"]):
        done = cli(site, *args, env=away)
        assert done.returncode == 7, done.stderr
        assert one_line(done.stderr).startswith("error: cannot reach the server at http://127.")
    as_json = cli(site, "problems", "--json", env=away)
    assert as_json.returncode == 7 and json.loads(as_json.stdout)["error"] == "unreachable"

    for args in (
        ["submit", str(kernel), "--problem", "nosuch"],
        ["bundle", "nosuch"],
        ["leaderboard", "nosuch"],
    ):
        done = cli(site, *args)
        assert done.returncode == 6, done.stderr
        assert one_line(done.stderr).startswith("error: not found: no problem named 'nosuch'")
    refused = cli(site, "submit", str(kernel), "--problem", "nosuch", "--json")
    assert json.loads(refused.stdout) == {
        "error": "not_found",
        "detail": "no problem named 'nosuch'",
        "http_status": 404,
        "retry_after_s": None,
        "message": one_line(refused.stderr).removeprefix("error: "),
    }
    bad_mode = cli(site, "submit", str(kernel), "--problem", "vectoradd", "--mode", "fastest")
    assert bad_mode.returncode == 6 and "invalid request" in one_line(bad_mode.stderr)
    unreadable = cli(site, "submit", str(site.root / "absent.py"), "--problem", "vectoradd")
    assert unreadable.returncode == 2 and "absent.py" in one_line(unreadable.stderr)


def test_a_ranked_run_is_followed_live_to_its_table_and_the_leaderboard(site: Site) -> None:
    kernel = write(site, "add.py", (VECTORADD / "pytorch.py").read_text())
    done = cli(site, "submit", str(kernel), "--problem", "vectoradd", "--mode", "leaderboard")
    assert done.returncode == 0, done.stdout + done.stderr
    submission_id = submitted_id(done.stderr)
    assert progress(done.stderr, submission_id) == ["queued", "running", "passed"]
    assert re.search(rf"submission {submission_id}: queued, .* on cpu", done.stderr)

    report = fetch(site, f"/api/v1/submissions/{submission_id}")
    assert report["status"] == "passed"
    for column in ("median", "min", "p10–p90", "cv", "samples"):
        assert column in done.stdout
    assert len(re.findall(r"^│ benchmark \d", done.stdout, flags=re.MULTILINE)) == len(
        report["cases"]
    )
    assert "score: " in done.stdout and repr(report["score"]) in done.stdout  # full precision

    board = cli(site, "leaderboard", "vectoradd")
    assert board.returncode == 0, board.stderr
    assert "ada" in board.stdout and repr(report["score"]) in board.stdout
    assert "you: rank 1" in board.stdout
    as_json = json.loads(cli(site, "leaderboard", "vectoradd", "--json").stdout)
    assert as_json["entries"][0]["user"] == "ada"
    assert as_json["entries"][0]["score"] == report["score"]  # not rounded on the way
    assert as_json == fetch(site, "/api/v1/leaderboards/vectoradd")  # the REST body

    again = cli(site, "status", str(submission_id), "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout) == report


def test_json_holds_every_case_and_the_exit_code_names_the_verdict(site: Site) -> None:
    wrong = write(site, "half.py", (VECTORSUM / "wrong.py").read_text())
    failed = cli(site, "submit", str(wrong), "--problem", "vectorsum", "--json")
    assert failed.returncode == 1, failed.stderr
    document = json.loads(failed.stdout)  # the whole of stdout is one JSON document
    assert document["status"] == "failed" and document["mode"] == "test"
    assert progress(failed.stderr, document["id"])[0] == "queued"
    tests = fetch(site, "/api/v1/problems/vectorsum")["tests"]
    assert [case["params"] for case in document["cases"]] == tests
    assert all(case["status"] == "failed" and case["message"] for case in document["cases"])
    assert document == fetch(site, f"/api/v1/submissions/{document['id']}")

    broken = cli(site, "submit", str(write(site, "broken.py", BROKEN)), "-p", "vectoradd")
    assert broken.returncode == 3, broken.stdout + broken.stderr
    assert progress(broken.stderr, submitted_id(broken.stderr))[-1] == "error"
    assert "status: error" in broken.stdout
    assert 'raise RuntimeError("broken on purpose")' in broken.stdout  # the traceback

    prying = cli(site, "submit", str(write(site, "prying.py", PRYING)), "-p", "vectoradd")
    assert prying.returncode == 5, prying.stdout + prying.stderr
    assert "status: rejected" in prying.stdout and "gc.get_objects" in prying.stdout


def test_a_hung_kernel_is_followed_while_it_runs_to_its_timeout(site: Site) -> None:
    hung = write(site, "hung.py", HUNG)
    started = time.monotonic()
    done = cli(site, "submit", str(hung), "--problem", "vectoradd")
    assert done.returncode == 4, done.stdout + done.stderr
    submission_id = submitted_id(done.stderr)
    assert progress(done.stderr, submission_id) == ["queued", "running", "timeout"]
    # Outside a terminal, a line for each step of the grading: the case it hangs in.
    assert re.search(
        rf"^submission {submission_id}: running: case 1 of 5 \(test\): size=127 seed=4242 · \d+ s$",
        done.stderr,
        flags=re.MULTILINE,
    ), done.stderr
    assert "status: timeout" in done.stdout and "time limit" in done.stdout
    assert time.monotonic() - started < 90

    status = cli(site, "status", str(submission_id))
    assert status.returncode == 4 and "status: timeout" in status.stdout


def test_submissions_lists_your_own_newest_first(site: Site) -> None:
    listed = cli(site, "submissions", "--json")
    assert listed.returncode == 0, listed.stderr
    mine = json.loads(listed.stdout)["submissions"]
    assert mine == fetch(site, "/api/v1/submissions")["submissions"]
    assert [row["id"] for row in mine] == sorted((row["id"] for row in mine), reverse=True)
    assert {row["status"] for row in mine} >= {"passed", "failed", "error", "rejected"}
    table = cli(site, "submissions", "--problem", "vectorsum")
    assert table.returncode == 0 and "vectorsum" in table.stdout and "vectoradd" not in table.stdout
    others = cli(site, "submissions", "--json", env=client_env(site, KJ_TOKEN=site.other_token))
    assert json.loads(others.stdout)["submissions"] == []


def test_a_bundle_grades_locally_as_the_server_grades(site: Site, tmp_path: Path) -> None:
    done = cli(site, "bundle", "vectoradd", "--into", str(tmp_path))
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "vectoradd"
    assert sorted(path.name for path in folder.iterdir()) == [
        "reference.py",
        "submission.py",
        "task.py",
        "task.yml",
        "utils.py",
    ]
    assert f"kerneljudge grade {folder}/ {folder / 'submission.py'}" in done.stdout
    # The template it brings passes; a wrong kernel fails on the server's test cases.
    grade = cli(site, "grade", f"{folder}/", str(folder / "submission.py"), "--device", "cpu")
    assert grade.returncode == 0, grade.stdout + grade.stderr
    wrong = cli(
        site, "grade", str(folder), str(VECTORADD / "wrong_zeros.py"), "--device", "cpu", "--json"
    )
    assert wrong.returncode == 1, wrong.stderr
    report = json.loads(wrong.stdout)
    assert report["status"] == "failed"
    tests = fetch(site, "/api/v1/problems/vectoradd")["tests"]
    assert [case["params"] for case in report["cases"]] == tests

    (folder / "submission.py").write_text("# my work in progress\n")
    in_the_way = cli(site, "bundle", "vectoradd", "--into", str(tmp_path))
    assert in_the_way.returncode == 2 and "exists already" in one_line(in_the_way.stderr)
    forced = cli(site, "bundle", "vectoradd", "--into", str(tmp_path), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["kept"] == ["submission.py"]
    assert (folder / "submission.py").read_text() == "# my work in progress\n"


NCU_REPORT = b"NVIDIA Nsight Compute report\x00\xff" * 5000
NCU_KERNEL = {
    "name": "void prefix_scan<float>(float const*, float*, int)",
    "launches": 3,
    "duration_us": 41.123456789012,
    "total_us": 123.4,
    "memory_pct": 64.5,
    "compute_pct": 20.25,
    "occupancy_pct": 48.0,
    "registers_per_thread": 40,
    "shared_bytes_per_block": 8192,
    "block_size": 512,
    "grid_size": 64,
    "stalls": [{"reason": "barrier", "per_issue": 2.75}],
}


def graded_on_a_gpu_worker(site: Site, submission_id: int, report: dict[str, Any]) -> None:
    """The submission, graded again as a GPU worker with Nsight Compute grades it: back to
    running, then its file and its report sent, as the grade job sends them, to the results
    step of the server, which records them."""
    database = site.root / "var" / "kerneljudge.sqlite3"
    engine = create_engine(f"sqlite:///{database.resolve()}")
    with engine.begin() as connection:
        connection.execute(
            update(Submission)
            .where(Submission.id == submission_id)
            .values(status="running", report=None, finished_at=None)
        )
    engine.dispose()
    worker = make_celery(Settings(data_dir=site.root / "var"))
    sent = {"submission_id": submission_id, "worker": "gpu-host:1.0"}
    encoded = base64.b64encode(NCU_REPORT).decode()
    with worker.producer_or_acquire() as producer:
        for task, result in (
            (task_names.RECORD_FILE, {"name": "profile.ncu-rep", "content_b64": encoded}),
            (task_names.RECORD_REPORT, {"report": report}),
        ):
            worker.send_task(
                task, args=[{**sent, **result}], queue=RESULTS_QUEUE, producer=producer
            )
    worker.close()


def test_profile_out_writes_the_nsight_compute_report_or_says_why_there_is_none(
    site: Site,
) -> None:
    """On the CPU worker there is no Nsight Compute report, and `submit --profile-out` says
    why in the worker's words; once a GPU worker's report and file are recorded, `status
    --profile-out` writes it byte for byte and the table shows the kernels."""
    kernel = write(site, "scan.py", (PREFIXSUM / "pytorch.py").read_text())
    out = site.root / "scan.ncu-rep"
    ranked = cli(site, "submit", str(kernel), "-p", "prefixsum", "--profile-out", str(out))
    assert ranked.returncode == 2 and "--profile-out needs --mode profile" in ranked.stderr
    done = cli(
        site, "submit", str(kernel), "-p", "prefixsum", "--mode", "profile",
        "--profile-out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    submission_id = submitted_id(done.stderr)
    on_cpu = fetch(site, f"/api/v1/submissions/{submission_id}")
    assert on_cpu["files"] == {} and not out.exists()
    why = on_cpu["cases"][0]["profile"]["why_not_ncu"]
    assert f"no Nsight Compute report, so nothing written to {out}: {why}" in done.stderr

    report = {
        **{key: on_cpu[key] for key in ("status", "message", "flags")},
        "problem": "prefixsum",
        "device": "cuda",
        "mode": "profile",
        "cases": [{**case, "profile": {"tool": "nsight-compute", "version": "2025.3.1",
                                       "calls": 3, "kernels": [NCU_KERNEL]}}
                  for case in on_cpu["cases"]],
        "files": {"profile.ncu-rep": {"bytes": len(NCU_REPORT)}},
    }  # fmt: skip
    graded_on_a_gpu_worker(site, submission_id, report)
    deadline = time.monotonic() + 60
    while (graded := fetch(site, f"/api/v1/submissions/{submission_id}"))["status"] == "running":
        assert time.monotonic() < deadline, site.log.read_text()[-5000:]
        time.sleep(0.3)
    assert graded["status"] == "passed", graded["message"]

    shown = cli(site, "status", str(submission_id), "--profile-out", str(out))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert out.read_bytes() == NCU_REPORT
    assert f"wrote the Nsight Compute report ({len(NCU_REPORT)} bytes) to {out}" in shown.stderr
    assert "prefix_scan<float>" in shown.stdout and "512 × 64" in shown.stdout
    assert "barrier 2.8" in shown.stdout and "Nsight Compute 2025.3.1" in shown.stdout
    as_json = json.loads(cli(site, "status", str(submission_id), "--json").stdout)
    assert as_json["files"] == {"profile.ncu-rep": {"bytes": len(NCU_REPORT)}}
    assert as_json["cases"][0]["profile"]["kernels"][0]["duration_us"] == 41.123456789012


def test_over_the_rate_limit_it_says_when_to_retry(site: Site) -> None:
    code = (VECTORSUM / "pytorch.py").read_text()
    for _ in range(RATE_LIMIT):
        accepted = httpx.post(
            f"{site.base}/api/v1/submissions",
            json={"problem": "vectorsum", "code": code, "mode": "test"},
            headers=site.headers(site.other_token),
            timeout=30,
        )
        assert accepted.status_code == 202, accepted.text
    kernel = write(site, "sum.py", code)
    env = client_env(site, KJ_TOKEN=site.other_token)
    done = cli(site, "submit", str(kernel), "--problem", "vectorsum", env=env)
    assert done.returncode == 6
    line = one_line(done.stderr)
    assert line.startswith("error: too many requests:")
    assert re.search(r"retry after \d\d:\d\d:\d\d \(in \d+ min( \d+ s)?\)$", line), line
    as_json = json.loads(
        cli(site, "submit", str(kernel), "-p", "vectorsum", "--json", env=env).stdout
    )
    assert as_json["http_status"] == 429 and 0 < as_json["retry_after_s"] <= 600


@pytest.fixture(scope="module")
def light_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment holding only the light install, as `pip install kerneljudge`
    makes it: the package and the client's dependencies, from the package index."""
    root = tmp_path_factory.mktemp("light")
    source = package_source(root / "source")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    installed = subprocess.run(
        [*pip, "install", "--quiet", "--disable-pip-version-check", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if installed.returncode != 0:
        service_missing("the package index", Exception(installed.stderr[-2000:]))
    return venv


def test_after_the_deadline_a_ranked_run_is_refused_in_a_sentence(site: Site) -> None:
    """The competition on a problem closed (its deadline set an hour ago, as the admin page
    sets it): a leaderboard-mode submit says so with the closing time and exits 6; a test
    run of the same kernel is still graded."""
    engine = create_engine(f"sqlite:///{(site.root / 'var' / 'kerneljudge.sqlite3').resolve()}")
    with engine.begin() as connection:
        connection.execute(
            update(Problem)
            .where(Problem.name == "grayscale")
            .values(deadline=datetime.now(UTC) - timedelta(hours=1))
        )
    engine.dispose()
    kernel = write(site, "gray.py", (GRAYSCALE / "pytorch.py").read_text())
    done = cli(site, "submit", str(kernel), "--problem", "grayscale", "--mode", "leaderboard")
    assert done.returncode == 6, done.stderr
    line = one_line(done.stderr)
    assert re.fullmatch(
        r"error: refused: the competition on 'grayscale' closed at \d{4}-\d\d-\d\d \d\d:\d\d "
        r"UTC; test and benchmark runs are still open",
        line,
    ), line
    ranked = ["submit", str(kernel), "-p", "grayscale", "--mode", "leaderboard", "--json"]
    as_json = json.loads(cli(site, *ranked).stdout)
    assert as_json["http_status"] == 409 and as_json["error"] == "conflict", as_json
    tested = cli(site, "submit", str(kernel), "--problem", "grayscale", "--mode", "test")
    assert tested.returncode == 0, tested.stderr


def test_the_light_install_has_no_torch_nor_generic_top_level_names_and_runs_every_command(
    site: Site, light_install: Path, tmp_path: Path
) -> None:
    python = light_install / "bin" / "python"
    env = client_env(site)
    env.pop("PYTHONPATH")  # the installed package, not the checkout
    # Neither the server's stack nor a generic top-level name of ours: those live inside
    # site-packages/kerneljudge/, importable by those names only once kerneljudge is imported.
    probe = (
        "import importlib.util as u, json, sysconfig\n"
        f"names = {(*SERVER_STACK, *GENERIC_NAMES)!r}\n"
        "print(json.dumps({'found': [m for m in names if u.find_spec(m)],\n"
        "                  'site_packages': sysconfig.get_paths()['purelib']}))\n"
    )
    done = subprocess.run(
        [str(python), "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    absent = json.loads(done.stdout)
    assert absent["found"] == []
    site_packages = Path(absent["site_packages"])
    assert (site_packages / "kerneljudge" / "server").is_dir()
    assert not {name for name in GENERIC_NAMES if (site_packages / name).exists()}
    command = [str(light_install / "bin" / "kerneljudge")]
    helped = cli(site, "submit", "--help", env=env, argv=command, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--problem" in helped.stdout
    kernel = write(site, "light.py", (VECTORSUM / "pytorch.py").read_text())

    listed = cli(site, "problems", "--json", env=env, argv=command, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "vectorsum" in {problem["name"] for problem in json.loads(listed.stdout)}
    submitted = cli(
        site, "submit", str(kernel), "-p", "vectorsum", env=env, argv=command, cwd=tmp_path
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "status: passed" in submitted.stdout
    for args in (["leaderboard", "vectoradd"], ["submissions"], ["bundle", "vectorsum"]):
        done = cli(site, *args, env=env, argv=command, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
    assert (tmp_path / "vectorsum" / "task.yml").is_file()
    # Grading locally needs torch: the command says which install brings it.
    grade = cli(site, "grade", "vectorsum/", str(kernel), env=env, argv=command, cwd=tmp_path)
    assert grade.returncode == 2
    assert "pip install 'kerneljudge[grade]'" in one_line(grade.stderr)


BLOCKING = (
    "import sys\n"
    f"for name in {SERVER_STACK!r}:\n"
    "    sys.modules[name] = None  # any import of it raises ImportError\n"
    "from server.cli import app\n"
    "app(prog_name='kerneljudge')\n"
)


def test_the_client_commands_never_import_the_server_stack(site: Site, tmp_path: Path) -> None:
    """The same promise without a package index: torch, FastAPI, SQLAlchemy, Celery,
    numpy and yaml cannot be imported, and the commands run all the same."""
    blocked = [sys.executable, "-c", BLOCKING]
    commands = [
        ["problems"],
        ["leaderboard", "vectoradd", "--json"],
        ["submissions"],
        ["bundle", "vectoradd", "--into", str(tmp_path)],
    ]
    newest = fetch(site, "/api/v1/submissions?limit=1")["submissions"]
    if newest:
        commands.append(["status", str(newest[0]["id"]), "--json"])
    for args in commands:
        done = cli(site, *args, argv=blocked)
        assert done.returncode in (0, 1, 3, 4, 5), (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
