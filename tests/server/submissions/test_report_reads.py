"""A report is read past the door by its attributes only: `server/` never reads a grading or
validation report, or any part of one, as a dict again.

The rule the scan applies to every `server/**/*.py`: no subscript (`x["median_s"]`) and no
`.get(...)` call on a name or an attribute called one of REPORT_PARTS (a report, its cases and
what a case or a report carries: time, runner_time, roofline, profile, phases, device_peaks),
nor on `(x or {})` where x is one. Those names are kept for reports and their parts in
`server/`; a dict of another kind goes by another name. Two places are left out: the door,
`server/submissions/reports.py`, which turns what the database keeps into a `Report`, and the
submitter's command line, `server/client/`, which reads the REST API's JSON bodies over HTTP
(the API's schema, not a report object)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).resolve().parents[3] / "server"
REPORT_PARTS = frozenset(
    {
        "report",
        "reports",
        "case",
        "cases",
        "time",
        "timing",
        "runner_time",
        "roofline",
        "profile",
        "phases",
        "device_peaks",
    }
)
LEFT_OUT = ("submissions/reports.py", "client/")


def _part_name(node: ast.AST) -> str | None:
    """The report part `node` names: `report`, `submission.report`, `(case.time or {})`."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return _part_name(node.values[0])
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return None
    return name if name in REPORT_PARTS else None


def dict_reads(source: str) -> Iterator[int]:
    """Lines where a report or a part of one is read as a dict."""
    for node in ast.walk(ast.parse(source)):
        subscript = (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and not isinstance(node.slice, ast.Slice)
            and _part_name(node.value) is not None
        )
        lookup = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _part_name(node.func.value) is not None
        )
        if subscript or lookup:
            yield getattr(node, "lineno", 0)


def test_the_scan_finds_a_report_read_as_a_dict() -> None:
    source = (
        "report = submission.report or {}\n"
        "message = report.get('message')\n"
        "median = (case.get('time') or {}).get('median_s')\n"
        "fraction = (case.roofline or {}).get('sol_fraction')\n"
        "first = submission.report['cases'][0]\n"
        "fine = case.time.median_s if case.time else None\n"
        "also_fine = [case.time for case in report.cases[:3]]\n"
        "name = problem.files.get('task.py')\n"
    )
    assert sorted(dict_reads(source)) == [2, 3, 4, 5]


def test_no_report_is_read_as_a_dict_in_server() -> None:
    found = [
        f"{path.relative_to(SERVER)}:{line}"
        for path in sorted(SERVER.rglob("*.py"))
        if not str(path.relative_to(SERVER)).startswith(LEFT_OUT)
        for line in dict_reads(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "read a report through server/submissions/reports.py and its attributes: "
        + ", ".join(found)
    )
