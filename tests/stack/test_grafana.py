"""The Grafana launcher of `infersight up --keep-running`, against a stand-in executable on PATH (no
Grafana can be installed here): it records the arguments, environment and provisioning files it was
given, loads the dashboards its provider points at as Grafana would, and serves /api/health and those
dashboards to anonymous viewers until stopped. Also the docker command's exact text."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infersight import bundle, bundle_files
from infersight.config import Config
from infersight.deploy.grafana import alertmanager_datasource_uid
from infersight.stack import grafana
from infersight.stack.observed import validation_profile
from infersight.stack.process import ServiceError, http_get
from tests.grafana_provisioning import provisioning_problems

PROMETHEUS_URL = "http://127.0.0.1:19090"
ALERTMANAGER_URL = "http://127.0.0.1:19093"
RECORD_VAR = "GRAFANA_STAND_IN_RECORD"

STAND_IN = """\
#!{python}
import http.server, json, os, pathlib, sys
import yaml

# What Grafana reads at start: the provisioning folder, and the dashboards its providers point at.
prov = pathlib.Path(os.environ["GF_PATHS_PROVISIONING"])
files = {{str(p.relative_to(prov)): p.read_text() for p in sorted(prov.rglob("*")) if p.is_file()}}
folders = sorted(str(p.relative_to(prov)) for p in prov.rglob("*") if p.is_dir())
boards = {{}}
for provider_file in sorted((prov / "dashboards").glob("*.yaml")):
    for provider in yaml.safe_load(provider_file.read_text())["providers"]:
        for path in sorted(pathlib.Path(provider["options"]["path"]).glob("*.json")):
            model = json.loads(path.read_text())
            boards[model["uid"]] = {{"file": path.name, "folder": provider["folder"], "model": model}}
record = {{
    "argv": sys.argv, "cwd": os.getcwd(), "files": files, "folders": folders, "dashboards": boards,
    "env": {{k: v for k, v in os.environ.items() if k.startswith("GF_")}},
}}
out = pathlib.Path(os.environ["{record_var}"])
tmp = out.with_suffix(".tmp")
tmp.write_text(json.dumps(record))
tmp.replace(out)
anonymous = os.environ.get("GF_AUTH_ANONYMOUS_ENABLED") == "true"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        uid = self.path.rpartition("/")[2]
        if self.path == "/api/health":
            status, body = 200, {{"database": "ok", "version": "stand-in"}}
        elif self.path.startswith("/api/dashboards/uid/") and not anonymous:
            status, body = 401, {{"message": "Unauthorized"}}
        elif self.path.startswith("/api/dashboards/uid/") and uid in boards:
            status, body = 200, {{"dashboard": boards[uid]["model"], "meta": {{"folderTitle": boards[uid]["folder"]}}}}
        else:
            status, body = 404, {{"message": "Not found"}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


addr = (os.environ["GF_SERVER_HTTP_ADDR"], int(os.environ["GF_SERVER_HTTP_PORT"]))
http.server.ThreadingHTTPServer(addr, Handler).serve_forever()
"""


def install(folder: Path, name: str, script: str) -> Path:
    """An executable ``name`` in ``folder/bin`` and a Grafana home (conf/defaults.ini) beside it."""
    exe = folder / "bin" / name
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(script)
    exe.chmod(0o755)
    (folder / "conf").mkdir(exist_ok=True)
    (folder / "conf" / "defaults.ini").write_text("; a stand-in's home\n")
    return exe


@pytest.fixture
def built(tmp_path: Path) -> tuple[bundle.Bundle, Path]:
    """The time-scaled bundle `up` shows, its dashboards written where the stack writes them."""
    cfg = validation_profile(Config())
    b = bundle.build(cfg)
    bundle_files.write(bundle_files.render(b, with_deploy=False), tmp_path / "bundle")
    return b, tmp_path / "bundle" / "dashboards"


def provisioning(b: bundle.Bundle) -> grafana.Provisioning:
    return grafana.Provisioning(b, PROMETHEUS_URL, ALERTMANAGER_URL)


def check_provisioning(
    files: dict[str, str], dashboards: dict[str, dict[str, Any]], b: bundle.Bundle, path: str
) -> None:
    """The bundle's provisioning rules, plus: the stack's URLs, the folder, the dashboards' folder."""
    provider = yaml.safe_load(files[grafana.PROVIDER_FILE])
    datasources = yaml.safe_load(files[grafana.DATASOURCES_FILE])
    assert provisioning_problems(provider, datasources, dashboards) == []
    assert provider["providers"][0]["folder"] == "infersight"
    assert provider["providers"][0]["options"]["path"] == path
    by_type = {s["type"]: s for s in datasources["datasources"]}
    assert by_type["prometheus"]["url"] == PROMETHEUS_URL
    assert by_type["prometheus"]["jsonData"]["timeInterval"] == str(b.cfg.scaled(b.cfg.intervals.scrape))
    assert by_type["alertmanager"]["url"] == ALERTMANAGER_URL
    assert by_type["alertmanager"]["uid"] == alertmanager_datasource_uid(b.cfg)
    assert by_type["alertmanager"]["jsonData"]["implementation"] == "prometheus"


@pytest.mark.parametrize(("name", "subcommand"), [("grafana", ["server"]), ("grafana-server", [])])
def test_launcher_provisions_and_serves_through_a_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: tuple[bundle.Bundle, Path], name: str, subcommand: list[str]
) -> None:
    b, dashboards = built
    home = tmp_path / "grafana-install"
    exe = install(home, name, STAND_IN.format(python=sys.executable, record_var=RECORD_VAR))
    record_path = tmp_path / "record.json"
    monkeypatch.setenv("PATH", str(exe.parent))
    monkeypatch.setenv(RECORD_VAR, str(record_path))
    command = grafana.server_command()
    assert command == [str(exe), *subcommand]

    workdir = tmp_path / "work"
    with grafana.Grafana(workdir, provisioning(b), dashboards, command) as g:
        record = json.loads(record_path.read_text())
        status, body = http_get(f"{g.url}/api/dashboards/uid/{grafana.overview_uid(b.cfg)}")
        assert status == 200 and json.loads(body)["meta"]["folderTitle"] == "infersight"
    assert not g.alive and http_get(f"{g.url}/api/health")[0] == 0

    assert record["argv"] == [str(exe), *subcommand, f"--homepath={home}"]
    env = record["env"]
    assert {k: env[k] for k in grafana.viewer_env(g.port)} == {
        "GF_SERVER_HTTP_ADDR": "127.0.0.1",
        "GF_SERVER_HTTP_PORT": str(g.port),
        "GF_AUTH_ANONYMOUS_ENABLED": "true",
        "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
        "GF_AUTH_DISABLE_LOGIN_FORM": "true",
        "GF_AUTH_BASIC_ENABLED": "false",
        "GF_ANALYTICS_REPORTING_ENABLED": "false",
    }
    for setting in ("GF_PATHS_DATA", "GF_PATHS_LOGS", "GF_PATHS_PLUGINS", "GF_PATHS_PROVISIONING"):
        assert Path(env[setting]).is_relative_to(workdir), setting  # nothing outside its temporary folder
    assert record["cwd"] == str(workdir)
    assert set(record["folders"]) >= {"alerting", "dashboards", "datasources", "notifiers", "plugins"}
    assert set(record["files"]) == {grafana.PROVIDER_FILE, grafana.DATASOURCES_FILE}
    loaded = {board["file"]: board["model"] for board in record["dashboards"].values()}
    assert sorted(loaded) == [d.file for d in b.dashboards]
    check_provisioning(record["files"], loaded, b, str(dashboards.resolve()))


def test_launcher_reports_a_grafana_that_exits_and_leaves_nothing_running(
    tmp_path: Path, built: tuple[bundle.Bundle, Path]
) -> None:
    b, dashboards = built
    exe = install(tmp_path, "grafana-server", "#!/bin/sh\necho 'Error: bad settings' >&2\nexit 3\n")
    g = grafana.Grafana(tmp_path / "work", provisioning(b), dashboards, [str(exe)])
    with pytest.raises(ServiceError) as caught:
        g.start(timeout=30)
    assert str(caught.value) == "grafana exited with 3; its log ends: Error: bad settings"
    assert not g.alive


def test_launcher_that_never_serves_dashboards_to_anonymous_viewers_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: tuple[bundle.Bundle, Path]
) -> None:
    """The readiness wait asks for the dashboards anonymously: a Grafana without anonymous access
    (the stand-in answers 401 then) is not taken for a working one."""
    b, dashboards = built
    script = STAND_IN.format(python=sys.executable, record_var=RECORD_VAR)
    script = script.replace('anonymous = os.environ.get("GF_AUTH_ANONYMOUS_ENABLED") == "true"', "anonymous = False")
    exe = install(tmp_path, "grafana-server", script)
    monkeypatch.setenv(RECORD_VAR, str(tmp_path / "record.json"))
    g = grafana.Grafana(tmp_path / "work", provisioning(b), dashboards, [str(exe)])
    with pytest.raises(
        ServiceError,
        match=r"^timed out after \d+s waiting for grafana at http://127.0.0.1:\d+/api/dashboards/uid/infersight-"
        r"[a-z-]+; it logged nothing$",
    ):
        g.start(timeout=3)
    assert not g.alive


def test_no_grafana_on_path_and_no_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert grafana.server_command() is None
    lone = tmp_path / "bin" / "grafana"
    lone.parent.mkdir()
    lone.write_text("#!/bin/sh\n")
    with pytest.raises(ServiceError) as caught:
        grafana.home_path(str(lone), candidates=(tmp_path / "nowhere",))
    assert str(caught.value) == (
        f"found {lone} but not Grafana's home folder (conf/defaults.ini) beside it or in {tmp_path / 'nowhere'}"
    )


def test_docker_command_text_mounts_environment_and_the_files_it_mounts(
    tmp_path: Path, built: tuple[bundle.Bundle, Path]
) -> None:
    b, dashboards = built
    folder = tmp_path / "provisioning"
    container_dashboards = b.cfg.deploy.grafana.dashboards_path
    provisioning(b).write(folder, container_dashboards)
    command = grafana.docker_command(folder, dashboards, container_dashboards, 3123, 1000)
    assert command == (
        "docker run --rm --network=host --user=1000"
        " -e GF_SERVER_HTTP_ADDR=127.0.0.1 -e GF_SERVER_HTTP_PORT=3123"
        " -e GF_AUTH_ANONYMOUS_ENABLED=true -e GF_AUTH_ANONYMOUS_ORG_ROLE=Viewer"
        " -e GF_AUTH_DISABLE_LOGIN_FORM=true -e GF_AUTH_BASIC_ENABLED=false -e GF_ANALYTICS_REPORTING_ENABLED=false"
        f" -v {folder}/datasources/infersight.yaml:/etc/grafana/provisioning/datasources/infersight.yaml:ro"
        f" -v {folder}/dashboards/infersight.yaml:/etc/grafana/provisioning/dashboards/infersight.yaml:ro"
        f" -v {dashboards}:/var/lib/grafana/dashboards/infersight:ro"
        " grafana/grafana"
    )
    # What the container would read at each mount: the same rules, the stack's URLs.
    mounts = {}
    argv = shlex.split(command)
    for k, arg in enumerate(argv):
        if arg == "-v":
            host, container, mode = argv[k + 1].split(":")
            assert mode == "ro"
            mounts[container] = Path(host)
    files = {
        rel: mounts[f"{grafana.CONTAINER_PROVISIONING}/{rel}"].read_text()
        for rel in (grafana.PROVIDER_FILE, grafana.DATASOURCES_FILE)
    }
    boards = {p.name: json.loads(p.read_text()) for p in mounts[container_dashboards].glob("*.json")}
    assert sorted(boards) == [d.file for d in b.dashboards]
    check_provisioning(files, boards, b, container_dashboards)
    assert grafana.dashboard_url("http://127.0.0.1:3123", grafana.overview_uid(b.cfg)) == (
        "http://127.0.0.1:3123/d/infersight-vllm-overview"
    )


def test_docker_command_quotes_paths_and_refuses_relative_ones(tmp_path: Path) -> None:
    spaced = tmp_path / "my reports"
    command = grafana.docker_command(spaced / "prov", spaced / "dash", "/var/lib/grafana/dashboards/x", 3000, 0)
    assert f"-v '{spaced}/dash:/var/lib/grafana/dashboards/x:ro'" in command
    with pytest.raises(ValueError, match=r"docker mounts need absolute paths, not prov$"):
        grafana.docker_command(Path("prov"), spaced, "/d", 3000, 0)


def test_dashboard_url_with_a_time_range_and_a_panel() -> None:
    url = grafana.dashboard_url("http://127.0.0.1:3000/", "infersight-gpu", 1_700_000_000.25, 1_700_000_600.0, 7)
    assert url == "http://127.0.0.1:3000/d/infersight-gpu?from=1700000000250&to=1700000600000&viewPanel=7"
