"""What Prometheus and Alertmanager have in common: a config file written before start,
a process, a ``/-/ready`` wait, a JSON HTTP API, and a stop that always happens."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from infersight.stack.process import ManagedProcess


class HttpApi:
    """JSON over HTTP to a loopback service, bypassing any proxy settings."""

    url: str

    def _open(self, req: urllib.request.Request | str, timeout: float) -> bytes:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=timeout) as resp:
            data: bytes = resp.read()
            return data

    def _get(self, path: str, params: dict[str, str] | None = None, timeout: float = 10) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return json.loads(self._open(f"{self.url}{path}{query}", timeout))

    def _post(self, path: str, body: Any = None, timeout: float = 10) -> Any:
        data = json.dumps(body).encode() if body is not None else b""
        req = urllib.request.Request(f"{self.url}{path}", data=data, method="POST")
        req.add_header("Content-Type", "application/json")
        raw = self._open(req, timeout)
        return json.loads(raw) if raw.strip() else None


class ConfiguredService(HttpApi):
    """Subclasses set workdir, url, config_path, config_yaml and process in __init__, and name
    an API path only their own service answers with 200 (``identity_path``)."""

    identity_path: str
    workdir: Path
    config_path: Path
    config_yaml: str
    process: ManagedProcess

    def start(self, timeout: float = 60) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config_yaml)
        self.process.start()
        try:
            self.process.wait_http_ready(f"{self.url}/-/ready", timeout)
            # Prometheus and Alertmanager both answer /-/ready: make sure it was this one.
            self.process.wait_http_ready(f"{self.url}{self.identity_path}", timeout)
        except BaseException:
            self.process.stop()
            raise
        return self

    def stop(self) -> None:
        self.process.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
