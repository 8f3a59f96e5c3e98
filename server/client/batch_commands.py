"""``kerneljudge batch submit DIR``: every .py file in a folder as one item of a batch,
keyed by its file name, each verdict printed as it comes (or, with ``--json``, one JSON
document at the end); with ``--callback-url``, the server also POSTs each verdict there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from grader.report import Status
from server.client import config, show
from server.client.batches import grade_many
from server.client.commands import JsonOption, print_json, talks_to_server
from server.client.errors import ClientError, ExitCode

batch_app = typer.Typer(
    help="Grade many files at once through the batch API (docs/trainers.md).",
    no_args_is_help=True,
)


def candidates(folder: Path, problem: str, mode: str, gpu: str | None) -> list[dict[str, Any]]:
    """Each .py file directly in `folder` as a batch item keyed by its file name."""
    if not folder.is_dir():
        raise ClientError(f"{folder} is not a folder")
    items = []
    for path in sorted(folder.glob("*.py")):
        try:
            code = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ClientError(f"cannot read {path}: {exc}") from exc
        item = {"key": path.name, "problem": problem, "code": code, "mode": mode}
        if gpu:
            item["gpu"] = gpu
        items.append(item)
    if not items:
        raise ClientError(f"{folder} holds no .py files")
    return items


def line(item: dict[str, Any]) -> Text:
    why = f" ({item['error_class']})" if item.get("error_class") else ""
    score = f", score {item['score']:.6g} s" if item.get("score") is not None else ""
    flags = f", flags: {', '.join(item['flag_codes'])}" if item.get("flag_codes") else ""
    return Text(f"{item['key']}: {item['status']}{why}{score}{flags}")


@batch_app.command("submit")
@talks_to_server
def submit(
    folder: Annotated[Path, typer.Argument(help="a folder of submissions (.py files)")],
    problem: Annotated[str, typer.Option("--problem", "-p", help="the problem's name")],
    mode: Annotated[str, typer.Option(help="test, benchmark, leaderboard or profile")] = "test",
    tier: Annotated[str, typer.Option(help="quick (test mode only), standard or thorough")] = (
        "standard"
    ),
    gpu: Annotated[str | None, typer.Option(help="device type, e.g. h200")] = None,
    callback_url: Annotated[
        str | None,
        typer.Option(
            "--callback-url",
            help="an http(s) URL the server POSTs each verdict to, signed (docs/trainers.md)",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Grade every .py file in FOLDER, each an item keyed by its file name.

    Prints each verdict as it comes; with --json, one document at the end:
    {"items": [...], "counts": {...}}, items in file-name order. With --callback-url, each
    batch's callback secret is printed as it is sent (with --json: "batches": [{"id",
    "callback_secret"}] in the document). Exits 0 only if every item passed, 1 otherwise;
    6 refused by the server, 7 server unreachable."""
    items = candidates(folder, problem, mode, gpu)
    out = show.console()
    batches: list[dict[str, Any]] = []

    def sent(batch: dict[str, Any]) -> None:
        batches.append({"id": batch["id"], "callback_secret": batch.get("callback_secret")})
        if callback_url is not None and not as_json:
            out.print(
                Text(
                    f"batch {batch['id']}: callbacks to {callback_url}, signed with "
                    f"secret {batch.get('callback_secret')}"
                )
            )

    async def collect() -> list[dict[str, Any]]:
        found = []
        async for item in grade_many(
            items, login=config.load(), tier=tier, callback_url=callback_url, on_batch=sent
        ):
            found.append(item)
            if not as_json:
                out.print(line(item))
        return found

    results = sorted(asyncio.run(collect()), key=lambda item: item["key"])
    counts: dict[str, int] = {}
    for item in results:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    if as_json:
        document: dict[str, Any] = {"items": results, "counts": counts}
        if callback_url is not None:
            document["batches"] = batches
        print_json(document)
    else:
        out.print(Text(", ".join(f"{n} {status}" for status, n in sorted(counts.items()))))
    if any(item["status"] != Status.PASSED for item in results):
        raise typer.Exit(ExitCode.FAILED)
