"""Headers that tell a browser what this site's pages may do: run only the site's own
scripts (no inline script, so text a submission or a user wrote can never run as one), load
nothing from elsewhere, never be framed by another site, send no address to other sites,
and take a response for the type it says it is. Behind HTTPS, browsers are told to come
back over HTTPS only."""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

POLICY = (
    "default-src 'self'; script-src 'self'{scripts}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def script_hashes(html: str) -> str:
    """The CSP sources that let exactly the inline scripts of `html` run (Swagger UI's page
    starts itself with one) and nothing else."""
    return "".join(
        " 'sha256-{}'".format(
            base64.b64encode(hashlib.sha256(body.encode()).digest()).decode("ascii")
        )
        for body in INLINE_SCRIPT.findall(html)
    )


class SecurityHeaders:
    """Adds the headers to every HTTP response; `pages` names paths with inline scripts of
    their own and the hashes that let those run."""

    def __init__(self, app: ASGIApp, https: bool, pages: dict[str, str] | None = None) -> None:
        self.app = app
        self.https = https
        self.pages = pages or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = POLICY.format(scripts=self.pages.get(scope["path"], ""))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("Content-Security-Policy", policy)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("X-Frame-Options", "DENY")
                headers.setdefault("Referrer-Policy", "same-origin")
                if self.https:
                    headers.setdefault("Strict-Transport-Security", "max-age=31536000")
            await send(message)

        await self.app(scope, receive, with_headers)
