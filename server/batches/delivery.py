"""One try at a callback: its body POSTed to its URL, signed with its batch's secret, at an
address `targets.resolve` checked. No redirect is followed, the whole try ends within the
timeout, and no more than a small part of the answer is read."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from dataclasses import dataclass

import httpx

from server.batches import targets
from server.settings import Settings

SIGNATURE_HEADER = "X-KernelJudge-Signature"
USER_AGENT = "KernelJudge-Callback/1"
# Of the answer, only this much is read (the start of it goes into a failure's reason).
MAX_ANSWER_BYTES = 1024
MAX_REASON_CHARS = 500


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of
    "<t>." + body under the secret>`` (docs/trainers.md shows how a receiver checks it)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


@dataclass(frozen=True)
class Outcome:
    """How a try went: delivered (a 2xx answer), or why not and whether a later try may
    do better (no connection, no answer in time, a 5xx or 429 answer)."""

    delivered: bool
    transient: bool = False
    reason: str = ""

    @classmethod
    def failed(cls, reason: str, *, transient: bool) -> Outcome:
        return cls(False, transient, reason[:MAX_REASON_CHARS])


def post(url: str, secret: str, body: bytes, settings: Settings) -> Outcome:
    try:
        host, port = targets.host_and_port(url)
        address = targets.resolve(host, port, targets.networks(settings.callback_allow_networks))
    except targets.Refused as exc:
        return Outcome.failed(f"refused: {exc}", transient=False)
    except OSError as exc:
        return Outcome.failed(f"{url} did not resolve: {exc}", transient=True)
    written = httpx.URL(url)
    headers = {
        # The name the client wrote, though the connection goes to the address checked.
        "Host": written.netloc.decode("ascii"),
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(secret, int(time.time()), body),
    }
    request = httpx.Request(
        "POST",
        written.copy_with(host=str(address)),
        headers=headers,
        content=body,
        # TLS is checked against the name written, not the address.
        extensions={"sni_hostname": host},
    )
    timeout_s = settings.callback_timeout_s
    try:
        status, answer = asyncio.run(asyncio.wait_for(_send(request, timeout_s), timeout_s))
    except TimeoutError:
        return Outcome.failed(f"no answer within {timeout_s:g} s", transient=True)
    except httpx.HTTPError as exc:
        return Outcome.failed(f"{type(exc).__name__}: {exc}", transient=True)
    if 200 <= status < 300:
        return Outcome(True)
    said = answer.decode("utf-8", "replace").strip()
    reason = f"answered {status}" + (f": {said}" if said else "")
    return Outcome.failed(reason, transient=status >= 500 or status == 429)


async def _send(request: httpx.Request, timeout_s: float) -> tuple[int, bytes]:
    # No proxy from the environment: the connection goes to the address checked, or nowhere.
    client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False)
    async with client as http:
        response = await http.send(request, stream=True)
        try:
            answer = b""
            async for chunk in response.aiter_raw():
                answer += chunk
                if len(answer) >= MAX_ANSWER_BYTES:
                    break
            return response.status_code, answer[:MAX_ANSWER_BYTES]
        finally:
            await response.aclose()
