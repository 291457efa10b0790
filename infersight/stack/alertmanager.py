"""A real Alertmanager (Debian's prometheus-alertmanager) on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess
from infersight.stack.prometheus import binary
from infersight.stack.service import ConfiguredService

# Route everything to a receiver with no integrations: tests read alerts back through
# the API, and nothing leaves the machine.
DEFAULT_CONFIG = """\
route:
  receiver: blackhole
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: blackhole
"""


class Alertmanager(ConfiguredService):
    identity_path = "/api/v2/status"

    def __init__(self, workdir: Path, config_yaml: str | None = None, port: int | None = None):
        self.workdir = workdir
        self.port = port or free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.config_path = workdir / "alertmanager.yml"
        self.config_yaml = config_yaml or DEFAULT_CONFIG
        self.process = ManagedProcess(
            "alertmanager",
            [
                binary("prometheus-alertmanager", "alertmanager"),
                f"--config.file={self.config_path}",
                f"--storage.path={workdir / 'alertmanager-data'}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                "--cluster.listen-address=",  # no gossip: a single local instance
            ],
            workdir / "alertmanager.log",
        )

    def alerts(self, active: bool = True, silenced: bool = True, inhibited: bool = True) -> list[dict[str, Any]]:
        """Alerts Alertmanager holds (API v2), each with labels and status.state."""
        params = {k: str(v).lower() for k, v in (("active", active), ("silenced", silenced), ("inhibited", inhibited))}
        alerts: list[dict[str, Any]] = self._get("/api/v2/alerts", params)
        return alerts

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        self._post("/api/v2/alerts", alerts)

    def alert_names(self) -> set[str]:
        return {a["labels"].get("alertname", "") for a in self.alerts()}
