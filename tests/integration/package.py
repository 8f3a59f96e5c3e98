"""What `pip install .` builds the package from, copied out of the checkout so that a build
leaves nothing in it."""

from __future__ import annotations

import shutil
from pathlib import Path

from rig.processes import REPO_ROOT

SOURCE = ("kerneljudge", "server", "grader", "sandbox", "setup.py", "pyproject.toml", "README.md")


def package_source(into: Path) -> Path:
    into.mkdir(parents=True)
    for name in SOURCE:
        path = REPO_ROOT / name
        if path.is_dir():
            ignored = shutil.ignore_patterns("__pycache__", "node_modules")
            shutil.copytree(path, into / name, ignore=ignored)
        else:
            shutil.copy(path, into / name)
    return into
