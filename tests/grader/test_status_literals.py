"""A verdict in grader/ is a Status member, never a string literal: a misspelt literal would
be a new status that no reader of reports knows, where a misspelt member fails at import."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

GRADER = Path(__file__).resolve().parents[2] / "grader"
SERVER = GRADER.parent / "server"
# Fields that carry a Status, a Mode or a ValidationStatus.
VERDICT_FIELDS = {"status", "mode"}
# Calls whose `mode` is no grading mode (ast.parse's, a file's, pydantic's model_dump).
OTHER_MODES = {
    "parse",
    "compile",
    "open",
    "fdopen",
    "field_validator",
    "model_validator",
    "model_dump",
}


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _texts(node: ast.AST) -> Iterator[ast.AST]:
    """String literals `node` may evaluate to (through `a if c else b`)."""
    if isinstance(node, ast.IfExp):
        yield from _texts(node.body)
        yield from _texts(node.orelse)
    elif _is_text(node):
        yield node


def _names_verdict(node: ast.AST) -> bool:
    """`x.status`, a variable `status`, or `x["status"]` (a report's JSON)."""
    if isinstance(node, ast.Subscript):
        return _is_text(node.slice) and getattr(node.slice, "value", None) in VERDICT_FIELDS
    if isinstance(node, ast.Name):
        return node.id in VERDICT_FIELDS
    return isinstance(node, ast.Attribute) and node.attr in VERDICT_FIELDS


def verdict_literals(source: str) -> Iterator[int]:
    """Lines where a string literal stands for a status or a mode: Stop's status, a
    `status=` or `mode=` argument, an assignment to `.status` or `.mode`, or a comparison
    with one (`x.status`, a variable `status`, `x["status"]`)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "Stop" and node.args:
                yield from (text.lineno for text in _texts(node.args[0]))
            for keyword in node.keywords:
                if keyword.arg == "status" or (keyword.arg == "mode" and name not in OTHER_MODES):
                    yield from (text.lineno for text in _texts(keyword.value))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                for left, right in pairs:
                    if isinstance(left, ast.Attribute) and _names_verdict(left):
                        yield from (text.lineno for text in _texts(right))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_verdict(operand) for operand in operands):
                for operand in operands:
                    texts = operand.elts if isinstance(operand, ast.Tuple | ast.Set) else [operand]
                    yield from (text.lineno for text in texts if _is_text(text))


def test_the_scan_finds_a_misspelt_status() -> None:
    source = (
        'raise Stop("rejcted", "the runner lied")\n'
        'result.status, result.message = "failed", "wrong"\n'
        'report = Report(status="passed" if ok else Status.FAILED, mode="test")\n'
        'if report.status != "passed":\n'
        "    raise Stop(Status.REJECTED, 'fine')\n"
    )
    assert sorted(verdict_literals(source)) == [1, 2, 3, 3, 4]


def test_no_status_or_mode_in_grader_is_a_string_literal() -> None:
    found = [
        f"{path.name}:{line}"
        for path in sorted(GRADER.glob("*.py"))
        for line in verdict_literals(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use Status, Mode or ValidationStatus members: " + ", ".join(found)


def test_no_status_or_mode_in_server_is_a_string_literal() -> None:
    """The same in the service, its command line included: a status or a mode is compared
    with Status or Mode members (a StrEnum member equals its string, so JSON still reads)."""
    found = [
        f"{path.relative_to(SERVER)}:{line}"
        for path in sorted(SERVER.rglob("*.py"))
        for line in verdict_literals(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use Status or Mode members: " + ", ".join(found)
