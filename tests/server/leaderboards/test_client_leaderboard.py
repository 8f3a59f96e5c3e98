"""`kerneljudge leaderboard`'s table: a score too short to rank finely, or graded on fewer
ranks than its problem asks for, is marked, with what the mark means, as the page marks it."""

from __future__ import annotations

from rich.console import Console

from server.client import show


def entry(
    rank: int, user: str, score: float, short_calls: bool, ranks_scaled: bool = False
) -> dict[str, object]:
    return {"rank": rank, "user": user, "score": score, "sol_fraction": None,
            "short_calls": short_calls, "ranks_scaled": ranks_scaled, "submission_id": rank,
            "problem_version": 1, "submitted_at": "2026-12-06T21:00:00Z"}  # fmt: skip


def shown(*entries: dict[str, object]) -> str:
    out = Console(record=True, width=200)
    board = {"problem": "p", "gpu": "H100", "total": len(entries), "entries": list(entries)}
    show.leaderboard(out, board)
    return out.export_text()


def test_a_short_calls_score_is_marked_and_the_mark_explained() -> None:
    text = shown(entry(1, "ada", 2e-5, True), entry(2, "bob", 1e-3, False))
    ada, bob = (next(line for line in text.splitlines() if name in line) for name in ("ada", "bob"))
    assert "≈" in ada and "≈" not in bob
    assert show.SHORT_CALLS_NOTE in " ".join(text.split())


def test_a_score_graded_on_fewer_ranks_is_marked_and_the_mark_explained() -> None:
    text = shown(entry(1, "ada", 1e-3, False, ranks_scaled=True), entry(2, "bob", 2e-3, False))
    ada, bob = (next(line for line in text.splitlines() if name in line) for name in ("ada", "bob"))
    assert "↓" in ada and "↓" not in bob
    assert show.RANKS_SCALED_NOTE in " ".join(text.split())


def test_no_mark_no_note() -> None:
    text = shown(entry(1, "bob", 1e-3, False))
    assert "≈" not in text and "↓" not in text
