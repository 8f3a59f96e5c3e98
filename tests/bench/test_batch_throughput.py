"""bench/batch_throughput.py's own arithmetic, with no service, GPU or KernelBench checkout:
the candidates it sends, how it spreads them, its percentiles and summary, and its pacing."""

from __future__ import annotations

import ast
from collections import Counter

import pytest

from bench.batch_throughput import (
    EXPECTED,
    KINDS,
    Graded,
    Pacer,
    candidate,
    kind_of,
    percentile,
    plan,
    summarise,
)


def test_each_candidate_is_python_defining_modelnew_on_the_reference() -> None:
    for kind in KINDS:
        tree = ast.parse(candidate(kind, "t"))
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        assert [c.name for c in classes] == ["ModelNew"], kind
        assert ast.unparse(classes[0].bases[0]) == "Model", kind
    assert candidate("wrong", "a") != candidate("wrong", "b")  # every item's code its own


def test_any_first_part_of_the_plan_covers_problems_and_kinds_evenly() -> None:
    problems = ["p1", "p2", "p3"]
    items = plan(problems, 1000, "test")
    assert len({item["key"] for item in items}) == 1000
    assert {item["mode"] for item in items} == {"test"}
    assert [kind_of(item["key"]) for item in items[: len(KINDS)]] == list(KINDS)
    first = items[: len(problems) * len(KINDS)]
    assert Counter((item["problem"], kind_of(item["key"])) for item in first) == {
        (problem, kind): 1 for problem in problems for kind in KINDS
    }
    problems_seen = Counter(item["problem"] for item in items).values()
    kinds_seen = Counter(kind_of(item["key"]) for item in items).values()
    assert max(problems_seen) - min(problems_seen) <= len(KINDS)
    assert max(kinds_seen) - min(kinds_seen) <= 1


def test_percentiles_interpolate_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) is None


def graded(key: str, posted: float, verdict: float | None, status: str | None) -> Graded:
    return Graded(
        key,
        "p1",
        posted_at=posted,
        verdict_at=verdict,
        verdicts=int(verdict is not None),
        status=status,
        error_class={"failed": "wrong", "error": "runtime"}.get(status or ""),
        submission_id=hash(key) % 1000,
    )


def test_the_summary_counts_verdicts_rates_and_waits() -> None:
    items = {
        g.key: g
        for g in (
            graded("00000-reference-p1", 10.0, 14.0, "passed"),
            graded("00001-wrong-p1", 10.0, 16.0, "failed"),
            graded("00002-crash-p1", 10.0, 22.0, "error"),
            graded("00003-slow-p1", 10.0, 46.0, "failed"),  # not what a slow one should get
            graded("00004-rewrite-p1", 10.0, None, None),  # no verdict before the end
        )
    }
    ran = summarise(items, {}, busy_percent=42.0)
    assert ran["items_sent"] == 5 and ran["verdicts"] == 4
    assert ran["unfinished"] == 1 and ran["unfinished_first"] == ["00004-rewrite-p1"]
    assert ran["exactly_one_verdict"] is False and ran["more_than_one_verdict"] == []
    assert ran["statuses"] == {"passed": 1, "failed": 2, "error": 1}
    assert ran["error_classes"] == {"wrong": 2, "runtime": 1}
    assert ran["by_kind"]["crash"] == {"error/runtime": 1}
    assert ran["unexpected"] == 1 and ran["unexpected_first"][0]["key"] == "00003-slow-p1"
    assert ran["wall_s"] == pytest.approx(36.0)
    assert ran["gradings_per_gpu_hour"] == pytest.approx(4 * 3600 / 36)
    assert ran["post_to_verdict_s"]["median"] == pytest.approx(9.0)  # of 4, 6, 12, 36
    assert ran["gpu_busy_fraction"] == pytest.approx(0.42)
    assert EXPECTED["crash"] == "error"


def test_without_a_deadline_everything_goes_at_once() -> None:
    assert Pacer(None).next_wave(0.0, left=1000, outstanding=0, finished=0, since=None) == 1000


def test_with_a_deadline_waves_follow_the_rate_and_stop_where_they_would_not_finish() -> None:
    pacer = Pacer(ends_at=600.0, first_wave=10, lead_s=30.0, wave_s=60.0)
    assert pacer.next_wave(0.0, left=1000, outstanding=0, finished=0, since=None) == 10
    # One verdict so far: no rate yet.
    assert pacer.next_wave(5.0, left=990, outstanding=9, finished=1, since=0.0) == 0
    # 8 done in 20 s (0.4 a second): 2 queued is under 30 s of work, so a minute's worth.
    assert pacer.next_wave(20.0, left=990, outstanding=2, finished=8, since=0.0) == 24
    # 20 queued is 50 s of work: more than the lead, wait.
    assert pacer.next_wave(20.0, left=990, outstanding=20, finished=8, since=0.0) == 0
    # Near the end only what 80% of the rate finishes in time: 10 s left at 0.5 a second
    # (4 items), 2 of them queued.
    assert pacer.next_wave(590.0, left=500, outstanding=2, finished=295, since=0.0) == 2
    assert pacer.next_wave(599.0, left=500, outstanding=2, finished=299, since=0.0) == 0
