"""bench/README.md is the shelf's index: one row for every file in `bench/` and none for a
file that is gone, each row naming the sections of docs/benchmarks.md it feeds (by heading,
its date left off) or saying it feeds none."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "bench"
ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([^|]+) \|$", re.MULTILINE)
QUOTED = re.compile(r'"([^"]+)"')


def rows() -> dict[str, str]:
    """The table's files (relative to bench/) and their "feeds" cells."""
    return dict(ROW.findall((BENCH / "README.md").read_text()))


def bench_files() -> set[str]:
    return {
        str(path.relative_to(BENCH))
        for path in BENCH.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def headings() -> list[str]:
    text = (REPO / "docs" / "benchmarks.md").read_text()
    return re.findall(r"^#{2,3} (.+)$", text, re.MULTILINE)


def test_every_file_in_bench_has_a_row_and_every_row_a_file() -> None:
    listed = set(rows())
    present = bench_files()
    assert not present - listed, f"missing from bench/README.md: {sorted(present - listed)}"
    assert not listed - present, f"listed but not in bench/: {sorted(listed - present)}"


def test_every_row_names_the_sections_it_feeds_or_none() -> None:
    known = headings()
    wrong = {}
    for name, feeds in rows().items():
        named = QUOTED.findall(feeds)
        if feeds.startswith("none"):
            continue
        unknown = [
            section
            for section in named
            if not any(h == section or h.startswith(f"{section} (") for h in known)
        ]
        if not named or unknown:
            wrong[name] = unknown or feeds
    assert not wrong, wrong
