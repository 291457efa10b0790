"""``infersight deploy dashboards``: import the bundle's dashboards through Grafana's HTTP API.

- the folder: ``GET /api/folders/<uid>``; when missing, ``POST /api/folders`` creates it with the
  same stable uid the file provider uses (a folder of that title but another uid is reused);
- each dashboard: ``POST /api/dashboards/db`` with ``folderUid`` and ``overwrite: true``;
- a warning when no datasource has the uid the dashboards default to
  (``GET /api/datasources/uid/<uid>``).

The token comes from the environment (:data:`TOKEN_ENV`) and is sent as a bearer token; it never
appears in a flag, a log line or an error message, and never follows a redirect (see http.py). The
whole import has one deadline (``timeout``), however slowly Grafana answers. An answer that is not
the JSON Grafana documents (a login page, a proxy's error page) fails the step that got it.
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
    if not all(" " < c < "\x7f" for c in token):  # it goes into an HTTP header; never echo it
        raise GrafanaError(
            f"{TOKEN_ENV} holds a character a token cannot have: a Grafana token is printable ASCII "
            "without spaces (glsa_...); check how the variable was set"
        )
    return token


def _not_grafana(method: str, path: str, resp: http.Response) -> GrafanaError:
    return GrafanaError(
        f"{method} {path} answered {resp.status} with something that is not Grafana's JSON ({resp.message()[:120]}); "
        "is the URL Grafana's?"
    )


@dataclass
class Grafana:
    url: str
    token: str
    log: Callable[[str], None] = print
    timeout: float = 120.0  # seconds for the whole import
    _deadline: http.Deadline | None = None

    def _call(self, method: str, path: str, body: Any = None) -> http.Response:
        auth = {"Authorization": f"Bearer {self.token}"}
        resp = http.request(method, self.url.rstrip("/") + path, body, auth, deadline=self._deadline)
        if resp.status in (401, 403):
            raise GrafanaError(f"{method} {path}: Grafana refused the token ({resp.status}): {resp.message()}")
        return resp

    def _object(self, method: str, path: str, resp: http.Response) -> dict[str, Any]:
        """A successful answer's JSON object; GrafanaError for anything else."""
        if not resp.ok:
            raise GrafanaError(f"{method} {path} answered {resp.status}: {resp.message()}")
        if not isinstance(resp.body, dict):
            raise _not_grafana(method, path, resp)
        return resp.body

    def ensure_folder(self, uid: str, title: str) -> str:
        """The uid of the folder to import into, creating it when missing."""
        path = f"/api/folders/{uid}"
        resp = self._call("GET", path)
        if resp.status != 404:
            self._object("GET", path, resp)
            return uid
        resp = self._call("POST", "/api/folders", {"uid": uid, "title": title})
        if resp.ok:
            self._object("POST", "/api/folders", resp)
            self.log(f"created folder {title!r} (uid {uid})")
            return uid
        if resp.status == 409:  # a folder with this title exists under another uid: use it
            listing = self._call("GET", "/api/folders")
            if not listing.ok or not isinstance(listing.body, list):
                raise _not_grafana("GET", "/api/folders", listing)
            for folder in listing.body:
                if isinstance(folder, dict) and folder.get("title") == title and folder.get("uid"):
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
        if resp.ok and not isinstance(resp.body, dict):
            raise _not_grafana("POST", "/api/dashboards/db", resp)
        if not resp.ok or resp.body.get("status") != "success":
            raise GrafanaError(f"importing {board.get('uid')}: Grafana answered {resp.status}: {resp.message()}")
        return str(resp.body.get("url", ""))

    def deploy(self, boards: Mapping[str, dict[str, Any]], folder_uid: str, folder: str, datasource_uid: str) -> None:
        self._deadline = http.Deadline.after(self.timeout)
        uid = self.ensure_folder(folder_uid, folder)
        self.check_datasource(datasource_uid)
        for name, board in boards.items():
            self.log(f"imported {name} -> {self.url.rstrip('/')}{self.import_dashboard(board, uid)}")
