"""Which server the client talks to, and with which API token: KJ_URL and KJ_TOKEN when set,
else what ``kerneljudge login`` stored in the user's config folder (readable by its owner
only: the token is a password)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import typer

from server.client.errors import NotLoggedIn

APP_NAME = "kerneljudge"
LOGIN_FILE = "login.json"
# The client's whole environment (the README's settings table lists it).
URL_ENV = "KJ_URL"
TOKEN_ENV = "KJ_TOKEN"


@dataclass(frozen=True)
class Login:
    url: str
    token: str | None

    def require_token(self) -> str:
        if not self.token:
            raise NotLoggedIn(
                f"no API token for {self.url}: run `kerneljudge login {self.url}` (a token "
                "comes from your account page on the server) or set KJ_TOKEN"
            )
        return self.token


def login_path() -> Path:
    """``~/.config/kerneljudge/login.json`` on Linux ($XDG_CONFIG_HOME is honoured),
    ``~/Library/Application Support/kerneljudge`` on macOS, ``%APPDATA%`` on Windows."""
    return Path(typer.get_app_dir(APP_NAME)) / LOGIN_FILE


def normalize_url(url: str) -> str:
    """The server's base URL without a trailing slash; http or https only."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise NotLoggedIn(
            f"{url!r} is not a server URL: give one such as https://kernels.example.org "
            "or http://127.0.0.1:8000"
        )
    return url


def stored() -> dict[str, str]:
    path = login_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise NotLoggedIn(f"cannot read {path} ({exc}): run `kerneljudge login URL`") from exc
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, str)}


def load() -> Login:
    """The environment's KJ_URL and KJ_TOKEN win over what was stored. A token stored for
    another server than KJ_URL's is not sent there."""
    saved = stored()
    url = os.environ.get(URL_ENV) or saved.get("url")
    if not url:
        raise NotLoggedIn("no server: run `kerneljudge login URL` or set KJ_URL (and KJ_TOKEN)")
    url = normalize_url(url)
    token = os.environ.get(TOKEN_ENV) or None
    if token is None and saved.get("url") and normalize_url(saved["url"]) == url:
        token = saved.get("token") or None
    return Login(url=url, token=token)


def save(url: str, token: str) -> Path:
    """Write the login as a file only its owner can read (0600, in a folder that is 0700),
    replacing any earlier one at once: a reader never sees half a file."""
    path = login_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        path.parent.chmod(0o700)
    # mkstemp makes the file with mode 0600 whatever the umask.
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".login-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"url": url, "token": token}, out)
            out.write("\n")
        os.chmod(scratch, 0o600)
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    return path
