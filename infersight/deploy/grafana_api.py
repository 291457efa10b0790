"""``infersight deploy dashboards``: import the bundle's dashboards through Grafana's HTTP API.

- the folder: ``GET /api/folders/<uid>``; when missing, ``POST /api/folders`` creates it with the
  same stable uid the file provider uses (a folder of that title but another uid is reused);
- each dashboard: ``POST /api/dashboards/db`` with ``folderUid`` and ``overwrite: true``;
- a warning when no datasource has the uid the dashboards default to
  (``GET /api/datasources/uid/<uid>``).

The token comes from the environment (:data:`TOKEN_ENV`) and is sent as a bearer token; it never
appears in a flag, a log line or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from infersight import __version__
from infersight.deploy import http

TOKEN_ENV = "INFERSIGHT_GRAFANA_TOKEN"


class GrafanaError(RuntimeError):
    """An import step failed; the message names the step and Grafana's answer."""


def token_from_env(env: Mapping[str, str] = os.environ) -> str:
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        raise GrafanaError(
            f"set {TOKEN_ENV} to a Grafana service-account token with the Editor role "
            "(tokens are read from the environment only, never from flags)"
        )
    return token


@dataclass
class Grafana:
    url: str
    token: str
    log: Callable[[str], None] = print

    def _call(self, method: str, path: str, body: Any = None) -> http.Response:
        resp = http.request(method, self.url.rstrip("/") + path, body, {"Authorization": f"Bearer {self.token}"})
        if resp.status in (401, 403):
            raise GrafanaError(f"{method} {path}: Grafana refused the token ({resp.status}): {resp.message()}")
        return resp

    def ensure_folder(self, uid: str, title: str) -> str:
        """The uid of the folder to import into, creating it when missing."""
        resp = self._call("GET", f"/api/folders/{uid}")
        if resp.ok:
            return uid
        if resp.status != 404:
            raise GrafanaError(f"GET /api/folders/{uid} answered {resp.status}: {resp.message()}")
        resp = self._call("POST", "/api/folders", {"uid": uid, "title": title})
        if resp.ok:
            self.log(f"created folder {title!r} (uid {uid})")
            return uid
        if resp.status == 409:  # a folder with this title exists under another uid: use it
            listing = self._call("GET", "/api/folders")
            for folder in listing.body or []:
                if folder.get("title") == title:
                    return str(folder["uid"])
        raise GrafanaError(f"POST /api/folders answered {resp.status}: {resp.message()}")

    def check_datasource(self, uid: str) -> None:
        if not self._call("GET", f"/api/datasources/uid/{uid}").ok:
            self.log(
                f"warning: Grafana has no datasource with uid {uid!r}; the dashboards' datasource "
                "variable will fall back to the default one (set dashboards.datasource_uid to yours)"
            )

    def import_dashboard(self, board: dict[str, Any], folder_uid: str) -> str:
        """Import one dashboard; its URL in Grafana."""
        body = {
            "dashboard": {**board, "id": None},  # match by uid, never by a numeric id
            "folderUid": folder_uid,
            "overwrite": True,
            "message": f"infersight {__version__}",
        }
        resp = self._call("POST", "/api/dashboards/db", body)
        if not resp.ok or not isinstance(resp.body, dict) or resp.body.get("status") != "success":
            raise GrafanaError(f"importing {board.get('uid')}: Grafana answered {resp.status}: {resp.message()}")
        return str(resp.body.get("url", ""))

    def deploy(self, boards: Mapping[str, dict[str, Any]], folder_uid: str, folder: str, datasource_uid: str) -> None:
        uid = self.ensure_folder(folder_uid, folder)
        self.check_datasource(datasource_uid)
        for name, board in boards.items():
            self.log(f"imported {name} -> {self.url.rstrip('/')}{self.import_dashboard(board, uid)}")
