"""The REST API as the client calls it: one method per request it makes, each answer's JSON
as the server sent it (numbers at full precision), each failure a ``ClientError``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from importlib import metadata
from typing import Any
from urllib.parse import quote as url_quote

import httpx

from server.client.config import Login
from server.client.errors import Unreachable, from_response, from_transport

REQUEST_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
# A submission whose request may have reached the server is sent again under the same
# Idempotency-Key (the server then answers with the one it made): this many times at most.
SUBMIT_ATTEMPTS = 3
LONGEST_RETRY_WAIT_S = 15


def user_agent() -> str:
    try:
        version = metadata.version("kerneljudge")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"kerneljudge-cli/{version}"


class Api:
    def __init__(
        self,
        login: Login,
        *,
        transport: httpx.BaseTransport | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.login = login
        self.url = login.url
        self.notify = notify or (lambda message: None)
        self._http = httpx.Client(
            base_url=login.url,
            headers={"User-Agent": user_agent(), "Accept": "application/json"},
            timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            transport=transport,
        )

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        hint_404: str = "",
        **kwargs: Any,
    ) -> httpx.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = self._http.request(method, path, headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise from_transport(exc, self.url) from exc
        if response.status_code >= 400:
            raise from_response(response, self.url, hint_404=hint_404)
        return response

    def get_json(self, path: str, **kwargs: Any) -> Any:
        response = self.request("GET", path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise Unreachable(
                f"{self.url}{path} did not answer with JSON: is this a KernelJudge server?"
            ) from exc

    # The requests, in the order a competitor meets them.

    def check_token(self) -> None:
        """Raises unless the server accepts the login's token."""
        self.get_json("/api/v1/submissions", params={"limit": 1}, token=self.login.require_token())

    def problems(self) -> list[dict[str, Any]]:
        return list(self.get_json("/api/v1/problems", token=self.login.token))

    def bundle(self, problem: str) -> httpx.Response:
        return self.request(
            "GET",
            f"/api/v1/problems/{quote(problem)}/bundle",
            token=self.login.token,
            hint_404=" (`kerneljudge problems` lists the problems you can see)",
        )

    def submit(self, problem: str, code: str, mode: str, gpu: str | None = None) -> dict[str, Any]:
        """POST the submission; after a time-out, a dropped connection or a 5xx, send it
        again under the same Idempotency-Key, so that it is made at most once."""
        body: dict[str, Any] = {"problem": problem, "code": code, "mode": mode}
        if gpu:
            body["gpu"] = gpu
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        token = self.login.require_token()
        for attempt in range(1, SUBMIT_ATTEMPTS + 1):
            try:
                response = self.request(
                    "POST",
                    "/api/v1/submissions",
                    json=body,
                    headers=headers,
                    token=token,
                    hint_404=" (`kerneljudge problems` lists the problems you can submit to)",
                )
                return dict(response.json())
            except Unreachable as exc:
                if not exc.sent or attempt == SUBMIT_ATTEMPTS:
                    raise
                wait = min(exc.retry_after_s or 2 * attempt, LONGEST_RETRY_WAIT_S)
                self.notify(f"{exc.message}; sending it again in {wait} s")
                time.sleep(wait)
        raise AssertionError("the loop returns or raises")

    def submission(self, submission_id: int) -> dict[str, Any]:
        return dict(
            self.get_json(f"/api/v1/submissions/{submission_id}", token=self.login.require_token())
        )

    def submission_file(self, submission_id: int, name: str) -> bytes:
        """A file the submission's grading left (its Nsight Compute report), as it is."""
        return self.request(
            "GET",
            f"/api/v1/submissions/{submission_id}/files/{quote(name)}",
            token=self.login.require_token(),
            headers={"Accept": "application/octet-stream"},
        ).content

    def submissions(
        self,
        problem: str | None,
        limit: int | None,
        status: str | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        params = given({"problem": problem, "status": status, "mode": mode, "limit": limit})
        return dict(
            self.get_json("/api/v1/submissions", params=params, token=self.login.require_token())
        )

    def leaderboard(self, problem: str, gpu: str | None, limit: int | None) -> dict[str, Any]:
        params = given({"gpu": gpu, "limit": limit})
        return dict(
            self.get_json(
                f"/api/v1/leaderboards/{quote(problem)}",
                params=params,
                token=self.login.token,
                hint_404=" (`kerneljudge problems` lists the problems you can see)",
            )
        )

    def standings(self, competition: str) -> dict[str, Any]:
        return dict(
            self.get_json(
                f"/api/v1/competitions/{quote(competition)}/standings",
                token=self.login.token,
                hint_404=" (the competitions are listed at /competitions on the server)",
            )
        )


def given(params: dict[str, Any]) -> dict[str, Any]:
    """The query parameters that were given: the server's defaults stand for the rest."""
    return {key: value for key, value in params.items() if value not in (None, "")}


def quote(segment: str) -> str:
    """A path segment as a URL carries it (a problem name is plain, a typo may not be)."""
    return url_quote(segment, safe="")
