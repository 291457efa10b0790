"""Grafana showing the bundle's dashboards with a local stack's data (``infersight up --keep-running``).

Where a Grafana server is installed (``grafana server``, or ``grafana-server`` before Grafana 10),
:class:`Grafana` runs it on loopback with every folder it writes in a temporary one; elsewhere
:func:`docker_command` is the one ``docker run`` of Grafana's official image that does the same.
Both are provisioned by the writers of the bundle's ``deploy/grafana/provisioning/`` files
(:mod:`infersight.deploy.grafana`), with the stack's Prometheus and Alertmanager URLs in place of
``deploy.prometheus_url``. Both let anyone on this machine view, anonymously and read-only, and
nobody sign in: the login form and basic auth are off, so Grafana's default admin/admin is unusable.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Self

from infersight.bundle import Bundle
from infersight.config import Config
from infersight.dashboards import serving
from infersight.deploy import grafana as provisioning_files
from infersight.output import dump_yaml, write_atomic
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess, ServiceError

IMAGE = "grafana/grafana"  # Grafana's official image
CONTAINER_PROVISIONING = "/etc/grafana/provisioning"  # where the image reads provisioning
# Where packages put Grafana's home (conf/defaults.ini, public/) when it is not beside the binary.
HOME_CANDIDATES = (Path("/usr/share/grafana"), Path("/usr/local/share/grafana"))
# Provisioning folders Grafana reads besides ours: present and empty, so its log holds no errors.
_EMPTY_PROVISIONING = ("alerting", "notifiers", "plugins")


def server_command() -> list[str] | None:
    """The command that runs a Grafana server here, or None when none is on PATH."""
    unified = shutil.which("grafana")
    if unified:
        return [unified, "server"]
    legacy = shutil.which("grafana-server")
    return [legacy] if legacy else None


def home_path(executable: str, candidates: Sequence[Path] = HOME_CANDIDATES) -> Path:
    """Grafana's home folder: beside the binary (a release archive, Homebrew), else a package's."""
    real = Path(executable).resolve()
    for home in (real.parent.parent, real.parent.parent / "share" / "grafana", *candidates):
        if (home / "conf" / "defaults.ini").is_file():
            return home
    searched = ", ".join(str(c) for c in candidates)
    raise ServiceError(
        f"found {executable} but not Grafana's home folder (conf/defaults.ini) beside it or in {searched}"
    )


def overview_uid(cfg: Config) -> str:
    return cfg.dashboards.uid(PurePosixPath(serving.FILE).stem)


def dashboard_url(
    grafana_url: str, uid: str, start: float | None = None, end: float | None = None, panel_id: int | None = None
) -> str:
    """A dashboard (or one panel of it) in a Grafana, over ``start``..``end`` (Unix seconds) when given."""
    params: dict[str, str] = {}
    if start is not None and end is not None:
        params |= {"from": str(int(start * 1000)), "to": str(int(end * 1000))}
    if panel_id is not None:
        params["viewPanel"] = str(panel_id)
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    return f"{grafana_url.rstrip('/')}/d/{uid}{query}"


def viewer_env(port: int) -> dict[str, str]:
    """Grafana settings for both ways to run it: loopback only, anonymous viewers, no sign-in."""
    return {
        "GF_SERVER_HTTP_ADDR": LOOPBACK,
        "GF_SERVER_HTTP_PORT": str(port),
        "GF_AUTH_ANONYMOUS_ENABLED": "true",
        "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
        "GF_AUTH_DISABLE_LOGIN_FORM": "true",
        "GF_AUTH_BASIC_ENABLED": "false",
        "GF_ANALYTICS_REPORTING_ENABLED": "false",
    }


def _relative(path: str) -> str:
    """A bundle provisioning path relative to the provisioning folder, e.g. ``datasources/infersight.yaml``."""
    return str(PurePosixPath(path).relative_to(provisioning_files.PROVISIONING_DIR))


DATASOURCES_FILE = _relative(provisioning_files.DATASOURCE_PATH)
PROVIDER_FILE = _relative(provisioning_files.PROVIDER_PATH)


@dataclass(frozen=True)
class Provisioning:
    """The bundle's two provisioning files for one stack: its URLs, and its dashboards' folder."""

    bundle: Bundle
    prometheus_url: str
    alertmanager_url: str | None

    def files(self, dashboards_path: str) -> dict[str, str]:
        """Text by path relative to the provisioning folder; ``dashboards_path`` as Grafana sees it."""
        cfg, header = self.bundle.cfg, self.bundle.header
        datasources = provisioning_files.datasource_file(
            cfg,
            self.prometheus_url,
            self.alertmanager_url,
            traces_url="",  # no tracing backend runs here
        )
        return {
            DATASOURCES_FILE: dump_yaml(datasources, header),
            PROVIDER_FILE: dump_yaml(provisioning_files.provider_file(cfg, dashboards_path), header),
        }

    def write(self, folder: Path, dashboards_path: str) -> None:
        for rel, text in self.files(dashboards_path).items():
            write_atomic(folder / rel, text)

    def uids(self) -> list[str]:
        return [str(d.model["uid"]) for d in self.bundle.dashboards]


def docker_command(
    provisioning_folder: Path, dashboards_folder: Path, container_dashboards: str, port: int, uid: int
) -> str:
    """One ``docker run`` of Grafana's official image with ``provisioning_folder`` (written by
    :meth:`Provisioning.write` with ``container_dashboards``) and the dashboards mounted read-only.
    Host networking, as the stack listens on the host's 127.0.0.1 only (Linux; Docker Desktop has no
    such network). ``--user``: the files live in a folder only their owner may read."""
    for folder in (provisioning_folder, dashboards_folder):
        if not folder.is_absolute():  # docker would take a relative path for a volume's name
            raise ValueError(f"docker mounts need absolute paths, not {folder}")
    mounts = [
        (provisioning_folder / DATASOURCES_FILE, f"{CONTAINER_PROVISIONING}/{DATASOURCES_FILE}"),
        (provisioning_folder / PROVIDER_FILE, f"{CONTAINER_PROVISIONING}/{PROVIDER_FILE}"),
        (dashboards_folder, container_dashboards),
    ]
    argv = ["docker", "run", "--rm", "--network=host", f"--user={uid}"]
    for name, value in viewer_env(port).items():
        argv += ["-e", f"{name}={value}"]
    for host, container in mounts:
        argv += ["-v", f"{host}:{container}:ro"]
    return shlex.join([*argv, IMAGE])


class Grafana:
    """A Grafana server on a free loopback port; its data, logs and plugins in ``workdir``."""

    def __init__(
        self,
        workdir: Path,
        provisioning: Provisioning,
        dashboards_folder: Path,
        command: Sequence[str],
        port: int | None = None,
    ):
        self.workdir = workdir
        self.provisioning = provisioning
        self.dashboards_folder = dashboards_folder
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.provisioning_folder = workdir / "provisioning"
        env = viewer_env(self.port) | {
            "GF_PATHS_DATA": str(workdir / "data"),
            "GF_PATHS_LOGS": str(workdir / "logs"),
            "GF_PATHS_PLUGINS": str(workdir / "plugins"),
            "GF_PATHS_PROVISIONING": str(self.provisioning_folder),
            "GF_LOG_MODE": "console",
        }
        argv = [*command, f"--homepath={home_path(command[0])}"]
        self.process = ManagedProcess("grafana", argv, workdir / "grafana.log", env=env, cwd=workdir)

    def start(self, timeout: float = 180) -> Self:
        """Start; ready once ``/api/health`` answers and every dashboard opens without signing in."""
        self.provisioning.write(self.provisioning_folder, str(self.dashboards_folder.resolve()))
        for name in _EMPTY_PROVISIONING:
            (self.provisioning_folder / name).mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        self.process.start()
        try:
            self.process.wait_http_ready(f"{self.url}/api/health", timeout, ok=_healthy)
            for uid in self.provisioning.uids():
                left = max(1.0, timeout - (time.monotonic() - began))
                self.process.wait_http_ready(f"{self.url}/api/dashboards/uid/{uid}", left)
        except ServiceError as exc:
            self.process.stop()
            raise ServiceError(self._one_line(exc)) from None
        except BaseException:
            self.process.stop()
            raise
        return self

    def _one_line(self, exc: ServiceError) -> str:
        """What went wrong and the last line Grafana logged (the log itself is multi-line)."""
        what = str(exc).splitlines()[0].rstrip(":")
        logged = [line.strip() for line in self.process.log_tail(lines=20).splitlines() if line.strip()]
        return f"{what}; its log ends: {logged[-1]}" if logged else f"{what}; it logged nothing"

    @property
    def alive(self) -> bool:
        return self.process.alive

    def stop(self) -> None:
        self.process.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _healthy(status: int, body: bytes) -> bool:
    """Grafana's health answer: 200 and its database ``ok``."""
    if status != 200:
        return False
    try:
        return bool(json.loads(body).get("database") == "ok")
    except (ValueError, AttributeError):
        return False
