"""Building a problem's leaderboard and submissions, and a competition's standings, as tables
written as CSV or Parquet.

A table is a list of columns (name and Arrow type) and rows of plain values; both formats
are written from the same rows, so they always agree.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy.orm import Session

from server.competitions.schemas import StandingsOut
from server.errors import NotFound
from server.leaderboards import service as leaderboards
from server.models import Problem
from server.problems import repository as problems_repository
from server.problems import service as problems
from server.settings import Settings
from server.submissions import repository as submissions_repository

TIMESTAMP = pa.timestamp("us", tz="UTC")

LEADERBOARD_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("gpu", pa.string()),
    ("rank", pa.int64()),
    ("user", pa.string()),
    ("score", pa.float64()),
    ("sol_fraction", pa.float64()),
    ("submission_id", pa.int64()),
    ("submitted_at", TIMESTAMP),
)

SUBMISSION_COLUMNS: Sequence[tuple[str, pa.DataType]] = (
    ("id", pa.int64()),
    ("user", pa.string()),
    ("mode", pa.string()),
    ("gpu", pa.string()),
    ("status", pa.string()),
    ("score", pa.float64()),
    ("problem_version", pa.int64()),
    ("hidden", pa.bool_()),
    ("hacked", pa.bool_()),
    ("created_at", TIMESTAMP),
    ("finished_at", TIMESTAMP),
    ("code_sha256", pa.string()),
)

TABLES = ("leaderboard", "submissions")
FORMATS = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}


@dataclass(frozen=True)
class Table:
    columns: Sequence[tuple[str, pa.DataType]]
    rows: list[tuple[Any, ...]]


@dataclass(frozen=True)
class Export:
    filename: str
    media_type: str
    content: bytes


def leaderboard_table(session: Session, problem: Problem, settings: Settings) -> Table:
    """The leaderboard on every device type the problem is offered on, each ranked."""
    rows = [
        (
            gpu,
            entry.rank,
            entry.user,
            entry.score,
            entry.sol_fraction,
            entry.submission_id,
            entry.submitted_at,
        )
        for gpu in problems.gpu_types_for(problem, settings)
        for entry in leaderboards.entries(session, problem, gpu)
    ]
    return Table(LEADERBOARD_COLUMNS, rows)


def submissions_table(session: Session, problem: Problem) -> Table:
    """Every submission, hidden and hacked ones included (the organizers' view); the code's
    SHA-256 stands for the code, which stays out of the export."""
    rows = [
        (
            submission.id,
            submission.user.name,
            submission.mode,
            submission.gpu_type,
            submission.status,
            submission.score,
            submission.problem_version,
            submission.is_hidden,
            submission.is_hacked,
            submission.created_at,
            submission.finished_at,
            submission.code_sha256,
        )
        for submission in submissions_repository.list_problem_submissions(session, problem.id)
    ]
    return Table(SUBMISSION_COLUMNS, rows)


def standings_table(standings: StandingsOut) -> Table:
    """One row a team, as the standings list them: rank, team, members (space-separated),
    total, then for each problem its rank, score, value and submission id (empty where the
    team has no entry), then the reason of a disqualification."""
    columns: list[tuple[str, pa.DataType]] = [
        ("rank", pa.int64()),
        ("team", pa.string()),
        ("members", pa.string()),
        ("total", pa.float64()),
    ]
    for problem in standings.problems:
        columns += [
            (f"{problem.name}_rank", pa.int64()),
            (f"{problem.name}_score", pa.float64()),
            (f"{problem.name}_value", pa.float64()),
            (f"{problem.name}_submission_id", pa.int64()),
        ]
    columns.append(("disqualified", pa.string()))
    rows = []
    for row in standings.rows:
        values: list[Any] = [row.rank, row.team, " ".join(row.members), row.total]
        for problem in standings.problems:
            cell = row.problems.get(problem.name)
            values += (
                [cell.rank, cell.score, cell.value, cell.submission_id]
                if cell is not None
                else [None] * 4
            )
        values.append(row.disqualified.reason if row.disqualified is not None else None)
        rows.append(tuple(values))
    return Table(columns, rows)


def standings_csv(standings: StandingsOut) -> Export:
    return Export(
        f"{standings.competition}_standings.csv",
        FORMATS["csv"],
        to_csv(standings_table(standings)),
    )


def to_csv(table: Table) -> bytes:
    """A header row, then one row per record; times in ISO 8601 UTC, missing values empty."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([name for name, _ in table.columns])
    for row in table.rows:
        writer.writerow([csv_value(value) for value in row])
    return out.getvalue().encode()


def csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def to_parquet(table: Table) -> bytes:
    schema = pa.schema([pa.field(name, kind) for name, kind in table.columns])
    arrow = pa.Table.from_arrays(
        [
            pa.array([row[index] for row in table.rows], type=kind)
            for index, (_, kind) in enumerate(table.columns)
        ],
        schema=schema,
    )
    sink = io.BytesIO()
    pq.write_table(arrow, sink)
    return sink.getvalue()


def export(
    session: Session, settings: Settings, problem_name: str, table_name: str, fmt: str
) -> Export:
    """A problem's ``leaderboard`` or ``submissions`` as ``csv`` or ``parquet``."""
    if table_name not in TABLES or fmt not in FORMATS:
        raise NotFound(
            f"no export {table_name}.{fmt}; there are "
            + ", ".join(f"{t}.{f}" for t in TABLES for f in FORMATS)
        )
    problem = problems_repository.get_problem(session, problem_name)
    if problem is None:
        raise NotFound(f"no problem named {problem_name!r}")
    table = (
        leaderboard_table(session, problem, settings)
        if table_name == "leaderboard"
        else submissions_table(session, problem)
    )
    content = to_csv(table) if fmt == "csv" else to_parquet(table)
    return Export(f"{problem.name}_{table_name}.{fmt}", FORMATS[fmt], content)
