"""Adding a competition: its file (JSON through the REST API, YAML through `kerneljudge
competition add`) is checked field by field, every mistake a 4xx that says what is wrong;
organizers change it until it opens, each change in the audit log, and not after."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from server.cli import app as cli
from tests.server.competitions.rig import (
    LATER,
    OPENED,
    add_competition,
    competition_file,
    enter,
    iso,
    problems,
)
from tests.server.conftest import Account, make_account
from tests.server.users.test_audit_log import audit_entries

pytestmark = pytest.mark.anyio

# (what is wrong, the file's fields that make it so, what the message must say)
MISTAKES: list[tuple[str, dict[str, Any], str]] = [
    ("a name that is no URL", {"name": "Spring Sprint"}, "lowercase letters, digits"),
    ("a name with a trailing hyphen", {"name": "sprint-"}, "single hyphens"),
    ("no title", {"title": ""}, "title"),
    ("an unknown problem", {"problems": [{"name": "no-such-problem"}]}, "no-such-problem"),
    ("no problems", {"problems": []}, "problems"),
    ("a problem twice", "twice", "listed more than once"),
    ("a weight of 0", {"problems": "weight0"}, "weight"),
    ("a negative baseline", {"problems": "baseline"}, "baseline_s"),
    (
        "a GPU type the problems are not offered on",
        {"gpu": "h200"},
        "not offered on GPU type 'h200'",
    ),
    (
        "closing before opening",
        {"closes_at": iso(OPENED - timedelta(days=1))},
        "opens_at must come before closes_at",
    ),
    (
        "freezing before opening",
        {"freeze_at": iso(OPENED - timedelta(hours=1))},
        "freeze_at must come after opens_at",
    ),
    (
        "freezing after closing",
        {"freeze_at": iso(OPENED + timedelta(days=11))},
        "not after closes_at",
    ),
    ("a time without its zone", {"opens_at": "2027-03-01T00:00:00"}, "opens_at"),
    ("a time that is no time", {"closes_at": "next tuesday"}, "closes_at"),
    ("an unknown scoring rule", {"scoring": "fastest_wins"}, "rank_points"),
    ("teams of 0", {"team_size": 0}, "team_size"),
    ("no final run", {"final_runs": 0}, "final_runs"),
    ("21 final runs", {"final_runs": 21}, "final_runs"),
    ("an unknown field", {"teamsize": 3}, "teamsize"),
    (
        "a points table for mean_rank",
        {"scoring": "mean_rank", "points_table": [10, 5]},
        "points_table is for scoring rank_points",
    ),
    (
        "points rising with rank",
        {"points_table": [10, 20]},
        "a better rank never gets fewer points",
    ),
]


def with_mistake(names: list[str], fields: dict[str, Any] | str) -> dict[str, Any]:
    body = competition_file(names)
    if fields == "twice":
        body["problems"] = [{"name": names[0]}, {"name": names[0]}]
    elif isinstance(fields, dict) and fields.get("problems") == "weight0":
        body["problems"] = [{"name": names[0], "weight": 0}]
    elif isinstance(fields, dict) and fields.get("problems") == "baseline":
        body["problems"] = [{"name": names[0], "baseline_s": -1e-3}]
    else:
        assert isinstance(fields, dict)
        body.update(fields)
    return body


@pytest.mark.parametrize(("what", "fields", "said"), MISTAKES, ids=[m[0] for m in MISTAKES])
async def test_every_mistake_in_a_file_is_a_4xx_that_says_what_is_wrong(
    client: httpx.AsyncClient, admin: Account, what: str, fields: Any, said: str
) -> None:
    body = with_mistake(problems(1), fields)
    response = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"
    assert said in response.json()["detail"], response.json()["detail"]
    missing = await client.get(f"/api/v1/competitions/{body['name']}")
    assert missing.status_code in (404, 422)


async def test_a_competition_is_added_and_read_back_as_its_file_says(
    client: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    names = problems(2)
    body = competition_file(
        [],
        problems=[{"name": names[0], "weight": 2, "baseline_s": 4e-3}, {"name": names[1]}],
        freeze_at=iso(OPENED + timedelta(days=9)),
        opens_at=(OPENED + timedelta(hours=2)).isoformat().replace("+00:00", "+02:00"),
        points_table=[10, 6, 3],
    )
    made = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert made.status_code == 201, made.text
    read = (await client.get(f"/api/v1/competitions/{body['name']}")).json()
    assert read == made.json() | {"your_team": None}
    assert read["problems"] == [
        {"name": names[0], "weight": 2.0, "baseline_s": 4e-3},
        {"name": names[1], "weight": 1.0, "baseline_s": None},
    ]
    # The same moment, in UTC.
    assert read["opens_at"] == iso(OPENED)
    assert (read["status"], read["teams"], read["points_table"]) == ("open", 0, [10, 6, 3])
    listed = (await client.get("/api/v1/competitions")).json()
    assert body["name"] in {competition["name"] for competition in listed}

    again = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    assert (
        await client.post(
            "/api/v1/competitions", json=competition_file(names), headers=alice.headers
        )
    ).status_code == 403
    assert (
        await client.post("/api/v1/competitions", json=competition_file(names))
    ).status_code == 401
    entries = await audit_entries(client, admin, target=body["name"])
    assert [(e["actor"], e["action"]) for e in entries] == [(admin.name, "competition.create")]
    assert entries[0]["details"]["file"]["points_table"] == [10, 6, 3]


async def test_an_unknown_competition_is_a_404(client: httpx.AsyncClient) -> None:
    for path in ("", "/standings", "/standings.csv"):
        response = await client.get(f"/api/v1/competitions/no-such-sprint{path}")
        assert response.status_code == 404, path
        assert "no competition named 'no-such-sprint'" in response.json()["detail"]


async def test_organizers_edit_it_until_it_opens_and_each_change_is_audited(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(2)
    upcoming = competition_file(
        names[:1], opens_at=iso(LATER), closes_at=iso(LATER + timedelta(days=7))
    )
    assert (
        await client.post("/api/v1/competitions", json=upcoming, headers=admin.headers)
    ).status_code == 201
    path = f"/api/v1/competitions/{upcoming['name']}"
    edited = upcoming | {"title": "Renamed", "problems": [{"name": n} for n in names]}
    response = await client.put(path, json=edited, headers=admin.headers)
    assert response.status_code == 200, response.text
    assert response.json()["changed"] == ["title", "problems"]
    assert [p["name"] for p in (await client.get(path)).json()["problems"]] == names
    # The same file again changes nothing, and leaves no entry.
    same = await client.put(path, json=edited, headers=admin.headers)
    assert same.status_code == 200 and same.json()["changed"] == []
    entries = await audit_entries(client, admin, target=upcoming["name"])
    assert [e["action"] for e in entries] == ["competition.edit", "competition.create"]
    assert entries[0]["details"]["changes"]["title"] == ["A test sprint", "Renamed"]

    renamed = await client.put(path, json=edited | {"name": "another-name"}, headers=admin.headers)
    assert renamed.status_code == 422 and "stays as it is" in renamed.json()["detail"]
    bad = await client.put(path, json=edited | {"team_size": 0}, headers=admin.headers)
    assert bad.status_code == 422


async def test_once_it_opened_it_cannot_be_changed(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(1)
    name = await add_competition(client, admin, names)
    response = await client.put(
        f"/api/v1/competitions/{name}",
        json=competition_file(names, name=name, title="Too late"),
        headers=admin.headers,
    )
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"competition {name!r} opened at {OPENED:%Y-%m-%d %H:%M} UTC; it can no longer be changed"
    )
    assert (await client.get(f"/api/v1/competitions/{name}")).json()["title"] == "A test sprint"


async def test_team_size_cannot_go_below_a_team_already_formed(
    client: httpx.AsyncClient, admin: Account
) -> None:
    names = problems(1)
    upcoming = competition_file(
        names, opens_at=iso(LATER), closes_at=iso(LATER + timedelta(days=1))
    )
    await client.post("/api/v1/competitions", json=upcoming, headers=admin.headers)
    await enter(client, upcoming["name"], make_account(), make_account(), team="Pair")
    response = await client.put(
        f"/api/v1/competitions/{upcoming['name']}",
        json=upcoming | {"team_size": 1},
        headers=admin.headers,
    )
    assert response.status_code == 409
    assert "team 'Pair' has 2 members already" in response.json()["detail"]


def write_yaml(path: Path, body: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(body))
    return path


async def test_the_command_line_adds_and_edits_from_a_yaml_file(
    client: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    names = problems(2)
    body = competition_file(
        [], problems=[{"name": names[0], "weight": 2}, {"name": names[1]}],
        opens_at=iso(LATER), closes_at=iso(LATER + timedelta(days=14)),
    )  # fmt: skip
    # As an organizer writes it: YAML's own times, with their zone.
    text = yaml.safe_dump(body).replace(f"'{iso(LATER)}'", iso(LATER))
    (tmp_path / "sprint.yml").write_text(text)
    added = CliRunner().invoke(cli, ["competition", "add", str(tmp_path / "sprint.yml")])
    assert added.exit_code == 0, added.output
    assert f"competition {body['name']!r} created; it opens at {LATER:%Y-%m-%d %H:%M} UTC" in (
        added.stdout
    )
    read = (await client.get(f"/api/v1/competitions/{body['name']}")).json()
    assert [(p["name"], p["weight"]) for p in read["problems"]] == [
        (names[0], 2.0),
        (names[1], 1.0),
    ]

    write_yaml(tmp_path / "sprint.yml", body | {"team_size": 2})
    edited = CliRunner().invoke(cli, ["competition", "add", str(tmp_path / "sprint.yml")])
    assert edited.exit_code == 0, edited.output
    assert "edited" in edited.stdout
    entries = await audit_entries(client, admin, target=body["name"])
    assert [(e["actor"], e["actor_id"], e["action"]) for e in entries] == [
        ("cli", None, "competition.edit"),
        ("cli", None, "competition.create"),
    ]
    assert entries[0]["details"]["changes"] == {"team_size": [3, 2]}


async def test_the_command_line_says_what_is_wrong_with_a_file(tmp_path: Path) -> None:
    names = problems(1)
    broken = write_yaml(
        tmp_path / "broken.yml",
        competition_file(names, name="Bad Name", team_size=0, scoring="fastest"),
    )
    done = CliRunner().invoke(cli, ["competition", "add", str(broken)])
    assert done.exit_code == 2
    said = " ".join(done.output.split())
    assert "is not a competition file" in said
    for field in ("name: 'Bad Name' cannot be", "team_size:", "scoring:"):
        assert field in said, said
    unknown = write_yaml(tmp_path / "unknown.yml", competition_file(["no-such-problem"]))
    done = CliRunner().invoke(cli, ["competition", "add", str(unknown)])
    assert done.exit_code == 1 and "no problem named 'no-such-problem'" in done.output
    (tmp_path / "not.yml").write_text("name: [unclosed")
    done = CliRunner().invoke(cli, ["competition", "add", str(tmp_path / "not.yml")])
    assert done.exit_code == 2 and "cannot read" in done.output
