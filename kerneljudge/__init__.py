"""The one top-level name the package installs, so that it puts no generic ones into a user's
environment. Importing it makes `server`, `grader` and `sandbox` importable by those names,
as the code imports them: a wheel holds them inside this folder, a checkout beside it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The folder holding server/, grader/ and sandbox/: this one in a wheel, a checkout's root.
PACKAGES_DIR = HERE if (HERE / "server").is_dir() else HERE.parent

if PACKAGES_DIR == HERE:
    # First, so that ours win over any other `server` in this process.
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
elif importlib.util.find_spec("server") is None:
    # A checkout run from elsewhere (an editable install maps only kerneljudge's names).
    sys.path.append(str(PACKAGES_DIR))


def python_env() -> dict[str, str]:
    """This process's environment with PACKAGES_DIR first on PYTHONPATH: for a fresh
    interpreter of ours, such as `python -m grader.calibrate`, that imports the packages by
    name without importing this one."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGES_DIR), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    )
    return env


def main() -> None:
    """The `kerneljudge` command."""
    from server.cli import app

    app()
