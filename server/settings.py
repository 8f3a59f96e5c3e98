"""The service's settings, read from the environment with the prefix ``KJ_``."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

EMBEDDED = "embedded"
MIN_SECRET_KEY_CHARS = 32


class InsecureSettings(RuntimeError):
    """The settings are unsafe to serve with (e.g. no secret key in production)."""


class Settings(BaseSettings):
    """Every setting is documented in the README's "Settings" table (a test checks)."""

    model_config = SettingsConfigDict(env_prefix="KJ_", extra="ignore")

    data_dir: Path = Field(default=Path("./var"), description="SQLite DB, embedded broker, logs")
    database_url: str = Field(default="", description="default: SQLite file in data_dir")
    broker_url: str = Field(default=EMBEDDED, description="'embedded' or redis://...")
    gpu_types: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="device types submissions may ask for; default: this host's own",
    )
    max_code_bytes: int = 1_000_000
    max_request_bytes: int = 60_000_000
    max_archive_bytes: int = 20_000_000
    # Problems an author may have of its own (server/problems/service.py): each new one is
    # validated on every device type's workers.
    max_problems_per_author: int = Field(default=200, ge=0)
    # A batch's items at most, and a token's batch items queued or running at most (a batch
    # that would go over the second is answered 429 with Retry-After).
    max_batch_items: int = Field(default=1000, ge=1)
    batch_max_in_flight: int = Field(default=2000, ge=1)
    # A batch's callbacks (server/batches/callbacks.py): the networks a callback may reach
    # though they are not public (loopback, private, link-local, ...: refused otherwise), how
    # many times one item's callback is tried, the first pause between tries (doubling after
    # each), and how long one try may take.
    callback_allow_networks: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="networks callbacks may reach though not public, e.g. 10.0.0.0/8",
    )
    callback_attempts: int = Field(default=6, ge=1)
    callback_backoff_s: float = Field(default=5.0, gt=0)
    callback_timeout_s: float = Field(default=5.0, gt=0)
    # The largest file the service keeps beside a grading's report (profile mode's Nsight
    # Compute report), as a worker host sends it: larger ones are refused.
    max_profile_file_bytes: int = Field(default=32 << 20, gt=0)
    # Longer than the longest grading, so a live worker's job is never handed out twice.
    visibility_timeout_s: int = 3600
    # How often a worker looks for gradings whose worker died and whose visibility timeout
    # has passed, to hand them out again.
    restore_interval_s: int = 10
    grading_timeout_s: float = 900.0
    # The outbox's sweeper: how often it sends jobs that never left and looks for jobs the
    # broker no longer holds (a broker that restarted without its data), and how long after
    # a send it leaves a job alone (a message in flight is not in the broker's lists yet).
    sweep_interval_s: float = Field(default=10.0, gt=0)
    sweep_grace_s: float = Field(default=30.0, ge=0)
    # Gradings sent to a device's queue beyond one per free worker. 0: each waits in the
    # outbox until a worker is free, and they go in fair order (server/outbox/dispatch.py);
    # more saves a worker the moment between jobs at the cost of that order.
    dispatch_ahead: int = Field(default=0, ge=0)
    # One log line per request from the API; off by default, since at a crowd's rate the
    # line costs more than the request (a reverse proxy in front usually logs them anyway).
    access_log: bool = False
    # How long a process waits for the database before answering 503.
    database_connect_timeout_s: int = Field(default=5, ge=1)
    sandbox_memory_gib: float = Field(
        default=8.0, gt=0, description="host memory a submission's sandbox may use"
    )
    environment: Literal["development", "production"] = "development"
    secret_key: str = Field(
        default="",
        description="signs session cookies; development: generated into data_dir when unset",
    )
    # How people sign up on the web pages (server/users/signup.py): anyone, with an
    # organizer's invite code, with an email address they prove by a mailed link, or not at
    # all (organizers add accounts with `kerneljudge user add`).
    signup: Literal["open", "invite", "verified", "closed"] = Field(
        default="open", description="how people sign up: open, invite, verified or closed"
    )
    # The older switch: false closes sign-up whatever `signup` says.
    signup_open: bool = Field(default=True, description="false: sign-up is closed")
    signup_email_domains: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="verified sign-up: the only email domains accepted, e.g. example.edu",
    )
    https: bool = Field(default=False, description="pages are served over HTTPS: Secure cookies")
    # Password resets by email (server/users/mail.py): off while smtp_host is empty, and
    # organizers' one-time links remain the way.
    smtp_host: str = Field(default="", description="SMTP server for password-reset mail")
    smtp_port: int = Field(default=587, ge=1, le=65535)
    smtp_username: str = ""
    smtp_password: SecretStr = SecretStr("")
    smtp_starttls: bool = Field(default=True, description="STARTTLS before logging in")
    smtp_from: str = Field(default="", description="the mail's sender address")
    # The site's address as users reach it, for links sent by mail; default: the address
    # the request came to.
    public_url: str = ""
    # Failed log-ins counted per user name from one client address, and per address, over a
    # sliding window: the guesser waits, the owner logging in from elsewhere does not.
    login_window_s: int = 900
    login_max_failures: int = 5
    login_max_failures_per_address: int = 30
    # Submissions per user and problem over a sliding window, counted in the database so the
    # limit holds across API processes; admins are exempt. 0 turns the limit off.
    submission_rate_limit: int = Field(
        default=20, ge=0, description="submissions per user and problem in the window; 0: none"
    )
    submission_rate_window_s: int = Field(default=600, gt=0)
    # A rejudge grades every submission it selects again: the cap keeps one filter typed
    # too wide from filling the queues.
    rejudge_max_submissions: int = Field(
        default=1000, gt=0, description="submissions a rejudge may select at most"
    )
    # Near-clone pairs among a competition's entries: the Jaccard similarity of their
    # winnowing fingerprints at or above which a pair is listed for the organizers.
    clone_threshold: float = Field(
        default=0.8, gt=0, le=1, description="fingerprint similarity listed as a near-clone"
    )

    @field_validator("gpu_types", mode="before")
    @classmethod
    def _split_gpu_types(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower() for part in value.split(",") if part.strip()]
        return value

    @field_validator("callback_allow_networks", mode="before")
    @classmethod
    def _split_networks(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list):
            for network in value:
                ipaddress.ip_network(network, strict=False)  # a ValueError names it
        return value

    @field_validator("signup_email_domains", mode="before")
    @classmethod
    def _split_domains(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip().lower().lstrip("@") for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _verified_signup_needs_mail(self) -> Settings:
        if self.signup_mode == "verified" and not self.smtp_host:
            raise ValueError(
                "KJ_SIGNUP=verified mails a link to each new account: set KJ_SMTP_HOST"
            )
        return self

    @property
    def signup_mode(self) -> str:
        """How people sign up: ``signup``, unless the older ``signup_open`` closes it."""
        return self.signup if self.signup_open else "closed"

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'kerneljudge.sqlite3').resolve()}"

    @property
    def broker_is_embedded(self) -> bool:
        return self.broker_url in ("", EMBEDDED)

    @property
    def resolved_broker_url(self) -> str:
        if self.broker_is_embedded:
            return f"kjsqla+sqlite:///{(self.data_dir / 'broker.sqlite3').resolve()}"
        return self.broker_url

    def check_secret_key(self) -> None:
        """Refuses a site outside development whose KJ_SECRET_KEY is unset or shorter than
        MIN_SECRET_KEY_CHARS; in development an unset key is generated (server/web/sessions.py).
        Checked by what signs cookies, not on loading: a worker has no key and needs none."""
        if self.environment == "development":
            return
        if not self.secret_key:
            raise InsecureSettings(
                "set KJ_SECRET_KEY (e.g. from `python3 -c 'import secrets; "
                "print(secrets.token_urlsafe(48))'`): production needs a secret of its own"
            )
        if len(self.secret_key) < MIN_SECRET_KEY_CHARS:
            raise InsecureSettings(
                f"KJ_SECRET_KEY must be at least {MIN_SECRET_KEY_CHARS} characters in production"
            )

    def ensure_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)


@lru_cache
def get_settings() -> Settings:
    settings = Settings()
    settings.ensure_data_dir()
    return settings
