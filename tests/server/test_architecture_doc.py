"""docs/architecture.md is the newcomer's map: every path it names in backquotes exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "architecture.md").read_text()


def test_every_path_the_architecture_names_exists() -> None:
    named = set(re.findall(r"`((?:server|grader|sandbox|bench|tests|docs)/[\w./-]*)`", DOC))
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert named and not missing, missing
