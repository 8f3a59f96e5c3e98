"""The leaderboard's chart of the best score over time, laid out as SVG coordinates on the
server, so the page needs no charting script."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from server.leaderboards.service import Record

WIDTH, HEIGHT = 1040, 230
# LEFT leaves room for the score labels at the larger size a phone draws them (site.css).
LEFT, RIGHT, TOP, BOTTOM = 130, 20, 16, 40


@dataclass
class Point:
    x: float
    y: float
    label: str


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    path: str = ""
    points: list[Point] = field(default_factory=list)
    y_ticks: list[tuple[float, float]] = field(default_factory=list)  # (y, seconds)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)  # (x, date)
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


def best_score_chart(
    records: list[Record], now: datetime, format_score: Callable[[float], str]
) -> Chart | None:
    """A step line: the best score holds until the next record beats it; scores on a log
    scale, since kernels improve by factors."""
    if not records:
        return None
    chart = Chart()
    start = records[0].at.timestamp()
    end = max(now.timestamp(), records[-1].at.timestamp(), start + 60)
    low = math.log10(min(r.score for r in records))
    high = math.log10(max(r.score for r in records))
    if high - low < 0.05:
        low, high = low - 0.1, high + 0.1
    pad = (high - low) * 0.08
    low, high = low - pad, high + pad

    def x_of(seconds: float) -> float:
        return chart.left + (seconds - start) / (end - start) * (chart.right - chart.left)

    def y_of(score: float) -> float:
        return chart.top + (high - math.log10(score)) / (high - low) * (chart.bottom - chart.top)

    steps: list[str] = []
    for index, record in enumerate(records):
        x, y = x_of(record.at.timestamp()), y_of(record.score)
        if index:
            steps.append(f"H{x:.1f}V{y:.1f}")
        else:
            steps.append(f"M{x:.1f},{y:.1f}")
        label = f"{record.user}: {format_score(record.score)}"
        chart.points.append(Point(x, y, f"{label} at {record.at:%Y-%m-%d %H:%M} UTC"))
    steps.append(f"H{chart.right:.1f}")
    chart.path = "".join(steps)
    for step in range(4):
        exponent = low + (high - low) * (step + 0.5) / 4
        chart.y_ticks.append((y_of(10**exponent), 10**exponent))
    for step in range(3):
        seconds = start + (end - start) * step / 2
        chart.x_ticks.append(
            (x_of(seconds), datetime.fromtimestamp(seconds, tz=now.tzinfo).strftime("%b %d %H:%M"))
        )
    return chart
