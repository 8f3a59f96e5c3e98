"""The docs are a newcomer's map: every repository path they name in backquotes exists
(docs/architecture.md above all; a path only in git's history is named with its commit,
`abc1234^:bench/x.py`, which this leaves alone)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", REPO / "bench" / "README.md"]
PATH = re.compile(
    r"`((?:kerneljudge|server|grader|sandbox|bench|tests|docs|problems|docker)/[\w./-]*)`"
)


def test_every_path_the_architecture_names_exists() -> None:
    named = set(PATH.findall((REPO / "docs" / "architecture.md").read_text()))
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert named and not missing, missing


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(REPO)))
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    named = set(PATH.findall(doc.read_text()))
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, missing
