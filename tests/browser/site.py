"""A real KernelJudge for browser tests and screenshots: ``kerneljudge serve`` with SQLite and
the embedded broker (so its own worker grades), driven by Debian's chromium through Playwright."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Playwright, expect

from rig.processes import REPO_ROOT, TERMINAL, kerneljudge, service_env, serving

PROBLEMS_DIR = REPO_ROOT / "problems"
VECTORADD = PROBLEMS_DIR / "vectoradd" / "solutions"
ADMIN_NAME = "organizer"
ADMIN_PASSWORD = "organizer-password"
# A vectoradd kernel whose every call takes 2.5 s: its five test cases grade slowly enough
# (within test mode's 20 s) for the page to show which case is running, on a desktop and
# then on a phone.
SLOW_ADD = """import time


def custom_kernel(data):
    time.sleep(2.5)
    A, B, out = data
    out[...] = A + B
    return out
"""
# Root runs chromium without its own sandbox; /dev/shm is small in containers.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch(playwright: Playwright) -> Browser:
    path = chromium_path()
    assert path is not None, "chromium is not installed"
    return playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)


@dataclass
class Site:
    base: str
    env: dict[str, str]
    log: Path

    def url(self, path: str) -> str:
        return self.base + path


def add_user_with_password(env: dict[str, str], name: str, password: str, *, admin: bool) -> str:
    """A user made by the command line, as an organizer makes the first admin; returns its
    API token."""
    args = ["user", "add", name, "--password-stdin"] + (["--admin"] if admin else [])
    done = subprocess.run(
        kerneljudge(*args),
        env=env,
        cwd=REPO_ROOT,
        input=password + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@contextmanager
def running_site(data_dir: Path, **settings: str) -> Iterator[Site]:
    """``settings`` are KJ_ settings by their lower-case names (``smtp_host="..."``)."""
    env = service_env(data_dir, **settings)
    add_user_with_password(env, ADMIN_NAME, ADMIN_PASSWORD, admin=True)
    log = data_dir / "serve.log"
    with serving(env, log) as base:
        yield Site(base, env, log)


def sign_up(page: Page, site: Site, name: str, password: str) -> None:
    page.goto(site.url("/signup"))
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_label("Password again").fill(password)
    page.get_by_role("button", name="Sign up").click()
    expect(page.locator(".account .who")).to_have_text(name)


def log_in(page: Page, site: Site, name: str, password: str) -> None:
    page.goto(site.url("/login"))
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".account .who")).to_have_text(name)


def log_in_as_organizer(page: Page, site: Site) -> None:
    """As the admin account that ``running_site`` makes for every site."""
    log_in(page, site, ADMIN_NAME, ADMIN_PASSWORD)


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out", exact=True).click()
    expect(page.get_by_role("banner").get_by_role("link", name="Log in")).to_be_visible()


def submit_by_form(
    page: Page, site: Site, problem: str, mode: str, *, code: str = "", file: Path | None = None
) -> int:
    """Submit through the form; returns the new submission's id from the page it lands on."""
    page.goto(site.url(f"/submit?problem={problem}"))
    page.locator(f"label[for=mode-{mode}]").click()
    if file is not None:
        page.get_by_label("Upload a file").set_input_files(file)
    else:
        page.get_by_label("Code editor").fill(code)
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url(re.compile(r"/submissions/\d+$"))
    return int(page.url.rsplit("/", 1)[1])


def wait_for_verdict(page: Page, status: str, timeout_s: float = 180) -> None:
    expect(page.locator("#result [data-status]")).to_have_attribute(
        "data-status", status, timeout=timeout_s * 1000
    )


def renamed_problem_archive(source: str, name: str, description: str | None = None) -> bytes:
    """A .tar.gz of a built-in problem folder under a new name, with the shared files its
    task.yml names by ``../``, as an organizer would pack it; ``description``, when given,
    comes before the task's own (so the files, and the version, differ)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for shared in ("utils.py", "eval.py"):
            if (PROBLEMS_DIR / shared).exists():
                archive.add(PROBLEMS_DIR / shared, arcname=f"pack/{shared}")
        for path in sorted((PROBLEMS_DIR / source).iterdir()):
            if path.name == "task.yml" and description is not None:
                task = path.read_text().replace(
                    "description: |\n", f"description: |\n  {description}\n\n", 1
                )
                info = tarfile.TarInfo(f"pack/{name}/{path.name}")
                info.size = len(task.encode())
                archive.addfile(info, io.BytesIO(task.encode()))
            elif path.is_file():
                archive.add(path, arcname=f"pack/{name}/{path.name}")
    return buffer.getvalue()


def api_submit(site: Site, token: str, code: str, mode: str = "test") -> int:
    """A vectoradd submission over the REST API, as a script would send it."""
    response = httpx.post(
        site.url("/api/v1/submissions"),
        json={"problem": "vectoradd", "code": code, "mode": mode},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def api_verdict(site: Site, token: str, submission_id: int, timeout_s: float = 180) -> str:
    """The submission's status once it is graded, polled over the REST API."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = httpx.get(
            site.url(f"/api/v1/submissions/{submission_id}"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ).json()["status"]
        if status in TERMINAL:
            return str(status)
        time.sleep(0.5)
    raise AssertionError(f"submission {submission_id} was not graded in {timeout_s} s")
