"""A file the service sends to be saved: its response, and how a route's OpenAPI shows it."""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response


def attachment(content: bytes | str, media_type: str, filename: str) -> Response:
    """`content` to be saved as `filename` (a name the service chose, safe in a header)."""
    return Response(content, media_type=media_type, headers=disposition(filename))


def disposition(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def documented(description: str, media_type: str, filename: str) -> dict[str, Any]:
    """A download route's 200 entry in ``responses=``; `filename` as a pattern, such as
    ``{name}.zip``."""
    return {
        "description": description,
        "content": {media_type: {"schema": {"type": "string", "format": "binary"}}},
        "headers": {
            "Content-Disposition": {
                "description": f'attachment; filename="{filename}"',
                "schema": {"type": "string"},
            }
        },
    }
