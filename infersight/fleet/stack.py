"""A fleet server and a real Prometheus that scrapes it and evaluates a bundle's rules: what
``infersight bench fleet`` and the fleet test run. Both processes are stopped by ``stop()``,
which the context manager always calls."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from infersight.config import Config
from infersight.fleet import scrape_config, topology
from infersight.fleet.measure import PrometheusAPI
from infersight.interrupts import uninterruptible
from infersight.output import write_atomic
from infersight.stack.ports import LOOPBACK, free_port
from infersight.stack.process import ManagedProcess
from infersight.stack.prometheus import Prometheus

# Building a thousand templates takes a few seconds on a slow core.
SERVER_START_TIMEOUT = 120
PROMETHEUS, FLEET_SERVER = "prometheus", "fleet server"  # the names CPU is reported under


class FleetStack:
    def __init__(self, workdir: Path, cfg: Config, files: Mapping[str, str], servers: int, models: int):
        """``files``: the bundle as {relative path: text}; its recording_rules/ and alerts/ are loaded."""
        self.workdir = workdir
        self.fleet = topology.build(servers, models)
        self.port = free_port()
        self.server_url = f"http://{LOOPBACK}:{self.port}"
        self.server = ManagedProcess(
            "fleet-server",
            [
                sys.executable,
                "-m",
                "infersight.fleet.server",
                f"--servers={servers}",
                f"--models={models}",
                f"--port={self.port}",
            ],
            workdir / "fleet-server.log",
        )
        rule_paths = []
        for rel, text in sorted(files.items()):
            if rel.endswith(".yaml") and rel.split("/", 1)[0] in ("recording_rules", "alerts"):
                path = workdir / "bundle" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, text)
                rule_paths.append(path)
        self.prometheus = Prometheus(
            workdir / "prometheus",
            config_yaml=scrape_config.prometheus_yaml(self.fleet, f"{LOOPBACK}:{self.port}", cfg, rule_paths),
        )
        self.api = PrometheusAPI(self.prometheus.url)

    def start(self) -> FleetStack:
        try:
            self.server.start()
            self.server.wait_http_ready(f"{self.server_url}/-/ready", SERVER_START_TIMEOUT)
            self.prometheus.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        with uninterruptible():  # a second Ctrl-C must not leave a process behind
            try:
                self.prometheus.stop()
            finally:
                self.server.stop()

    def __enter__(self) -> FleetStack:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def pids(self) -> dict[str, int]:
        """The processes whose CPU the benchmark reports, by name."""
        return {PROMETHEUS: self.prometheus.process.pid, FLEET_SERVER: self.server.pid}

    def prometheus_rss_bytes(self) -> int:
        """Resident memory of the Prometheus process, from /proc."""
        status = Path(f"/proc/{self.prometheus.process.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0
