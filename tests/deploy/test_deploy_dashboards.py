"""``infersight deploy dashboards`` against a stand-in that checks each request against Grafana's
documented HTTP API (see fake_grafana.py): not a live Grafana."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infersight.cli import main
from infersight.deploy.grafana_api import TOKEN_ENV

from .fake_grafana import FakeGrafana

TOKEN = "glsa_test-token-0123456789"


def dashboards(built: dict[str, str]) -> dict[str, dict[str, object]]:
    return {json.loads(t)["uid"]: json.loads(t) for rel, t in built.items() if rel.startswith("dashboards/")}


def run(url: str, *extra: str) -> int:
    return main(["deploy", "dashboards", "--grafana-url", url, *extra])


@pytest.fixture
def prebuilt(bundle_dir: Path) -> tuple[str, str]:
    """Import an already written bundle (the other path of the command; faster than a build)."""
    return ("--bundle", str(bundle_dir))


def test_creates_the_folder_and_imports_every_dashboard(
    built: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGrafana(TOKEN, datasources={"prometheus"}) as grafana:
        assert run(grafana.url) == 0
    assert not grafana.problems
    boards = dashboards(built)
    calls = [(method, path) for method, path, _ in grafana.requests]
    assert calls[:3] == [
        ("GET", "/api/folders/infersight"),
        ("POST", "/api/folders"),
        ("GET", "/api/datasources/uid/prometheus"),
    ]
    assert calls[3:] == [("POST", "/api/dashboards/db")] * len(boards)
    assert grafana.requests[1][2] == {"uid": "infersight", "title": "infersight"}
    assert set(grafana.dashboards) == set(boards)
    for uid, body in grafana.dashboards.items():
        assert body["folderUid"] == "infersight" and body["overwrite"] is True
        assert body["dashboard"] == {**boards[uid], "id": None}
    out = capsys.readouterr()
    assert f"imported {len(boards)} dashboards" in out.out and "warning" not in out.out
    assert TOKEN not in out.out + out.err


def test_existing_folder_is_used_and_reimport_overwrites(
    built: dict[str, str], monkeypatch: pytest.MonkeyPatch, prebuilt: tuple[str, str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGrafana(TOKEN, folders={"infersight": "infersight"}, datasources={"prometheus"}) as grafana:
        assert run(grafana.url, *prebuilt) == 0
        assert run(grafana.url, *prebuilt) == 0
    assert ("POST", "/api/folders") not in [(m, p) for m, p, _ in grafana.requests]
    assert not grafana.problems
    assert len(grafana.dashboards) == len(dashboards(built))


def test_a_folder_of_that_title_under_another_uid_is_reused(
    monkeypatch: pytest.MonkeyPatch, prebuilt: tuple[str, str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGrafana(TOKEN, folders={"abc123": "LLM serving"}, datasources={"prometheus"}) as grafana:
        assert run(grafana.url, "--folder", "LLM serving", *prebuilt) == 0
    assert {body["folderUid"] for body in grafana.dashboards.values()} == {"abc123"}
    assert not grafana.problems


def test_missing_token_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prebuilt: tuple[str, str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with FakeGrafana(TOKEN) as grafana:
        assert run(grafana.url, *prebuilt) == 2
    assert grafana.requests == []
    assert TOKEN_ENV in capsys.readouterr().err


def test_rejected_token_is_reported_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prebuilt: tuple[str, str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "glsa_wrong-secret")
    with FakeGrafana(TOKEN) as grafana:
        assert run(grafana.url, *prebuilt) == 1
    out = capsys.readouterr()
    assert "refused the token (401)" in out.err
    assert "glsa_wrong-secret" not in out.out + out.err


@pytest.mark.parametrize("bad", ["glsa_secret-part\nX-Injected: 1", "glsa_secret-part\tX", "glsa_secret-part é"])
def test_a_token_that_cannot_be_a_header_fails_before_any_request_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prebuilt: tuple[str, str], bad: str
) -> None:
    monkeypatch.setenv(TOKEN_ENV, bad)
    with FakeGrafana(TOKEN) as grafana:
        assert run(grafana.url, *prebuilt) == 2
    assert grafana.requests == []
    out = capsys.readouterr()
    assert "secret-part" not in out.out + out.err
    assert TOKEN_ENV in out.err and "printable ASCII" in out.err


def test_missing_datasource_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], prebuilt: tuple[str, str]
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with FakeGrafana(TOKEN) as grafana:
        assert run(grafana.url, *prebuilt) == 0
    assert "no datasource with uid 'prometheus'" in capsys.readouterr().out


def test_the_stand_in_rejects_what_grafana_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks are real: a body Grafana's API does not document is refused."""
    from infersight.deploy import http

    with FakeGrafana(TOKEN, folders={"f": "f"}) as grafana:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        bad = http.request(
            "POST", f"{grafana.url}/api/dashboards/db", {"dashboard": {"title": "x"}, "folder": "f"}, auth
        )
        wrong_path = http.request("POST", f"{grafana.url}/api/dashboards/import", {}, auth)
    assert bad.status == 400 and wrong_path.status == 404
    assert len(grafana.problems) == 2
