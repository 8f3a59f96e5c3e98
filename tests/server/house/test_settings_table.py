"""The README's settings tables name exactly the environment variables the code reads: the
service's `Settings`, a worker host's `HostSettings` (the sandbox's two included) and the
command-line client's two, each group in its own table."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from grader.hostsettings import HostSettings
from sandbox.settings import SandboxSettings
from server.client.config import TOKEN_ENV, URL_ENV
from server.settings import Settings

REPO = Path(__file__).resolve().parents[3]
PREFIX = "KJ_"
NAME = re.compile(r"`(KJ_[A-Z0-9_]+)`")


def host_names(cls: type[Any] = HostSettings) -> set[str]:
    """KJ_<FIELD> for each field, and the fields of a nested settings class."""
    defaults = cls()
    names = set()
    for field in dataclasses.fields(cls):
        value = getattr(defaults, field.name)
        if dataclasses.is_dataclass(value):
            names |= host_names(type(value))
        else:
            names.add(PREFIX + field.name.upper())
    return names


def readme_tables() -> dict[str, set[str]]:
    """The variables named in the first column of each table under "## Settings", by the
    heading (###) above the table."""
    section = REPO.joinpath("README.md").read_text().split("\n## Settings\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    tables: dict[str, set[str]] = {}
    heading = ""
    for line in section.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        elif line.startswith("| `"):
            first_cell = line.split("|")[1]
            tables.setdefault(heading, set()).update(NAME.findall(first_cell))
    return tables


def test_the_readme_tables_name_every_setting_and_no_other() -> None:
    expected = {
        "The service": {PREFIX + name.upper() for name in Settings.model_fields},
        "Worker hosts": host_names(),
        "The command-line client": {URL_ENV, TOKEN_ENV},
    }
    tables = readme_tables()
    assert tables.keys() == expected.keys()
    for heading, names in expected.items():
        assert tables[heading] - names == set(), f"{heading}: in the README, read by nothing"
        assert names - tables[heading] == set(), f"{heading}: missing from the README"


def test_each_host_setting_is_read_from_its_variable() -> None:
    """The names above are the ones `from_env` reads: each changes its field."""
    read = HostSettings.from_env(dict.fromkeys(host_names(), "/kj") | {"KJ_WORLD_SIZES": "2"})
    assert read == HostSettings(
        sandbox_ro_paths=("/kj",),
        ncu="/kj",
        gpu_clock="/kj",
        world_sizes=(2,),
        sandbox=SandboxSettings(bwrap="/kj", sandbox_cgroup="/kj"),
    )
    assert HostSettings.from_env({}) == HostSettings()


def test_host_settings_parse_as_the_worker_always_did() -> None:
    assert HostSettings.from_env({"KJ_SANDBOX_RO_PATHS": "/opt/a::/opt/b:"}).sandbox_ro_paths == (
        "/opt/a",
        "/opt/b",
    )
    assert not HostSettings.from_env({"KJ_GPU_CLOCK": " Batches\n"}).clock_windows
    assert HostSettings.from_env({"KJ_GPU_CLOCK": "events"}).clock_windows
    assert HostSettings.from_env({}).clock_windows


def test_a_worker_host_reads_its_settings_without_the_service_packages() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, grader.hostsettings, sandbox.settings; "
            "print(sorted({'pydantic', 'pydantic_settings', 'server'} & set(sys.modules)))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split("\n")
    assert loaded[0] == "[]"
