"""The outbox is infrastructure under the services: services import it, it imports no
service, and only the tasks (server/worker/) and the command that starts them import the
tasks. Read from the source, so a cycle dodged by a late import counts too."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[3] / "server"
# What the outbox may import of the server: the tables, sessions, settings and caches.
OUTBOX_MAY_IMPORT = ("server.models", "server.db", "server.settings", "server.cache")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_outbox_imports_no_service() -> None:
    found = {
        f"{path.name}: {name}"
        for path in sorted((SERVER / "outbox").glob("*.py"))
        for name in imported(path)
        if name.startswith("server.")
        and not name.startswith("server.outbox")
        and not name.startswith(OUTBOX_MAY_IMPORT)
    }
    assert not found, sorted(found)


def test_only_the_tasks_and_the_cli_import_the_tasks() -> None:
    found = {
        f"{path.relative_to(SERVER)}: {name}"
        for path in sorted(SERVER.rglob("*.py"))
        if path.parent.name != "worker" and path.name != "cli.py"
        for name in imported(path)
        if name.startswith("server.worker")
    }
    assert not found, sorted(found)
