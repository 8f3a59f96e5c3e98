"""The package as `pip install '.[server]'` puts it into site-packages, as the Docker images
install it: one top-level name, kerneljudge, holding server/, grader/ and sandbox/, from
whose files alone a server migrates its database, serves and grades in its worker's
sandbox."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from rig.processes import (
    REPO_ROOT,
    TERMINAL,
    service_env,
    serving,
    submit,
    wait_for,
)
from server.db import alembic_config
from tests.integration.package import package_source

pytestmark = pytest.mark.integration

# Run by the installed interpreter: what is importable before `import kerneljudge`, where
# each package and folder the server reads came from after it, and this host's device as
# the server finds it (a fresh interpreter that imports grader).
LOCATIONS = """
import importlib.util, json
before = [name for name in ("server", "grader", "sandbox") if importlib.util.find_spec(name)]
import kerneljudge, server, grader, sandbox
from grader.confine import GRADER_PACKAGE
from grader.problem import BUILTIN_DIR
from server.db import MIGRATIONS_DIR
from server.devices import local_device
print(json.dumps({
    "before": before,
    "files": [module.__file__ for module in (kerneljudge, server, grader, sandbox)],
    "folders": [str(GRADER_PACKAGE), str(BUILTIN_DIR), str(MIGRATIONS_DIR)],
    "device": local_device(),
}))
"""


@dataclass
class Install:
    venv: Path
    site_packages: Path


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    """A virtual environment with the package installed into its site-packages, and the
    built-in problems beside its grader/ as the Docker images put them. Its dependencies are
    this interpreter's, through .pth lines naming their folders: those folders' own .pth
    files (an editable install's finder of the checkout) do not run."""
    root = tmp_path_factory.mktemp("installed")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site_packages = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    ours = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    (site_packages / "dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
         "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
         str(package_source(root / "source"))],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    shutil.copytree(REPO_ROOT / "problems", site_packages / "kerneljudge" / "problems")
    return Install(venv, site_packages)


def test_the_installed_files_migrate_serve_and_grade(install: Install, tmp_path: Path) -> None:
    env = service_env(tmp_path / "var")
    env.pop("PYTHONPATH", None)
    command = [str(install.venv / "bin" / "kerneljudge")]

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True)

    assert {path.name for path in install.site_packages.iterdir()} == {
        "dependencies.pth", "kerneljudge", "kerneljudge-0.1.0.dist-info"
    }  # fmt: skip
    located = run([str(install.venv / "bin" / "python"), "-c", LOCATIONS])
    assert located.returncode == 0, located.stderr
    found = json.loads(located.stdout)
    assert found["before"] == []
    inside = install.site_packages / "kerneljudge"
    assert found["files"] == [
        str(inside / name / "__init__.py") for name in ("", "server", "grader", "sandbox")
    ]
    assert found["folders"] == [
        str(inside / "grader"), str(inside / "problems"), str(inside / "server" / "migrations")
    ]  # fmt: skip
    assert found["device"][0] in ("cpu", "cuda")

    helped = run([*command, "--help"])
    assert helped.returncode == 0, helped.stderr
    for name in ("serve", "worker", "grade"):
        assert re.search(rf"^\W+{name}\s", helped.stdout, flags=re.MULTILINE), helped.stdout

    # `user add` migrates a new database and adds the built-in problems first.
    added = run([*command, "user", "add", "ada"])
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip().splitlines()[-1]
    engine = create_engine(f"sqlite:///{tmp_path / 'var' / 'kerneljudge.sqlite3'}")
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        problems = set(connection.execute(text("SELECT name FROM problems")).scalars())
    engine.dispose()
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert version == head
    assert {"vectoradd", "vectorsum"} <= problems

    # serve: the API, the results step and the embedded worker, each from the installed files.
    log = tmp_path / "serve.log"
    with serving(env, log, command=command, cwd=tmp_path) as base:
        code = (REPO_ROOT / "problems" / "vectoradd" / "solutions" / "pytorch.py").read_text()
        graded = submit(base, token, "vectoradd", code, "test")
        report = wait_for(base, token, graded, TERMINAL, 120, log)
    assert report["status"] == "passed", report["message"]
